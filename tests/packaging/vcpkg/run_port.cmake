# SPDX-License-Identifier: Apache-2.0
# Runs ports/hybridcache/portfile.cmake the way `vcpkg install` would, without the vcpkg tool
# (which cannot be fetched on the CI machine). The vcpkg helper functions the port calls are
# replaced by small stand-ins that do what vcpkg's do for a header-only CMake project: configure
# with Ninja and the install prefix set to the package directory, install, check the config
# location, copy the license. Then the vcpkg post-build rules that matter for this port are
# checked and the package is copied into installed/<triplet>, as vcpkg lays it out.
#
#   cmake -DPORT_DIR=<ports/hybridcache> -DWORK_DIR=<dir> [-DFEATURES=cuda,openssl]
#         [-DCXX=<compiler>] [-DHAVE_OPENSSL=ON] [-DHAVE_CUDATOOLKIT=ON] -P run_port.cmake
cmake_minimum_required(VERSION 3.23)
foreach(var PORT_DIR WORK_DIR)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "run_port.cmake: -D${var}=... is required")
  endif()
endforeach()

string(REPLACE "," ";" FEATURES "${FEATURES}")  # -DFEATURES=cuda,openssl as in hybridcache[cuda,openssl]

# --- what vcpkg reads from the manifest -------------------------------------------------------
file(READ "${PORT_DIR}/vcpkg.json" _manifest)
string(JSON PORT GET "${_manifest}" name)
string(JSON VERSION GET "${_manifest}" version-semver)
string(JSON _n_features LENGTH "${_manifest}" features)
foreach(f IN LISTS FEATURES)
  string(JSON _desc ERROR_VARIABLE _err GET "${_manifest}" features ${f} description)
  if(_err)
    message(FATAL_ERROR "feature '${f}' is not declared in vcpkg.json")
  endif()
endforeach()

set(TARGET_TRIPLET x64-linux)
set(CURRENT_PACKAGES_DIR "${WORK_DIR}/packages/${PORT}_${TARGET_TRIPLET}")
set(CURRENT_BUILDTREES_DIR "${WORK_DIR}/buildtrees/${PORT}")
set(CURRENT_INSTALLED_DIR "${WORK_DIR}/installed/${TARGET_TRIPLET}")
file(REMOVE_RECURSE "${CURRENT_PACKAGES_DIR}" "${CURRENT_INSTALLED_DIR}")
file(MAKE_DIRECTORY "${CURRENT_PACKAGES_DIR}" "${CURRENT_BUILDTREES_DIR}")

# --- stand-ins for the vcpkg helpers ----------------------------------------------------------
function(vcpkg_from_github)
  message(FATAL_ERROR "the in-tree overlay port must build its own checkout, not download")
endfunction()

function(vcpkg_check_features)
  cmake_parse_arguments(arg "" "OUT_FEATURE_OPTIONS" "FEATURES;INVERTED_FEATURES" ${ARGN})
  set(opts "")
  foreach(kind FEATURES INVERTED_FEATURES)
    set(pairs ${arg_${kind}})
    list(LENGTH pairs n)
    if(n EQUAL 0)
      continue()
    endif()
    math(EXPR last "${n} - 1")
    foreach(i RANGE 0 ${last} 2)
      math(EXPR j "${i} + 1")
      list(GET pairs ${i} feature)
      list(GET pairs ${j} option)
      # (`on`/`off` would be read as boolean constants by if(), hence `enabled`.)
      set(enabled OFF)
      if(feature IN_LIST FEATURES)
        set(enabled ON)
      endif()
      if(kind STREQUAL "INVERTED_FEATURES")
        if(enabled)
          set(enabled OFF)
        else()
          set(enabled ON)
        endif()
      endif()
      list(APPEND opts "-D${option}=${enabled}")
    endforeach()
  endforeach()
  set(${arg_OUT_FEATURE_OPTIONS} "${opts}" PARENT_SCOPE)
endfunction()

function(vcpkg_cmake_configure)
  cmake_parse_arguments(arg "" "SOURCE_PATH" "OPTIONS;OPTIONS_RELEASE" ${ARGN})
  if(NOT VCPKG_BUILD_TYPE STREQUAL "release")
    message(FATAL_ERROR "a header-only port configures once: set(VCPKG_BUILD_TYPE release)")
  endif()
  set(compiler "")
  if(CXX)
    set(compiler "-DCMAKE_CXX_COMPILER=${CXX}")
  endif()
  set(build "${CURRENT_BUILDTREES_DIR}/${TARGET_TRIPLET}-rel")
  file(REMOVE_RECURSE "${build}")
  execute_process(
    COMMAND "${CMAKE_COMMAND}" -S "${arg_SOURCE_PATH}" -B "${build}" -G Ninja ${compiler}
            -DCMAKE_BUILD_TYPE=Release "-DCMAKE_INSTALL_PREFIX=${CURRENT_PACKAGES_DIR}"
            -DCMAKE_INSTALL_BINDIR=bin -DCMAKE_INSTALL_LIBDIR=lib
            -DFETCHCONTENT_FULLY_DISCONNECTED=ON ${arg_OPTIONS} ${arg_OPTIONS_RELEASE}
    RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "vcpkg_cmake_configure: configure failed (${rc})")
  endif()
  set_property(GLOBAL PROPERTY hc_vcpkg_build "${build}")
endfunction()

function(vcpkg_cmake_install)
  get_property(build GLOBAL PROPERTY hc_vcpkg_build)
  execute_process(COMMAND "${CMAKE_COMMAND}" --build "${build}" --target install
                  RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "vcpkg_cmake_install: install failed (${rc})")
  endif()
endfunction()

function(vcpkg_cmake_config_fixup)
  cmake_parse_arguments(arg "" "PACKAGE_NAME;CONFIG_PATH" "" ${ARGN})
  if(NOT arg_PACKAGE_NAME)
    set(arg_PACKAGE_NAME "${PORT}")
  endif()
  if(NOT arg_CONFIG_PATH)
    set(arg_CONFIG_PATH "share/${arg_PACKAGE_NAME}")
  endif()
  set(from "${CURRENT_PACKAGES_DIR}/${arg_CONFIG_PATH}")
  set(to "${CURRENT_PACKAGES_DIR}/share/${arg_PACKAGE_NAME}")
  if(NOT EXISTS "${from}/${arg_PACKAGE_NAME}Config.cmake")
    message(FATAL_ERROR "vcpkg_cmake_config_fixup: no ${arg_PACKAGE_NAME}Config.cmake in ${from}")
  endif()
  if(NOT from STREQUAL to)
    file(COPY "${from}/" DESTINATION "${to}")
    file(REMOVE_RECURSE "${from}")
  endif()
endfunction()

function(vcpkg_fixup_pkgconfig)
  file(GLOB pcs "${CURRENT_PACKAGES_DIR}/share/pkgconfig/*.pc"
                "${CURRENT_PACKAGES_DIR}/lib/pkgconfig/*.pc")
  foreach(pc IN LISTS pcs)
    file(STRINGS "${pc}" prefix REGEX "^prefix=")
    if(NOT prefix MATCHES "pcfiledir")
      message(FATAL_ERROR "vcpkg_fixup_pkgconfig: ${pc} is not relocatable (${prefix})")
    endif()
  endforeach()
endfunction()

function(vcpkg_install_copyright)
  cmake_parse_arguments(arg "" "" "FILE_LIST" ${ARGN})
  set(text "")
  foreach(f IN LISTS arg_FILE_LIST)
    if(NOT EXISTS "${f}")
      message(FATAL_ERROR "vcpkg_install_copyright: ${f} does not exist")
    endif()
    file(READ "${f}" part)
    string(APPEND text "${part}")
  endforeach()
  file(WRITE "${CURRENT_PACKAGES_DIR}/share/${PORT}/copyright" "${text}")
endfunction()

# --- the port itself --------------------------------------------------------------------------
# vcpkg runs portfile.cmake in script mode with CMAKE_CURRENT_LIST_DIR = the port's folder;
# include() gives the same.
include("${PORT_DIR}/portfile.cmake")

# --- vcpkg's post-build checks that apply to a header-only port -------------------------------
set(pkg "${CURRENT_PACKAGES_DIR}")
foreach(required include/hybridcache/hybridcache.hpp include/hybridcache/version.hpp
                 share/${PORT}/hybridcacheConfig.cmake share/${PORT}/hybridcacheConfigVersion.cmake
                 share/${PORT}/hybridcacheTargets.cmake share/${PORT}/copyright
                 share/${PORT}/usage share/pkgconfig/hybridcache.pc
                 share/${PORT}/hybridcacheFindXxhash.cmake share/pkgconfig/hybridcache-eigen.pc)
  if(NOT EXISTS "${pkg}/${required}")
    message(FATAL_ERROR "post-build: ${required} is missing from the package")
  endif()
endforeach()
foreach(forbidden lib debug bin share/cmake lib/cmake)
  if(EXISTS "${pkg}/${forbidden}")
    message(FATAL_ERROR "post-build: a header-only port must not install ${forbidden}/")
  endif()
endforeach()
file(GLOB_RECURSE cmake_files "${pkg}/share/${PORT}/*.cmake")
foreach(f IN LISTS cmake_files)
  file(READ "${f}" text)
  foreach(abs "${CURRENT_BUILDTREES_DIR}" "${CURRENT_PACKAGES_DIR}" "${PORT_DIR}")
    string(FIND "${text}" "${abs}" at)
    if(NOT at EQUAL -1)
      message(FATAL_ERROR "post-build: ${f} contains the absolute path ${abs}")
    endif()
  endforeach()
endforeach()
# The port installs the same header tree as `cmake --install` and the Conan recipe: every
# include/**/*.hpp and kernels/**/*.cuh of the checkout, under include/, and nothing else.
get_filename_component(_src "${PORT_DIR}/../.." ABSOLUTE)
file(GLOB_RECURSE _expected RELATIVE "${_src}/include" "${_src}/include/*.hpp")
file(GLOB_RECURSE _cuda RELATIVE "${_src}/kernels" "${_src}/kernels/*.cuh")
list(APPEND _expected ${_cuda})
file(GLOB_RECURSE _installed RELATIVE "${pkg}/include" "${pkg}/include/*")
list(SORT _expected)
list(SORT _installed)
if(NOT _expected STREQUAL _installed)
  set(_missing ${_expected})
  list(REMOVE_ITEM _missing ${_installed})
  set(_extra ${_installed})
  list(REMOVE_ITEM _extra ${_expected})
  message(FATAL_ERROR "post-build: the package's include/ differs from the checkout's headers "
                      "(missing: ${_missing}; not from include/ or kernels/: ${_extra})")
endif()
list(LENGTH _installed _n_headers)
message(STATUS "post-build: ${_n_headers} headers, the checkout's include/ and kernels/ exactly")
file(READ "${pkg}/share/${PORT}/hybridcacheConfigVersion.cmake" version_file)
if(NOT version_file MATCHES "PACKAGE_VERSION \"${VERSION}\"")
  message(FATAL_ERROR "post-build: vcpkg.json says ${VERSION}, the package config does not")
endif()
file(READ "${pkg}/share/${PORT}/hybridcacheTargets.cmake" targets)
# Eigen belongs to hybridcache::eigen only; the core needs just the xxHash headers.
if(NOT targets MATCHES "hybridcache::eigen")
  message(FATAL_ERROR "post-build: no hybridcache::eigen target (state/, select/)")
endif()
# Optional parts follow the features, not the machine (HAVE_* say what the machine has).
if("openssl" IN_LIST FEATURES AND HAVE_OPENSSL AND NOT targets MATCHES "hybridcache::openssl")
  message(FATAL_ERROR "post-build: feature openssl but no hybridcache::openssl target")
endif()
if(NOT "openssl" IN_LIST FEATURES AND targets MATCHES "hybridcache::openssl")
  message(FATAL_ERROR "post-build: hybridcache::openssl exported without the openssl feature")
endif()
if(NOT "redis" IN_LIST FEATURES AND targets MATCHES "hybridcache::redis")
  message(FATAL_ERROR "post-build: hybridcache::redis exported without the redis feature")
endif()
if("cuda" IN_LIST FEATURES AND HAVE_CUDATOOLKIT AND NOT targets MATCHES "CUDA::cudart")
  message(FATAL_ERROR "post-build: feature cuda but hybridcache::cuda does not link CUDA::cudart")
endif()
if(NOT "cuda" IN_LIST FEATURES AND targets MATCHES "CUDA::")
  message(FATAL_ERROR "post-build: CUDA linked without the cuda feature")
endif()

# vcpkg then merges the package into installed/<triplet>; consumers see that prefix through
# the vcpkg toolchain's CMAKE_PREFIX_PATH.
file(COPY "${pkg}/" DESTINATION "${CURRENT_INSTALLED_DIR}")
message(STATUS "vcpkg layout OK: ${PORT} ${VERSION} [${FEATURES}] -> ${CURRENT_INSTALLED_DIR}")
