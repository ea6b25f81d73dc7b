# lit configuration for ridge: tests are .onnxtxt models (and a few shell
# tests) whose '#' comment lines carry RUN and CHECK directives.
import os
import lit.formats

config.name = "ridge"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".onnxtxt", ".test"]
config.excludes = ["Inputs", "unit", "fuzz", "CMakeLists.txt"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.ridge_obj_root, "test")

# FileCheck, not, count, split-file live under /usr/lib/llvm-19/bin on Debian.
config.environment["PATH"] = os.pathsep.join(
    [config.ridge_tools_dir, config.llvm_tools_dir, config.environment.get("PATH", os.environ["PATH"])])
config.environment["NO_COLOR"] = "1"
if config.sanitized:
    config.environment["ASAN_OPTIONS"] = "detect_leaks=1:abort_on_error=0"
    config.environment["UBSAN_OPTIONS"] = "print_stacktrace=1:halt_on_error=1"
    config.available_features.add("sanitized")
if getattr(config, "python_module", False):
    config.available_features.add("python-module")
    config.environment["PYTHONPATH"] = os.path.join(config.ridge_obj_root, "python")

# Longer names first: lit substitutes in order, and %ridge is a prefix.
config.substitutions.append(("%ridge_bindir", config.ridge_tools_dir))
config.substitutions.append(("%ridge", os.path.join(config.ridge_tools_dir, "ridge")))
config.substitutions.append(("%python", config.python))
config.substitutions.append(("%testdata", config.onnx_testdata_dir))
config.substitutions.append(("%srcroot", config.ridge_src_root))
# Debian's chromium (scripts/install-deps.sh installs it): the HTML report's
# tests load the page in it, headless.
import shutil
if shutil.which("chromium"):
    config.available_features.add("chromium")
if os.path.isdir(config.onnx_testdata_dir):
    config.available_features.add("onnx-testdata")
