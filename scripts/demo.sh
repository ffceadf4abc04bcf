#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The main job: installs what is missing, builds the CLI in Release and runs the default
# simulation (tables on the terminal; CSV, JSON and gnuplot plots under build/simulate).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake --preset release >/dev/null
cmake --build --preset release --target hybridcache_cli
exec build/release/bin/hybridcache simulate --out build/simulate "$@"
