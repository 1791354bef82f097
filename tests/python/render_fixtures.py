"""Paths of the renderer's fixtures (tests/data/render) and small graph builders."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tfpgo.render.model import RenderNode, Timing

DATA = Path(__file__).resolve().parents[1] / "data" / "render"
MLP_OP_GRAPH = DATA / "mlp_op_graph.json"
GRU_OP_GRAPH = DATA / "gru_op_graph.json"
MLP_EVENT_DAG = DATA / "mlp_event_dag.json"
MLP_OP_PROFILE = DATA / "mlp_op_profile.json"
DENSE_MLIR = DATA.parent / "dense_tf2_21.mlir"


def timing(node: RenderNode) -> Timing:
    """`node.timing` of a node the test knows was timed (checked, not assumed)."""
    assert node.timing is not None, f"{node.name} has no timing"
    return node.timing


def load(path: Path) -> dict:
    return json.loads(path.read_text())


def write_variant(tmp_path: Path, source: Path, edit) -> Path:
    """A copy of a fixture with `edit(document)` applied, for error-path tests."""
    document = copy.deepcopy(load(source))
    edit(document)
    target = tmp_path / source.name
    target.write_text(json.dumps(document))
    return target
