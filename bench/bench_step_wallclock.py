"""Benchmark: the step as a user's loop sees it, in each engine (issue 47's scoreboard).

    bazel run //bench:bench_step_wallclock [-- --only mlp,vit --seconds 20 --tune-budget 3]

Each model is lowered and tuned by `pgo --lower iree --tune` in a fresh process
(as a user runs it; a tuning database under `--root` keeps what earlier runs
measured). Then, in this process, its step is called from Python, numpy
arguments in and numpy outputs out, by four engines interleaved one call each
in turn (tfpgo.runtime.wallclock): TensorFlow's `tf.function`, the same with
`jit_compile=True`, and through `tfpgo.runtime` IREE's default program and the
tuned one, and the one `load` picks on IREE's `local-sync` driver (every
dispatch on the calling thread). Each gets the median wall-clock per call with
its 95% interval;
beside them, IREE's dispatch time a step (`iree_profile*.json`), so the gap is
the runtime's overhead, and the outputs of both programs against TensorFlow's
(a training step's from the same variables). For an inference step, the
engines a CPU user would pick instead take their turns too (issue 61,
tfpgo.runtime.anchors): TensorFlow Lite with XNNPACK and OpenVINO's CPU plugin
in float32 and in its default precision (bfloat16 where the CPU has it), their
outputs checked against TensorFlow's; one that cannot take the step says why in
one line. A trivial step (`x + 1`) gives each engine's overhead per call.

The table is printed as Markdown (docs/benchmarks.md) and written with every
number to `<root>/step_wallclock.json`.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

import harness

from tfpgo.iree.output_check import largest_difference
from tfpgo.runtime import anchors
from tfpgo.runtime.wallclock import WallClock

# Issue 60's recurrent steps nobody tuned for, beside the zoo's rnn and the GRU tagger.
RECURRENT = ("rnn", "rnn-train", "gru-tagger-train", "lstm-stack", "conv-lstm-attention", "bilstm")
# Issue 65's CNN training steps, beside the zoo's cnn.
CONVOLUTIONAL = (
    "cnn-train", "resnet-train", "resnet64-train", "vgg-train", "mobilenetv2-train",
)  # fmt: skip
# Issue 61's inference steps, each at batch 1 and 8, where TFLite and OpenVINO take turns too.
INFERENCE = (
    "mlp", "cnn", "transformer", "rnn", "mobilenetv2", "mobilenetv2-b1", "vit", "vit-b1",
    "resnet50", "resnet50-b1",
)  # fmt: skip
GROUPS = {"recurrent": RECURRENT, "convolutional": CONVOLUTIONAL, "inference": INFERENCE}
ARMS = (
    "tf.function", "jit_compile=True", "IREE default", "IREE tuned", "IREE local-sync",
    *anchors.ENGINES,
)  # fmt: skip


def _dispatch_ms(out: Path, name: str) -> float | None:
    path = out / name
    if not path.is_file():
        return None
    profile = json.loads(path.read_text())
    return profile["totals"]["dispatch_ps"] / max(profile["runs"], 1) / 1e9


def _score(label: str, root: Path, seconds: float) -> dict[str, Any]:
    import numpy as np
    import tensorflow as tf

    from tfpgo import runtime
    from tfpgo.models import load_model
    from tfpgo.runtime import wallclock

    out = root / label
    _, mode, batch = harness.MODELS[label]
    case = load_model(harness.model_arg(label, root), mode, batch)
    inputs = tuple(tf.nest.map_structure(np.asarray, list(case.inputs)))
    manifest = runtime.manifest.ProgramManifest.read(out)
    train = mode == "train"
    restore = wallclock.variable_values(case.function, case.inputs)
    steps = {"IREE default": "default"}
    if "tuned" in manifest.programs:
        steps["IREE tuned"] = "tuned"
    differences = {}
    for arm, program in steps.items():  # each from the same variables as TensorFlow
        step = runtime.load(out, program, variables=case.function if train else None)
        want = wallclock.tensorflow_arm(case.function, inputs)()
        restore()
        got = tf.nest.flatten(step(*inputs))
        differences[arm] = largest_difference(got, tf.nest.flatten(want))
    arms = {"tf.function": wallclock.tensorflow_arm(case.function, inputs)}
    jit = tf.function(getattr(case.function, "python_function", case.function), jit_compile=True)
    arms["jit_compile=True"] = wallclock.tensorflow_arm(jit, inputs)
    for arm, program in steps.items():
        step = runtime.load(out, program, variables=case.function if train else None)
        arms[arm] = _iree_arm(step, inputs)
    # The program load picks, every dispatch on the calling thread (no wake-ups).
    synced = runtime.load(out, variables=case.function if train else None, driver="local-sync")
    arms["IREE local-sync"] = _iree_arm(synced, inputs)
    # The engines a CPU user would pick for inference (issue 61): their outputs
    # against TensorFlow's too (OpenVINO's default computes in bfloat16 where the
    # CPU has it).
    others = anchors.Anchors() if train else anchors.anchor_arms(case.function, inputs)
    want = tf.nest.flatten(wallclock.tensorflow_arm(case.function, inputs)())
    for engine, call in others.arms.items():
        differences[engine] = largest_difference(call(), want)
    timed = wallclock.interleaved({**arms, **others.arms}, seconds)
    restore()
    return {
        "label": label,
        "mode": mode,
        "batch": batch,
        "wallclock": {arm: vars(result) for arm, result in timed.items()},
        "dispatch_ms": {
            "IREE default": _dispatch_ms(out, "iree_profile.json"),
            "IREE tuned": _dispatch_ms(out, "iree_profile.tuned.json"),
        },
        "max_abs_difference": differences,
        "refused": others.refused,
        "tolerance": [manifest.rtol, manifest.atol],
    }


def _iree_arm(step: Any, inputs: tuple[Any, ...]) -> Any:
    return lambda: step(*inputs)


def _row(result: dict[str, Any]) -> list[str]:
    cells = [f"{result['label']} (batch {result['batch']})"]
    for arm in ARMS:
        timed = result["wallclock"].get(arm)
        dispatch = result["dispatch_ms"].get(arm)
        text = "—" if timed is None else WallClock(**timed).text()
        if dispatch is not None and timed is not None:
            text += f" ({dispatch:.3f})"
        cells.append(text)
    differences = result["max_abs_difference"].items()
    checked = ", ".join(f"{arm.removeprefix('IREE ')} {value:.2g}" for arm, value in differences)
    return [*cells, checked]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--only",
        help="comma-separated labels; `recurrent` for issue 60's six, `convolutional` for "
        "issue 65's five, `inference` for issue 61's ten (default: all)",
    )
    parser.add_argument("--seconds", type=float, default=20.0, help="interleaved seconds a model")
    parser.add_argument("--tune-budget", type=float, default=3.0, help="--tune-budget (minutes)")
    parser.add_argument("--root", default="/tmp/tfpgo_step_wallclock", help="outputs, kept")
    args = parser.parse_args()
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    root = Path(args.root)
    labels = args.only.split(",") if args.only else list(harness.MODELS)
    labels = [name for label in labels for name in GROUPS.get(label, (label,))]
    results = []
    for label in labels:
        harness.lower_model(label, root, args.tune_budget)
        results.append(_score(label, root, args.seconds))
        print(harness.markdown_table(["model", *ARMS, "max |Δ| vs TF"], [_row(results[-1])]))
    header = ["model", *(f"{arm}: ms a call (dispatch)" for arm in ARMS), "max |Δ| vs TF"]
    print(harness.markdown_table(header, [_row(result) for result in results]))
    for result in results:  # an engine that could not take a step, in one line
        for engine, why in result["refused"].items():
            if not why.startswith("the step writes variables"):
                print(f"{result['label']}: {engine}: {why}")
    document = {"machine": harness.machine(), "results": results}
    harness.write_json(root / "step_wallclock.json", document)
    return 0


if __name__ == "__main__":
    harness.run_main(main, "bench_step_wallclock")
