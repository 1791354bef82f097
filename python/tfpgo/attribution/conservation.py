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
  op graph's self time.

`check_output` returns one `LevelSum` per file and raises `UserError` naming every
file that breaks the law.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tfpgo.documents import read_json
from tfpgo.errors import UserError

# Model Explorer values are µs with 3 decimals: each op may round by 0.5 ns.
_ROUNDING_PS = 500
# Shares are rounded to 6 significant digits in MLIR (op_timing.h).
_SHARE_SLACK = 1e-4


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
    sources: set[str] = set()
    for node in graph["nodes"]:
        record = node.get("profiler_data") or {}
        if "self" in record:
            sources.add(record.get("source", node.get("name") or ""))
            sources.update(record.get("fused_sources", ()))
    return _graph_sum(name, graph, sum(tf_self.get(source, 0) for source in sources))


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
