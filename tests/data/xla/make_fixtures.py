"""Regenerates the XLA fixtures in this directory (run by hand, TensorFlow 2.21).

For each hook here (train_adam.py, infer.py, mixed.py, while_swap.py) the step is profiled the
way `bazel run //:pgo` does it (tfpgo.models.profiling: 2 warmup steps, then 3
profiled steps, host tracer level 3) and exported as tf-dialect MLIR:
  <scenario>/trace.xplane.pb   the raw XSpace: HLO instruction events and the
                               /host:metadata plane with each module's HloProto
  <scenario>/module.mlir       the profiled function, node names in locations
Every scenario runs in its own process: mixed.py turns auto-clustering on for
the whole process.

    PYTHONPATH=python python3 tests/data/xla/make_fixtures.py [scenario ...]
"""

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
# scenario -> (mode, batch size): the training batch keeps XLA's copies of
# variables, which no TF node owns, well under 1% of the HLO time (train_adam.py).
SCENARIOS = {
    "train_adam": ("train", 256),
    "infer": ("infer", 32),
    "mixed": ("infer", 32),
    "while_swap": ("infer", 8),
}


def generate(name: str) -> None:
    from tfpgo.models import load_model
    from tfpgo.models.profiling import export_mlir, profile

    mode, batch_size = SCENARIOS[name]
    case = load_model(str(HERE / f"{name}.py"), mode, batch_size)
    out = HERE / name
    out.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f"tfpgo_xla_{name}_") as logdir:
        run = profile(case, Path(logdir), steps=3, warmup=2)
        shutil.copy(run.xplane_paths[0], out / "trace.xplane.pb")
    (out / "module.mlir").write_text(export_mlir(case))


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--one":
        generate(sys.argv[2])
    else:
        for scenario in sys.argv[1:] or SCENARIOS:
            subprocess.run([sys.executable, __file__, "--one", scenario], check=True)
