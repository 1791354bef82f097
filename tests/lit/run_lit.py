"""Runs the lit suite in tests/lit under Bazel with LLVM 22's lit and FileCheck.

Arguments: the tfpgo-opt and tfpgo-test-opt binaries, then lit flags. Lit writes its scratch files
under $TEST_TMPDIR so that the read-only runfiles tree stays untouched.
"""

import os
import sys

LLVM_ROOT = "/usr/lib/llvm-22"


def main() -> int:
    tfpgo_opt, tfpgo_test_opt, *lit_args = sys.argv[1:]
    here = os.path.dirname(os.path.abspath(__file__))
    os.environ["TFPGO_OPT"] = os.path.abspath(tfpgo_opt)
    os.environ["TFPGO_TEST_OPT"] = os.path.abspath(tfpgo_test_opt)
    os.environ["TFPGO_TEST_DATA"] = os.path.join(here, "..", "data")
    os.environ["TFPGO_PYTHON_BIN"] = sys.executable
    os.environ["LLVM_BIN"] = os.path.join(LLVM_ROOT, "bin")
    os.environ.setdefault("TFPGO_LIT_EXEC_ROOT", os.environ.get("TEST_TMPDIR", here))
    sys.path.insert(0, os.path.join(LLVM_ROOT, "utils", "lit"))
    from lit.main import main as lit_main  # pylint: disable=import-outside-toplevel

    args = ["lit", "-v", *lit_args]
    if xml := os.environ.get("XML_OUTPUT_FILE"):
        args.append(f"--xunit-xml-output={xml}")
    sys.argv = [*args, here]
    try:
        lit_main()
    except SystemExit as done:
        return int(done.code or 0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
