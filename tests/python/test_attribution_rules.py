"""The renaming rules of docs/attribution_rules.md on real TensorFlow steps that
trigger them (issue 23): a GELU transformer training step (Grappler's unary ops
composition), a MirroredStrategy training step over two logical CPUs (the graph
partitioner's sends, the dependency optimizer's grouped control edges, argument
transfers) and a jit-compiled AdamW step with LayerNorm (XLA instructions without
op_name). Each runs `pgo` in its own process, as `bazel run //:pgo` does."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from pgo_process import run_pgo

from tfpgo.attribution.op_profile import OpProfile

ROOT = Path(__file__).resolve().parents[2]
HOOKS = ROOT / "tests" / "data" / "attribution"
RULES_DOC = ROOT / "docs" / "attribution_rules.md"
# How docs/attribution_rules.md names the real traces of this test.
TRACES = {"GELU transformer step": "gelu_transformer", "MirroredStrategy step": "mirrored"}
HOOK_NAMES = ("gelu_transformer", "jit_adamw_layernorm", "mirrored")
# Claims of other tests: lit tests, and the pytest suites named by file.
OTHER_TESTS = re.compile(r"lit test|\.mlir`|\btest_[a-z_]+")


def documented_rules() -> dict[str, set[str]]:
    """hook -> the rules docs/attribution_rules.md says its trace tests (the
    runtime-name table's `tests` column). A claim naming a trace this test does
    not run fails, so the doc cannot claim what no test exercises."""
    section = RULES_DOC.read_text().split("## Runtime node names")[1].split("\n## ")[0]
    found: dict[str, set[str]] = {hook: set() for hook in HOOK_NAMES}
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split(" | ")]
        rules = re.findall(r"`([a-z_]+)`", cells[0]) if line.startswith("|") else []
        if not rules:
            continue
        tests = re.sub(r"\([^)]*\)", "", cells[-1])  # asides in parentheses
        for claim in (part.strip() for part in tests.split(";")):
            hooks = [hook for phrase, hook in TRACES.items() if phrase in claim]
            assert hooks or OTHER_TESTS.search(claim), f"{rules}: no test runs {claim!r}"
            for hook in hooks:
                found[hook].update(rules)
    return found


RULES = documented_rules()


@pytest.fixture(scope="module", params=HOOK_NAMES)
def run(request, tmp_path_factory):
    name = request.param
    out = tmp_path_factory.mktemp(name) / "out"
    flags = ["--model", str(HOOKS / f"{name}.py"), "--mode", "train", "--batch-size", "8"]
    flags += ["--steps", "3", "--warmup", "2", "--output-dir", str(out)]
    run_pgo(flags)
    return name, out


def test_the_doc_claims_rules_of_the_real_traces():
    assert RULES["mirrored"] >= {"graph_partitioner", "grappler_group_control_edges"}
    assert RULES["gelu_transformer"] >= {"grappler_unary_ops_composition"}


def test_every_entry_lands_on_an_op_through_its_rule(run):
    """Every rule the doc says this trace tests resolved some entry (a rule
    counts when it is one of the `+`-joined rules of an entry), and no entry is
    unresolved: neither `matches no op` nor `matches no annotatable op`."""
    name, out = run
    attribution = json.loads((out / "attribution.json").read_text())
    # Every picosecond attributed or listed (decided by names, not by the run's times).
    listed = sum(attribution["by_match"][kind]["self_ps"] for kind in ("removed", "unresolved"))
    assert attribution["attributed_self_ps"] + listed == attribution["profile_self_ps"]
    unresolved = [e for e in attribution["entries"] if e["match"] == "unresolved"]
    reasons = ("matches no op", "matches no annotatable op")
    assert not [e for e in unresolved if e["reason"].startswith(reasons)], unresolved
    assert not unresolved, unresolved
    used = {rule for e in attribution["entries"] for rule in e.get("rule", "").split("+")}
    assert RULES[name] <= used, (RULES[name] - used, used)


def test_the_xla_step_has_no_xla_inserted_time(run):
    name, out = run
    profile = OpProfile.read(out / "op_profile.json")
    if name != "jit_adamw_layernorm":
        assert profile.totals.hlo_ps == 0
        return
    totals = profile.totals
    assert totals.hlo_ps > 0 and totals.xla_inserted_ps == 0
    assert totals.hlo_attributed_ps == totals.hlo_ps  # every instruction on a tf node
    inferred = {o.instruction for op in profile.ops for o in op.xla if o.inferred_by}
    assert any(i.startswith("copy") for i in inferred), inferred
