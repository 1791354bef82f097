# lit configuration for tfpgo's MLIR tests (tfpgo-opt, FileCheck from LLVM 22).
# %tfpgo_opt is the user-facing driver; %tfpgo_test_opt the same plus the TEST
# ONLY tfpgo_test dialect, for the tests of the trait/interface path.
# ruff: noqa: F821  (lit injects `config`)
import os

import lit.formats

config.name = "tfpgo"
config.test_format = lit.formats.ShTest(execute_external=True)
config.suffixes = [".mlir"]
config.excludes = ["lit.cfg.py", "Inputs"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.environ.get("TFPGO_LIT_EXEC_ROOT", config.test_source_root)

llvm_bin = os.environ.get("LLVM_BIN", "/usr/lib/llvm-22/bin")
tfpgo_opt_dir = os.path.dirname(os.path.abspath(os.environ["TFPGO_OPT"]))
system_path = config.environment.get("PATH", "/usr/bin:/bin")
config.environment["PATH"] = os.pathsep.join([tfpgo_opt_dir, llvm_bin, system_path])
# %tfpgo_test_opt first: lit substitutes in order, and %tfpgo_opt is its prefix.
config.substitutions.append(("%tfpgo_test_opt", os.path.abspath(os.environ["TFPGO_TEST_OPT"])))
config.substitutions.append(("%tfpgo_opt", os.path.abspath(os.environ["TFPGO_OPT"])))
config.substitutions.append(("%test_data", os.path.abspath(os.environ["TFPGO_TEST_DATA"])))
config.substitutions.append(("%python", os.environ.get("TFPGO_PYTHON_BIN", "python3")))
