"""`bazel run //tools:run_program -- --output-dir D`: the lowered step, run."""

import sys

from tfpgo import cli
from tfpgo.runtime import run_program

if __name__ == "__main__":
    sys.exit(cli.run_main(run_program.main, prog=run_program.PROG))
