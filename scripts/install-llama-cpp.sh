#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds and installs llama.cpp (the `llama` + `ggml` libraries, their headers and CMake package)
# from the source that the PyPI sdist of llama-cpp-python vendors (vendor/llama.cpp), so the
# optional component hybridcache::llama_cpp and the real-engine tests can be built. No model and
# no binary is downloaded: PyPI's sdist is the only network access.
#
#   scripts/install-llama-cpp.sh            # into /opt/llama.cpp (LLAMA_CPP_PREFIX to change)
#   LLAMA_CPP_SERVER=1 scripts/install-llama-cpp.sh   # also bin/llama-server (the external anchor)
#
# The project's CMakeLists.txt looks in /opt/llama.cpp by default, so a plain
# `cmake -S . -B build` finds it. Idempotent: when the prefix already holds this exact version
# (stamp file), nothing is downloaded or built. Without PyPI it skips, loudly, with status 0.
# LLAMA_CPP_JOBS sets the build parallelism (default: nproc).
#
# LLAMA_CPP_SERVER=1 also builds `llama-server` (tools/server) in the same build tree, on top of
# the library (only common, mtmd and the server are compiled; the libraries are relinked), and
# installs it as $prefix/bin/llama-server with its three private shared libraries
# (libllama-common, libmtmd, libllama-server-impl) in $prefix/lib. Its own stamp
# (llama-server.stamp) records it: a library-only install is never taken for one with the server.
# The web UI is neither built (npm) nor downloaded (LLAMA_USE_PREBUILT_UI=OFF): no network.
set -euo pipefail
cd "$(dirname "$0")/.."

# Pinned: llama-cpp-python 0.3.36 vendors llama.cpp at commit 0c1e57098. The sha256 is the
# sdist's, computed once when it was pinned; a different file is refused.
version=0.3.36
sha256=832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e
prefix=${LLAMA_CPP_PREFIX:-/opt/llama.cpp}
jobs=${LLAMA_CPP_JOBS:-$(nproc)}
work="$PWD/build/llama-cpp"
sdist="$work/llama_cpp_python-$version.tar.gz"
# CMAKE_INSTALL_RPATH=$ORIGIN: libllama.so finds libggml*.so beside it without LD_LIBRARY_PATH or
# ldconfig (a consumer's RUNPATH does not apply to its libraries' own dependencies).
options=(-DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=ON '-DCMAKE_INSTALL_RPATH=$ORIGIN'
  -DGGML_NATIVE=OFF -DGGML_CCACHE=OFF
  -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_EXAMPLES=OFF
  -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_COMMON=OFF -DLLAMA_BUILD_APP=OFF -DLLAMA_OPENSSL=OFF)
# The server's build adds these (same tree; the library's own objects are unchanged). The install
# RPATH with BUILD_WITH_INSTALL_RPATH lets the binary run from build/bin (libraries beside it) and
# from $prefix/bin (libraries in ../lib); it changes link steps only.
server_options=(-DLLAMA_BUILD_COMMON=ON -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_SERVER=ON
  -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_TOOLS_INSTALL=OFF
  '-DCMAKE_INSTALL_RPATH=$ORIGIN;$ORIGIN/../lib' -DCMAKE_BUILD_WITH_INSTALL_RPATH=ON)
server=${LLAMA_CPP_SERVER:-0}
stamp_file="$prefix/share/hybridcache/llama-cpp.stamp"
stamp="llama-cpp-python==$version sha256=$sha256 ${options[*]}"
server_stamp_file="$prefix/share/hybridcache/llama-server.stamp"
server_stamp="$stamp ${server_options[*]}"

have_library=0
if [[ -f "$stamp_file" && "$(cat "$stamp_file")" == "$stamp" &&
      -f "$prefix/include/llama.h" ]]; then
  have_library=1
fi
have_server=0
if [[ -f "$server_stamp_file" && "$(cat "$server_stamp_file")" == "$server_stamp" &&
      -x "$prefix/bin/llama-server" ]]; then
  have_server=1
fi
if [[ $have_library == 1 && ( $server != 1 || $have_server == 1 ) ]]; then
  echo "install-llama-cpp.sh: llama.cpp from llama-cpp-python $version already in" \
       "$prefix$([[ $server == 1 ]] && echo " (with llama-server)")"
  exit 0
fi

start=$(date +%s)
mkdir -p "$work"
if [[ ! -f "$sdist" ]] || ! echo "$sha256  $sdist" | sha256sum -c --quiet - 2>/dev/null; then
  rm -f "$sdist"
  if ! python3 -m pip download -q --disable-pip-version-check --no-binary :all: --no-deps \
       -d "$work" "llama-cpp-python==$version"; then
    echo "install-llama-cpp.sh: llama-cpp-python==$version could not be downloaded from PyPI;" \
         "llama.cpp is NOT installed and the real-engine tests will be skipped" >&2
    exit 0
  fi
fi
if ! echo "$sha256  $sdist" | sha256sum -c --quiet -; then
  echo "install-llama-cpp.sh: $sdist does not have the pinned sha256 $sha256" >&2
  exit 1
fi

# An interrupted build is resumed, and a change of options rebuilds only what it touches: the
# sources (with the sdist's timestamps) and the build tree stay under build/llama-cpp/.
src="$work/llama_cpp_python-$version/vendor/llama.cpp"
if [[ ! -f "$src/CMakeLists.txt" ]]; then
  tar -xzf "$sdist" -C "$work" "llama_cpp_python-$version/vendor/llama.cpp"
  rm -f "$src/.git"  # a submodule link into the sdist's absent .git: git would print errors
fi
if [[ $have_library != 1 ]]; then
  cmake -S "$src" -B "$work/build" -DCMAKE_INSTALL_PREFIX="$prefix" "${options[@]}" >/dev/null
  nice cmake --build "$work/build" --target llama -j"$jobs"
  cmake --install "$work/build" >/dev/null
  mkdir -p "$(dirname "$stamp_file")"
  echo "$stamp" > "$stamp_file"
  echo "install-llama-cpp.sh: llama.cpp installed in $prefix in $(( $(date +%s) - start ))s"
fi
if [[ $server == 1 && $have_server != 1 ]]; then
  # Not `cmake --install`: with LLAMA_BUILD_TOOLS=ON it would want every tool built, and it
  # would rewrite the installed libraries under running consumers. Only new files are copied.
  server_start=$(date +%s)
  cmake -S "$src" -B "$work/build" -DCMAKE_INSTALL_PREFIX="$prefix" "${options[@]}" \
    "${server_options[@]}" >/dev/null
  nice cmake --build "$work/build" --target llama-server -j"$jobs"
  mkdir -p "$prefix/bin" "$prefix/lib" "$(dirname "$server_stamp_file")"
  for lib in libllama-common libmtmd libllama-server-impl; do
    cp -P "$work/build/bin/$lib".so* "$prefix/lib/"
  done
  install -m 755 "$work/build/bin/llama-server" "$prefix/bin/llama-server"
  "$prefix/bin/llama-server" --version >/dev/null 2>&1 || {
    echo "install-llama-cpp.sh: $prefix/bin/llama-server does not run" >&2
    exit 1
  }
  echo "$server_stamp" > "$server_stamp_file"
  echo "install-llama-cpp.sh: llama-server installed in $prefix/bin in" \
       "$(( $(date +%s) - server_start ))s"
fi
