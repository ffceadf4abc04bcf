# SPDX-License-Identifier: Apache-2.0
import os
import sys

# reference.py and checks.py sit beside the tests.
sys.path.insert(0, os.path.dirname(__file__))
