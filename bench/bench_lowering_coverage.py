"""Benchmark: which TensorFlow constructs `--lower iree` lowers, with XLA as the oracle.

    bazel run //bench:bench_lowering_coverage [-- --only lstm,scan]

A corpus of small models, one per construct (Keras RNN layers, loops over
TensorArrays, `tf.cond` in a loop, cumulative sums, gathers and scatters,
resizing, CTC decoding, ragged and string inputs), and training steps (a GRU's,
the built-in transformer's and cnn's). Each gets two answers:

- TensorFlow's own: does `tf.function(jit_compile=True)` compile and run it;
- tfpgo's: does `pgo --lower iree` (a fresh process, as a user runs it) lower,
  compile and run it with TensorFlow's outputs (a training step's: its loss and
  every updated variable), by which route, with what share of IREE's dispatch
  time on tf ops, TensorFlow's op time and IREE's dispatch time a step, and
  whether every file of its output keeps the conservation law
  (tfpgo.flow.conservation: the largest charged/expected ratio); else its one
  error line.

Issue 41 asks that tfpgo lower every construct XLA compiles: the exit status is
1 when one is not, with the table printed either way (docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import tempfile
import textwrap
from pathlib import Path

import harness

from tfpgo.errors import UserError
from tfpgo.flow.conservation import check_output
from tfpgo.flow.lost_levels import lost_by_level
from tfpgo.mlir.compiled_step import xla_refusal

# Each construct: a hook's body (the `tfpgo_model` hook of a user's .py file,
# tfpgo.models.user), indented under `def tfpgo_model(batch_size):`.
_KERAS_TEXT = """
layers = tf.keras.layers
tokens = tf.keras.Input((40,), dtype="int32")
x = layers.Embedding(1000, 32, mask_zero={mask})(tokens)
{body}
model = tf.keras.Model(tokens, layers.Dense(5)(x))
ids = tf.random.stateless_uniform((batch_size, 40), (1, 2), 1, 1000, dtype=tf.int32)
return model, (ids,)
"""


def _keras_text(body: str, mask: bool = False) -> str:
    return _KERAS_TEXT.format(body=body, mask=mask)


def _function(body: str, inputs: str, setup: str = "") -> str:
    """A tf.function hook: `setup` runs once, outside the step (a weight drawn
    inside the step would be a random op, which XLA's lowering draws with other
    bits than TensorFlow's kernel)."""
    indented = textwrap.indent(body, "    ")
    return f"{setup}@tf.function\ndef step(x):\n{indented}\nreturn step, ({inputs},)\n"


_FLOATS = "tf.random.stateless_normal((batch_size, 16), (1, 2))"
_CONV_LSTM_ATTENTION = """
layers = tf.keras.layers
signal = tf.keras.Input((64, 8))
x = layers.Conv1D(32, 5, padding="same", activation="relu", name="conv")(signal)
x = layers.LSTM(48, return_sequences=True, name="lstm")(x)
x = layers.GlobalAveragePooling1D()(layers.AdditiveAttention(name="attention")([x, x]))
model = tf.keras.Model(signal, layers.Dense(6, name="classes")(x))
return model, (tf.random.stateless_normal((batch_size, 64, 8), (1, 2)),)
"""
# A tf.function hook: the step as written, with its own optimizer (AdamW).
_ADAMW_TRANSFORMER = """
layers = tf.keras.layers
x = tokens = tf.keras.Input((32, 48))
for block in range(2):
    y = layers.LayerNormalization(name=f"norm_a{block}")(x)
    x = x + layers.MultiHeadAttention(4, 12, name=f"attention{block}")(y, y)
    y = layers.LayerNormalization(name=f"norm_b{block}")(x)
    y = layers.Dense(96, activation="gelu", name=f"mlp_up{block}")(y)
    x = x + layers.Dense(48, name=f"mlp_down{block}")(y)
x = layers.GlobalAveragePooling1D()(layers.LayerNormalization(name="norm")(x))
model = tf.keras.Model(tokens, layers.Dense(10, name="head")(x))
optimizer = tf.keras.optimizers.AdamW(learning_rate=1e-3)
optimizer.build(model.trainable_variables)
labels = tf.random.stateless_uniform((batch_size,), (3, 4), 0, 10, dtype=tf.int32)

@tf.function
def train_step(x, y):
    with tf.GradientTape() as tape:
        logits = model(x, training=True)
        loss = tf.reduce_mean(
            tf.keras.losses.sparse_categorical_crossentropy(y, logits, from_logits=True)
        )
    variables = model.trainable_variables
    optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables))
    return loss

return train_step, (tf.random.stateless_normal((batch_size, 32, 48), (1, 2)), labels)
"""
# Each construct: a hook's body, or a built-in model's name; and the mode.
CORPUS: dict[str, str | tuple[str, str]] = {
    "LSTM, 2 layers (the issue's)": _keras_text(
        "x = layers.LSTM(128, return_sequences=True)(x)\nx = layers.LSTM(128)(x)"
    ),
    "LSTM, sequences out": _keras_text(
        "x = layers.LSTM(64, return_sequences=True)(x)\nx = layers.Lambda(lambda t: t[:, -1])(x)"
    ),
    "GRU": _keras_text("x = layers.GRU(64)(x)"),
    "SimpleRNN": _keras_text("x = layers.SimpleRNN(64)(x)"),
    "Bidirectional(LSTM), masked": _keras_text(
        "x = layers.Bidirectional(layers.LSTM(32))(x)", mask=True
    ),
    "ConvLSTM1D": (
        "layers = tf.keras.layers\n"
        "frames = tf.keras.Input((6, 16, 4))\n"
        "x = layers.ConvLSTM1D(8, 3, padding='same')(frames)\n"
        "model = tf.keras.Model(frames, layers.Dense(5)(layers.Flatten()(x)))\n"
        "return model, (tf.random.stateless_normal((batch_size, 6, 16, 4), (1, 2)),)\n"
    ),
    "tf.while_loop with a TensorArray": _function(
        "def body(i, h, out):\n"
        "    h = tf.tanh(tf.matmul(h, w) + x)\n"
        "    return i + 1, h, out.write(i, h)\n"
        "ta = tf.TensorArray(tf.float32, size=6)\n"
        "_, _, ta = tf.while_loop(lambda i, *_: i < 6, body, (0, tf.zeros_like(x), ta))\n"
        "return tf.reduce_sum(ta.stack(), axis=0)",
        _FLOATS,
        "w = tf.random.stateless_normal((16, 16), (3, 4)) * 0.3\n",
    ),
    "tf.scan": _function("return tf.scan(lambda a, row: a * 0.5 + row, x)", _FLOATS),
    "tf.map_fn": _function("return tf.map_fn(lambda row: tf.reduce_sum(row * row), x)", _FLOATS),
    "tf.cond in a loop": _function(
        "def body(i, acc):\n"
        "    acc = tf.cond(i % 2 == 0, lambda: acc + x, lambda: acc * 0.5)\n"
        "    return i + 1, acc\n"
        "return tf.while_loop(lambda i, _: i < 5, body, (0, tf.zeros_like(x)))[1]",
        _FLOATS,
    ),
    "cumsum, cumprod": _function(
        "return tf.math.cumsum(x, axis=1) + tf.math.cumprod(x * 0.1 + 1.0, axis=1)", _FLOATS
    ),
    "gather, scatter_nd": _function(
        "picked = tf.gather(x, [3, 1, 0], axis=1)\n"
        "return tf.scatter_nd([[0], [2]], picked[:2], tf.constant([4, 3]))",
        _FLOATS,
    ),
    "image.resize": _function(
        "return tf.image.resize(x, (24, 24), method='bilinear')",
        "tf.random.stateless_normal((batch_size, 12, 12, 3), (1, 2))",
    ),
    "ctc_greedy_decoder": _function(
        "decoded, _ = tf.nn.ctc_greedy_decoder(x, tf.fill([tf.shape(x)[1]], 10))\n"
        "return tf.sparse.to_dense(decoded[0])",
        "tf.random.stateless_normal((10, batch_size, 6), (1, 2))",
    ),
    "ragged rows": _function(
        "ragged = tf.RaggedTensor.from_row_lengths(tf.reshape(x, [-1]), "
        "tf.fill([tf.size(x) // 4], 4))\n"
        "return tf.reduce_sum(ragged, axis=1)",
        _FLOATS,
    ),
    "string preprocessing": _function(
        "return tf.strings.to_number(tf.strings.as_string(x))", _FLOATS
    ),
    "Conv1D + LSTM + additive attention": _CONV_LSTM_ATTENTION,
    "Conv1D + LSTM + additive attention, training step": (_CONV_LSTM_ATTENTION, "train"),
    "GRU, training step": (_keras_text("x = layers.GRU(64)(x)"), "train"),
    "LSTM, 2 layers, training step": (
        _keras_text("x = layers.LSTM(128, return_sequences=True)(x)\nx = layers.LSTM(128)(x)"),
        "train",
    ),
    "GELU + LayerNorm transformer, AdamW training step": (_ADAMW_TRANSFORMER, "train"),
    "transformer (built-in), training step": ("transformer", "train"),
    "cnn (built-in), training step": ("cnn", "train"),
}
BUILTIN = ("cnn", "mlp", "resnet50", "rnn", "transformer")
# What `bazel run //:pgo` runs, in a fresh interpreter.
_PGO = """
import sys
from tfpgo.cli import run_main
from tfpgo.flow.pgo import main
raise SystemExit(run_main(main, prog="pgo"))
"""
_IREE_LINE = re.compile(
    r"iree: \d+ dispatches at \d+ sites, ([\d.]+)% of their time on tf ops, "
    r"outputs within (\S+) of TensorFlow's"
)
_REACHABLE = re.compile(r"(stablehlo|linalg): \d+ of \d+ ops annotated, ([\d.]+)% of the op time")
_ROUTE_LINE = re.compile(
    r"stablehlo: lowered by TensorFlow's (tf-stablehlo|XLA bridge|XLA compiler)"
)


def _hook(body: str) -> str:
    return "import tensorflow as tf\n\n\ndef tfpgo_model(batch_size):\n" + textwrap.indent(
        body, "    "
    )


def _xla(model: str, mode: str) -> str:
    """TensorFlow's answer: "yes", or "no: <why>", for the step tfpgo profiles."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf

    from tfpgo.models import load_model

    case = load_model(model, mode, 8)
    try:
        tf.function(case.function.python_function, jit_compile=True)(*case.inputs)
    except Exception as error:  # TensorFlow raises assorted errors for what XLA refuses
        return f"no: {xla_refusal(str(error))}"
    return "yes"


def _tfpgo(model: str, mode: str, out: Path) -> tuple[str, str, str]:
    """tfpgo's answer (a fresh `pgo` process): ("yes", route, "share, max |diff|, TF
    and IREE time a step, conservation, | reach columns") or ("no", "", its error
    line)."""
    command = harness.python_command(
        _PGO, "--model", model, "--mode", mode, "--batch-size", 8, "--steps", 3,
        "--warmup", 1, "--lower", "iree", "--output-dir", out, "--formats", "svg",
    )  # fmt: skip
    env = {**harness.python_env(), "TFPGO_OPT": str(harness.tfpgo_opt())}
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=900, env=env)
    except subprocess.TimeoutExpired:
        return "no", "", "did not finish in 900 s"
    if done.returncode:
        errors = [line for line in done.stderr.splitlines() if line.startswith("pgo: error:")]
        return "no", "", (errors[-1] if errors else done.stderr.strip()[-200:])
    iree, route = _IREE_LINE.search(done.stderr), _ROUTE_LINE.search(done.stderr)
    detail = f"{iree[1]}% on tf ops, outputs within {iree[2]}" if iree else "?"
    reach = " | ".join(_reach(done.stderr, out))
    return (
        "yes",
        route[1] if route else "?",
        f"{detail}, {_per_step(out)}, {_conserved(out)} | {reach}",
    )


def _reach(stderr: str, out: Path) -> list[str]:
    """The reach columns: the op time each of StableHLO and linalg reaches (the
    run's own lines), the share of IREE's dispatch time its op graph holds, and
    the op time the linalg level lists, by reason (tfpgo.flow.lost_levels)."""
    shares = dict(_REACHABLE.findall(stderr))
    graph = json.loads((out / "op_graph.iree.json").read_text())
    dispatch_ps = json.loads((out / "iree_profile.json").read_text())["totals"]["dispatch_ps"]
    unplaced = sum(int(entry["ps"]) for entry in graph.get("unplaced", ()))
    op_ps = json.loads((out / "op_profile.json").read_text())["totals"]["op_self_ps"]
    by_kind: dict[str, int] = {}
    for level, source in lost_by_level(out):
        if level == "linalg":
            by_kind[source.kind.name.lower()] = (
                by_kind.get(source.kind.name.lower(), 0) + source.self_ps
            )
    listed = ", ".join(f"{kind} {ps / op_ps:.2%}" for kind, ps in sorted(by_kind.items()))
    held = 1 - unplaced / dispatch_ps if dispatch_ps else 1.0
    return [
        shares.get("stablehlo", "?") + "%",
        shares.get("linalg", "?") + "%",
        f"{held:.2%}",
        listed or "—",
    ]


def _per_step(out: Path) -> str:
    """TensorFlow's op time and IREE's dispatch time a step, from the run's files."""
    tf_profile = json.loads((out / "op_profile.json").read_text())
    iree_profile = json.loads((out / "iree_profile.json").read_text())
    tf_ms = tf_profile["totals"]["op_self_ps"] / max(len(tf_profile["steps"]), 1) / 1e9
    iree_ms = iree_profile["totals"]["dispatch_ps"] / max(iree_profile["runs"], 1) / 1e9
    return f"TF {tf_ms:.3g} ms, IREE {iree_ms:.3g} ms a step"


def _conserved(out: Path) -> str:
    """The conservation law on every file of the run: the largest ratio of charged
    to expected time, or the violation."""
    try:
        sums = check_output(out)
    except UserError as error:
        return f"conservation broken: {error}"
    ratios = [s.charged_ps / s.expected_ps for s in sums if s.expected_ps]
    return f"{len(sums)} files conserve time (charged/expected ≤ {max(ratios, default=1):.4f})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="comma-separated substrings of construct names")
    args = parser.parse_args()
    wanted = [n for n in CORPUS if not args.only or any(w in n for w in args.only.split(","))]
    print(
        "| construct | XLA (jit_compile) | tfpgo --lower iree | route | IREE run / why not "
        "| StableHLO reach | linalg reach | IREE op graph holds | linalg lists, by reason |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    missing = []
    with tempfile.TemporaryDirectory(prefix="tfpgo-coverage-") as scratch:
        for index, name in enumerate(wanted):
            construct = CORPUS[name]
            body, mode = construct if isinstance(construct, tuple) else (construct, "infer")
            model = body
            if body not in BUILTIN:
                model = str(Path(scratch) / f"construct_{index}.py")
                Path(model).write_text(_hook(body))
            xla = _xla(model, mode)
            lowered, route, detail = _tfpgo(model, mode, Path(scratch) / f"out_{index}")
            if xla == "yes" and lowered != "yes":
                missing.append(name)
            if lowered != "yes":
                detail += " | | | |"
            print(f"| {name} | {xla} | {lowered} | {route} | {detail} |", flush=True)
    if missing:
        print(f"XLA compiles what tfpgo does not lower: {', '.join(missing)}")
    return 1 if missing else 0


if __name__ == "__main__":
    harness.run_main(main, "bench_lowering_coverage")
