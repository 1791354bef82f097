"""Benchmark: training through tfpgo.runtime against TensorFlow, 100 steps (issue 47).

    bazel run //bench:bench_runtime_training [-- --only transformer-train --steps 100]

Takes the outputs bench_step_wallclock made (`--root`, lowered and tuned by
`pgo --lower iree --tune`). For each training step: TensorFlow's `tf.function`
and IREE's program (the tuned one when kept) start from the same variables
(`load(variables=function)`) and take the same `--steps` batches (drawn with a
fixed seed in the step's shapes and dtypes); the loss of every step is compared.
Then `assign_to(function)` writes IREE's variables back, and one more step of
each engine from there is compared too. Prints the largest relative loss
difference over the steps and after the write-back; exit status 1 when one is
beyond `--rtol`.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

import harness

TRAINING = (
    "transformer-train", "gru-tagger-train", "vit-train", "rnn-train", "mlp-train", "cnn-train",
    "resnet-train", "resnet64-train", "vgg-train", "mobilenetv2-train",
)  # fmt: skip


def _batch(inputs: tuple[Any, ...], seed: int) -> tuple[Any, ...]:
    """A batch of the step's shapes and dtypes: floats normal, integers token ids."""
    import numpy as np
    import tensorflow as tf

    rng = np.random.default_rng(seed)

    def draw(value: Any) -> Any:
        array = np.asarray(value)
        if array.dtype.kind in "iu":
            return rng.integers(1, 1000, array.shape).astype(array.dtype)
        return rng.standard_normal(array.shape).astype(array.dtype)

    return tuple(tf.nest.map_structure(draw, list(inputs)))


def _relative(a: Any, b: Any) -> float:
    import numpy as np

    a, b = float(np.asarray(a)), float(np.asarray(b))
    return abs(a - b) / max(abs(b), 1e-12)


def _check(label: str, root: Path, steps: int) -> tuple[float, float, float, float]:
    from tfpgo import runtime
    from tfpgo.models import load_model

    _, mode, batch = harness.MODELS[label]
    case = load_model(harness.model_arg(label, root), mode, batch)
    step = runtime.load(root / label, variables=case.function)
    worst, first, last = 0.0, 0.0, 0.0
    for index in range(steps):
        inputs = _batch(case.inputs, index)
        got, want = step(*inputs), case.function(*inputs)
        worst = max(worst, _relative(got, want))
        if index == 0:
            first = float(want)
        last = float(want)
    step.assign_to(case.function)
    inputs = _batch(case.inputs, steps)
    after = _relative(step(*inputs), case.function(*inputs))
    return worst, after, first, last


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="comma-separated labels (default: every training step)")
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--rtol", type=float, default=1e-3, help="largest relative loss difference")
    parser.add_argument("--root", default="/tmp/tfpgo_step_wallclock")
    args = parser.parse_args()
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    root = Path(args.root)
    rows, failed = [], False
    for label in args.only.split(",") if args.only else TRAINING:
        if not (root / label / "program.json").is_file():
            raise harness.BenchError(f"{label}: no output under {root}; run bench_step_wallclock")
        worst, after, first, last = _check(label, root, args.steps)
        failed |= max(worst, after) > args.rtol
        rows.append(
            [label, args.steps, f"{first:.4g} → {last:.4g}", f"{worst:.2g}", f"{after:.2g}"]
        )
    header = ["step", "steps", "TensorFlow's loss", "max rel. |Δ loss|", "after assign_to"]
    print(harness.markdown_table(header, rows))
    return 1 if failed else 0


if __name__ == "__main__":
    harness.run_main(main, "bench_runtime_training")
