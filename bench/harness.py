"""Shared measuring helpers for the benchmarks in bench/ (run by hand, never by tests).

Every measurement runs the contender in a fresh process under GNU time, so
its peak RSS is its own and no warm cache of an earlier repeat leaks into the
next. A `Measurement` keeps every repeat; the
reported numbers are medians of wall time and the peak RSS of all repeats.

Scaling curves are summarized by the exponent b of time ~ a * size^b, a
least-squares fit of log(time) against log(size): b near 1 is linear, 2
quadratic.

The models the step benchmarks run (`MODELS`: zoo names and Keras hooks) are
lowered by `pgo --lower iree` in a fresh process (`lower_model`), as a user
runs it; `iteration_times` times a program in IREE's own benchmark tool.
"""

from __future__ import annotations

import json
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, is_dataclass
from pathlib import Path

from tfpgo import toolpaths
from tfpgo.errors import UserError
from tfpgo.iree import program as iree_program
from tfpgo.iree import run as iree_run
from tfpgo.runtime.manifest import ProgramManifest, values_path

REPO = Path(__file__).resolve().parents[1]
MLIR_OPT = Path("/usr/lib/llvm-22/bin/mlir-opt")
GNU_TIME = Path("/usr/bin/time")  # Debian package `time`
# A model: its zoo name or hook body, the flow's --mode, and its batch.
Model = tuple[str, str, int]

_MOBILENET = """
model = tf.keras.applications.MobileNetV2(weights=None, input_shape=(128, 128, 3), classes=10)
return model, (tf.random.stateless_normal((batch_size, 128, 128, 3), (1, 2)),)
"""
# Issue 62's and 65's MobileNetV2 training step: depthwise and 1x1 convolutions,
# batch norm, strided gradients.
_MOBILENET_TRAIN = """
model = tf.keras.applications.MobileNetV2(
    weights=None, input_shape=(64, 64, 3), classes=10, alpha=0.35
)
return model, (tf.random.stateless_normal((batch_size, 64, 64, 3), (1, 2)),)
"""
VIT = """
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
# Issue 65's CNN training steps nobody tuned for: residual stages of 3x3
# convolutions with batch norm (at two image sizes), and a VGG-style stack.
_RESNET = """
layers = tf.keras.layers
images = tf.keras.Input((SIZE, SIZE, 3))
x = layers.Conv2D(16, 3, padding="same", use_bias=False, name="stem")(images)
x = layers.ReLU()(layers.BatchNormalization(name="stem_bn")(x))
for stage, width in enumerate((16, 32, 64)):
    stride = 1 if stage == 0 else 2
    y = layers.Conv2D(width, 3, stride, "same", use_bias=False, name=f"conv{stage}a")(x)
    y = layers.ReLU()(layers.BatchNormalization(name=f"bn{stage}a")(y))
    y = layers.Conv2D(width, 3, padding="same", use_bias=False, name=f"conv{stage}b")(y)
    y = layers.BatchNormalization(name=f"bn{stage}b")(y)
    if stride != 1 or x.shape[-1] != width:
        x = layers.Conv2D(width, 1, stride, use_bias=False, name=f"skip{stage}")(x)
    x = layers.ReLU()(x + y)
x = layers.GlobalAveragePooling2D()(x)
model = tf.keras.Model(images, layers.Dense(10, name="head")(x))
return model, (tf.random.stateless_normal((batch_size, SIZE, SIZE, 3), (1, 2)),)
"""
_VGG = """
layers = tf.keras.layers
images = tf.keras.Input((32, 32, 3))
x = images
for block, width in enumerate((32, 64, 128)):
    x = layers.Conv2D(width, 3, padding="same", activation="relu", name=f"conv{block}a")(x)
    x = layers.Conv2D(width, 3, padding="same", activation="relu", name=f"conv{block}b")(x)
    x = layers.MaxPooling2D(name=f"pool{block}")(x)
x = layers.Dense(128, activation="relu", name="fc")(layers.Flatten()(x))
model = tf.keras.Model(images, layers.Dense(10, name="head")(x))
return model, (tf.random.stateless_normal((batch_size, 32, 32, 3), (1, 2)),)
"""
_TRIVIAL = """
step = tf.function(lambda x: x + 1.0)
return step, (tf.zeros((8,)),)
"""
MODELS: dict[str, Model] = {
    "mlp": ("mlp", "infer", 32),
    "mlp-train": ("mlp", "train", 32),
    "cnn": ("cnn", "infer", 32),
    "cnn-train": ("cnn", "train", 32),
    "transformer": ("transformer", "infer", 8),
    "transformer-train": ("transformer", "train", 8),
    "rnn": ("rnn", "infer", 32),
    "rnn-train": ("rnn", "train", 32),
    "mobilenetv2": (_MOBILENET, "infer", 8),
    "mobilenetv2-b1": (_MOBILENET, "infer", 1),
    "vit": (VIT, "infer", 8),
    "vit-b1": (VIT, "infer", 1),
    "resnet50": ("resnet50", "infer", 8),
    "resnet50-b1": ("resnet50", "infer", 1),
    "mobilenetv2-train": (_MOBILENET_TRAIN, "train", 8),
    "vit-train": (VIT, "train", 8),
    "gru-tagger-train": (_GRU_TAGGER, "train", 8),
    "lstm-stack": (_LSTM_STACK, "infer", 8),
    "conv-lstm-attention": (_CONV_LSTM_ATTENTION, "infer", 8),
    "bilstm": (_BIDIRECTIONAL_LSTM, "infer", 8),
    "resnet-train": (_RESNET.replace("SIZE", "32"), "train", 8),
    "resnet64-train": (_RESNET.replace("SIZE", "64"), "train", 8),
    "vgg-train": (_VGG, "train", 8),
    "trivial": (_TRIVIAL, "infer", 8),
}
UNSEEN = ("mobilenetv2", "vit-train", "gru-tagger-train")
_PGO = """
from tfpgo.cli import run_main
from tfpgo.flow.pgo import main
raise SystemExit(run_main(main, prog="pgo"))
"""


class BenchError(Exception):
    """A contender failed; the message says which and how."""


def run_main(main: Callable[[], int], name: str) -> None:
    """Exits with `main`'s status; a BenchError ends it as one `name: problem` line."""
    try:
        sys.exit(main())
    except BenchError as error:
        sys.exit(f"{name}: {error}")


@dataclass(frozen=True)
class Measurement:
    """`repeat` runs of one contender: median wall seconds, peak RSS of all runs.

    `outputs` keeps each run's stdout; contenders that time their own work
    print those seconds as the last word (see `median_reported_s`).
    """

    label: str
    seconds: tuple[float, ...]
    peak_rss_mb: float
    outputs: tuple[str, ...] = ()

    @property
    def median_s(self) -> float:
        return statistics.median(self.seconds)

    @property
    def median_reported_s(self) -> float:
        """Median of the seconds the contender reported itself (its last output word)."""
        return statistics.median(float(output.split()[-1]) for output in self.outputs)


def run_once(command: Sequence[str], env: dict[str, str] | None = None) -> tuple[float, float, str]:
    """Runs `command` in a fresh process: (wall seconds, peak RSS in MB, stdout).

    The peak comes from GNU time's %M, not from our own `wait4`: Linux folds
    the RSS high-water mark of the address space a child replaced at exec into
    the child's `ru_maxrss`, and a child spawned from this (possibly large)
    benchmark process starts with ours. /usr/bin/time is tiny, so its child's
    peak is the contender's own.
    """
    if not GNU_TIME.exists():
        raise BenchError(f"{GNU_TIME} not found: install GNU time (apt-get install time)")
    with tempfile.NamedTemporaryFile("r") as peak, tempfile.TemporaryFile() as errors:
        timed = [str(GNU_TIME), "-f", "%M", "-o", peak.name, *command]
        start = time.perf_counter()
        child = subprocess.run(timed, env=env, stdout=subprocess.PIPE, stderr=errors, text=True)
        wall = time.perf_counter() - start
        if child.returncode != 0:
            errors.seek(0)
            tail = errors.read().decode(errors="replace").strip().splitlines()[-3:]
            raise BenchError(
                f"{' '.join(command)[:200]} exited with {child.returncode}: {' | '.join(tail)}"
            )
        peak_kb = int(peak.read().split()[-1])
    return wall, peak_kb / 1024, child.stdout


def measure(
    label: str,
    command: Sequence[str],
    repeat: int,
    env: dict[str, str] | None = None,
    before_each: Callable[[], object] | None = None,
) -> Measurement:
    """`repeat` fresh runs of `command`; `before_each` resets state (caches) first."""
    seconds, outputs, peak = [], [], 0.0
    for _ in range(repeat):
        if before_each:
            before_each()
        # dirty pages of earlier runs (a 10M-event DAG is 1 GB of JSON) are written
        # out first: the kernel would otherwise throttle this run's writes for them
        os.sync()
        wall, rss, output = run_once(command, env)
        seconds.append(wall)
        outputs.append(output.strip())
        peak = max(peak, rss)
    return Measurement(label, tuple(seconds), peak, tuple(outputs))


def python_env() -> dict[str, str]:
    """The environment for `python -c` contenders: this interpreter's path, quiet TF."""
    paths = [str(REPO / "python"), *(p for p in sys.path if p)]
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(dict.fromkeys(paths)),
        "TF_CPP_MIN_LOG_LEVEL": "2",
    }


def python_command(code: str, *args: object) -> list[str]:
    return [sys.executable, "-c", code, *(str(a) for a in args)]


def fresh_copy_dir(source: Path, scratch: Path) -> Callable[[], Path]:
    """A resetter for tools that cache next to their input (xprof does).

    Each call empties `scratch` and hard-links (or copies) `source` into it,
    returning the new path; the contender then always sees a cold directory.
    """
    target = scratch / source.name

    def reset() -> Path:
        shutil.rmtree(scratch, ignore_errors=True)
        scratch.mkdir(parents=True)
        try:
            os.link(source, target)
        except OSError:
            shutil.copyfile(source, target)
        return target

    return reset


def fit_exponent(sizes: Sequence[float], seconds: Sequence[float]) -> float:
    """b of seconds ~ a * size^b (least squares in log-log); needs two distinct sizes."""
    points = [(math.log(s), math.log(t)) for s, t in zip(sizes, seconds, strict=True) if t > 0]
    if len({x for x, _ in points}) < 2:
        raise ValueError("fit_exponent needs at least two distinct sizes")
    mean_x = statistics.fmean(x for x, _ in points)
    mean_y = statistics.fmean(y for _, y in points)
    covariance = sum((x - mean_x) * (y - mean_y) for x, y in points)
    variance = sum((x - mean_x) ** 2 for x, _ in points)
    return covariance / variance


def tfpgo_opt() -> Path:
    """The driver the benchmarks run, found as the flow finds it
    (`tfpgo.toolpaths`): $TFPGO_OPT pins one binary for a whole run while the
    work tree is rebuilt."""
    try:
        return toolpaths.tfpgo_opt()
    except UserError as error:
        raise BenchError(str(error)) from None


def machine() -> dict[str, object]:
    """What the numbers were measured on, and how busy it was."""
    model = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    memory_gib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return {
        "cpu": model,
        "cores": os.cpu_count(),
        "memory_gib": round(memory_gib, 1),
        "python": platform.python_version(),
        "load_avg_1m": load_avg_1m(),
    }


def load_avg_1m() -> float:
    """The one-minute load average, rounded for reports."""
    return round(os.getloadavg()[0], 2)


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A GitHub-markdown table; floats are printed with 2 decimals."""

    def cell(value: object) -> str:
        return f"{value:.2f}" if isinstance(value, float) else str(value)

    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def write_json(path: Path, document: object) -> None:
    """Writes results (dataclasses become dicts) for later comparison."""

    def default(value: object) -> object:
        if is_dataclass(value) and not isinstance(value, type):
            return asdict(value)
        if isinstance(value, Path):
            return str(value)
        raise TypeError(f"not JSON serializable: {type(value).__name__}")

    path.write_text(json.dumps(document, indent=1, default=default) + "\n")


def model_arg(label: str, root: Path, models: dict[str, Model] = MODELS) -> str:
    """The flow's --model for `label`: a zoo name, or a hook file written under
    `root` from its body."""
    source = models[label][0]
    if "\n" not in source:
        return source
    hook = root / "hooks" / f"{label.replace('-', '_')}.py"
    hook.parent.mkdir(parents=True, exist_ok=True)
    body = textwrap.indent(source.strip() + "\n", "    ")
    hook.write_text(f"import tensorflow as tf\n\n\ndef tfpgo_model(batch_size):\n{body}")
    return str(hook)


def lower_model(
    label: str, root: Path, tune_budget: float, models: dict[str, Model] = MODELS
) -> Path:
    """`pgo --lower iree --tune` in a fresh process (kept: an output with a
    program.json is not made again)."""
    out = root / label
    if (out / "program.json").is_file():
        return out
    _, mode, batch = models[label]
    command = python_command(
        _PGO, "--model", model_arg(label, root, models), "--mode", mode, "--batch-size", batch,
        "--steps", 3, "--warmup", 1, "--lower", "iree", "--output-dir", out, "--formats", "svg",
    )  # fmt: skip
    if tune_budget > 0 and label != "trivial":
        command += ["--tune", "--tune-budget", str(tune_budget), "--tuning-db", str(root / "db")]
    env = {**python_env(), "TFPGO_OPT": str(tfpgo_opt())}
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=3600)
    if done.returncode:
        raise BenchError(f"{label}: {done.stderr.strip().splitlines()[-1]}")
    return out


def program_workload(out: Path) -> iree_program.Workload:
    """The workload of the program `pgo --lower iree` left in `out`: its entry on
    the profiled values, nothing expected."""
    manifest = ProgramManifest.read(out)
    inputs = tuple(values_path(out, p) for p in manifest.parameters)
    return iree_program.Workload(manifest.entry, inputs, (), 1, 1, {}, {})


def iteration_times(
    vmfb: Path, workload: iree_program.Workload, iterations: int, driver: str = iree_run.DEVICE
) -> tuple[int, ...]:
    """`iterations` calls of `vmfb` in one process of IREE's benchmark tool on
    `driver` after its warm-up, each call's wall time (ns): a block of the A/B's
    old method (tfpgo.proposer.blocks)."""
    args = [f"--module={vmfb}", f"--device={driver}", f"--function={workload.entry}"]
    args += [f"--input=@{path}" for path in workload.inputs]
    args += ["--benchmark_min_time=1x", f"--benchmark_repetitions={iterations}"]
    args += ["--benchmark_min_warmup_time=0.05", "--benchmark_format=json"]
    listing = json.loads(iree_run.run_tool("iree-benchmark-module", args, "old method"))
    unit = {"ns": 1, "us": 1_000, "ms": 1_000_000, "s": 1_000_000_000}
    return tuple(
        round(entry["real_time"] * unit[entry["time_unit"]])
        for entry in listing["benchmarks"]
        if entry.get("run_type") == "iteration"
    )
