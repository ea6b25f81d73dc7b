# Runs the googletest unit tests through lit, one lit test per gtest case.
import lit.formats
config.name = "ridge-unit"
config.test_format = lit.formats.GoogleTest(".", "unittests")
config.test_source_root = config.unittest_dir
config.test_exec_root = config.unittest_dir
