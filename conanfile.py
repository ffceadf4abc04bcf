# SPDX-License-Identifier: Apache-2.0
"""Conan 2 recipe for hybridcache, a header-only C++20 library.

    conan create . -s compiler.cppstd=20          # package it into the local cache
    # then, in a consumer: requires = "hybridcache/0.2.0"; find_package(hybridcache CONFIG)
    #                      target_link_libraries(app PRIVATE hybridcache::hybridcache)  # core
    #                      target_link_libraries(app PRIVATE hybridcache::eigen)  # + state/, select/

Two components, as the CMake package has them: ``hybridcache::hybridcache`` (the core; needs the
xxHash headers, used header-only) and ``hybridcache::eigen`` (state/, select/ and the umbrella
header; adds Eigen). Eigen and xxHash come from ``eigen/3.4.0`` and ``xxhash/0.8.2``
(ConanCenter). Offline, export stand-ins under those references first: ``conan export
packaging/conan/eigen`` and ``conan export packaging/conan/xxhash`` package the system's headers
(see docs/install.md); the recipe below is the same either way.
"""

import os
import re

from conan import ConanFile
from conan.tools.build import check_min_cppstd
from conan.tools.files import copy, load
from conan.tools.layout import basic_layout

required_conan_version = ">=2.0"


class HybridcacheConan(ConanFile):
    name = "hybridcache"
    description = ("Header-only C++20 cache policies and state algebra for hybrid LLM serving: "
                   "checkpoint placement, linear-attention state composition, segment keys, "
                   "cold-segment dispatch")
    license = "Apache-2.0"
    homepage = "https://github.com/hybridcache/hybridcache"
    url = "https://github.com/hybridcache/hybridcache"
    topics = ("llm", "serving", "prefix-caching", "linear-attention", "header-only")
    package_type = "header-library"
    settings = "os", "arch", "compiler", "build_type"
    exports_sources = "include/*", "kernels/*", "LICENSE"
    no_copy_source = True

    def set_version(self):
        # The version lives once, in version.hpp (as CMake reads it).
        if self.version:
            return
        text = load(self, os.path.join(self.recipe_folder, "include", "hybridcache", "version.hpp"))
        parts = [re.search(rf"#define HYBRIDCACHE_VERSION_{k} (\d+)", text).group(1)
                 for k in ("MAJOR", "MINOR", "PATCH")]
        self.version = ".".join(parts)

    def layout(self):
        basic_layout(self, src_folder=".")

    def requirements(self):
        # Eigen types appear in the public state/ headers (component `eigen`), and segment/hash.hpp
        # includes xxhash.h (component `core`), so consumers need both packages' headers.
        self.requires("eigen/3.4.0", transitive_headers=True)
        self.requires("xxhash/0.8.2", transitive_headers=True)

    def package_id(self):
        # One package for every configuration: nothing is compiled.
        self.info.clear()

    def validate(self):
        check_min_cppstd(self, 20)

    def package(self):
        copy(self, "LICENSE", self.source_folder, os.path.join(self.package_folder, "licenses"))
        copy(self, "*.hpp", os.path.join(self.source_folder, "include"),
             os.path.join(self.package_folder, "include"))
        # CUDA backend headers install beside the host ones (include/hybridcache/cuda/), as the
        # CMake install does; they are used only by code compiled with nvcc.
        copy(self, "*.cuh", os.path.join(self.source_folder, "kernels"),
             os.path.join(self.package_folder, "include"))

    def package_info(self):
        self.cpp_info.set_property("cmake_file_name", "hybridcache")
        # The generated hybridcache-config-version.cmake follows the installed package's rule
        # (CMakeLists.txt): before 1.0 a minor release may break the API, so 0.2.x satisfies a
        # request for 0.2 but not 0.1; from 1.0 on, the major version decides.
        major = str(self.version).split(".")[0]
        self.cpp_info.set_property("cmake_config_version_compat",
                                   "SameMinorVersion" if major == "0" else "SameMajorVersion")
        # The aggregate of every component (CMakeDeps names one); consumers use the components.
        self.cpp_info.set_property("cmake_target_name", "hybridcache::hybridcache_all")
        self.cpp_info.set_property("pkg_config_name", "hybridcache-all")
        core = self.cpp_info.components["core"]
        core.set_property("cmake_target_name", "hybridcache::hybridcache")
        core.set_property("pkg_config_name", "hybridcache")
        core.requires = ["xxhash::xxhash"]
        eigen = self.cpp_info.components["eigen"]
        eigen.set_property("cmake_target_name", "hybridcache::eigen")
        eigen.set_property("pkg_config_name", "hybridcache-eigen")
        eigen.requires = ["core", "eigen::eigen"]
        for c in (core, eigen):
            c.bindirs = []
            c.libdirs = []
