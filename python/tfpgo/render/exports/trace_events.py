"""Chrome trace-event JSON of the event DAG: opens in ui.perfetto.dev and chrome://tracing.

Format: https://docs.google.com/document/d/1CvAClvFfyA5R-PhYUmn5OOQtYMH4h6I0nSsKchNAySU
- one complete event (`"ph": "X"`) per DAG node, `ts`/`dur` in µs (floats keep
  the ps precision to 1e-6 µs);
- one process per (host, plane) and one thread per trace line, named by
  metadata events (`"ph": "M"`, process_name / thread_name);
- `flow` edges of the DAG become flow arrows (`"ph": "s"` at the producer,
  `"ph": "f"` with `"bp": "e"` at the consumer); events on the critical path get
  the category `critical_path` so the UI can filter them.
"""

from __future__ import annotations

from tfpgo.errors import UserError
from tfpgo.render.exports.format import graph_document_export
from tfpgo.render.model import GraphKind, RenderEdgeKind, RenderGraph, RenderNode


def _us(ps: int) -> float:
    return ps / 1e6


def _place(node: RenderNode) -> tuple[str, str]:
    details = dict(node.details)
    process = " ".join(details[key] for key in ("host", "plane") if key in details)
    return process or "trace", details.get("line", "events")


def trace_events(graph: RenderGraph, graph_name: str | None = None) -> dict:
    """The trace-event document of an event DAG; `otherData.source` names the
    graph file as `graph_name` (default: its path)."""
    if graph.kind is not GraphKind.EVENT_DAG:
        raise UserError(
            f"{graph.source}: a trace export needs the event DAG "
            "(mlir_graph.json); an op graph has no individual events"
        )
    pids: dict[str, int] = {}
    tids: dict[tuple[str, str], int] = {}
    events: list[dict] = []
    placed: dict[int, tuple[int, int, float, float]] = {}
    for node in sorted(
        graph.nodes, key=lambda n: (n.timing.first_start_ps or 0) if n.timing else 0
    ):
        process, line = _place(node)
        pid = pids.setdefault(process, len(pids) + 1)
        tid = tids.setdefault((process, line), len(tids) + 1)
        timing = node.timing
        assert timing is not None  # every DAG event is timed
        ts, dur = _us(timing.first_start_ps or 0), _us(timing.total_ps)
        args = {"op_type": node.op_type, "self_ps": timing.self_ps, **dict(node.details)}
        events.append(
            {
                "ph": "X",
                "name": node.name,
                "cat": "critical_path"
                if node.critical
                else ("tf_op" if node.op_type != "event" else "event"),
                "ts": ts,
                "dur": dur,
                "pid": pid,
                "tid": tid,
                "args": args,
            }
        )
        placed[node.id] = (pid, tid, ts, dur)
    for flow_id, edge in enumerate(
        (e for e in graph.edges if e.kind is RenderEdgeKind.FLOW), start=1
    ):
        source, target = placed[edge.source], placed[edge.target]
        common = {"name": "flow", "cat": "flow", "id": flow_id}
        events.append(
            {
                **common,
                "ph": "s",
                "pid": source[0],
                "tid": source[1],
                "ts": source[2] + source[3] / 2,
            }
        )
        events.append(
            {**common, "ph": "f", "bp": "e", "pid": target[0], "tid": target[1], "ts": target[2]}
        )
    metadata = [
        {"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": process}}
        for process, pid in pids.items()
    ]
    metadata += [
        {"ph": "M", "name": "thread_name", "pid": pids[process], "tid": tid, "args": {"name": line}}
        for (process, line), tid in tids.items()
    ]
    return {
        "traceEvents": metadata + events,
        "displayTimeUnit": "ns",
        "otherData": {"source": graph_name or str(graph.source), "generator": "tfpgo plot_graph"},
    }


EXPORT = graph_document_export(
    "trace",
    "Chrome/Perfetto trace-event JSON of the events, flow arrows included (event DAG only)",
    trace_events,
)
