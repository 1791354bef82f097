"""Benchmark: the Proposer's A/B of TensorFlow steps, paired blocks against Welch's t.

    bazel run //bench:bench_proposer_ab [-- --only mlp,cnn --repeats 20]

An A/A: each model's step (`tfpgo.models`, as `--optimize` runs it) against a
second trace of the same function, the Proposer's way (`blocks.interleave`: 10
blocks of 10 steps an arm, AB, BA, ... in this process), `repeats` times. Each
A/A is judged two ways on the same samples: `blocks.judge` (the 20% trimmed mean
of each repetition's pair of blocks, Student's t) and the statistic it
replaced (Welch's t on the log block means, `tfpgo.diff.step_time`). Printed:
the median half-width of each 95% interval, relative to its ratio, and how many
covered 1 (issue 48: "apply the same in-process alternation if it narrows
those intervals too; measure both").
"""

from __future__ import annotations

import argparse
import math
import os
import statistics

import harness

from tfpgo.ab.intervals import CONFIDENCE
from tfpgo.diff.step_time import step_time_change
from tfpgo.proposer import blocks

# label -> (model, mode, batch size)
MODELS = {
    "mlp": ("mlp", "infer", 32),
    "cnn": ("cnn", "infer", 32),
    "transformer": ("transformer", "infer", 8),
    "cnn-train": ("cnn", "train", 32),
    "transformer-train": ("transformer", "train", 8),
}
BLOCKS, STEPS, WARMUP = 10, 10, 3


def _welch(samples: blocks.ABSamples) -> tuple[float, float, float]:
    """Ratio and interval of Welch's t on the log block means."""
    logs = [
        tuple(math.log(statistics.fmean(block)) for block in side)
        for side in (samples.baseline_ns, samples.candidate_ns)
    ]
    change = step_time_change(logs[0], logs[1], CONFIDENCE)
    assert change is not None and change.low_ps is not None and change.high_ps is not None
    return math.exp(change.delta_ps), math.exp(change.low_ps), math.exp(change.high_ps)


def _model(label: str, repeats: int) -> dict[str, float]:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf

    from tfpgo.models import load_model

    model, mode, batch = MODELS[label]
    case = load_model(model, mode, batch)
    again = tf.function(case.function.python_function)  # the same program, traced again
    baseline = blocks.step_timer(lambda: case.function(*case.inputs), WARMUP)
    candidate = blocks.step_timer(lambda: again(*case.inputs), WARMUP)
    welch, paired = [], []
    for _ in range(repeats):
        samples = blocks.interleave(baseline, candidate, BLOCKS, STEPS)
        judged = blocks.judge(samples)
        assert judged.low is not None and judged.high is not None
        paired.append((judged.ratio, judged.low, judged.high))
        welch.append(_welch(samples))

    def half_width(rows: list[tuple[float, float, float]]) -> float:
        return statistics.median((high - low) / 2 / ratio for ratio, low, high in rows)

    def covered(rows: list[tuple[float, float, float]]) -> int:
        return sum(low <= 1 <= high for _, low, high in rows)

    return {
        "welch": half_width(welch),
        "paired": half_width(paired),
        "welch_covered": covered(welch),
        "paired_covered": covered(paired),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default=",".join(MODELS))
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()
    header = ("model", "Welch's t, median ±", "paired, median ±", "narrower", "covers 1 (W, p)")
    print("| " + " | ".join(header) + " |")
    print("|---|---|---|---|---|")
    for label in args.only.split(","):
        found = _model(label, args.repeats)
        print(
            f"| {label} | ±{found['welch']:.2%} | ±{found['paired']:.2%} | "
            f"{found['welch'] / found['paired']:.2f}x | {found['welch_covered']:.0f}, "
            f"{found['paired_covered']:.0f} of {args.repeats} |",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    harness.run_main(main, "bench_proposer_ab")
