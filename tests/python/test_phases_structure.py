"""Phases from the op graph's structure (issue 23): on AdamW, SGD with momentum and
Adafactor training steps (real TensorFlow, `pgo` in its own process) every
variable update, and what only feeds the updates, is under optimizer, whatever
the optimizer's scope is called; the gradient ops are backward and the loss's
ancestors forward. The name rules put AdamW's updates (scope `adam_w`) under
other: the structure does not depend on it.

The oracle is TensorFlow's own graph of the same step (`phase_oracle.py`, in a
process of its own): the updates by their op types, the tape and the forward
pass by dataflow from the tensors `tf.GradientTape.gradient` took and gave. It
calls no tfpgo code and reads no scope name; the test compares it with the
phases the flow wrote (`analysis.json`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from pgo_process import run_pgo

from tfpgo.analysis import analyse
from tfpgo.analysis.phase import Phase
from tfpgo.analysis.structure import OpDataflow, node_phases
from tfpgo.attribution.op_profile import OpProfile

HOOKS = Path(__file__).resolve().parents[1] / "data" / "phases"
ORACLE = Path(__file__).resolve().parent / "phase_oracle.py"
BATCH = 8
# Grappler's arithmetic optimizer names the kernel that replaces a chain of
# unary ops `n/unary_ops_composition` (arithmetic_optimizer.cc,
# UnaryOpsComposition::OptimizedNodeName); it stands for the graph's node `n`.
GRAPPLER_SUFFIXES = ("/unary_ops_composition",)


@pytest.fixture(scope="module", params=["adamw", "sgd_momentum", "adafactor"])
def run(request, tmp_path_factory):
    root = tmp_path_factory.mktemp(request.param)
    out = root / "out"
    hook = HOOKS / f"{request.param}.py"
    flags = ["--model", str(hook), "--mode", "train", "--batch-size", str(BATCH)]
    flags += ["--steps", "2", "--warmup", "1", "--output-dir", str(out)]
    run_pgo(flags)
    oracle = root / "oracle.json"
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    done = subprocess.run(
        [sys.executable, str(ORACLE), str(hook), str(BATCH), str(oracle)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return request.param, out, json.loads(oracle.read_text())


def oracle_phases(oracle: dict, names: list[str]) -> dict[str, Phase]:
    """Each runtime name's phase by the oracle: the TF graph's node it is, or
    the one a Grappler suffix names; a name that is neither fails the test."""
    by_node = {name: Phase.OTHER for name in oracle["ops"]}
    for key, phase in (
        ("forward", Phase.FORWARD),
        ("tape", Phase.BACKWARD),
        ("updates", Phase.OPTIMIZER),
        ("update_math", Phase.OPTIMIZER),
    ):
        for name in oracle[key]:
            assert by_node[name] is Phase.OTHER, f"{name} in two oracle classes"
            by_node[name] = phase
    found = {}
    for name in names:
        node = name
        for suffix in GRAPPLER_SUFFIXES:
            node = node.removesuffix(suffix)
        assert node in by_node, f"runtime name {name} is no node of the traced graph"
        found[name] = by_node[node]
    return found


def test_phases_match_the_graphs_dataflow(run):
    """Each phase of analysis.json holds exactly the ops (count and self time)
    the oracle puts there."""
    _, out, oracle = run
    profile = OpProfile.read(out / "op_profile.json")
    expected = oracle_phases(oracle, [op.name for op in profile.ops])
    updates = set(oracle["updates"])
    assert updates and updates <= set(expected), "every update ran"
    assert {p for p in expected.values()} >= {Phase.FORWARD, Phase.BACKWARD, Phase.OPTIMIZER}
    rows = {row["phase"]: row for row in json.loads((out / "analysis.json").read_text())["phases"]}
    for phase in Phase:
        ops = [op for op in profile.ops if expected[op.name] is phase]
        got = rows[phase.value]
        assert (got["ops"], got["self_ps"]) == (len(ops), sum(op.self_ps for op in ops)), (
            phase,
            sorted(op.name for op in ops),
        )


def test_name_rules_miss_adamw_and_the_structure_does_not(run):
    name, out, oracle = run
    profile = OpProfile.read(out / "op_profile.json")
    expected = oracle_phases(oracle, [op.name for op in profile.ops])
    optimizer_ps = sum(op.self_ps for op in profile.ops if expected[op.name] is Phase.OPTIMIZER)
    by_names = {row.phase: row.self_ps for row in analyse(profile).phases.rows}
    rows = json.loads((out / "analysis.json").read_text())["phases"]
    by_structure = {Phase(row["phase"]): row["self_ps"] for row in rows}
    assert by_structure[Phase.OPTIMIZER] == optimizer_ps >= by_names[Phase.OPTIMIZER]
    if name == "adamw":
        assert by_names[Phase.OPTIMIZER] == 0 < optimizer_ps


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
