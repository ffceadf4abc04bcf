#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Conan 2 packaging test: installs conan from PyPI into build/conan-venv, then in a private
# CONAN_HOME (build/conan-home, so no user cache or remote is touched):
#   1. exports packaging/conan/eigen as eigen/3.4.0 and packaging/conan/xxhash as xxhash/0.8.2
#      (the system headers: ConanCenter is not reachable from CI),
#   2. `conan create .` with C++20: packages hybridcache and builds + runs test_package/,
#   3. checks the package layout (headers, license, no libraries),
#   4. checks that validate() refuses C++17 (check_min_cppstd(20)),
#   5. checks the release (issue #25): the reference's version is version.hpp's, test_package
#      asked find_package for that major.minor and got those headers, the package holds exactly
#      the checkout's headers (the tree `cmake --install` and the vcpkg port install), and the
#      config version file CMakeDeps generated refuses the previous/next minor and next major.
# Needs PyPI once (the venv is kept between runs); a machine without it skips with a message.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
venv="$root/build/conan-venv"
export CONAN_HOME="$root/build/conan-home"
python=${PYTHON:-python3}
passed=0

if [[ ! -x "$venv/bin/conan" ]]; then
  rm -rf "$venv"
  "$python" -m venv "$venv"
  if ! "$venv/bin/pip" install -q --disable-pip-version-check "conan>=2.0,<3"; then
    echo "conan.sh: conan could not be installed from PyPI; Conan packaging NOT tested" >&2
    rm -rf "$venv"
    exit 0
  fi
fi
conan="$venv/bin/conan"
"$conan" --version

"$conan" profile detect --exist-ok >/dev/null
# A fixed, explicit configuration: C++20, Release, Ninja when it is there.
settings=(-s compiler.cppstd=20 -s build_type=Release)
# test_package builds under build/, and no CMakeUserPresets.json is left in the source tree.
conf=(-c "tools.cmake.cmake_layout:test_folder=$root/build/conan-test-package"
      -c "tools.cmake.cmaketoolchain:user_presets=")
if command -v ninja >/dev/null; then
  conf+=(-c tools.cmake.cmaketoolchain:generator=Ninja)
fi

"$conan" export packaging/conan/eigen
"$conan" export packaging/conan/xxhash
version=$("$conan" inspect . --format=json | "$venv/bin/python" -c 'import json,sys; print(json.load(sys.stdin)["version"])')
ref="hybridcache/$version"
hpp_version=$(sed -n 's/^#define HYBRIDCACHE_VERSION_\(MAJOR\|MINOR\|PATCH\) \([0-9]*\)$/\2/p' \
                include/hybridcache/version.hpp | paste -sd.)
if [[ "$version" != "$hpp_version" ]]; then
  echo "conan.sh: the recipe says $version, version.hpp says $hpp_version" >&2
  exit 1
fi
echo "conan.sh: creating $ref"
"$conan" create . "${settings[@]}" "${conf[@]}" --build=missing --no-remote
passed=$((passed + 1))

# The package holds the headers (host and CUDA) and the license, and nothing compiled.
pkg=$("$conan" cache path "$ref:$("$conan" list "$ref:*" --format=json | "$venv/bin/python" -c '
import json, sys
d = json.load(sys.stdin)["Local Cache"]
(rrev,) = [r for k in d.values() for r in k["revisions"].values()]
print(next(iter(rrev["packages"])))')")
for f in include/hybridcache/hybridcache.hpp include/hybridcache/version.hpp licenses/LICENSE; do
  [[ -f "$pkg/$f" ]] || { echo "conan.sh: $f missing from the package $pkg" >&2; exit 1; }
done
if [[ -d "$pkg/lib" || -d "$pkg/bin" ]]; then
  echo "conan.sh: a header-library package must not contain lib/ or bin/" >&2
  exit 1
fi
# Exactly the checkout's headers: include/**/*.hpp and kernels/**/*.cuh, under include/.
if ! diff <( (cd include && find . -name '*.hpp'; cd ../kernels && find . -name '*.cuh') | sort) \
          <(cd "$pkg/include" && find . -type f | sort); then
  echo "conan.sh: the package's include/ differs from the checkout's headers (< checkout, > package)" >&2
  exit 1
fi
passed=$((passed + 1))

# The config version file CMakeDeps generated for test_package (find_package(hybridcache X.Y)
# there already accepted this major.minor) must refuse what the CMake install refuses.
mapfile -t vfiles < <(find "$root/build/conan-test-package" -name 'hybridcache-config-version.cmake')
if [[ ${#vfiles[@]} -ne 1 ]]; then
  echo "conan.sh: expected one hybridcache-config-version.cmake under build/conan-test-package, found ${#vfiles[@]}" >&2
  exit 1
fi
IFS=. read -r major minor _ <<<"$version"
requests=("$major.$minor:compatible" "$version:compatible" "$major.$((minor + 1)):refused"
          "$((major + 1)).0:refused")
if (( minor > 0 )); then requests+=("$major.$((minor - 1)):refused"); fi
for r in "${requests[@]}"; do
  cmake -DFILE="${vfiles[0]}" -DREQUEST="${r%%:*}" -DEXPECT="${r##*:}" \
        -P tests/packaging/version_request.cmake
done
passed=$((passed + 1))

# check_min_cppstd(20): C++17 must be refused by validate(), before anything is built.
if out=$("$conan" install --requires="$ref" -s compiler.cppstd=17 --no-remote 2>&1); then
  echo "$out"
  echo "conan.sh: C++17 was accepted; validate() must require C++20" >&2
  exit 1
fi
if ! grep -qi "lower than the required C++ standard (20)" <<<"$out"; then
  echo "$out"
  echo "conan.sh: C++17 failed for another reason than the C++20 requirement" >&2
  exit 1
fi
passed=$((passed + 1))
echo "conan: $passed passed, 0 failed"
