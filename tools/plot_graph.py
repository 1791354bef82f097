"""`bazel run //tools:plot_graph -- --path-to-mlir-graph mlir_graph.json -o out.svg [-s]`.

Flag parsing and the work live in tfpgo.render.plot_graph; this file only starts it.
"""

from tfpgo.cli import run_main
from tfpgo.render.plot_graph import main

if __name__ == "__main__":
    raise SystemExit(run_main(main, prog="plot_graph"))
