"""Regenerates the TensorFlow 2.21 fixtures in this directory (run by hand).

For every scenario, one tiny model is traced once and then:
  <scenario>/module.mlir       tf.mlir.experimental.convert_function(...,
                               show_debug_info=True) of the profiled function,
                               imported without tf-standard-pipeline (whose
                               canonicalization and CSE merge and rename the
                               ops the runtime executes), converted from the
                               tf_executor graph to functional form
  <scenario>/op_profile.json   the runtime profile of 3 calls (after 2 warm-up
                               calls), host_tracer_level=3, aggregated per
                               runtime node name as docs/formats.md defines
  <scenario>/trace.xplane.pb   the raw XSpace it was computed from

The aggregation here is a minimal, independent implementation of the
`tfpgo.op_profile` format for fixtures only (totals.non_op_ps is left 0);
the product's trace reader lives in python/tfpgo.

The scenarios in GRAPPLER_REWRITES run under RewriterConfig options that make
Grappler rename the nodes it creates (docs/attribution_rules.md): bfloat16 auto
mixed precision (`amp_bf16`), the layout optimizer's NCHW to NHWC conversion on
CPU (`layout_nchw`) and the memory optimizer's recomputation (`recompute`).

    python3 tests/data/tf2_21/make_fixtures.py [scenario ...]
"""

import contextlib
import glob
import json
import math
import os
import re
import shutil
import sys
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras
import tensorflow as tf
from tensorflow.core.protobuf.rewriter_config_pb2 import RewriterConfig
from tensorflow.python.eager import context
from tensorflow.tsl.profiler.protobuf import xplane_pb2

# The default, tf-standard-pipeline, rewrites the graph (Sub+Square ->
# SquaredDifference, CSE of ReadVariableOps) so runtime names stop matching.
EXPORT_PIPELINE = "func.func(tf-executor-to-functional-conversion)"
HERE = os.path.dirname(os.path.abspath(__file__))
# `node:Type` events of the TF executor (not `Class::method` host events).
TF_OP_EVENT = re.compile(r"^([A-Za-z0-9.][A-Za-z0-9_.\-/>]*):(_?[A-Za-z][A-Za-z0-9_]*)$")


def dense():
    m = keras.Sequential(
        [
            keras.Input((8,), batch_size=4),
            keras.layers.Dense(16, activation="relu"),
            keras.layers.Dense(4),
        ]
    )
    return tf.function(lambda x: m(x)), (tf.random.normal((4, 8)),)


def _conv_model(outputs):
    return keras.Sequential(
        [
            keras.Input((8, 8, 3), batch_size=2),
            keras.layers.Conv2D(4, 3, activation="relu"),
            keras.layers.Flatten(),
            keras.layers.Dense(outputs),
        ]
    )


def conv():
    m = _conv_model(2)
    return tf.function(lambda x: m(x)), (tf.random.normal((2, 8, 8, 3)),)


def gru():
    m = keras.Sequential([keras.Input((5, 3), batch_size=2), keras.layers.GRU(4)])
    return tf.function(lambda x: m(x)), (tf.random.normal((2, 5, 3)),)


def cond():
    v = tf.Variable(tf.ones((4, 4)))

    @tf.function
    def f(x, p):
        return tf.cond(p, lambda: tf.nn.relu(tf.matmul(x, v)), lambda: tf.tanh(x) * 2.0)

    return f, (tf.random.normal((4, 4)), tf.constant(True))


def case():
    @tf.function
    def f(x, i):
        return tf.switch_case(i, [lambda: tf.nn.relu(x), lambda: tf.tanh(x), lambda: tf.sigmoid(x)])

    return f, (tf.random.normal((4, 4)), tf.constant(1))


def call():
    @tf.function
    def inner(x):
        return tf.nn.relu(tf.matmul(x, x))

    @tf.function
    def f(x):
        return inner(x) + inner(x * 2.0)

    return f, (tf.random.normal((4, 4)),)


def train():
    m = keras.Sequential(
        [
            keras.Input((8,), batch_size=4),
            keras.layers.Dense(4, activation="relu"),
            keras.layers.Dense(1),
        ]
    )
    return _sgd_step(m), (tf.random.normal((4, 8)), tf.random.normal((4, 1)))


def _sgd_step(m):
    """A tf.function training step of `m`: squared error, SGD."""
    opt = keras.optimizers.SGD(0.01)
    opt.build(m.trainable_variables)

    @tf.function
    def step(x, y):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(m(x) - y))
        grads = tape.gradient(loss, m.trainable_variables)
        opt.apply_gradients(zip(grads, m.trainable_variables, strict=True))
        return loss

    return step


def conv_train():
    m = _conv_model(1)
    return _sgd_step(m), (tf.random.normal((2, 8, 8, 3)), tf.random.normal((2, 1)))


def amp_bf16():
    """dense; Grappler casts it to bfloat16 (GRAPPLER_REWRITES)."""
    return dense()


def layout_nchw():
    """An NCHW convolution block: the CPU kernels want NHWC, so the layout
    optimizer transposes around it (GRAPPLER_REWRITES)."""
    kernel = tf.Variable(tf.random.normal((3, 3, 3, 4)))
    bias = tf.Variable(tf.random.normal((4,)))

    @tf.function
    def f(x):
        y = tf.nn.conv2d(x, kernel, 1, "SAME", data_format="NCHW")
        y = tf.nn.relu(tf.nn.bias_add(y, bias, data_format="NCHW"))
        return tf.nn.max_pool2d(y, 2, 2, "VALID", data_format="NCHW")

    return f, (tf.random.normal((2, 3, 8, 8)),)


def recompute():
    """A training step whose LeakyRelu and Sub feed the gradient: cheap ops the
    memory optimizer recomputes there (GRAPPLER_REWRITES)."""
    m = keras.Sequential(
        [
            keras.Input((8,), batch_size=4),
            keras.layers.Dense(16),
            keras.layers.LeakyReLU(),
            keras.layers.Dense(1),
        ]
    )
    return _sgd_step(m), (tf.random.normal((4, 8)), tf.random.normal((4, 1)))


SCENARIOS = {
    f.__name__: f
    for f in (
        dense, conv, gru, cond, case, call, train, conv_train, amp_bf16, layout_nchw, recompute
    )
}  # fmt: skip

# RewriterConfig fields per scenario. The bfloat16 rewrite needs a oneDNN build
# only (auto_mixed_precision.cc, AutoMixedPrecision::Optimize: `#if
# !defined(INTEL_MKL)` refuses it, no CPU check). The layout optimizer converts
# on CPU only when told to (generic_layout_optimizer.cc: `cpu_layout_conversion_`,
# NCHW_TO_NHWC). Recomputation targets the nodes under
# `memory_optimizer_target_node_name_scope`, "gradients/" by default, which TF2's
# tape names `gradient_tape/` (memory_optimizer.cc, RecomputationRewritingPass).
GRAPPLER_REWRITES = {
    "amp_bf16": {"auto_mixed_precision_onednn_bfloat16": RewriterConfig.ON},
    "layout_nchw": {"cpu_layout_conversion": RewriterConfig.NCHW_TO_NHWC},
    "recompute": {
        "memory_optimization": RewriterConfig.RECOMPUTATION_HEURISTICS,
        "memory_optimizer_target_node_name_scope": "gradient_tape/",
    },
}


@contextlib.contextmanager
def grappler_rewrites(name):
    """Runs the scenario's functions under its GRAPPLER_REWRITES. Grappler
    optimizes a function at its first call with the config of the call options
    then in effect; the eager context's own options do not reach these fields."""
    ctx = context.context()
    config = ctx.config
    for field, value in GRAPPLER_REWRITES.get(name, {}).items():
        setattr(config.graph_options.rewrite_options, field, value)
    ctx.function_call_options = context.FunctionCallOptions(config_proto=config)
    try:
        yield
    finally:
        ctx.function_call_options = None  # the next scenario's come from the context


def op_events(space):
    """Yields (line key, name, type, start ps, duration ps) of TF op events."""
    for plane in space.planes:
        for line in plane.lines:
            for event in line.events:
                match = TF_OP_EVENT.match(plane.event_metadata[event.metadata_id].name)
                if match:
                    start = line.timestamp_ns * 1000 + event.offset_ps
                    yield (plane.id, line.id), match[1], match[2], start, event.duration_ps


def earliest_start(space):
    return min(
        line.timestamp_ns * 1000 + event.offset_ps
        for plane in space.planes
        for line in plane.lines
        for event in line.events
    )


def self_times(events):
    """Duration minus directly nested TF op events on the same line."""
    selfs = [e[4] for e in events]
    by_line = {}
    for i, e in enumerate(events):
        by_line.setdefault(e[0], []).append(i)
    for indices in by_line.values():
        indices.sort(key=lambda i: (events[i][3], -events[i][4]))
        stack = []
        for i in indices:
            start = events[i][3]
            while stack and events[stack[-1]][3] + events[stack[-1]][4] <= start:
                stack.pop()
            if stack:
                selfs[stack[-1]] -= events[i][4]
            stack.append(i)
    return selfs


def nearest_rank(durations, q):
    return durations[math.ceil(q * len(durations)) - 1]


def op_profile(space, source):
    events = list(op_events(space))
    selfs = self_times(events)
    origin = earliest_start(space)
    entries = {}
    for event, self_ps in zip(events, selfs, strict=True):
        entry = entries.setdefault(
            event[1], {"types": [], "durations": [], "self": 0, "first": None}
        )
        if event[2] not in entry["types"]:
            entry["types"].append(event[2])
        entry["durations"].append(event[4])
        entry["self"] += self_ps
        start = event[3] - origin
        entry["first"] = start if entry["first"] is None else min(entry["first"], start)
    ops = []
    for name, e in entries.items():
        d = sorted(e["durations"])
        ops.append(
            {
                "name": name,
                "op_types": e["types"],
                "count": len(d),
                "total_ps": sum(d),
                "self_ps": e["self"],
                "mean_ps": round(sum(d) / len(d)),
                "min_ps": d[0],
                "max_ps": d[-1],
                "p50_ps": nearest_rank(d, 0.5),
                "p95_ps": nearest_rank(d, 0.95),
                "first_start_ps": e["first"],
                "durations_ps": d,
            }
        )
    ops.sort(key=lambda o: (-o["self_ps"], o["name"]))
    all_events = [ev for p in space.planes for ln in p.lines for ev in ln.events]
    ends = [
        ln.timestamp_ns * 1000 + ev.offset_ps + ev.duration_ps
        for p in space.planes
        for ln in p.lines
        for ev in ln.events
    ]
    return {
        "format": "tfpgo.op_profile",
        "version": 1,
        "time_unit": "ps",
        "source": source,
        "hosts": [space.hostnames[0] if space.hostnames else "host0"],
        "steps": [0, 1, 2],
        "totals": {
            "wall_ps": max(ends) - origin,
            "op_total_ps": sum(e[4] for e in events),
            "op_self_ps": sum(selfs),
            "non_op_ps": 0,
            "op_events": len(events),
            "events": len(all_events),
        },
        "ops": ops,
    }


def generate(name):
    with grappler_rewrites(name):
        record(name)


def record(name):
    fn, args = SCENARIOS[name]()
    out = os.path.join(HERE, name)
    os.makedirs(out, exist_ok=True)
    concrete = fn.get_concrete_function(*args)
    with open(os.path.join(out, "module.mlir"), "w") as fh:
        fh.write(
            tf.mlir.experimental.convert_function(
                concrete, pass_pipeline=EXPORT_PIPELINE, show_debug_info=True
            )
        )
    for _ in range(2):
        fn(*args)
    logdir = tempfile.mkdtemp(prefix=f"tfpgo_{name}_")
    options = tf.profiler.experimental.ProfilerOptions(host_tracer_level=3, python_tracer_level=0)
    tf.profiler.experimental.start(logdir, options=options)
    for step in range(3):
        with tf.profiler.experimental.Trace("step", step_num=step, _r=1):
            fn(*args)
    tf.profiler.experimental.stop()
    [xplane] = glob.glob(os.path.join(logdir, "plugins/profile/*/*.xplane.pb"))
    shutil.copy(xplane, os.path.join(out, "trace.xplane.pb"))
    space = xplane_pb2.XSpace()
    with open(xplane, "rb") as fh:
        space.ParseFromString(fh.read())
    with open(os.path.join(out, "op_profile.json"), "w") as fh:
        json.dump(op_profile(space, f"tests/data/tf2_21/{name}/trace.xplane.pb"), fh, indent=1)
        fh.write("\n")
    shutil.rmtree(logdir)


if __name__ == "__main__":
    for scenario in sys.argv[1:] or SCENARIOS:
        generate(scenario)
