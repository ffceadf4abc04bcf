# SPDX-License-Identifier: Apache-2.0
# vcpkg port of hybridcache, a header-only library (the mdspan/fmt port pattern).
#
# Used as an overlay port from a checkout (`vcpkg install hybridcache
# --overlay-ports=<checkout>/ports`), it builds the checkout it lives in, so a serving engine can
# pin hybridcache to a commit without a release. Copied into a registry on its own, it fetches
# the tagged release instead (set SHA512 to the tarball's hash when tagging: vcpkg prints the
# right value on the first failed download).
set(VCPKG_BUILD_TYPE release)  # header-only: one configuration is enough

if(EXISTS "${CMAKE_CURRENT_LIST_DIR}/../../include/hybridcache/version.hpp")
  get_filename_component(SOURCE_PATH "${CMAKE_CURRENT_LIST_DIR}/../.." ABSOLUTE)
else()
  vcpkg_from_github(
    OUT_SOURCE_PATH SOURCE_PATH
    REPO hybridcache/hybridcache
    REF "v${VERSION}"
    SHA512 0
    HEAD_REF main
  )
endif()

# Optional parts follow the features, never what happens to be installed on the build machine.
vcpkg_check_features(OUT_FEATURE_OPTIONS FEATURE_OPTIONS
  INVERTED_FEATURES
    cuda    CMAKE_DISABLE_FIND_PACKAGE_CUDAToolkit
    openssl CMAKE_DISABLE_FIND_PACKAGE_OpenSSL
    redis   CMAKE_DISABLE_FIND_PACKAGE_hiredis
)

vcpkg_cmake_configure(
  SOURCE_PATH "${SOURCE_PATH}"
  OPTIONS
    ${FEATURE_OPTIONS}
    -DCMAKE_DISABLE_FIND_PACKAGE_llama=ON  # engines/llama_cpp.hpp: no vcpkg feature (llama.cpp from source)
    -DHYBRIDCACHE_BUILD_TESTS=OFF
    -DHYBRIDCACHE_BUILD_EXAMPLES=OFF
    -DHYBRIDCACHE_BUILD_TOOLS=OFF
    -DHYBRIDCACHE_BUILD_BENCHMARKS=OFF
    -DHYBRIDCACHE_ENABLE_CUDA=OFF
    -DHYBRIDCACHE_INSTALL=ON
    -DHYBRIDCACHE_CMAKE_DIR=share/hybridcache
)

vcpkg_cmake_install()
vcpkg_cmake_config_fixup(PACKAGE_NAME hybridcache CONFIG_PATH share/hybridcache)
vcpkg_fixup_pkgconfig()

# Header-only: nothing belongs in lib/ or debug/.
file(REMOVE_RECURSE "${CURRENT_PACKAGES_DIR}/lib" "${CURRENT_PACKAGES_DIR}/debug")

file(INSTALL "${CMAKE_CURRENT_LIST_DIR}/usage" DESTINATION "${CURRENT_PACKAGES_DIR}/share/${PORT}")
vcpkg_install_copyright(FILE_LIST "${SOURCE_PATH}/LICENSE")
