"""The engines a CPU user would pick for inference instead of tfpgo, as calls of
the step: TensorFlow Lite (its XNNPACK delegate, the default) and OpenVINO (its
CPU plugin, in float32 and in its default precision, which is bfloat16 on a
CPU with bfloat16 units).

Each takes the `tf.function` as TensorFlow traced it for the step's inputs and
is called as a user's loop calls it: numpy arguments in, numpy outputs out.
An engine that cannot take the step (a training step writes variables; a
converter refuses an op; a package is not installed) is one line in `refused`,
and the others still run.
"""

from __future__ import annotations

import functools
import os
import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

TFLITE = "TFLite (XNNPACK)"
OPENVINO_F32 = "OpenVINO f32"
OPENVINO_DEFAULT = "OpenVINO default"
ENGINES = (TFLITE, OPENVINO_F32, OPENVINO_DEFAULT)
# Those that compute in float32 whatever the CPU (OpenVINO's default picks
# bfloat16 where the CPU has the units).
FLOAT32_ENGINES = (TFLITE, OPENVINO_F32)
# OpenVINO's precision hint per engine (None: the CPU plugin's default).
OPENVINO_PRECISIONS: dict[str, str | None] = {OPENVINO_F32: "f32", OPENVINO_DEFAULT: None}
_NO_TFLITE_OP = re.compile(r"'tf\.(\w+)' op is neither a custom op nor a flex op")
_NO_OPENVINO_RULE = re.compile(r"No conversion rule found for operations: ([^\n]+)")
# Ops of a step that writes its variables: no inference engine runs it.
_WRITES = ("AssignVariableOp", "AssignAddVariableOp", "AssignSubVariableOp", "ResourceApply")


@dataclass(frozen=True)
class Anchors:
    """Per engine that took the step, its call; per engine that did not, why."""

    arms: dict[str, Callable[[], Any]] = field(default_factory=dict)
    refused: dict[str, str] = field(default_factory=dict)


def anchor_arms(function: Any, inputs: tuple[Any, ...], threads: int | None = None) -> Anchors:
    """Each engine's call of `function(*inputs)` (numpy `inputs`, nested as the
    step takes them), on `threads` threads (default: every core this process may
    use); a call returns the step's outputs flattened (`tf.nest.flatten`)."""
    threads = threads or len(os.sched_getaffinity(0))
    concrete, flat = traced_step(function, inputs)
    anchors = Anchors()
    written = written_variable(concrete)
    converted = functools.cache(lambda: openvino_model(concrete))  # once, for both precisions
    makers: dict[str, Callable[[], Callable[[], Any]]] = {
        TFLITE: lambda: _tflite(function, concrete, flat, threads),
        **{
            engine: functools.partial(_openvino, converted, concrete, flat, threads, precision)
            for engine, precision in OPENVINO_PRECISIONS.items()
        },
    }
    for engine, make in makers.items():
        if written:
            anchors.refused[engine] = (
                f"the step writes variables ({written}): {engine.split()[0]} runs inference only"
            )
            continue
        try:
            call = make()
            call()  # a step it converts but cannot run is refused here, not mid-timing
            anchors.arms[engine] = call
        except ImportError as error:
            anchors.refused[engine] = f"not installed ({error.name}: pip install {error.name})"
        except Exception as error:  # converters raise assorted errors for what they refuse
            anchors.refused[engine] = f"cannot take the step ({first_line(error)})"
    return anchors


def traced_step(function: Any, inputs: tuple[Any, ...]) -> tuple[Any, tuple[Any, ...]]:
    """The step as TensorFlow traced it for `inputs` (a ConcreteFunction) and
    `inputs` flattened: its graph's placeholders' values, in their order."""
    import tensorflow as tf

    # A SavedModel's signature is a ConcreteFunction already.
    traced = getattr(function, "get_concrete_function", None)
    concrete = function if traced is None else traced(*inputs)
    return concrete, tuple(tf.nest.flatten(inputs))


def written_variable(concrete: Any) -> str:
    """The first op of the step that writes a variable, or ""."""
    for op in concrete.graph.get_operations():
        if op.type.startswith(_WRITES):
            return op.type
    return ""


def _tflite(function: Any, concrete: Any, inputs: tuple[Any, ...], threads: int) -> Any:
    """TensorFlow Lite's interpreter of the step, builtin ops only (so XNNPACK,
    TFLite's default CPU delegate, takes what it can)."""
    import tensorflow as tf

    converter = tf.lite.TFLiteConverter.from_concrete_functions([concrete], function)
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
    model = converter.convert()
    with warnings.catch_warnings():  # its deprecation notice: the interpreter still ships
        warnings.simplefilter("ignore", UserWarning)
        interpreter = tf.lite.Interpreter(model_content=model, num_threads=threads)
    interpreter.allocate_tensors()
    details = interpreter.get_input_details()
    if len(details) != len(inputs):
        raise ValueError(f"its model takes {len(details)} inputs, the step {len(inputs)}")
    # The converter keeps the step's placeholders' names (and their order).
    placeholders = [tensor.name.split(":")[0] for tensor in concrete.inputs[: len(inputs)]]
    by_name = dict(zip(placeholders, inputs, strict=True))
    feed = [
        (detail["index"], by_name.get(detail["name"].split(":")[0], value))
        for detail, value in zip(details, inputs, strict=True)
    ]
    # Its outputs in the step's order: by the names of the graph's outputs.
    by_output = {d["name"].split(":")[0]: d["index"] for d in interpreter.get_output_details()}
    order = [tensor.name.split(":")[0] for tensor in concrete.outputs]
    outputs = [by_output[name] for name in order] if set(order) == set(by_output) else []
    outputs = outputs or [detail["index"] for detail in interpreter.get_output_details()]

    def call() -> list[Any]:
        for index, value in feed:
            interpreter.set_tensor(index, value)
        interpreter.invoke()
        return [interpreter.get_tensor(index) for index in outputs]

    return call


def openvino_model(concrete: Any) -> Any:
    """The step converted from TensorFlow's graph to OpenVINO's model."""
    import openvino as ov

    return ov.convert_model(concrete)


def _openvino(
    converted: Callable[[], Any],
    concrete: Any,
    inputs: tuple[Any, ...],
    threads: int,
    precision: str | None,
) -> Any:
    """OpenVINO's CPU plugin on the step `converted()` returns; `precision`
    "f32", or None for the plugin's default."""
    model = converted()
    compiled, request, feed = openvino_compiled(model, concrete, inputs, threads, precision)
    # Its outputs: the step's by name where it keeps the names (it may add a
    # scalar of its own), else its first ones in its order.
    ports = list(compiled.outputs)
    names = [tensor.name for tensor in concrete.outputs]
    chosen = [_port(ports, name) for name in names]
    if any(port is None for port in chosen):
        chosen = ports[: len(names)]

    def call() -> list[Any]:
        results = request.infer(feed, share_outputs=False)
        return [results[port] for port in chosen]

    return call


def openvino_compiled(
    model: Any,
    concrete: Any,
    inputs: tuple[Any, ...],
    threads: int,
    precision: str | None,
    perf_count: bool = False,
) -> tuple[Any, Any, list[Any]]:
    """OpenVINO's CPU plugin's compiled step, an infer request of it and the
    step's `inputs` in its inputs' order; `perf_count` keeps its per-node
    counters (tfpgo.runtime.openvino_layers)."""
    import openvino as ov

    config: dict[str, Any] = {"INFERENCE_NUM_THREADS": threads}
    if precision is not None:
        config["INFERENCE_PRECISION_HINT"] = precision
    if perf_count:
        config["PERF_COUNT"] = True
    compiled = ov.Core().compile_model(model, "CPU", config)
    # Its inputs are the step's placeholders, which it may order by name and
    # name with or without the `:0`.
    by_name = {}
    for tensor, value in zip(concrete.inputs[: len(inputs)], inputs, strict=True):
        by_name[tensor.name] = by_name[tensor.name.split(":")[0]] = value
    feed = [
        next((by_name[name] for name in port.get_names() if name in by_name), value)
        for port, value in zip(compiled.inputs, inputs, strict=True)
    ]
    return compiled, compiled.create_infer_request(), feed


def _port(ports: list[Any], name: str) -> Any:
    """The port of OpenVINO's model named `name` (with or without its `:0`)."""
    wanted = {name, name.split(":")[0]}
    return next((port for port in ports if wanted & set(port.get_names())), None)


def first_line(error: BaseException) -> str:
    """What a converter's error says it refused: the ops it has no rule for
    (TFLite's "'tf.X' op is neither a custom op nor a flex op", OpenVINO's "No
    conversion rule found for operations: X"), else its first line."""
    text = str(error)
    missing = sorted(set(_NO_TFLITE_OP.findall(text)))
    if missing:
        return f"no builtin TFLite op for {', '.join(missing)}"
    rule = _NO_OPENVINO_RULE.search(text)
    if rule is not None:
        return f"no OpenVINO conversion rule for {rule[1].strip()}"
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[0][:200] if lines else type(error).__name__
