"""OpenVINO's per-layer times of the step (its CPU plugin's `PERF_COUNT`
counters), each layer on the tf ops it came from.

OpenVINO keeps a TensorFlow node's name as the friendly name of the last node
its converter makes for it, and `name:0` as a tensor name of its output; the
CPU plugin lists, per executed node, the friendly names of the nodes it fused
(`originalLayersNames` in the runtime model). Around TensorFlow's NHWC layout
those names do not survive: the converter wraps a convolution, a pooling in
transposes to its NCHW layout and sinks them, and what is left (the
convolution, the ReLU after it) carries names of its own (`Convolution_21`,
`Transpose_308`). So the tf ops are found on the converted model first
(`tf_origins`), written into each node's `originalLayersNames` as `tf:<name>`
(the plugin reads that key and merges it over the nodes it fuses, copying it
to the nodes it derives), and read back from the runtime model's
(`layers_on_tf_ops`):

- a node whose friendly name is a tf node, or whose outputs carry `<tf node>:k`
  tensor names, is those tf nodes;
- the other nodes, in the stretch between the named tensors around them, are
  paired in graph order with the tf ops of corresponding types in the same
  stretch of TensorFlow's graph (a Convolution with a Conv2D, a
  GroupConvolution with a DepthwiseConv2dNative, a ReLU with a Relu) where
  their numbers agree, type by type; the nodes so paired bound smaller
  stretches, paired again, until no stretch pairs more (MobileNetV2's whole
  network is one stretch at first: its convolutions pair there, and the batch
  norms' adds and multiplies between each two of them after). Where the numbers
  still do not agree, the stretch's nodes of that type are on all those tf ops
  together. A tf op computed from constants and variables alone (a batch
  norm's `variance + epsilon`) is folded by the converter, never paired. A
  node with no tf op of its type in its stretch (a transpose to OpenVINO's
  layout) has none, and says why;
- a node the plugin made itself (a reorder between its kernels' layouts, a
  precision conversion) ran no tf op, and says so.
"""

from __future__ import annotations

import itertools
import os
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from tfpgo.runtime import anchors
from tfpgo.runtime.anchor_profile import AnchorProfile, EngineLayers, Layer
from tfpgo.runtime.wallclock import WARMUP_CALLS

# Why TFLite has no layers (docs/formats.md, anchor_profile.json).
TFLITE_NO_PER_OP_TIMES = (
    "no per-op times from Python: TensorFlow 2.21's tf.lite.Interpreter has no profiler "
    "(its wrapper exposes none; per-op times come from the C++ benchmark_model tool)"
)
TAG = "tf:"  # what marks a tf node's name in originalLayersNames
ORIGINAL_NAMES = "originalLayersNames"
# OpenVINO's op type -> the TensorFlow op types its converter makes it from.
TF_TYPES: dict[str, tuple[str, ...]] = {
    "Convolution": ("Conv2D", "Conv3D"),
    "GroupConvolution": ("DepthwiseConv2dNative", "Conv2D"),
    "ConvolutionBackpropData": ("Conv2DBackpropInput",),
    "MaxPool": ("MaxPool", "MaxPoolV2"),
    "AvgPool": ("AvgPool",),
    "ReduceMean": ("Mean",),
    "ReduceSum": ("Sum",),
    "ReduceMax": ("Max",),
    "MatMul": ("MatMul", "BatchMatMulV2", "BatchMatMul", "Einsum"),
    "Einsum": ("Einsum",),
    "Relu": ("Relu",),
    "Clamp": ("Relu6",),
    "Sigmoid": ("Sigmoid",),
    "Tanh": ("Tanh",),
    "Softmax": ("Softmax",),
    "Add": ("BiasAdd", "AddV2", "Add"),
    "Multiply": ("Mul",),
    "Subtract": ("Sub",),
    "Divide": ("RealDiv",),
    "Transpose": ("Transpose",),
    "Concat": ("ConcatV2",),
    "Pad": ("Pad", "PadV2"),
}
# Nodes that hold or pass values: never a layer of the step's work.
_NOT_WORK = frozenset({"Constant", "Parameter", "Result"})
# TensorFlow ops that compute nothing of the step's.
_TF_NOT_WORK = frozenset({"Const", "Placeholder", "ReadVariableOp", "NoOp"})
_PLUGIN_MADE = {
    "Reorder": "a reorder OpenVINO's CPU plugin put between its kernels (a layout or "
    "precision change)",
    "Convert": "a precision conversion OpenVINO's CPU plugin put between its kernels",
}


@dataclass(frozen=True)
class GraphNode:
    """A node of TensorFlow's graph or of OpenVINO's converted model."""

    name: str
    kind: str  # its op type
    inputs: tuple[str, ...]  # the names of the nodes it reads
    tensors: tuple[str, ...] = ()  # OpenVINO: its outputs' tensor names


@dataclass(frozen=True)
class Origins:
    """Per node of the converted model, the tf ops it is; per node with none, why."""

    ops: dict[str, tuple[str, ...]] = field(default_factory=dict)
    unnamed: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class RuntimeNode:
    """A node of the CPU plugin's runtime model and its time in one profiled call."""

    name: str
    kind: str  # layerType
    kernel: str  # primitiveType / exec_type
    executed: bool
    ps: tuple[int, ...]  # its time in each profiled call
    original: tuple[str, ...]  # originalLayersNames, in order


def tf_origins(tf_graph: Sequence[GraphNode], converted: Sequence[GraphNode]) -> Origins:
    """The tf ops of each work node of `converted` (both graphs in topological
    order): by its name or tensor names, else paired by type in its stretch."""
    tf_nodes = {node.name: node for node in tf_graph}
    origins = Origins()
    for node in converted:
        if node.kind in _NOT_WORK:
            continue
        found = [node.name] if node.name in tf_nodes else []
        found += [tensor.rsplit(":", 1)[0] for tensor in node.tensors]
        named = _unique(name for name in found if name in tf_nodes)
        if named:
            origins.ops[node.name] = named
    claimed = {op for ops in origins.ops.values() for op in ops}
    claimed |= _folded(tf_graph)
    while any(
        _pair_stretch(stretch, converted, tf_graph, origins, claimed, exact=True)
        for stretch in _unnamed_stretches(converted, origins)
    ):
        pass
    for stretch in _unnamed_stretches(converted, origins):
        _pair_stretch(stretch, converted, tf_graph, origins, claimed, exact=False)
    return origins


def _folded(tf_graph: Sequence[GraphNode]) -> set[str]:
    """The tf ops computed from constants and variables alone (a variable's
    handle is a placeholder only ReadVariableOp reads), which a converter folds."""
    readers: dict[str, set[str]] = {}
    for node in tf_graph:
        for source in node.inputs:
            readers.setdefault(source, set()).add(node.kind)
    folded: set[str] = set()
    for node in tf_graph:
        if node.kind == "Placeholder":
            if readers.get(node.name, set()) <= {"ReadVariableOp"} and node.name in readers:
                folded.add(node.name)
        elif node.kind in _TF_NOT_WORK or (node.inputs and set(node.inputs) <= folded):
            folded.add(node.name)
    return folded


def _unique(names: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(names))


def _unnamed_stretches(converted: Sequence[GraphNode], origins: Origins) -> list[list[str]]:
    """The work nodes without tf ops, in connected stretches (edges between two
    of them joined either way), each in topological order."""
    unnamed = [n.name for n in converted if n.kind not in _NOT_WORK and n.name not in origins.ops]
    parent = {name: name for name in unnamed}

    def root(name: str) -> str:
        while parent[name] != name:
            parent[name] = parent[parent[name]]
            name = parent[name]
        return name

    for node in converted:
        if node.name not in parent:
            continue
        for source in node.inputs:
            if source in parent:
                parent[root(source)] = root(node.name)
    stretches: dict[str, list[str]] = {}
    for name in unnamed:
        stretches.setdefault(root(name), []).append(name)
    return list(stretches.values())


def _pair_stretch(
    stretch: list[str],
    converted: Sequence[GraphNode],
    tf_graph: Sequence[GraphNode],
    origins: Origins,
    claimed: set[str],
    exact: bool,
) -> bool:
    """Puts the stretch's nodes on the unclaimed tf ops between the named
    tensors around it, by type where their numbers agree (see the module's
    docstring); not `exact`, the rest too. Whether it put any."""
    by_name = {node.name: node for node in converted}
    members = set(stretch)
    before = {op for name in stretch for source in by_name[name].inputs
              for op in origins.ops.get(source, ())}  # fmt: skip
    after = {op for node in converted if node.name not in members
             for source in node.inputs if source in members
             for op in origins.ops.get(node.name, ())}  # fmt: skip
    between = _between(tf_graph, before, after, claimed)
    paired = False
    for kind in _unique(by_name[name].kind for name in stretch):
        nodes = [name for name in stretch if by_name[name].kind == kind]
        types = TF_TYPES.get(kind, ())
        ops = [node.name for node in between if node.kind in types]
        alike = (
            [[node.name for node in between if node.kind == tf_type] for tf_type in types] + [ops]
        )  # fmt: skip
        pairs = next((found for found in alike if len(found) == len(nodes)), None)
        if pairs is not None:
            origins.ops.update((name, (op,)) for name, op in zip(nodes, pairs, strict=True))
            claimed.update(pairs)
            paired = True
        elif exact:
            for name in nodes:
                paired |= _pair_by_inputs(by_name[name], types, by_name, tf_graph, origins, claimed)
        elif not ops:
            origins.unnamed.update(
                (name, f"an OpenVINO {kind} with no tf op of its type between the named tensors "
                 "around it (the converter's, for its layout)")
                for name in nodes
            )  # fmt: skip
        else:  # no pairing: the stretch's nodes of this type on all its tf ops of it
            origins.ops.update((name, tuple(ops)) for name in nodes)
    return paired


def _pair_by_inputs(
    node: GraphNode,
    types: tuple[str, ...],
    by_name: dict[str, GraphNode],
    tf_graph: Sequence[GraphNode],
    origins: Origins,
    claimed: set[str],
) -> bool:
    """Puts a node whose every computed input is paired on the first tf op of
    its types that each input's tf ops reach (through unclaimed ops): where
    TensorFlow computed the same thing from the same values. Whether it did."""
    computed = [
        origins.ops.get(source) or ((source,) if by_name[source].kind == "Parameter" else ())
        for source in node.inputs
        if by_name[source].kind != "Constant"
    ]
    if not computed or not all(computed):
        return False
    reach = [{found.name for found in _between(tf_graph, set(ops), set(), claimed)}
             for ops in computed]  # fmt: skip
    common = set.intersection(*reach)
    first = next((n.name for n in tf_graph if n.name in common and n.kind in types), None)
    if first is None:
        return False
    origins.ops[node.name] = (first,)
    claimed.add(first)
    return True


def _between(
    tf_graph: Sequence[GraphNode], before: set[str], after: set[str], claimed: set[str]
) -> list[GraphNode]:
    """TensorFlow's unclaimed work ops reached from `before` (from anywhere when
    empty) that reach `after` (anything when empty), through unclaimed ops
    only, in graph order."""
    bounds = before | after | claimed
    reached = set(before)
    for node in tf_graph:
        if node.name not in bounds and (not before or reached & set(node.inputs)):
            reached.add(node.name)
    reaching = set(after)
    for node in reversed(tf_graph):
        if node.name in after or (node.name in reaching and node.name not in bounds) or not after:
            reaching.update(node.inputs)
    return [
        node
        for node in tf_graph
        if node.name in reached and node.name in reaching
        and node.name not in before | after | claimed and node.kind not in _TF_NOT_WORK
    ]  # fmt: skip


def tag(model: Any, origins: Origins) -> None:
    """Writes each node's tf ops into its rt_info's originalLayersNames, which
    the CPU plugin carries through its fusions into the runtime model."""
    for node in model.get_ordered_ops():
        ops = origins.ops.get(node.get_friendly_name())
        if ops:
            node.get_rt_info()[ORIGINAL_NAMES] = ",".join(TAG + op for op in ops)


def layers_on_tf_ops(runtime: Sequence[RuntimeNode], origins: Origins) -> tuple[Layer, ...]:
    """Each executed runtime node as a layer: its median time a call (a call
    the machine preempted moves a mean, not a median), the tf ops its
    original names carry (a tag, or the name of a converted node whose tag a
    fusion of the plugin's dropped), or why it ran none."""
    layers = []
    for node in runtime:
        if not node.executed:
            continue
        ops = _unique(
            op
            for name in node.original
            for op in ((name[len(TAG) :],) if name.startswith(TAG) else origins.ops.get(name, ()))
        )
        why = "" if ops else _why_no_tf_op(node, origins)
        ps = int(statistics.median(node.ps)) if node.ps else 0
        layers.append(Layer(node.name, node.kind, node.kernel, ps, ops, why))
    return tuple(layers)


def _why_no_tf_op(node: RuntimeNode, origins: Origins) -> str:
    for name in node.original:
        if name in origins.unnamed:
            return origins.unnamed[name]
    made = _PLUGIN_MADE.get(node.kind)
    if made:
        return made
    return f"made by OpenVINO's CPU plugin ({node.kind}) from no node of the converted step"


def tf_graph_nodes(concrete: Any) -> list[GraphNode]:
    """TensorFlow's graph of the traced step, in its (topological) order."""
    return [
        GraphNode(op.name, op.type, tuple(tensor.op.name for tensor in op.inputs))
        for op in concrete.graph.get_operations()
    ]


def converted_nodes(model: Any) -> list[GraphNode]:
    """OpenVINO's converted model, in its topological order."""
    return [
        GraphNode(
            node.get_friendly_name(),
            node.get_type_name(),
            tuple(
                port.get_source_output().get_node().get_friendly_name() for port in node.inputs()
            ),
            tuple(sorted(name for output in node.outputs() for name in output.get_names())),
        )
        for node in model.get_ordered_ops()
    ]


def profile_engine(
    model: Any,
    concrete: Any,
    inputs: tuple[Any, ...],
    threads: int,
    precision: str | None,
    calls: int,
) -> list[RuntimeNode]:
    """The CPU plugin's runtime nodes of the (tagged) `model`, each with its time
    in each of `calls` calls after those that warm it.

    The plugin's counters are running means over every call since compiling,
    its first ones too (they repack weights and start threads: on cnn 100x
    slower), shared by all its infer requests; so a call's time is the
    difference of the counters' totals before and after it (each counter a
    whole microsecond: a call's time within as many µs as calls so far)."""
    compiled, request, feed = anchors.openvino_compiled(
        model, concrete, inputs, threads, precision, perf_count=True
    )
    for _ in range(WARMUP_CALLS):
        request.infer(feed)
    readings = [_counters(request)]
    for _ in range(calls):
        request.infer(feed)
        readings.append(_counters(request))
    nodes = []
    for op in compiled.get_runtime_model().get_ordered_ops():
        name, rt = op.get_friendly_name(), op.get_rt_info()
        _, ran, kernel = readings[-1].get(name, (0, False, ""))
        means = [reading.get(name, (0,))[0] for reading in readings]
        ps = tuple(
            window_mean(before, WARMUP_CALLS + index, after, 1)
            for index, (before, after) in enumerate(itertools.pairwise(means))
        )
        original = str(rt[ORIGINAL_NAMES].astype(str)) if ORIGINAL_NAMES in rt else ""
        kind = str(rt["layerType"].astype(str)) if "layerType" in rt else op.get_type_name()
        nodes.append(
            RuntimeNode(name, kind, kernel, ran, ps,
                        tuple(part for part in original.split(",") if part))
        )  # fmt: skip
    return nodes


def window_mean(mean_before: int, calls_before: int, mean_after: int, calls: int) -> int:
    """The mean of the `calls` calls between two readings of a running mean (one
    over `calls_before` calls, one over those and `calls` more)."""
    total = mean_after * (calls_before + calls) - mean_before * calls_before
    return max(total // calls, 0)


def _counters(request: Any) -> dict[str, tuple[int, bool, str]]:
    """Per node of the infer request's profiling info: its counter (a running
    mean, ps), whether it executed, and its kernel."""
    return {
        info.node_name: (
            round(info.real_time.total_seconds() * 1e6) * 1_000_000,
            info.status.name == "EXECUTED",
            info.exec_type,
        )
        for info in request.get_profiling_info()
    }


def profile_anchors(
    function: Any,
    inputs: tuple[Any, ...],
    source: str,
    threads: int | None = None,
    calls: int = 5,
) -> AnchorProfile:
    """OpenVINO's layers of `function(*inputs)` in each of its precisions
    (tfpgo.runtime.anchors), on tf ops; an engine that cannot take the step, or
    gives no per-layer times, is one line in `refused`."""
    threads = threads or len(os.sched_getaffinity(0))
    concrete, flat = anchors.traced_step(function, inputs)
    refused = {anchors.TFLITE: TFLITE_NO_PER_OP_TIMES}
    written = anchors.written_variable(concrete)
    if written:
        why = f"the step writes variables ({written}): OpenVINO runs inference only"
        return AnchorProfile(
            source, (), {**refused, **dict.fromkeys(anchors.OPENVINO_PRECISIONS, why)}
        )
    engines = []
    try:
        model = anchors.openvino_model(concrete)
        tag(model, origins := tf_origins(tf_graph_nodes(concrete), converted_nodes(model)))
        for engine, precision in anchors.OPENVINO_PRECISIONS.items():
            runtime = profile_engine(model, concrete, flat, threads, precision, calls)
            engines.append(EngineLayers(engine, calls, layers_on_tf_ops(runtime, origins)))
    except ImportError as error:
        refused.update(dict.fromkeys(anchors.OPENVINO_PRECISIONS, f"not installed ({error.name})"))
    except Exception as error:  # the converter's and the plugin's assorted refusals
        why = f"cannot take the step ({anchors.first_line(error)})"
        refused.update((e, why) for e in anchors.OPENVINO_PRECISIONS if e not in
                       {engine.engine for engine in engines})  # fmt: skip
    return AnchorProfile(source, tuple(engines), refused)
