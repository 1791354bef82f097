"""The `xla_regions` rule (python/tfpgo/proposer/xla_regions.py): the regions
document, the rule's proposal, the worker's step by its real trace (the chosen
ops ran under XLA, the others as TensorFlow's kernels, by node name), and the
three-way verdict from stored samples (a region set that loses is not advised)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from tfpgo.ab.result import Verdict
from tfpgo.analysis import analyse
from tfpgo.attribution.op_profile import Durations, OpProfile, OpStats, Totals
from tfpgo.attribution.xla_attribution import XlaOrigin
from tfpgo.errors import UserError
from tfpgo.mlir.annotate import XLA_LAUNCH_OP_TYPES
from tfpgo.mlir.xla_regions import read_regions
from tfpgo.proposer import EvidenceKind, propose, xla_regions
from tfpgo.proposer.blocks import ABSamples, holm_confidence, judge
from tfpgo.proposer.optimize import ABSettings, OptimizeResult, read
from tfpgo.proposer.proposal import Proposal
from tfpgo.proposer.region_times import region_times
from tfpgo.proposer.trials import (
    Difference,
    RivalTrial,
    Trial,
    advised,
    advised_rival,
    faster_rival,
)
from tfpgo.proposer.worker import ModelSpec

DATA = Path(__file__).resolve().parents[1] / "data" / "optimize"

# Two regions of the mlp training step (node names from its real trace,
# tests/data/optimize/mlp_train.op_profile.json, where each ran as a TF kernel):
# the loss's elementwise chain with its gradient, and one SGD update.
LOSS = ("sub", "Square", "gradient_tape/Mul_1")
UPDATE = ("sgd_1/Mul", "sgd_1/AssignSubVariableOp")


def regions_document(regions: dict[str, tuple[str, ...]]) -> dict:
    profile = OpProfile.read(DATA / "mlp_train.op_profile.json").by_name()
    profiled = sum(op.self_ps for op in profile.values())
    chosen = []
    for name, nodes in regions.items():
        ops = [
            {
                "node": node,
                "op": f"tf.{profile[node].op_types[0]}",
                "self_ps": profile[node].self_ps,
            }
            for node in nodes
        ]
        self_ps = sum(profile[node].self_ps for node in nodes)
        chosen.append(
            {
                "name": name,
                "self_ps": self_ps,
                "share": self_ps / profiled,
                "op_count": len(ops),
                "ops": ops,
                "reason": "elementwise chain, one TF kernel per op",
            }
        )
    return {
        "format": "tfpgo.xla_regions",
        "version": 1,
        "time_unit": "ps",
        "pass": "tf-profile-guided-xla-regions",
        "min_share": 0.0,
        "min_ops": 2,
        "profiled_ps": profiled,
        "regions": chosen,
        "declined": [
            {
                "node": "gradient_tape/mlp_1/wide_1/MatMul/MatMul",
                "op": "tf.MatMul",
                "self_ps": profile["gradient_tape/mlp_1/wide_1/MatMul/MatMul"].self_ps,
                "reason": "a oneDNN matrix product",
            }
        ],
    }


def write_regions(directory: Path, document: dict) -> Path:
    path = directory / "xla_regions.json"
    path.write_text(json.dumps(document))
    return path


MLP_REGIONS = {"tfpgo_xla_region_0": LOSS, "tfpgo_xla_region_1": UPDATE}


# --- the document and the rule ----------------------------------------------


def test_the_document_reads_into_regions_keyed_by_node_name(tmp_path: Path) -> None:
    regions = read_regions(write_regions(tmp_path, regions_document(MLP_REGIONS)))
    assert [region.name for region in regions.regions] == list(MLP_REGIONS)
    assert regions.scope_of() == {
        **dict.fromkeys(LOSS, "tfpgo_xla_region_0"),
        **dict.fromkeys(UPDATE, "tfpgo_xla_region_1"),
    }
    assert regions.regions[1].ops[1].op == "tf.AssignSubVariableOp"
    assert regions.declined[0].reason == "a oneDNN matrix product"


def test_a_bad_document_is_one_error_line(tmp_path: Path) -> None:
    document = regions_document(MLP_REGIONS)
    document["regions"][1]["ops"].append(document["regions"][0]["ops"][0])
    with pytest.raises(UserError, match="node sub is in regions tfpgo_xla_region_0 and"):
        read_regions(write_regions(tmp_path, document))
    del document["profiled_ps"]
    with pytest.raises(UserError, match=r"malformed tfpgo\.xla_regions document"):
        read_regions(write_regions(tmp_path, document))
    with pytest.raises(UserError, match=r"a tfpgo\.op_profile document, not a tfpgo\.xla_regions"):
        read_regions(write_regions(tmp_path, {"format": "tfpgo.op_profile", "version": 1}))


def test_the_rule_fires_on_chosen_regions_only(tmp_path: Path) -> None:
    analysis = analyse(OpProfile.read(DATA / "mlp_train.op_profile.json"))
    assert xla_regions.propose(analysis) == []  # the flow did not run the pass
    empty = write_regions(tmp_path, {**regions_document(MLP_REGIONS), "regions": []})
    assert xla_regions.propose(dataclasses.replace(analysis, xla_regions=empty)) == []
    path = write_regions(tmp_path, regions_document(MLP_REGIONS))
    with_regions = dataclasses.replace(analysis, xla_regions=path)
    (proposal,) = xla_regions.propose(with_regions)
    assert proposal in propose(with_regions)  # registered in RULES
    assert proposal.worker_flags == ("--xla-regions", str(path)) and proposal.apply is None
    assert [(rival.rule, rival.worker_flags) for rival in proposal.rivals] == [
        ("jit_compile", ("--jit-compile",))
    ]
    assert proposal.other_random_numbers and (proposal.rtol, proposal.atol) == (1e-3, 1e-5)
    assert "2 regions (5 ops)" in proposal.change
    regions = read_regions(path).regions
    assert [(e.kind, e.subject, e.share) for e in proposal.evidence] == [
        (EvidenceKind.XLA_REGION, region.name, region.share) for region in regions
    ]
    assert proposal.evidence[0].detail.startswith("3 ops (1 tf.Sub, 1 tf.Square, 1 tf.Mul)")


# --- TensorFlow executes the decision ---------------------------------------


def test_the_worker_runs_exactly_the_regions_ops_under_xla(tmp_path: Path) -> None:
    """A real profile of the candidate step: every op of a region ran in an XLA
    cluster (HLO instructions whose op names are its node name), each region in
    clusters of its own; every other op ran as a TensorFlow kernel."""
    from tfpgo.flow import trace_reader
    from tfpgo.proposer.worker import profile_in_worker

    path = write_regions(tmp_path, regions_document(MLP_REGIONS))
    logdir = tmp_path / "profile"
    profile_in_worker(ModelSpec("mlp", "train", 2), ("--xla-regions", str(path)), logdir, 1, 1)
    profile = trace_reader.run(logdir, build_graph=False).op_profile
    by_name = profile.by_name()
    modules = {}
    for region, nodes in MLP_REGIONS.items():
        for node in nodes:
            assert by_name[node].xla, f"{node} did not run under XLA"
        modules[region] = {origin.module for node in nodes for origin in by_name[node].xla}
        assert all(module.startswith("cluster_") for module in modules[region])
    assert not modules["tfpgo_xla_region_0"] & modules["tfpgo_xla_region_1"]
    chosen = set(LOSS + UPDATE)
    launch = [op for op in profile.ops if set(op.op_types) <= XLA_LAUNCH_OP_TYPES]
    assert {op.name.split("/")[0] for op in launch} >= {"cluster_0_1", "cluster_1_1"}
    others = [op for op in profile.ops if op.name not in chosen and op not in launch]
    assert [op.name for op in others if op.xla] == []
    kernels = {op.name: op.op_types for op in others}
    # the unchosen update of the same kind and the heavy products stay TF kernels
    assert kernels["sgd_1/Mul_1"] == ("Mul",)
    assert kernels["sgd_1/AssignSubVariableOp_1"] == ("AssignSubVariableOp",)
    assert kernels["gradient_tape/mlp_1/wide_1/MatMul/MatMul"][0].endswith("MatMul")


def test_the_pass_chooses_regions_of_the_profiled_step_that_the_worker_runs(
    tmp_path: Path,
) -> None:
    """The flow's step: tfpgo-opt's tf-profile-guided-xla-regions on the annotated
    module of a real mlp training step; the worker, a fresh process that traces the
    step as the profiled one was traced, runs every op it chose under XLA but the
    output Identity tf.function adds after the Python code."""
    from tfpgo.flow import trace_reader
    from tfpgo.mlir.annotate import annotate_module
    from tfpgo.mlir.xla_regions import choose_regions
    from tfpgo.models import load_model, profiling
    from tfpgo.proposer.worker import profile_in_worker

    case = load_model("mlp", "train", 2)
    run = profiling.profile(case, tmp_path / "profile", steps=2, warmup=1)
    (tmp_path / "model.mlir").write_text(profiling.export_mlir(case))
    trace_reader.run(run.logdir, op_profile_out=tmp_path / "op_profile.json", build_graph=False)
    annotate_module(
        tmp_path / "model.mlir",
        tmp_path / "op_profile.json",
        tmp_path / "model.annotated.mlir",
        tmp_path / "op_graph.json",
        tmp_path / "attribution.json",
    )
    # --min-share sets which regions are hot enough: none holds all the time.
    whole = choose_regions(tmp_path / "model.annotated.mlir", tmp_path / "none.json", 1.0)
    assert whole.min_share == 1.0 and not whole.regions
    regions = choose_regions(tmp_path / "model.annotated.mlir", tmp_path / "xla_regions.json", 0.01)
    assert regions.regions, "the SGD products and the loss chain are elementwise and timed"
    chosen = regions.scope_of()
    assert "sgd_1/Mul" in chosen
    # By default the variable reads and updates stay with TensorFlow.
    assert "sgd_1/AssignSubVariableOp" not in chosen
    assert not {"tf.ReadVariableOp", "tf.AssignSubVariableOp"} & {
        op.op for r in regions.regions for op in r.ops
    }
    assert not {"tf.MatMul", "tf._FusedMatMul"} & {op.op for r in regions.regions for op in r.ops}
    logdir = tmp_path / "candidate"
    profile_in_worker(
        ModelSpec("mlp", "train", 2), ("--xla-regions", str(regions.path)), logdir, 1, 1
    )
    profile = trace_reader.run(logdir, build_graph=False).op_profile
    timed = [op for op in profile.ops if op.name in chosen]
    assert timed and all(op.xla for op in timed if op.name != "Identity")
    assert not [op.name for op in profile.ops if op.xla and op.name not in chosen]


def test_regions_of_another_step_are_refused_by_name(tmp_path: Path) -> None:
    """A node the trace does not create is refused; the output Identity, created by
    tf.function after the Python code returns, is named as left to TensorFlow."""
    from tfpgo.models import load_model
    from tfpgo.proposer.xla_regions import with_xla_regions

    document = regions_document({"tfpgo_xla_region_0": LOSS})
    output = {"node": "Identity", "op": "tf.Identity", "self_ps": 1}
    document["regions"][0]["ops"].append(output)
    case = load_model("mlp", "train", 2)
    candidate = with_xla_regions(case, read_regions(write_regions(tmp_path, document)))
    assert candidate.description == (
        "3 ops marked for XLA; left to TensorFlow, created after the step's Python code: Identity"
    )
    document["regions"][0]["ops"].append({"node": "gone/Relu", "op": "tf.Relu", "self_ps": 1})
    regions = read_regions(write_regions(tmp_path, document))
    with pytest.raises(UserError, match=r"1 ops of its regions are not in the traced step \(gone"):
        with_xla_regions(case, regions)


def test_the_worker_refuses_regions_with_auto_jit(tmp_path: Path) -> None:
    from tfpgo.proposer import worker

    path = write_regions(tmp_path, regions_document(MLP_REGIONS))
    argv = ["--model", "mlp", "--mode", "train", "--batch-size", "2", "--xla-regions", str(path)]
    with pytest.raises(UserError, match="does not go with --auto-jit or --jit-compile"):
        worker.main([*argv, "--auto-jit"])


def test_the_candidate_is_timed_against_the_baseline_and_jit_compile_in_workers(
    tmp_path: Path,
) -> None:
    """Three worker processes in one run: baseline, regions (numerics checked
    against the baseline) and the rival whole-program XLA, each timed against the
    regions candidate."""
    from tfpgo.models import load_model
    from tfpgo.proposer.measure import measure

    analysis = analyse(OpProfile.read(DATA / "mlp_train.op_profile.json"))
    path = write_regions(tmp_path, regions_document(MLP_REGIONS))
    (proposal,) = xla_regions.propose(dataclasses.replace(analysis, xla_regions=path))
    spec = ModelSpec("mlp", "train", 2)
    notes: list[str] = []
    settings = ABSettings(repetitions=2, steps=2, warmup=1)
    measured = measure(proposal, load_model("mlp", "train", 2), spec, settings, notes.append)
    assert measured.candidate is None and measured.numerics.startswith("same outputs")
    samples = measured.samples
    assert [len(block) for block in samples.baseline_ns + samples.candidate_ns] == [2] * 4
    (rival,) = measured.rivals
    against, own = rival.samples, rival.own_samples
    assert against is not None and own is not None
    assert rival.rule == "jit_compile" and against.order == ("AB", "BA") == own.order
    assert [len(block) for block in against.baseline_ns + against.candidate_ns] == [2] * 4
    assert [len(block) for block in own.baseline_ns + own.candidate_ns] == [2] * 4
    # The rival's own first step was compared with the baseline's, as the candidate's.
    assert rival.numerics.startswith("same outputs") and "tolerance 0.001" in rival.numerics
    assert f"jit_compile: numerics: {rival.numerics}" in notes
    assert "jit_compile: against the candidate, 2 x 2 steps an arm" in notes
    assert "jit_compile: against the baseline, 2 x 2 steps an arm" in notes


# --- measured three ways: never advised when slower -------------------------


def samples(baseline_ms: list[float], candidate_ms: list[float]) -> ABSamples:
    order = tuple("AB" if i % 2 == 0 else "BA" for i in range(len(baseline_ms)))
    return ABSamples(
        tuple((int(ms * 1e6),) * 3 for ms in baseline_ms),
        tuple((int(ms * 1e6),) * 3 for ms in candidate_ms),
        order,
    )


BASELINE = [10.0, 10.3, 9.9, 10.1, 10.2]
REGIONS = [8.0, 8.1, 7.9, 8.2, 8.0]  # helps against the baseline: ~0.79


# The rival's numerics check, as NumericsCheck.describe writes one that passed.
CHECKED = "same outputs: max |Δ| 1.2e-07 over 1 output values (tolerance 0.001 relative + 1e-05)"


def regions_trial(
    rival_ms: list[float], regions_ms: list[float] = REGIONS, numerics: str = CHECKED
) -> Trial:
    measured = samples(BASELINE, regions_ms)
    against = samples(rival_ms, regions_ms)  # the rival is the A arm
    own = samples(BASELINE, rival_ms)  # the rival against the baseline
    rival = RivalTrial("jit_compile", against, judge(against), own, judge(own), numerics)
    return Trial(
        "xla_regions",
        "compile 2 regions",
        "why",
        (),
        samples=measured,
        result=judge(measured),
        numerics=CHECKED,
        rivals=(rival,),
    )


def test_a_region_set_slower_than_whole_program_xla_is_not_advised_and_xla_is() -> None:
    trial = regions_trial([7.0, 7.1, 6.9, 7.2, 7.0])  # jit_compile faster still
    assert trial.result is not None and trial.result.verdict is Verdict.HELPS
    assert trial.rivals[0].difference is Difference.RIVAL_FASTER
    assert faster_rival(trial) == trial.rivals[0] and not advised(trial)
    assert advised_rival(trial) == trial.rivals[0]  # the best of the three


def test_the_best_of_the_three_is_advised_whichever_it_is() -> None:
    """Baseline, regions, whole-program XLA: exactly the fastest is advised, and
    nothing when the fastest is the baseline (or no change is measurably faster)."""
    slower = [10.6, 10.8, 10.5, 10.7, 10.6]
    same = [10.0, 10.2, 9.9, 10.1, 10.1]
    cases = [
        # (jit_compile, regions): the advice
        (REGIONS, [7.0, 7.1, 6.9, 7.2, 7.0], "xla_regions"),
        ([7.0, 7.1, 6.9, 7.2, 7.0], REGIONS, "jit_compile"),
        ([7.0, 7.1, 6.9, 7.2, 7.0], slower, "jit_compile"),  # regions lose to both
        (slower, same, None),  # the baseline is as fast as either
        (slower, [10.9, 11.0, 10.8, 11.1, 10.9], None),  # both lose
        (same, same, None),
    ]
    for jit_ms, regions_ms, advice in cases:
        trial = regions_trial(jit_ms, regions_ms)
        chosen = "xla_regions" if advised(trial) else getattr(advised_rival(trial), "rule", None)
        assert chosen == advice, (jit_ms, regions_ms)


def test_a_rival_that_does_not_help_against_the_baseline_is_not_advised_instead() -> None:
    trial = regions_trial([10.0, 10.2, 10.0, 10.2, 10.0], [10.3, 10.5, 10.3, 10.5, 10.3])
    assert faster_rival(trial) == trial.rivals[0]  # faster than the regions...
    assert trial.rivals[0].own_result is not None
    assert trial.rivals[0].own_result.verdict is Verdict.NO_EFFECT  # ...not the baseline
    assert not advised(trial) and advised_rival(trial) is None


# jit_compile 0.42% faster than the regions by its point estimate: regions / jit
# 1.0042, interval [0.993, 1.015]; both help against the baseline (~0.79).
JIT_A_HAIR_FASTER = [7.95, 8.15, 7.85, 8.2, 7.95]


def test_a_rival_faster_by_its_point_estimate_alone_does_not_displace_the_candidate(
    tmp_path: Path,
) -> None:
    """No difference (the interval holds 1): the simpler change, the regions (fewer
    ops under XLA than whole-program XLA), is advised, and optimize.json and the
    report say "no difference"."""
    from tfpgo.report.optimize_tables import optimize_tables

    trial = regions_trial(JIT_A_HAIR_FASTER)
    (rival,) = trial.rivals
    assert rival.result is not None and rival.own_result is not None
    assert rival.result.ratio == pytest.approx(1.0042, abs=1e-4)  # jit ahead by its ratio...
    low, high = rival.result.low, rival.result.high
    assert low is not None and high is not None and low < 1 < high  # ...not by its interval
    assert rival.own_result.verdict is Verdict.HELPS  # it would be advisable on its own
    assert rival.difference is Difference.NO_DIFFERENCE
    assert faster_rival(trial) is None and advised(trial) and advised_rival(trial) is None
    result = OptimizeResult("mlp (train)", ABSettings(repetitions=5, steps=3), (trial,))
    result.write(tmp_path / "optimize.json")
    document = json.loads((tmp_path / "optimize.json").read_text())
    stored = document["trials"][0]
    assert stored["rivals"][0]["difference"] == "no difference"
    assert (stored["advised"], stored["advised_instead"]) == (True, None)
    assert stored["numerics"] == CHECKED and stored["rivals"][0]["numerics"] == CHECKED
    (_, _, rows), *_ = optimize_tables(read(tmp_path / "optimize.json"))
    assert ", no difference; advised: it helps, and no difference from jit_compile" in rows[0][7]
    assert rows[0][7].endswith("the simpler change (fewer ops under XLA)")


def test_no_difference_from_a_rival_when_the_regions_do_not_help() -> None:
    """The regions and jit_compile cannot be told apart, and the regions show no
    gain over the baseline: jit_compile is advised when it helps on its own (the
    one change with a measured gain), nothing when it does not either."""
    nine = [9.0, 9.2, 8.9, 9.1, 9.0]  # both arms: ~0.89x the baseline, helps
    helping = regions_trial(nine, nine)
    assert helping.rivals[0].difference is Difference.NO_DIFFERENCE and advised(helping)
    no_gain = judge(samples(BASELINE, BASELINE))
    alone = dataclasses.replace(helping, result=no_gain)  # the regions' A/B shows no gain
    assert not advised(alone) and advised_rival(alone) == alone.rivals[0]
    slow = [10.4, 10.6, 10.3, 10.5, 10.4]  # both ~1.03x: neither helps
    neither = regions_trial(slow, slow)
    assert neither.rivals[0].difference is Difference.NO_DIFFERENCE
    assert not advised(neither) and advised_rival(neither) is None


def test_a_rival_whose_numerics_were_not_compared_or_failed_is_never_advised() -> None:
    """jit_compile helps against the baseline (0.69x) and beats the regions, which do
    not help: advised only with a numerics check that allows it."""
    jit_ms, no_gain = [7.0, 7.1, 6.9, 7.2, 7.0], [10.6, 10.8, 10.5, 10.7, 10.6]
    assert advised_rival(regions_trial(jit_ms, no_gain)) is not None  # checked: advised
    for numerics in ("", "different outputs: max |Δ| 0.3 over 1 output values"):
        assert advised_rival(regions_trial(jit_ms, no_gain, numerics)) is None
    unchecked = "numerics not checked: the step draws random numbers (...)"
    assert advised_rival(regions_trial(jit_ms, no_gain, unchecked)) is not None  # timed: asked


def test_a_rival_is_checked_before_it_is_timed() -> None:
    """`rival_trial`: a rival whose outputs differ is recorded, not timed; one that
    could not be checked is timed only with --optimize-unchecked, and says so."""
    from tfpgo.proposer.measure import rival_trial
    from tfpgo.proposer.numerics import NumericsCheck, NumericsStatus
    from tfpgo.proposer.xla_regions import JIT_RIVAL

    def runner(ms: float):
        return lambda steps: (int(ms * 1e6),) * steps

    arms = (runner(10.0), runner(8.0), runner(7.0))  # baseline, regions, jit_compile
    failed = NumericsCheck(NumericsStatus.FAILED, 30.0, 0.03, 1)
    notes: list[str] = []
    settings = ABSettings(repetitions=3, steps=2, time_unchecked=True)
    rival = rival_trial(JIT_RIVAL, failed, arms, settings, 0.95, notes.append)
    assert (rival.samples, rival.result, rival.difference) == (None, None, None)
    assert rival.numerics.startswith("different outputs: max |Δ| 0.03")
    assert not rival.may_be_advised
    unchecked = NumericsCheck(NumericsStatus.NOT_COMPARABLE, 2.0, 0.002, 1, reason="dropout")
    quiet = rival_trial(JIT_RIVAL, unchecked, arms, ABSettings(3, 2), 0.95, notes.append)
    assert quiet.samples is None and "--optimize-unchecked times it" in notes[-1]
    timed = rival_trial(JIT_RIVAL, unchecked, arms, settings, 0.95, notes.append)
    assert timed.difference is Difference.RIVAL_FASTER  # 8 ms against 7 ms a step
    assert timed.own_result is not None and timed.own_result.ratio == pytest.approx(0.7)
    assert timed.numerics == "numerics not checked: dropout" and timed.may_be_advised


def test_a_region_set_that_beats_both_is_advised_and_one_that_loses_to_the_baseline_is_not() -> (
    None
):
    trial = regions_trial([9.0, 9.2, 8.9, 9.1, 9.0])  # jit_compile helps, regions more
    assert faster_rival(trial) is None and advised(trial)
    measured = samples(BASELINE, [10.4, 10.6, 10.3, 10.5, 10.4])  # slower than the baseline
    slower = dataclasses.replace(trial, samples=measured, result=judge(measured))
    assert faster_rival(slower) is None and not advised(slower)


def test_rivals_and_advice_round_trip_through_optimize_json(tmp_path: Path) -> None:
    """optimize.json stores the rival's samples; `read` recomputes its verdict, so a
    changed sample changes the advice."""
    from tfpgo.report.optimize_tables import optimize_tables

    trial = regions_trial([9.0, 9.2, 8.9, 9.1, 9.0])
    result = OptimizeResult("mlp (train)", ABSettings(repetitions=5, steps=3), (trial,))
    result.write(tmp_path / "optimize.json")
    document = json.loads((tmp_path / "optimize.json").read_text())
    assert document["trials"][0]["advised"] is True
    assert read(tmp_path / "optimize.json") == result
    (_, _, rows), *_ = optimize_tables(result)
    against = trial.rivals[0].result
    assert against is not None
    ratio = against.ratio
    assert rows[0][7].startswith(f"helps; against jit_compile (B / it): {ratio:.3f} [")
    assert rows[0][7].endswith("advised: faster than the baseline and every rival")
    rival = document["trials"][0]["rivals"][0]["samples"]
    rival["baseline_ns"] = [[value // 2 for value in block] for block in rival["baseline_ns"]]
    (tmp_path / "optimize.json").write_text(json.dumps(document))
    (changed,) = read(tmp_path / "optimize.json").trials
    assert not advised(changed) and faster_rival(changed) is not None
    (_, _, rows), *_ = optimize_tables(dataclasses.replace(result, trials=(changed,)))
    assert rows[0][7].endswith(": jit_compile advised instead")  # it helps: 0.895x
    assert f"numerics: {CHECKED}) and measured faster" in rows[0][7]
    own = document["trials"][0]["rivals"][0]["against_baseline"]["samples"]
    own["candidate_ns"] = own["baseline_ns"]  # jit_compile as fast as the baseline now
    (tmp_path / "optimize.json").write_text(json.dumps(document))
    (changed,) = read(tmp_path / "optimize.json").trials
    assert advised_rival(changed) is None
    assert json.loads(json.dumps(changed.to_json()))["advised_instead"] is None
    (_, _, rows), *_ = optimize_tables(dataclasses.replace(result, trials=(changed,)))
    assert rows[0][7].endswith("not advised: jit_compile is faster")


# --- the iteration: each region before and after, the winners proposed again ---


def _op(name: str, op_type: str, self_ps: int, module: str = "") -> OpStats:
    xla = (XlaOrigin(module, "fusion", True, 1, self_ps),) if module else ()
    return OpStats(name, (op_type,), 1, self_ps, self_ps, self_ps, 0, 0, 0, 0, 0, Durations(), xla)


def _profile(ops: list[OpStats], steps: int) -> OpProfile:
    total = sum(op.self_ps for op in ops)
    return OpProfile(
        "t", (), tuple(range(steps)), Totals(total, total, total, 0, len(ops), len(ops)), tuple(ops)
    )


CLUSTER_0 = "cluster_0__XlaCompiledKernel_true__XlaHasReferenceVars_false__XlaNumConstantArgs_0_.1"
CLUSTER_1 = "cluster_1__XlaCompiledKernel_true__XlaHasReferenceVars_false__XlaNumConstantArgs_0_.1"


def _baseline_and_candidate() -> tuple[OpProfile, OpProfile]:
    """By hand, 2 steps each: the loss chain (3 ops, 900 ps a step on TF's
    kernels) runs in cluster_0 for 100 + 80 (launch) ps a step: it wins; the
    update (2 ops, 300 ps a step) runs in cluster_1 for 200 + 300 (launch): it loses."""
    baseline = _profile(
        [
            _op("sub", "Sub", 600),
            _op("Square", "Square", 600),
            _op("gradient_tape/Mul_1", "Mul", 600),
            _op("sgd_1/Mul", "Mul", 300),
            _op("sgd_1/AssignSubVariableOp", "AssignSubVariableOp", 300),
            _op("MatMul", "MatMul", 5000),
        ],
        steps=2,
    )
    candidate = _profile(
        [
            _op("sub", "Sub", 100, CLUSTER_0),
            _op("Square", "Square", 60, CLUSTER_0),
            _op("gradient_tape/Mul_1", "Mul", 40, CLUSTER_0),
            _op("sgd_1/Mul", "Mul", 200, CLUSTER_1),
            _op("sgd_1/AssignSubVariableOp", "AssignSubVariableOp", 200, CLUSTER_1),
            _op("cluster_0_1/xla_run", "_XlaRun", 120),
            _op("cluster_0_1/xla_compile", "_XlaCompile", 40),
            _op("cluster_1_1/xla_run", "_XlaRun", 600),
            _op("MatMul", "MatMul", 5000),
        ],
        steps=2,
    )
    return baseline, candidate


def test_each_region_is_timed_before_and_after_with_its_clusters_launch_ops(tmp_path: Path) -> None:
    regions = read_regions(write_regions(tmp_path, regions_document(MLP_REGIONS)))
    baseline, candidate = _baseline_and_candidate()
    times = {t.name: t for t in region_times(regions, baseline, candidate)}
    loss, update = times["tfpgo_xla_region_0"], times["tfpgo_xla_region_1"]
    assert (loss.ops, loss.before_ps, loss.after_ps) == (3, 900, (200 + 160) // 2)
    assert (update.ops, update.before_ps, update.after_ps) == (2, 300, (400 + 600) // 2)
    assert loss.wins and not update.wins


# The scope of cluster_0's launch ops (_XlaRun, _XlaCompile) in the candidate.
CLUSTER_0_LAUNCH_SCOPE = "cluster_0_1/"


def _in_microseconds(profile: OpProfile) -> OpProfile:
    """`profile` with each op's time a million times longer: its ps become µs."""
    ops = [replace(op, self_ps=op.self_ps * 1_000_000) for op in profile.ops]
    return _profile(ops, steps=len(profile.steps))


def _step_us(profile: OpProfile, named: Callable[[str], bool]) -> float:
    """The self time (µs) a step of the ops of `profile` whose names are `named`."""
    return sum(op.self_ps for op in profile.ops if named(op.name)) / len(profile.steps) / 1e6


def test_a_losing_set_is_narrowed_to_the_regions_that_won(tmp_path: Path) -> None:
    regions = read_regions(write_regions(tmp_path, regions_document(MLP_REGIONS)))
    baseline, candidate = _baseline_and_candidate()
    narrower = xla_regions.keep_winners(regions, baseline, candidate, tmp_path)
    assert isinstance(narrower, Proposal) and narrower.rule == "xla_regions_kept"
    kept = read_regions(Path(narrower.worker_flags[1]))
    assert [r.name for r in kept.regions] == ["tfpgo_xla_region_0"]
    assert [op.node for op in kept.regions[0].ops] == list(LOSS)
    assert narrower.rivals  # measured three ways, and narrowed again if not advised:
    assert narrower.refine == xla_regions.KeepWinners(kept, "xla_regions_kept_2", 2)
    # Its round, profiled with the same ops in µs (a million times the ps above,
    # so the message's one decimal shows them): the loss chain's TF kernels
    # before, its ops under XLA and its cluster's launch ops after, a step.
    before, after = _in_microseconds(baseline), _in_microseconds(candidate)
    tf_us = _step_us(before, lambda name: name in LOSS)
    xla_us = _step_us(after, lambda name: name in LOSS or name.startswith(CLUSTER_0_LAUNCH_SCOPE))
    assert (tf_us, xla_us) == (900.0, 180.0)  # the fixture's docstring, in µs
    again = narrower.refine(before, after, tmp_path / "round2")
    assert again == (  # its one region won once more: nothing narrower
        "every region ran faster under XLA, and the set as a whole lost "
        f"(tfpgo_xla_region_0: {tf_us:.1f} -> {xla_us:.1f} µs a step)"
    )
    # The last round is not narrowed again.
    (tmp_path / "last").mkdir()
    last = xla_regions.keep_winners(
        regions, baseline, candidate, tmp_path / "last", "xla_regions_kept_3", rounds_left=1
    )
    assert isinstance(last, Proposal) and last.refine is None
    assert [e.detail.split(":")[0] for e in narrower.evidence] == ["kept", "dropped"]
    # Nothing won, or everything did: no narrower proposal, and why.
    slower = _profile([replace(op, self_ps=op.self_ps * 10) for op in candidate.ops], steps=2)
    assert "no region ran faster" in str(
        xla_regions.keep_winners(regions, baseline, slower, tmp_path)
    )
    faster = _profile(
        [
            op if "cluster_1" not in op.name else replace(op, self_ps=0)
            for op in candidate.ops
            if not op.name.startswith("sgd_1")
        ],
        steps=2,
    )
    assert "every region ran faster" in str(
        xla_regions.keep_winners(regions, baseline, faster, tmp_path)
    )


# --- the rounds of one rule: Holm's levels ----------------------------------

# 0.928 against the baseline: its 95% interval [0.884, 0.973] is below 1, Holm's
# 98.75% interval for the first of four tests, up to 1.024, is not.
HOLM_EDGE = [9.048, 9.893, 8.957, 9.606, 9.37]
BASE_5 = [10.0, 10.4, 9.8, 10.2, 10.1]


def family_trial(rule: str, candidate_ms: list[float], rejected: int) -> Trial:
    measured = samples(BASE_5, candidate_ms)
    level = holm_confidence(xla_regions.TESTS, rejected)
    return Trial(
        rule,
        "compile regions",
        "why",
        (),
        samples=measured,
        result=judge(measured, confidence=level),
        numerics=CHECKED,
        tests=xla_regions.TESTS,
        rejected_before=rejected,
    )


def test_each_round_is_judged_at_holms_level_and_readers_recompute_it(tmp_path: Path) -> None:
    """Up to four region sets answer one question: each is judged at α / (4 − r). A
    gain that passes at 95% does not pass at 98.75%, so it is not advised; readers
    recompute the levels from the family, not from the stored confidence."""
    from tfpgo.report.optimize_tables import optimize_tables

    unadjusted = judge(samples(BASE_5, HOLM_EDGE))
    assert unadjusted.verdict is Verdict.HELPS and unadjusted.high is not None
    assert unadjusted.high == pytest.approx(0.9734, abs=1e-4)
    assert holm_confidence(4, 0) == pytest.approx(0.9875)
    first = family_trial("xla_regions", HOLM_EDGE, 0)
    assert first.result is not None and first.result.verdict is Verdict.NO_EFFECT
    assert first.result.high == pytest.approx(1.0242, abs=1e-4) and not advised(first)
    # A second set after the first helped (r = 1): α / 3.
    kept = family_trial("xla_regions_kept", HOLM_EDGE, 1)
    result = OptimizeResult("m", ABSettings(repetitions=5, steps=3), (first, kept))
    result.write(tmp_path / "optimize.json")
    document = json.loads((tmp_path / "optimize.json").read_text())
    assert document["method"]["multiple_testing"] == "holm"
    testing = document["trials"][0]["multiple_testing"]
    assert testing == {"tests": 4, "rejected_before": 0, "confidence": pytest.approx(0.9875)}
    # Stored levels are not trusted: the first did not help, so the second is at α / 4.
    document["trials"][1]["result"]["confidence"] = 0.95
    (tmp_path / "optimize.json").write_text(json.dumps(document))
    read_first, read_kept = read(tmp_path / "optimize.json").trials
    assert read_first == first
    assert read_kept.rejected_before == 0 and read_kept.result is not None
    assert read_kept.result.confidence == pytest.approx(0.9875)
    assert read_kept.result.verdict is Verdict.NO_EFFECT
    # After a first set that helped (0.79x), the second is at α / 3 = 98.33%.
    helped = family_trial("xla_regions", REGIONS, 0)
    result = OptimizeResult("m", ABSettings(repetitions=5, steps=3), (helped, kept))
    result.write(tmp_path / "optimize.json")
    _, read_kept = read(tmp_path / "optimize.json").trials
    assert read_kept.rejected_before == 1 and read_kept.result is not None
    assert read_kept.result.confidence == pytest.approx(1 - 0.05 / 3)
    (_, _, rows), *_ = optimize_tables(result)
    assert rows[0][6].endswith("(98.75%)") and rows[1][6].endswith("(98.33%)")
    with pytest.raises(ValueError, match="nothing is left to test"):
        holm_confidence(4, 4)
