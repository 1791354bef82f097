"""`bazel run //tools:profile_diff -- A B`: two op profiles compared."""

import sys

from tfpgo import cli
from tfpgo.diff import profile_diff

if __name__ == "__main__":
    sys.exit(cli.run_main(profile_diff.main, prog=profile_diff.PROG))
