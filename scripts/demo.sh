#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The main job: installs what is missing, builds the CLI in Release and runs the default demo.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake --workflow --preset release >/dev/null
exec build/release/bin/hybridcache simulate --out build/simulate "$@"
