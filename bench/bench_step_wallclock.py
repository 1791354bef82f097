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
(a training step's from the same variables). A trivial step (`x + 1`) gives
each engine's overhead per call.

The table is printed as Markdown (docs/benchmarks.md) and written with every
number to `<root>/step_wallclock.json`.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import textwrap
from pathlib import Path
from typing import Any

import harness

from tfpgo.iree.output_check import largest_difference
from tfpgo.runtime.wallclock import WallClock

# label -> (the hook's body or a built-in's name, mode, batch size)
_MOBILENET = """
model = tf.keras.applications.MobileNetV2(weights=None, input_shape=(128, 128, 3), classes=10)
return model, (tf.random.stateless_normal((batch_size, 128, 128, 3), (1, 2)),)
"""
_VIT = """
layers = tf.keras.layers
images = tf.keras.Input((64, 64, 3))
x = layers.Conv2D(64, 8, strides=8, name="patches")(images)
x = layers.Reshape((64, 64))(x)
x = x + layers.Embedding(64, 64, name="position")(tf.range(64))
for block in range(4):
    y = layers.LayerNormalization(name=f"norm_a{block}")(x)
    x = x + layers.MultiHeadAttention(4, 16, name=f"attention{block}")(y, y)
    y = layers.LayerNormalization(name=f"norm_b{block}")(x)
    y = layers.Dense(128, activation="gelu", name=f"mlp_up{block}")(y)
    x = x + layers.Dense(64, name=f"mlp_down{block}")(y)
x = layers.GlobalAveragePooling1D()(layers.LayerNormalization(name="norm")(x))
model = tf.keras.Model(images, layers.Dense(10, name="head")(x))
return model, (tf.random.stateless_normal((batch_size, 64, 64, 3), (1, 2)),)
"""
_GRU_TAGGER = """
layers = tf.keras.layers
tokens = tf.keras.Input((40,), dtype="int32")
x = layers.Embedding(1000, 32, name="embed")(tokens)
x = layers.GRU(64, return_sequences=True, name="gru")(x)
model = tf.keras.Model(tokens, layers.Dense(8, name="tags")(x))
ids = tf.random.stateless_uniform((batch_size, 40), (1, 2), 1, 1000, dtype=tf.int32)
return model, (ids,)
"""
_LSTM_STACK = """
layers = tf.keras.layers
tokens = tf.keras.Input((32,), dtype="int32")
x = layers.Embedding(1000, 32, name="embed")(tokens)
x = layers.LSTM(64, return_sequences=True, name="lstm_a")(x)
x = layers.LSTM(64, name="lstm_b")(x)
model = tf.keras.Model(tokens, layers.Dense(4, name="classes")(x))
ids = tf.random.stateless_uniform((batch_size, 32), (1, 2), 1, 1000, dtype=tf.int32)
return model, (ids,)
"""
_CONV_LSTM_ATTENTION = """
layers = tf.keras.layers
tokens = tf.keras.Input((48,), dtype="int32")
x = layers.Embedding(1000, 32, name="embed")(tokens)
x = layers.Conv1D(64, 5, padding="same", activation="relu", name="conv")(x)
x = layers.LSTM(64, return_sequences=True, name="lstm")(x)
x = layers.Attention(name="attention")([x, x])
x = layers.GlobalAveragePooling1D()(x)
model = tf.keras.Model(tokens, layers.Dense(4, name="classes")(x))
ids = tf.random.stateless_uniform((batch_size, 48), (1, 2), 1, 1000, dtype=tf.int32)
return model, (ids,)
"""
_BIDIRECTIONAL_LSTM = """
layers = tf.keras.layers
tokens = tf.keras.Input((32,), dtype="int32")
x = layers.Embedding(1000, 32, name="embed")(tokens)
x = layers.Bidirectional(layers.LSTM(48), name="bilstm")(x)
model = tf.keras.Model(tokens, layers.Dense(4, name="classes")(x))
ids = tf.random.stateless_uniform((batch_size, 32), (1, 2), 1, 1000, dtype=tf.int32)
return model, (ids,)
"""
_TRIVIAL = """
step = tf.function(lambda x: x + 1.0)
return step, (tf.zeros((8,)),)
"""
MODELS: dict[str, tuple[str, str, int]] = {
    "mlp": ("mlp", "infer", 32),
    "mlp-train": ("mlp", "train", 32),
    "cnn": ("cnn", "infer", 32),
    "cnn-train": ("cnn", "train", 32),
    "transformer": ("transformer", "infer", 8),
    "transformer-train": ("transformer", "train", 8),
    "rnn": ("rnn", "infer", 32),
    "rnn-train": ("rnn", "train", 32),
    "mobilenetv2": (_MOBILENET, "infer", 8),
    "vit-train": (_VIT, "train", 8),
    "gru-tagger-train": (_GRU_TAGGER, "train", 8),
    "lstm-stack": (_LSTM_STACK, "infer", 8),
    "conv-lstm-attention": (_CONV_LSTM_ATTENTION, "infer", 8),
    "bilstm": (_BIDIRECTIONAL_LSTM, "infer", 8),
    "trivial": (_TRIVIAL, "infer", 8),
}
UNSEEN = ("mobilenetv2", "vit-train", "gru-tagger-train")
# Issue 60's recurrent steps nobody tuned for, beside the zoo's rnn and the GRU tagger.
RECURRENT = ("rnn", "rnn-train", "gru-tagger-train", "lstm-stack", "conv-lstm-attention", "bilstm")
_PGO = """
from tfpgo.cli import run_main
from tfpgo.flow.pgo import main
raise SystemExit(run_main(main, prog="pgo"))
"""
ARMS = ("tf.function", "jit_compile=True", "IREE default", "IREE tuned", "IREE local-sync")


# A model: its zoo name or hook body, the flow's --mode, and its batch.
Model = tuple[str, str, int]


def model_arg(label: str, root: Path, models: dict[str, Model] = MODELS) -> str:
    source = models[label][0]
    if "\n" not in source:
        return source
    hook = root / "hooks" / f"{label.replace('-', '_')}.py"
    hook.parent.mkdir(parents=True, exist_ok=True)
    body = textwrap.indent(source.strip() + "\n", "    ")
    hook.write_text(f"import tensorflow as tf\n\n\ndef tfpgo_model(batch_size):\n{body}")
    return str(hook)


def _lower(label: str, root: Path, tune_budget: float, models: dict[str, Model] = MODELS) -> Path:
    """`pgo --lower iree --tune` in a fresh process (kept: an output with a
    program.json is not made again)."""
    out = root / label
    if (out / "program.json").is_file():
        return out
    _, mode, batch = models[label]
    command = harness.python_command(
        _PGO, "--model", model_arg(label, root, models), "--mode", mode, "--batch-size", batch,
        "--steps", 3, "--warmup", 1, "--lower", "iree", "--output-dir", out, "--formats", "svg",
    )  # fmt: skip
    if tune_budget > 0 and label != "trivial":
        command += ["--tune", "--tune-budget", str(tune_budget), "--tuning-db", str(root / "db")]
    env = {**harness.python_env(), "TFPGO_OPT": str(harness.tfpgo_opt())}
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=3600)
    if done.returncode:
        raise harness.BenchError(f"{label}: {done.stderr.strip().splitlines()[-1]}")
    return out


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
    _, mode, batch = MODELS[label]
    case = load_model(model_arg(label, root), mode, batch)
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
    synced = runtime.load(out, variables=case.function if train else None, device="local-sync")
    arms["IREE local-sync"] = _iree_arm(synced, inputs)
    timed = wallclock.interleaved(arms, seconds)
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
    checked = ", ".join(f"{arm[5:]} {value:.2g}" for arm, value in differences)
    return [*cells, checked]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--only", help="comma-separated labels, `recurrent` for issue 60's six (default: all)"
    )
    parser.add_argument("--seconds", type=float, default=20.0, help="interleaved seconds a model")
    parser.add_argument("--tune-budget", type=float, default=3.0, help="--tune-budget (minutes)")
    parser.add_argument("--root", default="/tmp/tfpgo_step_wallclock", help="outputs, kept")
    args = parser.parse_args()
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    root = Path(args.root)
    labels = args.only.split(",") if args.only else list(MODELS)
    labels = [
        name for label in labels for name in (RECURRENT if label == "recurrent" else (label,))
    ]
    results = []
    for label in labels:
        _lower(label, root, args.tune_budget)
        results.append(_score(label, root, args.seconds))
        print(harness.markdown_table(["model", *ARMS, "max |Δ| vs TF"], [_row(results[-1])]))
    header = ["model", *(f"{arm}: ms a call (dispatch)" for arm in ARMS), "max |Δ| vs TF"]
    print(harness.markdown_table(header, [_row(result) for result in results]))
    document = {"machine": harness.machine(), "results": results}
    harness.write_json(root / "step_wallclock.json", document)
    return 0


if __name__ == "__main__":
    harness.run_main(main, "bench_step_wallclock")
