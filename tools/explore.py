"""`bazel run //tools:explore -- pgo_out`: a pgo output in Model Explorer.

The work lives in tfpgo.render.explore; this file only starts it.
"""

from tfpgo.cli import run_main
from tfpgo.render.explore import main

if __name__ == "__main__":
    raise SystemExit(run_main(main, prog="explore"))
