"""Model Explorer node data: color the same model in google-ai-edge/model-explorer.

The schema is `model_explorer.node_data_builder` (ai-edge-model-explorer 0.1.34):
a `GraphNodeData` is {"name", "results": {node key: {"value", "bgColor",
"textColor"}}, "gradient": [{"stop", "bgColor"}]}; a `ModelNodeData` is a
JSON object from graph id to GraphNodeData. The web app applies a file with a
top-level "results" to the graph on screen, and a per-graph object by graph id.

Keys, per input:
- op graph → ModelNodeData. Model Explorer's MLIR adapter (open the annotated
  `.mlir`) names each graph after its function and numbers the function's ops
  "0", "1", ... in pre-order, terminators included. op_graph.json lists ops in
  the same walk order, so an op's key is its rank among its function's ops by
  `id`.
- event DAG → one GraphNodeData keyed by TF node name, which is the node id of
  Model Explorer's TF GraphDef / SavedModel adapters; events of one node are
  summed.

Each result carries an explicit `bgColor` (the picture's color, so log scales
and hot marks agree) and `value` in µs (time metrics) or % (share).
"""

from __future__ import annotations

import functools
import json
import re
import tempfile
from collections import defaultdict
from dataclasses import replace
from pathlib import Path

from tfpgo.atomic import atomic_output_file
from tfpgo.attribution.parts import split_equally
from tfpgo.errors import UserError
from tfpgo.render import prepare
from tfpgo.render.colormap import colormap_hex, text_color
from tfpgo.render.exports.format import ExportFormat, ExportInput
from tfpgo.render.metrics import Metric, metric_value
from tfpgo.render.model import GraphKind, NodeState, NodeTiming, RenderGraph, RenderNode
from tfpgo.render.reduce import merge_by_name
from tfpgo.render.style import color_scale, node_style

GRADIENT_STOPS = 6


def _display_value(value: float, metric: Metric) -> float:
    return round(value / 1e6, 3) if metric.is_time else round(value * 100, 4)


def _graph_node_data(
    name: str, nodes: list[tuple[str, RenderNode]], graph: RenderGraph, metric: Metric
) -> dict:
    scale = color_scale(graph, metric)
    results = {}
    for key, node in nodes:
        value = metric_value(node, metric)
        if value is None:
            continue
        fill = node_style(node, metric, scale).fill
        rgb = (int(fill[1:3], 16), int(fill[3:5], 16), int(fill[5:7], 16))
        results[key] = {
            "value": _display_value(value, metric),
            "bgColor": fill,
            "textColor": text_color(rgb),
        }
    gradient = [
        {
            "stop": round(step / (GRADIENT_STOPS - 1), 4),
            "bgColor": colormap_hex(step / (GRADIENT_STOPS - 1)),
        }
        for step in range(GRADIENT_STOPS)
    ]
    return {"name": name, "results": results, "gradient": gradient}


def model_explorer_node_data(graph: RenderGraph, metric: Metric) -> dict:
    """The node data document for `graph` (unreduced: keys must be real ops)."""
    unit = "µs" if metric.is_time else "%"
    name = f"tfpgo {metric.value} ({unit})"
    if graph.kind is GraphKind.EVENT_DAG:
        per_name = merge_by_name(graph)
        return _graph_node_data(name, [(n.name, n) for n in per_name.nodes], per_name, metric)
    document = {}
    charged = charge_fused_ops(graph)
    for function, nodes in ops_by_function(charged).items():
        document[function] = _graph_node_data(
            name, [(str(index), node) for index, node in enumerate(nodes)], charged, metric
        )
    return document


def ops_by_function(graph: RenderGraph) -> dict[str, list[RenderNode]]:
    """Each function's ops in id order: an op's Model Explorer node id is its index."""
    by_function: dict[str, list[RenderNode]] = defaultdict(list)
    for node in sorted(graph.nodes, key=lambda node: node.id):
        by_function[node.group or "main"].append(node)
    return by_function


def charge_fused_ops(graph: RenderGraph) -> RenderGraph:
    """`graph` with each fused kernel's time split over the ops it ran: the op that
    holds the kernel's record and every op TensorFlow ran inside it (`fused_into`,
    e.g. the MatMul and BiasAdd of a MatMul+BiasAdd+Relu kernel named after the
    Relu) each carry an equal integer part of its self and total time and share
    (`split_equally`), so no op of the kernel reads as free and the values still
    sum to the profile; the mean and count stay the kernel's. The kernel's name and
    whole time are each op's label in model_explorer.kernels.json."""
    members: dict[tuple[str | None, str], list[RenderNode]] = defaultdict(list)
    for node in graph.nodes:
        if node.fused_into:
            members[(node.group, node.fused_into)].append(node)
    if not members:
        return graph
    charged: dict[int, NodeTiming] = {}
    for node in graph.nodes:
        fused = members.get((node.group, node.name))
        if node.timing is None or not fused:
            continue
        held = [node, *fused]
        timing = node.timing
        selfs = split_equally(timing.self_ps, len(held))
        totals = split_equally(timing.total_ps, len(held))
        for member, self_ps, total_ps in zip(held, selfs, totals, strict=True):
            share = timing.share * self_ps / timing.self_ps if timing.self_ps else 0.0
            charged[member.id] = replace(timing, self_ps=self_ps, total_ps=total_ps, share=share)
    nodes = tuple(
        replace(node, timing=charged[node.id], state=NodeState.EXECUTED)
        if node.id in charged
        else node
        for node in graph.nodes
    )
    return replace(graph, nodes=nodes)


# An op in generic form: `"dialect.op"(` after `=` or at a line's start.
_GENERIC_OP = re.compile(r'(?<=[\s=])"(?P<dialect>[A-Za-z_][\w$]*)\.(?P<op>[\w.$]+)"(?=\()')
_AVAILABLE = re.compile(r"Available dialects: ([\w, ]+?)\s*;")


@functools.cache
def adapter_dialects() -> frozenset[str]:
    """The dialects Model Explorer's MLIR adapter registers, as the adapter itself
    lists them when it meets an op of another dialect."""
    import ai_edge_model_explorer_adapter as adapter

    with tempfile.TemporaryDirectory(prefix="tfpgo-me-") as scratch:
        probe = Path(scratch) / "probe.mlir"
        probe.write_text("func.func @f() {\n  tfpgo_probe.op\n  return\n}\n")
        try:
            adapter.ConvertMlirToJson(adapter.VisualizeConfig(), str(probe))
        except RuntimeError as error:
            listed = _AVAILABLE.search(str(error))
            if listed:
                return frozenset(name.strip() for name in listed[1].split(","))
    raise UserError(
        "Model Explorer's MLIR adapter did not list its dialects; "
        "check the ai-edge-model-explorer-adapter install (requirements.txt)"
    )


def adapter_readable(generic_module: str, dialects: frozenset[str]) -> str:
    """A generic-form module whose ops of dialects the adapter lacks are moved into
    the TensorFlow dialect (`"linalg.generic"` → `"tf.linalg.generic"`): the adapter
    segfaults on any op of an unregistered dialect, and the tf dialect accepts
    unknown ops (the adapter shows them without the `tf.` prefix). Op order, and so
    the adapter's node ids, are unchanged."""

    def rename(match: re.Match[str]) -> str:
        if match["dialect"] in dialects:
            return match[0]
        return f'"tf.{match["dialect"]}.{match["op"]}"'

    return _GENERIC_OP.sub(rename, generic_module)


def write_model_explorer(graph: RenderGraph, metric: Metric, path: Path) -> None:
    with atomic_output_file(path) as handle:
        json.dump(model_explorer_node_data(graph, metric), handle, indent=1, ensure_ascii=False)
        handle.write("\n")


def _export(source: ExportInput, path: Path) -> None:
    # Model Explorer keys name real ops: hot marks yes, reductions no.
    marked = prepare(source.graph, replace(source.options, depth=None, top=None))
    write_model_explorer(marked, source.options.metric, path)


EXPORT = ExportFormat(
    "model-explorer", "Model Explorer node data JSON (color the same model there)", _export
)
