"""`bazel run //tools:trace_reader -- --help`: trace -> mlir_graph.json + op_profile.json."""

import sys

from tfpgo import cli
from tfpgo.flow import trace_reader

if __name__ == "__main__":
    sys.exit(cli.run_main(trace_reader.main, prog=trace_reader.PROG))
