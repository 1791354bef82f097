"""Phases from the op graph's structure (issue 23): on AdamW, SGD with momentum and
Adafactor training steps (real TensorFlow, `pgo` in its own process) every
variable update, and what only feeds the updates, is under optimizer, whatever
the optimizer's scope is called; the gradient ops are backward and the loss's
ancestors forward. The name rules put AdamW's updates (scope `adam_w`) under
other: the structure does not depend on it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pgo_process import run_pgo

from tfpgo.analysis import analyse
from tfpgo.analysis.phase import Phase
from tfpgo.analysis.structure import OpDataflow, is_update, node_phases
from tfpgo.attribution.op_profile import OpProfile
from tfpgo.flow.stages import structural_phases
from tfpgo.mlir import annotate
from tfpgo.render import load_graph

HOOKS = Path(__file__).resolve().parents[1] / "data" / "phases"


@pytest.fixture(scope="module", params=["adamw", "sgd_momentum", "adafactor"])
def run(request, tmp_path_factory):
    out = tmp_path_factory.mktemp(request.param) / "out"
    flags = ["--model", str(HOOKS / f"{request.param}.py"), "--mode", "train"]
    flags += ["--batch-size", "8", "--steps", "2", "--warmup", "1", "--output-dir", str(out)]
    run_pgo(flags)
    return request.param, out


def _structural(out: Path, profile: OpProfile) -> dict[str, Phase]:
    """What the flow's report used: its op graph and attribution, read back."""
    graph = load_graph(out / "op_graph.json")
    attribution = annotate.read_attribution(out / "attribution.json")
    return structural_phases(graph, attribution, profile)


def test_every_update_is_under_optimizer(run):
    _, out = run
    profile = OpProfile.read(out / "op_profile.json")
    phases = _structural(out, profile)
    updates = [op for op in profile.ops if any(is_update(t) for t in op.op_types)]
    assert updates and all(phases[op.name] is Phase.OPTIMIZER for op in updates)
    gradients = [op for op in profile.ops if op.name.startswith("gradient_tape/")]
    assert gradients and all(phases[op.name] is Phase.BACKWARD for op in gradients)
    assert any(phases[op.name] is Phase.FORWARD for op in profile.ops)
    # the flow's analysis.json is the structural one
    rows = {row["phase"]: row for row in json.loads((out / "analysis.json").read_text())["phases"]}
    for phase in (Phase.OPTIMIZER, Phase.BACKWARD):
        expected = sum(op.self_ps for op in profile.ops if phases.get(op.name) is phase)
        assert rows[phase.value]["self_ps"] == expected > 0


def test_name_rules_miss_adamw_and_the_structure_does_not(run):
    name, out = run
    profile = OpProfile.read(out / "op_profile.json")
    by_names = {row.phase: row.self_ps for row in analyse(profile).phases.rows}
    by_structure = {
        row.phase: row.self_ps for row in analyse(profile, _structural(out, profile)).phases.rows
    }
    assert by_structure[Phase.OPTIMIZER] >= by_names[Phase.OPTIMIZER]
    if name == "adamw":
        assert by_names[Phase.OPTIMIZER] == 0 < by_structure[Phase.OPTIMIZER]


def test_optimizer_closure_on_a_small_graph():
    """lr -> mul -> sub -> assign: the schedule and the update math feed only the
    update (optimizer); the gradient (backward) and a value read both by the loss
    and the update (forward) stay out; a return's ancestors are forward."""
    names = ("w/read", "lr", "gradient_tape/g", "mul", "sub", "assign", "loss", "return")
    types = (
        "ReadVariableOp",
        "Const",
        "MatMul",
        "Mul",
        "Sub",
        "AssignVariableOp",
        "Mean",
        "func.return",
    )
    edges = ((0, 4), (0, 6), (1, 3), (2, 3), (3, 4), (4, 5), (6, 7), (0, 2))
    phases = node_phases(OpDataflow(names, types, edges))
    assert dict(zip(names, phases, strict=True)) == {
        "w/read": Phase.FORWARD,
        "lr": Phase.OPTIMIZER,
        "gradient_tape/g": Phase.BACKWARD,
        "mul": Phase.OPTIMIZER,
        "sub": Phase.OPTIMIZER,
        "assign": Phase.OPTIMIZER,
        "loss": Phase.FORWARD,
        "return": Phase.OTHER,
    }
