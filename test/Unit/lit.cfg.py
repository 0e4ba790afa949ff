# -*- Python -*-
# Runs every GoogleTest binary in build/unittests (names end in "Tests").

import os

import lit.formats

config.name = "pipeopt-Unit"
config.suffixes = []
config.test_source_root = os.path.join(config.pipeopt_obj_root, "unittests")
config.test_exec_root = config.test_source_root
config.test_format = lit.formats.GoogleTest(".", "Tests")
