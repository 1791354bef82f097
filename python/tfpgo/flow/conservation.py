"""The conservation law, checked on every output of a run.

At every level, each picosecond attributed there is charged to exactly one op:
the ops' `self` sums to the time the level holds, and their shares to at most 1.
What a level holds is read from a document other than the one checked:

- `op_graph.json` (tf): `attribution.json`'s `attributed_self_ps` (or its device
  time for a GPU profile);
- `op_graph.<level>.json` (StableHLO, linalg): the tf-level self time of the
  sources that reached the level (every tf op named by a record's `source` or
  `fused_sources`);
- `op_graph.iree.json`: `iree_profile.json`'s attributed dispatch time, less
  what the graph lists in `unplaced`;
- `model.dispatches.mlir`: every `iree_self` sums to the attributed dispatch time;
- `model_explorer*.json`: the node values (µs, rounded to the ns) sum to their
  op graph's self time;
- `op_profile.csv`: the rows' `self_ps` sum to `op_profile.json`'s `op_self_ps`;
- `mlir_graph.json` (the event DAG as plot_graph draws it) and `trace.json`: each
  event's self (duration less what nests in it on its line) sums to the time its
  line is busy, the union of its events' intervals; `trace.json` holds every event
  of the DAG with its whole duration;
- `speedscope.json`: the time each profile's stack is open sums to the durations
  of the DAG's outermost events (those inside no other event of their line), and
  every event is there with its whole duration;
- every graph collapsed as `plot_graph --depth 1..3` draws it: its nodes' self
  sums to the graph's, its shares to at most 1.

`check_output` returns one `LevelSum` per file and raises `UserError` naming every
file that breaks the law.
"""

from __future__ import annotations

import csv
import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tfpgo.documents import read_json
from tfpgo.errors import UserError
from tfpgo.render import RenderOptions, prepare
from tfpgo.render.loader import graph_from_document
from tfpgo.render.model import RenderGraph

# Model Explorer values are µs with 3 decimals: each op may round by 0.5 ns.
_ROUNDING_PS = 500
# Shares are rounded to 6 significant digits in MLIR (op_timing.h).
_SHARE_SLACK = 1e-4
# plot_graph --depth levels checked on every graph.
_DEPTHS = (1, 2, 3)


@dataclass(frozen=True)
class LevelSum:
    """One file's charged time against what its level holds."""

    file: str
    charged_ps: int
    expected_ps: int
    share_sum: float
    slack_ps: int = 0  # rounding the file's format allows

    @property
    def holds(self) -> bool:
        return (
            abs(self.charged_ps - self.expected_ps) <= self.slack_ps
            and self.share_sum <= 1 + _SHARE_SLACK
        )


def check_output(out: Path) -> list[LevelSum]:
    """Every level of a pgo output directory, checked; raises on a violation. Each
    document is read once."""
    graphs = {path.name: read_json(path) for path in sorted(out.glob("op_graph*.json"))}
    tf_graph = graphs["op_graph.json"]
    tf_self = {n["name"]: _self(n, False) for n in tf_graph["nodes"] if n.get("name")}
    sums = [_tf_level(out, tf_graph)]
    dispatches = out / "model.dispatches.mlir"
    iree = "op_graph.iree.json" in graphs or dispatches.is_file()
    iree_profile = read_json(out / "iree_profile.json") if iree else {}
    for name, graph in graphs.items():
        if name == "op_graph.iree.json":
            sums.append(_iree_level(name, graph, iree_profile))
        elif name != "op_graph.json":
            sums.append(_lowered_level(name, graph, tf_self))
    if dispatches.is_file():
        sums.append(_dispatches(dispatches, iree_profile))
    for path in sorted(out.glob("model_explorer*.json")):
        if path.name != "model_explorer.kernels.json":
            sums.append(_model_explorer(path, graphs))
    if (out / "op_profile.csv").is_file():
        sums.append(_csv(out / "op_profile.csv", read_json(out / "op_profile.json")))
    dag = read_json(out / "mlir_graph.json") if (out / "mlir_graph.json").is_file() else None
    if dag is not None:
        lines = _dag_lines(dag)
        busy = sum(_busy_ps(spans) for spans in lines.values())
        sums += _collapsed(graph_from_document(out / "mlir_graph.json", dag), busy)
        if (out / "trace.json").is_file():
            sums += _trace_events(out / "trace.json", lines)
        if (out / "speedscope.json").is_file():
            sums += _speedscope(out / "speedscope.json", lines)
    for name, graph in graphs.items():
        device = _device(graph)
        expected = sum(_self(node, device) for node in graph["nodes"])
        sums += _collapsed(graph_from_document(out / name, graph), expected)[1:]
    broken = [s for s in sums if not s.holds]
    if broken:
        raise UserError(
            f"{out}: time is not conserved: "
            + "; ".join(
                f"{s.file} charges {s.charged_ps} ps of {s.expected_ps} (shares sum to "
                f"{s.share_sum:.4f})"
                for s in broken
            )
        )
    return sums


def _device(graph: dict[str, Any]) -> bool:
    return any((n.get("profiler_data") or {}).get("device_count") for n in graph["nodes"])


def _self(node: dict[str, Any], device: bool) -> int:
    record = node.get("profiler_data") or {}
    return int(record.get("device_self" if device else "self", 0))


def _graph_sum(name: str, graph: dict[str, Any], expected: int) -> LevelSum:
    device = _device(graph)
    records = [n["profiler_data"] for n in graph["nodes"] if n.get("profiler_data")]
    share = "device_share" if device else "share"
    return LevelSum(
        name,
        sum(_self(n, device) for n in graph["nodes"]),
        expected,
        sum(float(r.get(share, 0.0)) for r in records),
    )


def _tf_level(out: Path, graph: dict[str, Any]) -> LevelSum:
    attribution = read_json(out / "attribution.json")
    key = "attributed_device_ps" if _device(graph) else "attributed_self_ps"
    return _graph_sum("op_graph.json", graph, int(attribution[key]))


def _lowered_level(name: str, graph: dict[str, Any], tf_self: dict[str, int]) -> LevelSum:
    sources = graph_sources(graph)
    return _graph_sum(name, graph, sum(tf_self.get(source, 0) for source in sources))


def graph_sources(graph: dict[str, Any]) -> set[str]:
    """The tf ops whose time a lowered level's op graph holds: each timed node's
    source and the sources fused into it."""
    sources: set[str] = set()
    for node in graph["nodes"]:
        record = node.get("profiler_data") or {}
        if "self" in record:
            sources.add(record.get("source", node.get("name") or ""))
            sources.update(record.get("fused_sources", ()))
    return sources


def _iree_level(name: str, graph: dict[str, Any], profile: dict[str, Any]) -> LevelSum:
    unplaced = sum(int(entry["ps"]) for entry in graph.get("unplaced", ()))
    expected = int(profile["totals"]["dispatch_attributed_ps"]) - unplaced
    return _graph_sum(name, graph, expected)


_IREE_SELF = re.compile(r"[{ ,]iree_self = (\d+) : i64")


def _dispatches(path: Path, profile: dict[str, Any]) -> LevelSum:
    text = path.read_text()
    charged = sum(int(ps) for ps in _IREE_SELF.findall(text))
    return LevelSum(
        "model.dispatches.mlir", charged, int(profile["totals"]["dispatch_attributed_ps"]), 0.0
    )


def _model_explorer(path: Path, graphs: dict[str, dict[str, Any]]) -> LevelSum:
    """Node data values against the op graph of the same level."""
    document = read_json(path)
    level = path.stem.removeprefix("model_explorer").lstrip(".")
    graph = graphs[f"op_graph.{level}.json" if level else "op_graph.json"]
    device = _device(graph)
    expected = sum(_self(n, device) for n in graph["nodes"])
    per_graph = document.values() if "results" not in document else [document]
    values = [
        float(result["value"])
        for data in per_graph
        for result in data["results"].values()
        if isinstance(result.get("value"), int | float)
    ]
    charged = round(sum(values) * 1e6)
    return LevelSum(path.name, charged, expected, 0.0, slack_ps=_ROUNDING_PS * len(values))


Interval = tuple[int, int]  # start ps, end ps


def _busy_ps(intervals: Iterable[Interval]) -> int:
    """The length of the union of the intervals."""
    busy, reach = 0, None
    for start, end in sorted(intervals):
        if reach is None or start > reach:
            reach = start
        if end > reach:
            busy, reach = busy + end - reach, end
    return busy


def _outermost_ps(intervals: Iterable[Interval]) -> int:
    """The durations of the intervals inside no other (of two equal ones, the first)."""
    total, reach = 0, None
    for start, end in sorted(intervals, key=lambda span: (span[0], -span[1])):
        if reach is None or end > reach:
            total, reach = total + end - start, end
    return total


def _dag_lines(dag: dict[str, Any]) -> dict[tuple, list[Interval]]:
    """The event DAG's events per trace line (host, plane, line)."""
    lines: dict[tuple, list[Interval]] = defaultdict(list)
    for raw in dag["nodes"]:
        key = (raw.get("host"), raw.get("plane"), raw.get("line"))
        lines[key].append((int(raw["ts"]), int(raw["ts"]) + int(raw["duration"])))
    return lines


def _durations(lines: dict[tuple, list[Interval]]) -> int:
    return sum(end - start for spans in lines.values() for start, end in spans)


def _csv(path: Path, profile: dict[str, Any]) -> LevelSum:
    """The op profile's rows against its own total of op self time."""
    with path.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    return LevelSum(
        path.name,
        sum(int(row["self_ps"]) for row in rows),
        int(profile["totals"]["op_self_ps"]),
        sum(float(row["share"]) for row in rows),
    )


def _ps(us: float) -> int:
    return round(us * 1e6)


def _trace_events(path: Path, lines: dict[tuple, list[Interval]]) -> list[LevelSum]:
    """Each thread's `self_ps` against the time the thread is busy; and every event
    of the DAG, whole."""
    threads: dict[tuple, list[Interval]] = defaultdict(list)
    charged = 0
    for event in read_json(path)["traceEvents"]:
        if event.get("ph") == "X":
            start = _ps(event["ts"])
            threads[(event["pid"], event["tid"])].append((start, start + _ps(event["dur"])))
            charged += int(event["args"]["self_ps"])
    return [
        LevelSum(path.name, charged, sum(_busy_ps(spans) for spans in threads.values()), 0.0),
        LevelSum(f"{path.name} (every event)", _durations(threads), _durations(lines), 0.0),
    ]


def _speedscope(path: Path, lines: dict[tuple, list[Interval]]) -> list[LevelSum]:
    """The time each profile's stack is open (speedscope's Σ self) against the DAG's
    outermost events; and every event of the DAG, whole. A close must match the
    open frame on top of the stack, or the file's self times mean nothing."""
    document = read_json(path)
    charged, whole = 0, 0
    for profile in document["profiles"]:
        stack: list[tuple[int, int]] = []  # frame, open time in ps
        for event in profile["events"]:
            at = round(event["at"] * 1000)
            if event["type"] == "O":
                stack.append((event["frame"], at))
                continue
            frame, opened = stack.pop() if stack else (None, at)
            if frame != event["frame"]:
                raise UserError(f"{path}: {profile['name']}: frames do not nest at {at} ps")
            whole += at - opened
            if not stack:
                charged += at - opened
        if stack:
            raise UserError(f"{path}: {profile['name']}: frames left open")
    outermost = sum(_outermost_ps(spans) for spans in lines.values())
    return [
        LevelSum(path.name, charged, outermost, 0.0),
        LevelSum(f"{path.name} (every event)", whole, _durations(lines), 0.0),
    ]


def _collapsed(graph: RenderGraph, expected: int) -> list[LevelSum]:
    """The graph's self times as plot_graph draws them, whole and collapsed by
    `--depth N`, against what the graph holds (read without the renderer)."""
    sums = []
    for depth in (None, *_DEPTHS):
        drawn = prepare(graph, RenderOptions(depth=depth)).nodes
        timed = [node.timing for node in drawn if node.timing]
        sums.append(
            LevelSum(
                graph.source.name + (f" --depth {depth}" if depth else ""),
                sum(timing.self_ps for timing in timed),
                expected,
                sum(timing.share for timing in timed),
            )
        )
    return sums
