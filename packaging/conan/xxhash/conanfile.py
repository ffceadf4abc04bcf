# SPDX-License-Identifier: Apache-2.0
"""A stand-in for ConanCenter's ``xxhash/0.8.2`` built from the xxHash headers already installed
on the machine (Debian's libxxhash-dev: /usr/include/xxhash.h), for machines that cannot reach
ConanCenter. It exposes what ConanCenter's recipe exposes to consumers: the CMake package
``xxHash`` with target ``xxHash::xxhash`` and the pkg-config name ``libxxhash``. hybridcache uses
xxHash header-only (XXH_INLINE_ALL), so the headers are all it packages.

    conan export packaging/conan/xxhash           # then `conan create .` finds xxhash/0.8.2

Set XXHASH_INCLUDE_DIR to use another installation. Use a separate CONAN_HOME for it (as
scripts/test.d/conan.sh does) so it never shadows the real recipe in a cache that has remotes.
"""

import os
import re

from conan import ConanFile
from conan.errors import ConanInvalidConfiguration
from conan.tools.files import copy, load

required_conan_version = ">=2.0"


class SystemXxhashConan(ConanFile):
    name = "xxhash"
    version = "0.8.2"
    description = "xxHash headers taken from the system installation (offline stand-in)"
    license = "BSD-2-Clause"
    package_type = "header-library"
    settings = "os", "arch", "compiler", "build_type"
    no_copy_source = True

    def _system_dir(self):
        return os.environ.get("XXHASH_INCLUDE_DIR", "/usr/include")

    def package_id(self):
        self.info.clear()

    def package(self):
        root = self._system_dir()
        header = os.path.join(root, "xxhash.h")
        if not os.path.isfile(header):
            raise ConanInvalidConfiguration(
                f"no xxhash.h in {root} (install libxxhash-dev or set XXHASH_INCLUDE_DIR)")
        text = load(self, header)
        found = tuple(int(re.search(rf"#define XXH_VERSION_{k}\s+(\d+)", text).group(1))
                      for k in ("MAJOR", "MINOR", "RELEASE"))
        if found < (0, 8, 0):
            raise ConanInvalidConfiguration(f"{header} is xxHash {found}, older than 0.8.0")
        dst = os.path.join(self.package_folder, "include")
        for h in ("xxhash.h", "xxh3.h"):
            copy(self, h, root, dst)

    def package_info(self):
        self.cpp_info.set_property("cmake_file_name", "xxHash")
        self.cpp_info.set_property("cmake_target_name", "xxHash::xxhash")
        self.cpp_info.set_property("pkg_config_name", "libxxhash")
        self.cpp_info.bindirs = []
        self.cpp_info.libdirs = []
