"""Model Explorer node data naming the kernel that ran each op, as text.

Model Explorer shows a node data value on its node and groups string values in
its group statistics. Numbers alone say how much time an op took, not that a
MatMul, a BiasAdd and a Relu ran as one `_MklNativeFusedMatMul` kernel; this
file gives every op of a kernel the same label, the kernel counted once:
`_MklNativeFusedMatMul: MatMul+BiasAdd+Relu, 8.5 ms`. Keys are the node ids of
`model_explorer.json` (`tfpgo.render.exports.model_explorer`).
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

from tfpgo.atomic import atomic_output_file
from tfpgo.attribution.op_profile import OpProfile
from tfpgo.render.exports.format import ExportFormat, ExportInput
from tfpgo.render.exports.model_explorer import ops_by_function
from tfpgo.render.metrics import format_ps
from tfpgo.render.model import GraphKind, RenderGraph, RenderNode
from tfpgo.render.reduce import merge_by_name


def kernel_labels(graph: RenderGraph, profile: OpProfile | None) -> dict:
    """ModelNodeData: per function, each timed op and each op fused into it → the
    kernel's label (its runtime kernel type, the ops it ran, its self time)."""
    kernels = {op.name: "+".join(op.op_types) for op in profile.ops} if profile else {}
    document = {}
    for function, nodes in ops_by_function(graph).items():
        by_name = {node.name: node for node in nodes}
        members: dict[str, list[RenderNode]] = defaultdict(list)
        for node in nodes:
            members[node.fused_into or node.name].append(node)
        results = {}
        for index, node in enumerate(nodes):
            kernel = by_name.get(node.fused_into or node.name)
            if kernel is None or kernel.timing is None:
                continue
            ran = "+".join(_op_type(member) for member in members[kernel.name])
            kind = kernels.get(kernel.name, _op_type(kernel))
            label = f"{kind}: {ran}, {format_ps(kernel.timing.self_ps)}"
            results[str(index)] = {"value": label}
        document[function] = {"name": "tfpgo kernel", "results": results}
    return document


def _op_type(node: RenderNode) -> str:
    return node.op_type.removeprefix("tf.")


def event_kernel_labels(graph: RenderGraph, profile: OpProfile | None) -> dict:
    """GraphNodeData of an event DAG, keyed by TF node name (as model_explorer.json
    is): each node's kernel and its summed time; a trace does not say what a kernel
    fused, so the label names the kernel alone."""
    kernels = {op.name: "+".join(op.op_types) for op in profile.ops} if profile else {}
    results = {
        node.name: {
            "value": f"{kernels.get(node.name, node.op_type)}, {format_ps(node.timing.self_ps)}"
        }
        for node in merge_by_name(graph).nodes
        if node.timing is not None
    }
    return {"name": "tfpgo kernel", "results": results}


def _export(source: ExportInput, path: Path) -> None:
    graph, profile = source.graph, source.op_profile
    labels = (
        kernel_labels(graph, profile)
        if graph.kind is GraphKind.OP_GRAPH
        else event_kernel_labels(graph, profile)
    )
    with atomic_output_file(path) as handle:
        json.dump(labels, handle, indent=1, ensure_ascii=False)
        handle.write("\n")


EXPORT = ExportFormat(
    "model-explorer-kernels",
    "Model Explorer node data naming the kernel each op ran in (fused kernels included)",
    _export,
)
