#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs the Debian 12 packages hybridcache's build, tests, tools and benchmarks need, and only
# those that are missing (so a second run does nothing and needs no network).
# Usage: scripts/install-deps.sh            # everything the test suite and the CLI need
set -euo pipefail

packages=(
  cmake ninja-build g++ clang libclang-rt-dev pkg-config git
  libeigen3-dev libfmt-dev doctest-dev libbenchmark-dev libxxhash-dev libssl-dev
  nlohmann-json3-dev libhiredis-dev redis-server gnuplot-nox python3 python3-venv python3-pip python3-dev
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
sudo_cmd=()
if [[ $(id -u) -ne 0 ]]; then
  if command -v sudo >/dev/null; then
    sudo_cmd=(sudo)
  else
    echo "install-deps: missing packages and not root (no sudo): ${missing[*]}" >&2
    exit 1
  fi
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
