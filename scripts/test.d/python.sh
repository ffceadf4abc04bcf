#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The Python module: a venv in build/pyvenv (Debian's python3 is externally managed, PEP 668),
# numpy + pytest + the build requirements from PyPI, `pip install .` (scikit-build-core builds
# python/ only, one translation unit, cached in build/python/), then pytest on python/tests.
# Works with any python3 >= 3.9 (Debian's /usr/bin/python3 with python3-dev + python3-venv, or a
# pyenv one); PYTHON=/path/to/python3 picks another. Without PyPI the test is skipped, loudly.
set -euo pipefail
cd "$(dirname "$0")/../.."
python=${PYTHON:-python3}
venv="$PWD/build/pyvenv"
pip_quiet=(-q --disable-pip-version-check)

# A venv made by another interpreter (or a broken one) is rebuilt.
want=$("$python" -c 'import sys; print(sys.version.split()[0], sys.prefix)' 2>/dev/null || true)
if [[ ! -x "$venv/bin/python" ]] || [[ "$(cat "$venv/.made-by" 2>/dev/null)" != "$want" ]]; then
  rm -rf "$venv"
  "$python" -m venv "$venv"
  echo "$want" > "$venv/.made-by"
fi
py="$venv/bin/python"

if ! "$py" -m pip install "${pip_quiet[@]}" "numpy>=1.22" "pytest>=7" \
     "scikit-build-core>=0.10" "nanobind>=2.2"; then
  echo "python.sh: numpy/pytest/nanobind/scikit-build-core could not be installed from PyPI;" \
       "the Python module was NOT tested" >&2
  exit 0
fi

# The build requirements are already in the venv: build without isolation (no second download)
# and keep the CMake build tree (build/python/<tag>) between runs.
"$py" -m pip install "${pip_quiet[@]}" --no-build-isolation --force-reinstall --no-deps \
  --config-settings=build-dir=build/python/{wheel_tag} .

# Run from outside the source tree so `import hybridcache` is the installed package.
cd build
"$py" -m pytest -q -p no:cacheprovider ../python/tests
