"""`bazel run //:pgo -- [flags]`: profile → annotate → visualize (tfpgo.flow.stages)."""

from tfpgo.cli import run_main
from tfpgo.flow.pgo import main

if __name__ == "__main__":
    raise SystemExit(run_main(main, prog="pgo"))
