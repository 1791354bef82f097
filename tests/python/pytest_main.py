"""Entry point of every pytest py_test: runs pytest on the files given as args.

Bazel's test runner understands JUnit XML ($XML_OUTPUT_FILE) and expects temp
files under $TEST_TMPDIR. A suite that collects no test fails: a target that
runs nothing is a broken target, not a green one (pytest's exit code 5).
"""

import os
import sys

import pytest


def main() -> int:
    args = ["-p", "no:cacheprovider", "-ra", *sys.argv[1:]]
    if xml := os.environ.get("XML_OUTPUT_FILE"):
        args.append(f"--junitxml={xml}")
    if tmp := os.environ.get("TEST_TMPDIR"):
        args.append(f"--basetemp={os.path.join(tmp, 'pytest')}")
    status = pytest.main(args)
    if status == pytest.ExitCode.NO_TESTS_COLLECTED:
        print("pytest_main: no tests were collected; the suite is broken", file=sys.stderr)
        return 1
    return int(status)


if __name__ == "__main__":
    sys.exit(main())
