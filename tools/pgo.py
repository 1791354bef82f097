"""`bazel run //:pgo -- [flags]`: profile → annotate → visualize (tfpgo.flow)."""

from tfpgo.cli import run_main
from tfpgo.flow_cli import main

if __name__ == "__main__":
    raise SystemExit(run_main(main, prog="pgo"))
