"""Paths of the renderer's fixtures (tests/data/render) and small graph builders."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tfpgo.render.model import NodeTiming, RenderNode

DATA = Path(__file__).resolve().parents[1] / "data" / "render"
MLP_OP_GRAPH = DATA / "mlp_op_graph.json"
GRU_OP_GRAPH = DATA / "gru_op_graph.json"
MLP_EVENT_DAG = DATA / "mlp_event_dag.json"
MLP_OP_PROFILE = DATA / "mlp_op_profile.json"
DENSE_MLIR = DATA.parent / "dense_tf2_21.mlir"


def timing(node: RenderNode) -> NodeTiming:
    """`node.timing` of a node the test knows was timed (checked, not assumed)."""
    assert node.timing is not None, f"{node.name} has no timing"
    return node.timing


def load(path: Path) -> dict:
    return json.loads(path.read_text())


def document_op(path: Path, name: str) -> dict:
    """The `profiler_data` of op `name` as the op graph document holds it: the
    oracle the loader and the renderers are checked against."""
    return next(node for node in load(path)["nodes"] if node["name"] == name)["profiler_data"]


def document_events(path: Path, node: str) -> list[dict]:
    """The events of the event DAG document that ran TF node `node`."""
    return [event for event in load(path)["nodes"] if event["node"] == node]


def critical_path_span_ps(path: Path) -> int:
    """From the first start to the last end of the events the event DAG document
    lists on its critical path."""
    on_path = set(load(path)["meta"]["critical_path"])
    events = [event for event in load(path)["nodes"] if event["id"] in on_path]
    return max(e["ts"] + e["duration"] for e in events) - min(e["ts"] for e in events)


def in_us(ps: int) -> str:
    """A time of 1 µs to 1 ms as the renderers show it: 3 significant digits."""
    return f"{ps / 1e6:.3g} µs"


def write_variant(tmp_path: Path, source: Path, edit) -> Path:
    """A copy of a fixture with `edit(document)` applied, for error-path tests."""
    document = copy.deepcopy(load(source))
    edit(document)
    target = tmp_path / source.name
    target.write_text(json.dumps(document))
    return target
