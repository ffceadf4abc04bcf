# SPDX-License-Identifier: Apache-2.0
"""A stand-in for ConanCenter's ``eigen/3.4.0`` built from the Eigen headers already installed on
the machine (Debian's libeigen3-dev: /usr/include/eigen3), for machines that cannot reach
ConanCenter. It exposes what ConanCenter's recipe exposes to consumers: the CMake package
``Eigen3`` with target ``Eigen3::Eigen`` and the pkg-config name ``eigen3``.

    conan export packaging/conan/eigen            # then `conan create .` finds eigen/3.4.0

Set EIGEN3_INCLUDE_DIR to use another installation. Use a separate CONAN_HOME for it (as
scripts/test.d/conan.sh does) so it never shadows the real recipe in a cache that has remotes.
"""

import os
import re

from conan import ConanFile
from conan.errors import ConanInvalidConfiguration
from conan.tools.files import copy, load

required_conan_version = ">=2.0"


class SystemEigenConan(ConanFile):
    name = "eigen"
    version = "3.4.0"
    description = "Eigen headers taken from the system installation (offline stand-in)"
    license = ("MPL-2.0", "LGPL-3.0-or-later")
    package_type = "header-library"
    settings = "os", "arch", "compiler", "build_type"
    no_copy_source = True

    def _system_dir(self):
        return os.environ.get("EIGEN3_INCLUDE_DIR", "/usr/include/eigen3")

    def package_id(self):
        self.info.clear()

    def _check_version(self, root):
        macros = os.path.join(root, "Eigen", "src", "Core", "util", "Macros.h")
        if not os.path.isfile(macros):
            raise ConanInvalidConfiguration(
                f"no Eigen headers in {root} (install libeigen3-dev or set EIGEN3_INCLUDE_DIR)")
        text = load(self, macros)
        found = ".".join(re.search(rf"#define EIGEN_{k}_VERSION (\d+)", text).group(1)
                         for k in ("WORLD", "MAJOR", "MINOR"))
        if found != str(self.version):
            raise ConanInvalidConfiguration(f"{root} holds Eigen {found}, not {self.version}")

    def package(self):
        root = self._system_dir()
        self._check_version(root)
        dst = os.path.join(self.package_folder, "include", "eigen3")
        copy(self, "*", os.path.join(root, "Eigen"), os.path.join(dst, "Eigen"))
        copy(self, "*", os.path.join(root, "unsupported"), os.path.join(dst, "unsupported"))
        copy(self, "signature_of_eigen3_matrix_library", root, dst)

    def package_info(self):
        self.cpp_info.set_property("cmake_file_name", "Eigen3")
        self.cpp_info.set_property("cmake_target_name", "Eigen3::Eigen")
        self.cpp_info.set_property("pkg_config_name", "eigen3")
        self.cpp_info.includedirs = [os.path.join("include", "eigen3")]
        self.cpp_info.bindirs = []
        self.cpp_info.libdirs = []
