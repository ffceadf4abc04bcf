# SPDX-License-Identifier: Apache-2.0
"""`conan create .` builds and runs this consumer against the freshly created package.

It asks CMake for the package's own major.minor (``find_package(hybridcache X.Y ...)``) and checks
that the headers report the version Conan packaged (``HC_EXPECTED_VERSION``).
"""

import os

from conan import ConanFile
from conan.tools.build import can_run
from conan.tools.cmake import CMake, CMakeDeps, CMakeToolchain, cmake_layout


class HybridcacheTestConan(ConanFile):
    settings = "os", "arch", "compiler", "build_type"
    test_type = "explicit"

    def requirements(self):
        self.requires(self.tested_reference_str)

    def layout(self):
        cmake_layout(self)

    def generate(self):
        CMakeDeps(self).generate()
        tc = CMakeToolchain(self)
        tc.cache_variables["HC_EXPECTED_VERSION"] = str(self.dependencies["hybridcache"].ref.version)
        tc.generate()

    def build(self):
        cmake = CMake(self)
        cmake.configure()
        cmake.build()

    def test(self):
        if can_run(self):
            self.run(os.path.join(self.cpp.build.bindir, "test_package"), env="conanrun")
