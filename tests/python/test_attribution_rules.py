"""The renaming rules of docs/attribution_rules.md on real TensorFlow steps that
trigger them (issue 23): a GELU transformer training step (Grappler's unary ops
composition), a MirroredStrategy training step over two logical CPUs (the graph
partitioner's sends, the dependency optimizer's grouped control edges, argument
transfers) and a jit-compiled AdamW step with LayerNorm (XLA instructions without
op_name). Each runs `pgo` in its own process, as `bazel run //:pgo` does."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pgo_process import run_pgo

from tfpgo.attribution.op_profile import OpProfile

HOOKS = Path(__file__).resolve().parents[1] / "data" / "attribution"
# hook -> the rules its step must need (attribution.json `rule`)
RULES = {
    "gelu_transformer": {"grappler_unary_ops_composition"},
    "mirrored": {"graph_partitioner", "graph_partitioner+function_argument"},
    "jit_adamw_layernorm": set(),
}


@pytest.fixture(scope="module", params=sorted(RULES))
def run(request, tmp_path_factory):
    name = request.param
    out = tmp_path_factory.mktemp(name) / "out"
    flags = ["--model", str(HOOKS / f"{name}.py"), "--mode", "train", "--batch-size", "8"]
    flags += ["--steps", "3", "--warmup", "2", "--output-dir", str(out)]
    run_pgo(flags)
    return name, out


def test_every_entry_lands_on_an_op_through_its_rule(run):
    name, out = run
    attribution = json.loads((out / "attribution.json").read_text())
    assert attribution["attributed_self_ps"] >= 0.995 * attribution["profile_self_ps"]
    unresolved = [e for e in attribution["entries"] if e["match"] == "unresolved"]
    assert not [e for e in unresolved if e["reason"].startswith("matches no op")], unresolved
    rules = {e["rule"] for e in attribution["entries"] if "rule" in e}
    assert RULES[name] <= rules, rules


def test_the_xla_step_has_no_xla_inserted_time(run):
    name, out = run
    profile = OpProfile.read(out / "op_profile.json")
    if name != "jit_adamw_layernorm":
        assert profile.totals.hlo_ps == 0
        return
    totals = profile.totals
    assert totals.hlo_ps > 0 and totals.hlo_attributed_ps >= 0.995 * totals.hlo_ps
    assert totals.xla_inserted_ps == 0
    inferred = {o.instruction for op in profile.ops for o in op.xla if o.inferred_by}
    assert any(i.startswith("copy") for i in inferred), inferred
