"""The proposer (python/tfpgo/proposer): rules on real analyses, verdicts
recomputed from stored A/B samples, one small real A/B run in-process and one
in worker processes, the report section, the flag's guard."""

from __future__ import annotations

import dataclasses
import json
import math
import os
from pathlib import Path

import pytest

from tfpgo.ab.result import ABResult, Verdict
from tfpgo.analysis import analyse
from tfpgo.attribution.op_profile import OpProfile
from tfpgo.errors import UserError
from tfpgo.flow.stages import read_candidate_profile
from tfpgo.proposer import (
    EvidenceKind,
    NotApplicable,
    Proposal,
    auto_clustering,
    intra_threads,
    jit_compile,
    onednn,
    propose,
    threads,
)
from tfpgo.proposer.blocks import (
    STATISTIC,
    ABSamples,
    interleave,
    judge,
    judge_twice,
    step_timer,
    wants_second,
)
from tfpgo.proposer.optimize import read
from tfpgo.proposer.worker import ModelSpec

DATA = Path(__file__).resolve().parents[1] / "data" / "optimize"


def analysis_of(model: str):
    return analyse(OpProfile.read(DATA / f"{model}_train.op_profile.json"))


# --- verdicts from stored samples -------------------------------------------


def samples(baseline_ms: list[float], candidate_ms: list[float], steps: int = 3) -> ABSamples:
    """Blocks of `steps` equal steps at the given block means (ms)."""

    def blocks(means: list[float]) -> tuple[tuple[int, ...], ...]:
        return tuple((int(mean * 1e6),) * steps for mean in means)

    order = tuple("AB" if i % 2 == 0 else "BA" for i in range(len(baseline_ms)))
    return ABSamples(blocks(baseline_ms), blocks(candidate_ms), order)


def interval(result: ABResult | None) -> tuple[float, float]:
    """The (low, high) of a measured result's ratio interval."""
    assert result is not None and result.low is not None and result.high is not None
    return result.low, result.high


def test_judge_helps_when_the_whole_interval_is_below_one() -> None:
    result = judge(samples([10, 10.4, 9.8, 10.2, 10.1], [7.5, 7.4, 7.8, 7.6, 7.5]))
    low, high = interval(result)
    assert result.verdict is Verdict.HELPS
    assert high < 1 and result.ratio == pytest.approx(0.75, abs=0.01)
    assert low < result.ratio < high


def test_judge_hurts_when_the_whole_interval_is_above_one() -> None:
    result = judge(samples([10, 10.4, 9.8, 10.2], [18.5, 18.0, 19.1, 18.4]))
    assert result.verdict is Verdict.HURTS
    assert interval(result)[0] > 1 and result.ratio == pytest.approx(1.85, abs=0.02)


STRADDLING = samples([10, 12, 9, 13, 10], [11, 9, 12, 10, 12])


def test_judge_no_effect_when_the_interval_straddles_one() -> None:
    result = judge(STRADDLING)
    assert result.verdict is Verdict.NO_EFFECT
    low, high = interval(result)
    assert low < 1 < high


def test_judge_a_tight_change_under_the_noise_threshold_is_no_effect() -> None:
    """3% faster with a tight interval below 1: real perhaps, but under the 5% noise."""
    baseline = [10.0, 10.01, 9.99, 10.0, 10.02]
    candidate = [9.7, 9.71, 9.69, 9.7, 9.72]
    assert interval(judge(samples(baseline, candidate)))[1] < 1
    assert judge(samples(baseline, candidate)).verdict is Verdict.NO_EFFECT
    assert judge(samples(baseline, candidate), noise=0.01).verdict is Verdict.HELPS


TIGHT = [10.0, 10.01, 9.99, 10.0, 10.02]


def scaled(ratio: float) -> ABSamples:
    """TIGHT against itself times `ratio`: a tight interval around `ratio`."""
    return samples(TIGHT, [ms * ratio for ms in reversed(TIGHT)])


# whole-program XLA, applied in this process: the in-process arm of `measure`.
JIT_PROPOSAL = jit_compile.Proposal(
    rule=jit_compile.RULE,
    change="jit",
    reason="",
    evidence=(),
    apply=jit_compile.with_jit_compile,
    other_random_numbers=True,
)


def test_a_gain_between_three_and_five_percent_is_measured_twice_and_the_worse_counts() -> None:
    assert wants_second(scaled(0.96))  # under the 5% noise, past the 3% floor
    assert not wants_second(scaled(0.90))  # helps at once
    assert not wants_second(scaled(0.99))  # under the floor: no effect at once
    assert not wants_second(scaled(1.04))
    confirmed, other = judge_twice(scaled(0.96), scaled(0.955))
    assert confirmed.verdict is Verdict.HELPS and confirmed.ratio == pytest.approx(0.96)
    assert other is not None and other.ratio == pytest.approx(0.955)
    refuted, other = judge_twice(scaled(0.96), scaled(1.0))
    assert refuted.verdict is Verdict.NO_EFFECT and refuted.ratio == pytest.approx(1.0)
    assert other is not None and other.ratio == pytest.approx(0.96)
    assert judge_twice(scaled(0.96), None) == (judge(scaled(0.96)), None)  # once: at 5%


# A second A/B with a lower ratio than the first, 0.951, but pairs so spread that its
# 95% interval, [0.891, 1.014], reaches 1: on its own it shows no gain at all.
WIDE_LOWER = samples([10.0, 11.0, 9.0, 10.5, 9.5], [8.6, 10.9, 8.4, 10.2, 9.0])


def test_a_second_ab_confirms_only_when_it_helps_on_its_own() -> None:
    """The first A/B, 0.960 [0.958, 0.962], helps at the 3% floor; the second's ratio
    is lower but its interval crosses 1. Judged by ratio alone the first would count
    and help; both must help, so the second counts: no measurable effect."""
    first = judge(scaled(0.96), 0.03)
    second = judge(WIDE_LOWER, 0.03)
    assert first.verdict is Verdict.HELPS and interval(first)[1] < 1
    assert second.ratio == pytest.approx(0.9506, abs=1e-4) and second.ratio < first.ratio
    assert interval(second) == pytest.approx((0.8911, 1.0140), abs=1e-4)
    for again in (WIDE_LOWER, scaled(0.96)):  # either order
        original = scaled(0.96) if again is WIDE_LOWER else WIDE_LOWER
        counted, other = judge_twice(original, again)
        assert counted == second and other == first
        assert counted.verdict is Verdict.NO_EFFECT


def test_the_proposer_measures_a_small_gain_twice_and_readers_judge_both(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`_measure` runs the second A/B (real candidate and numerics, the A/Bs
    injected); optimize.json keeps both, and `read` and the report judge by the worse."""
    from tfpgo.proposer import measure as measuring
    from tfpgo.proposer.measure import ABSettings, measure
    from tfpgo.proposer.optimize import OptimizeResult
    from tfpgo.proposer.trials import Trial
    from tfpgo.report.optimize_tables import optimize_tables

    ab_runs = [scaled(0.96), scaled(0.955)]
    monkeypatch.setattr(measuring, "interleave", lambda *_args, **_kw: ab_runs.pop(0))
    proposal = JIT_PROPOSAL
    notes: list[str] = []
    settings = ABSettings(2, 2, 1, time_unchecked=True)
    measured = measure(proposal, dropout_case(tmp_path), None, settings, notes.append)
    assert (measured.samples, measured.again, ab_runs) == (scaled(0.96), scaled(0.955), [])
    assert "jit_compile: a gain under 5%: measured a second time" in notes
    result, _ = judge_twice(measured.samples, measured.again)
    trial = Trial("jit_compile", "jit", "", (), samples=measured.samples, result=result,
                  samples_again=measured.again)  # fmt: skip
    OptimizeResult("dropout", settings, (trial,)).write(tmp_path / "optimize.json")
    (stored,) = read(tmp_path / "optimize.json").trials
    assert stored == trial and stored.result is not None
    assert stored.result.verdict is Verdict.HELPS and stored.result.ratio == pytest.approx(0.96)
    (_, _, rows), *_ = optimize_tables(OptimizeResult("dropout", settings, (stored,)))
    assert rows[0][7] == "helps (the worse of two A/Bs; the other 0.955)"
    document = json.loads((tmp_path / "optimize.json").read_text())
    document["trials"][0]["samples_again"] = scaled(1.0).to_json()  # not confirmed now
    (tmp_path / "optimize.json").write_text(json.dumps(document))
    (refuted,) = read(tmp_path / "optimize.json").trials
    assert refuted.result is not None and refuted.result.verdict is Verdict.NO_EFFECT


def test_judge_uses_block_means_and_geometric_means() -> None:
    result = judge(ABSamples(((10_000_000, 30_000_000),), ((10_000_000, 10_000_000),), ("AB",)))
    assert result.baseline_ms == pytest.approx(20.0)
    assert result.ratio == pytest.approx(0.5)
    assert result.low is None and result.high is None  # one block: no interval
    assert result.verdict is Verdict.NO_EFFECT  # nothing is called without an interval


@pytest.mark.parametrize("model", ["mlp", "cnn"])
def test_stored_verdicts_are_reproduced_from_their_samples(model: str) -> None:
    """optimize.json of real --optimize runs: `read` recomputes every verdict from
    the stored samples, and it matches what the run reported."""
    import json

    document = json.loads((DATA / f"{model}_train.optimize.json").read_text())
    result = read(DATA / f"{model}_train.optimize.json")
    assert [trial.rule for trial in result.trials] == [t["rule"] for t in document["trials"]]
    # Recorded with Welch's t on the log block means: the paired statistic that
    # replaced it gives each trial the same verdict; its own figures are
    # reproduced exactly only from a document of the same statistic.
    same_statistic = document["method"]["statistic"] == STATISTIC
    for trial, stored in zip(result.trials, document["trials"], strict=True):
        assert trial.result is not None, trial.rule
        assert trial.result.verdict.value == stored["result"]["verdict"]
        for key in ("ratio", "low", "high"):
            if same_statistic:
                assert getattr(trial.result, key) == pytest.approx(stored["result"][key], rel=1e-12)
        assert trial.samples is not None
        assert len(trial.samples.baseline_ns) == document["method"]["repetitions"]
        assert trial.samples.order[:2] == ("AB", "BA")
    # Recomputing twice gives the same figures: a pure function of the samples.
    assert read(DATA / f"{model}_train.optimize.json") == result


def test_stored_runs_hold_every_verdict() -> None:
    """The real runs behind the fixtures (README's run 4): oneDNN helped the cnn
    step and had no measurable effect on the mlp step; the rest hurt."""
    verdicts = {
        (model, trial.rule): trial.result.verdict
        for model in ("mlp", "cnn")
        for trial in read(DATA / f"{model}_train.optimize.json").trials
        if trial.result is not None
    }
    assert verdicts == {
        ("mlp", "jit_compile"): Verdict.HURTS,
        ("mlp", "onednn"): Verdict.NO_EFFECT,
        ("mlp", "threads"): Verdict.HURTS,
        ("mlp", "mixed_precision"): Verdict.HURTS,
        ("cnn", "onednn"): Verdict.HELPS,
        ("cnn", "threads"): Verdict.HURTS,
        ("cnn", "mixed_precision"): Verdict.HURTS,
    }


def test_a_changed_sample_changes_the_verdict(tmp_path: Path) -> None:
    """The verdict is read from the samples, not from the stored verdict."""
    import json

    document = json.loads((DATA / "mlp_train.optimize.json").read_text())
    trial = document["trials"][0]
    trial["samples"]["candidate_ns"] = [
        [value // 2 for value in block] for block in trial["samples"]["baseline_ns"]
    ]
    path = tmp_path / "optimize.json"
    path.write_text(json.dumps(document))
    changed = read(path).trials[0].result
    assert changed is not None
    assert changed.verdict is Verdict.HELPS
    assert changed.ratio == pytest.approx(0.5, rel=1e-3)
    assert trial["result"]["verdict"] != "helps"


# --- rules on real analyses -------------------------------------------------


def test_jit_rule_fires_on_the_mlp_training_step_citing_the_sgd_updates() -> None:
    (proposal,) = jit_compile.propose(analysis_of("mlp"))
    subjects = {item.subject: item for item in proposal.evidence}
    assert {"Mul", "AssignSubVariableOp"} <= subjects.keys()
    analysis = analysis_of("mlp")
    expected = sum(
        row.self_ps for row in analysis.op_types if row.op_type in jit_compile.ELEMENTWISE
    )
    elementwise = subjects["elementwise ops"].share
    assert elementwise == pytest.approx(expected / analysis.totals.op_self_ps)
    assert elementwise >= jit_compile.MIN_SHARE
    assert proposal.apply is jit_compile.with_jit_compile and not proposal.worker_flags
    assert proposal.other_random_numbers  # XLA's own random number generator


def test_jit_rule_stays_silent_on_the_conv_heavy_cnn_step() -> None:
    analysis = analysis_of("cnn")
    conv = sum(row.self_ps for row in analysis.op_types if "Conv2D" in row.op_type)
    assert conv / analysis.totals.op_self_ps > 0.5
    assert jit_compile.propose(analysis) == []


@pytest.mark.parametrize("model", ["mlp", "cnn"])
def test_threads_rule_cites_the_measured_concurrency(model: str) -> None:
    analysis = analysis_of(model)
    (proposal,) = threads.propose(analysis)
    (evidence,) = proposal.evidence
    totals = analysis.totals
    assert evidence.kind is EvidenceKind.CONCURRENCY
    assert evidence.share == pytest.approx(totals.op_self_ps / (totals.wall_ps - totals.non_op_ps))
    assert evidence.share >= threads.MIN_CONCURRENCY
    assert proposal.worker_flags == ("--inter-op", "1") and proposal.apply is None
    assert proposal.rtol == proposal.atol == 0.0  # the same kernels: checked exactly


@pytest.mark.parametrize(("model", "top"), [("mlp", "MatMul"), ("cnn", "Conv2DBackpropFilter")])
def test_onednn_rule_fires_on_dense_steps_run_without_onednn(model: str, top: str) -> None:
    analysis = analysis_of(model)
    (proposal,) = onednn.propose(analysis)
    summary, first, *_ = proposal.evidence
    dense = [row for row in analysis.op_types if "MatMul" in row.op_type or "Conv" in row.op_type]
    assert summary.share == pytest.approx(
        sum(row.self_ps for row in dense) / analysis.totals.op_self_ps
    )
    assert summary.share >= onednn.MIN_SHARE
    assert first.subject == top and first.detail == f"kernel {top}"
    assert proposal.worker_flags == ("--onednn", "1")


def test_onednn_rule_keeps_onednn_when_the_profile_ran_its_kernels() -> None:
    analysis = analysis_of("cnn")
    row = analysis.op_types[0]
    renamed = dataclasses.replace(
        row, kernels=(dataclasses.replace(row.kernels[0], kernel="_MklConv2DBackpropFilter"),)
    )
    with_onednn = dataclasses.replace(analysis, op_types=(renamed, *analysis.op_types[1:]))
    assert onednn.propose(with_onednn) == []


@pytest.fixture
def bfloat16_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """oneDNN reports bfloat16 support, whatever this machine's CPU."""
    from tfpgo.proposer import mixed_precision

    monkeypatch.setattr(mixed_precision, "onednn_isa", lambda: "AVX-512 with bfloat16 support")


def test_rules_fire_only_on_their_evidence(bfloat16_cpu: None) -> None:
    """The same analysis with every op serial and no elementwise op: no proposal."""
    analysis = analysis_of("mlp")
    busy = analysis.totals.op_self_ps + analysis.totals.non_op_ps
    serial = dataclasses.replace(
        analysis,
        totals=dataclasses.replace(analysis.totals, wall_ps=busy * 2),
        op_types=tuple(
            row for row in analysis.op_types if row.op_type not in jit_compile.ELEMENTWISE
        ),
    )
    assert threads.propose(serial) == intra_threads.propose(serial) == []
    rules = [
        "jit_compile",
        "auto_clustering",
        "onednn",
        "threads",
        "intra_threads",
        "mixed_precision",
    ]
    assert [p.rule for p in propose(analysis)] == rules
    # non_op share of 8% and no elementwise or small ops left: the XLA rules are silent too
    assert jit_compile.propose(serial) == auto_clustering.propose(serial) == []


def test_the_xla_rules_and_the_thread_rules_share_their_evidence() -> None:
    analysis = analysis_of("mlp")
    (jit,) = jit_compile.propose(analysis)
    (clusters,) = auto_clustering.propose(analysis)
    assert clusters.evidence == jit.evidence and clusters.other_random_numbers
    assert clusters.worker_flags == ("--auto-jit",) and clusters.apply is None
    (one_op,) = threads.propose(analysis)
    (intra,) = intra_threads.propose(analysis)
    assert intra.evidence == one_op.evidence
    concurrency = one_op.evidence[0].share
    cores = os.cpu_count() or 1
    assert intra.worker_flags == ("--intra-op", str(max(1, cores // math.ceil(concurrency))))
    assert (intra.rtol, intra.atol) == (1e-3, 1e-5)  # fewer shards reorder float sums


def test_a_proposal_names_exactly_one_way_to_apply_it() -> None:
    with pytest.raises(ValueError, match="exactly one"):
        Proposal("r", "c", "why", ())
    with pytest.raises(ValueError, match="exactly one"):
        Proposal("r", "c", "why", (), apply=lambda case: case, worker_flags=("--inter-op", "1"))


# --- applying and measuring for real ----------------------------------------


def tiny_case(jit: bool = False):
    import tensorflow as tf

    from tfpgo.models import Mode, ModelCase

    weights = tf.Variable(tf.ones((16, 16)))

    @tf.function(jit_compile=jit)
    def step(x):
        return tf.nn.relu(tf.matmul(x, weights) + 1.0) * 2.0

    return ModelCase("tiny", Mode.INFER, 4, step, (tf.ones((4, 16)),))


def test_jit_is_applied_to_the_step_and_keeps_its_results() -> None:
    case = tiny_case()
    compiled = jit_compile.with_jit_compile(case)
    assert compiled.function is not case.function
    assert compiled.name == "tiny (jit_compile)"
    assert compiled.function._jit_compile is True
    assert compiled.inputs is case.inputs
    assert float(compiled.step()[0, 0]) == float(case.step()[0, 0]) == 34.0
    with pytest.raises(NotApplicable, match="already compiled"):
        jit_compile.with_jit_compile(tiny_case(jit=True))
    concrete = dataclasses.replace(case, function=case.concrete_function())
    with pytest.raises(NotApplicable, match="cannot be recompiled"):
        jit_compile.with_jit_compile(concrete)


def counting_case(scale: float = 2.0):
    """A step that updates its variable, as a training step does."""
    import tensorflow as tf

    from tfpgo.models import Mode, ModelCase

    total = tf.Variable(1.0)

    @tf.function(jit_compile=False)
    def step(x):
        total.assign_add(tf.reduce_sum(x))
        return total * scale

    return ModelCase("counting", Mode.TRAIN, 4, step, (tf.ones((4,)),))


def test_numerics_check_compares_one_step_from_the_same_state() -> None:
    from tfpgo.proposer.numerics import check_numerics

    case = counting_case()
    variable = case.concrete_function().variables[0]
    check = check_numerics(case, jit_compile.with_jit_compile(case))
    assert check.passed and check.max_abs == 0.0 and check.outputs == 1
    assert float(variable.numpy()) == 1.0  # both steps ran, the state was restored
    other = dataclasses.replace(case, function=counting_case(scale=3.0).function)
    failed = check_numerics(case, other)
    assert not failed.passed and failed.max_abs == pytest.approx(5.0)
    assert "different outputs" in failed.describe()


DROPOUT_HOOK = """
import keras
import tensorflow as tf


def tfpgo_model(batch_size):
    inputs = keras.Input((32,))
    hidden = keras.layers.Dense(64, activation="relu")(inputs)
    hidden = keras.layers.Dropout(0.5)(hidden)
    model = keras.Model(inputs, keras.layers.Dense(4)(hidden))
    return model, tf.random.stateless_normal((batch_size, 32), seed=(3, 4))
"""


def dropout_case(tmp_path: Path):
    """A training step that draws new dropout masks every step (Keras 3: a
    SeedGenerator's state variable), loaded as a user's hook."""
    from tfpgo.models import load_model

    hook = tmp_path / "dropout_hook.py"
    hook.write_text(DROPOUT_HOOK)
    return load_model(str(hook), "train", 8)


def test_numerics_check_on_a_dropout_step_restores_the_random_state(tmp_path: Path) -> None:
    """Identical arms from the same variables and generator state: max |Δ| = 0
    exactly. A change of the computation fails; XLA, which draws other numbers
    for the same seeds, is not comparable (not refused with its Δ)."""
    import tensorflow as tf

    from tfpgo.proposer.numerics import NumericsStatus, check_numerics

    case = dropout_case(tmp_path)
    variables = case.concrete_function().variables
    before = [v.numpy().copy() for v in variables]
    same = check_numerics(case, case, rtol=0.0, atol=0.0)
    assert same.passed and same.max_abs == 0.0
    assert "exact" in same.describe()
    assert "random-generator state: seed_generator" in same.describe()
    assert all((v.numpy() == b).all() for v, b in zip(variables, before, strict=True))
    # two steps without the restore differ: the masks really change every step
    assert float(case.step()) != float(case.step())

    scaled = tf.function(lambda *xs: case.function(*xs) * 1.01)
    altered = check_numerics(case, dataclasses.replace(case, function=scaled))
    assert altered.status is NumericsStatus.FAILED and altered.max_abs > 0
    assert altered.describe().startswith("different outputs")

    compiled = jit_compile.with_jit_compile(case)
    xla = check_numerics(case, compiled, other_random_numbers=True)
    assert xla.status is NumericsStatus.NOT_COMPARABLE
    assert "StatelessRandomUniformV2" in xla.reason and "numerics not checked" in xla.describe()


def test_an_uncheckable_candidate_is_timed_only_when_asked(tmp_path: Path) -> None:
    from tfpgo.proposer.measure import ABSettings, measure

    case = dropout_case(tmp_path)
    proposal = JIT_PROPOSAL
    notes: list[str] = []
    with pytest.raises(NotApplicable, match=r"numerics not checked.*--optimize-unchecked"):
        measure(proposal, case, None, ABSettings(2, 2, 1), notes.append)
    settings = ABSettings(2, 2, 1, time_unchecked=True)
    measured = measure(proposal, case, None, settings, notes.append)
    assert measured.rivals == ()  # a proposal without rivals is timed against the baseline only
    assert measured.numerics.startswith("numerics not checked: the step draws random numbers")
    samples = measured.samples
    assert [len(block) for block in samples.baseline_ns + samples.candidate_ns] == [2] * 4
    assert measured.candidate is not None


def test_a_step_with_a_stateful_random_op_is_reported_nondeterministic() -> None:
    import tensorflow as tf

    from tfpgo.models import Mode, ModelCase
    from tfpgo.proposer.numerics import NumericsStatus, check_numerics

    @tf.function
    def step(x):
        return tf.reduce_sum(tf.random.uniform((8,), seed=1) * x)

    case = ModelCase("stateful", Mode.TRAIN, 8, step, (tf.ones((8,)),))
    check = check_numerics(case, case)
    assert check.status is NumericsStatus.NONDETERMINISTIC and not check.checked
    assert "stateful random ops (RandomUniform)" in check.reason


def test_exact_comparison_and_equal_non_finite_values() -> None:
    from tfpgo.proposer.numerics import compare_outputs

    nan, inf = float("nan"), float("inf")
    assert compare_outputs([1.0, nan, inf], [1.0, nan, inf], 0.0, 0.0).passed
    assert not compare_outputs([1.0], [1.0 + 1e-12], 0.0, 0.0).passed
    assert not compare_outputs([1.0, 2.0], [1.0, nan]).passed
    assert not compare_outputs([inf], [1.0]).passed


def test_interleaved_ab_run_in_process() -> None:
    case = tiny_case()
    candidate = jit_compile.with_jit_compile(case)
    result = interleave(step_timer(case.step, 1), step_timer(candidate.step, 1), 4, 3)
    assert result.order == ("AB", "BA", "AB", "BA")
    assert [len(block) for block in result.baseline_ns + result.candidate_ns] == [3] * 8
    assert all(value > 0 for block in result.candidate_ns for value in block)
    outcome = judge(result)
    low, high = interval(outcome)
    assert low <= outcome.ratio <= high
    assert math.isfinite(outcome.ratio)


def test_worker_arms_run_steps_with_their_settings_and_report_first_outputs() -> None:
    """A baseline worker and a candidate worker with one op at a time and the
    mixed_bfloat16 policy: both time their blocks, and their first outputs (from
    the same seeded weights) agree within bfloat16's tolerance, not exactly."""
    from tfpgo.proposer.numerics import compare_outputs
    from tfpgo.proposer.worker import WorkerArm

    flags = ("--inter-op", "1", "--precision", "mixed_bfloat16")
    baseline = WorkerArm(ModelSpec("mlp", "infer", 2), 1)
    candidate = WorkerArm(ModelSpec("mlp", "infer", 2), 1, flags)
    try:
        result = interleave(baseline, candidate, 2, 2)
    finally:
        baseline.close()
        candidate.close()
    assert [len(block) for block in result.baseline_ns + result.candidate_ns] == [2] * 4
    assert judge(result).pairs == 2
    assert len(baseline.first_outputs) == len(candidate.first_outputs) == 2 * 10
    assert compare_outputs(baseline.first_outputs, candidate.first_outputs, 5e-2).passed
    assert baseline.first_outputs != candidate.first_outputs  # bfloat16 really ran


def test_threads_worker_arms_agree_exactly_on_a_dropout_step(tmp_path: Path) -> None:
    """Two fresh processes load a user's dropout model with the same seeds: the
    same weights, the same masks. One op at a time runs the same kernels, so the
    threads proposal's exact check passes; each arm repeats its first step."""
    from tfpgo.proposer.numerics import judge_outputs
    from tfpgo.proposer.worker import WorkerArm

    hook = tmp_path / "dropout_hook.py"
    hook.write_text(DROPOUT_HOOK)
    baseline = WorkerArm(ModelSpec(str(hook), "train", 8), 1)
    candidate = WorkerArm(ModelSpec(str(hook), "train", 8), 1, ("--inter-op", "1"))
    try:
        baseline.wait_ready()
        candidate.wait_ready()
    finally:
        baseline.close()
        candidate.close()
    assert baseline.random_ops == ("StatelessRandomGetKeyCounter", "StatelessRandomUniformV2")
    assert baseline.first_outputs == baseline.again_outputs == candidate.first_outputs
    check = judge_outputs(
        baseline.first_outputs, baseline.again_outputs, candidate.first_outputs, (), 0.0, 0.0
    )
    assert check.passed and check.max_abs == 0.0


def test_mixed_precision_rule_and_where_it_applies(monkeypatch: pytest.MonkeyPatch) -> None:
    from tfpgo.proposer import mixed_precision
    from tfpgo.proposer.worker import _built_from_code

    isa = mixed_precision.onednn_isa()  # this machine, asked at run time
    assert isa, "oneDNN reported no instruction set"
    bfloat16 = "Intel AVX-512 with float16, Intel DL Boost and bfloat16 support"
    monkeypatch.setattr(mixed_precision, "onednn_isa", lambda: bfloat16)
    for model in ("mlp", "cnn"):
        (proposal,) = mixed_precision.propose(analysis_of(model))
        assert proposal.evidence[0].share >= mixed_precision.MIN_SHARE
        assert proposal.evidence[1].kind is EvidenceKind.CPU
        assert proposal.evidence[1].detail == bfloat16
        assert proposal.worker_flags == ("--precision", "mixed_bfloat16")
        assert proposal.rtol == pytest.approx(6.4 * 2**-7)
    monkeypatch.setattr(mixed_precision, "onednn_isa", lambda: "Intel AVX-512 with VNNI")
    assert mixed_precision.propose(analysis_of("mlp")) == []  # no bfloat16: it would be slow
    assert _built_from_code("cnn") and _built_from_code("/x/model.py")
    assert not _built_from_code("/x/saved_model") and not _built_from_code("/x/m.keras")


def test_onednn_flag_takes_effect_in_the_worker(tmp_path: Path) -> None:
    """The candidate's profile runs oneDNN's kernels: the change really applies."""
    from tfpgo.flow import trace_reader
    from tfpgo.proposer.worker import profile_in_worker

    profile_in_worker(ModelSpec("mlp", "infer", 2), ("--onednn", "1"), tmp_path, 1, 1)
    profile = trace_reader.run(tmp_path, build_graph=False).op_profile
    kernels = {kernel for op in profile.ops for kernel in op.op_types}
    assert any(kernel.startswith("_Mkl") for kernel in kernels), kernels


def test_auto_jit_flag_clusters_the_step_in_the_worker(tmp_path: Path) -> None:
    """The auto_clustering candidate runs XLA clusters on the CPU (`_XlaRun`)."""
    from tfpgo.flow import trace_reader
    from tfpgo.proposer.worker import profile_in_worker

    profile_in_worker(ModelSpec("mlp", "train", 2), ("--auto-jit",), tmp_path, 1, 1)
    profile = trace_reader.run(tmp_path, build_graph=False).op_profile
    kernels = {kernel for op in profile.ops for kernel in op.op_types}
    assert "_XlaRun" in kernels, kernels


def test_layout_optimizer_rule_fires_on_hot_transposes() -> None:
    from tfpgo.analysis.op_type import OpTypeRow
    from tfpgo.proposer import layout_optimizer

    analysis = analysis_of("cnn")
    assert layout_optimizer.propose(analysis) == []  # no transposes in a Keras NHWC step
    op_self = analysis.totals.op_self_ps
    hot = OpTypeRow("Transpose", op_self // 5, op_self // 5, 40, 2, ())
    (proposal,) = layout_optimizer.propose(
        dataclasses.replace(analysis, op_types=(*analysis.op_types, hot))
    )
    assert proposal.worker_flags == ("--grappler", "layout_optimizer=off")
    assert proposal.evidence[0].subject == "Transpose"
    assert proposal.evidence[0].share == pytest.approx(0.2, abs=1e-6)


def test_remapper_rule_fires_only_while_the_remapper_is_off(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tfpgo.analysis.op_type import OpTypeRow
    from tfpgo.proposer import remapper

    analysis = analysis_of("cnn")  # profiled with the remapper on: _FusedConv2D
    assert remapper.remapping_enabled()  # TensorFlow's default
    fused = next(row for row in analysis.op_types if row.op_type == "_FusedConv2D")
    unfused = tuple(
        OpTypeRow(op_type, fused.self_ps // 3, fused.self_ps // 3, fused.count, 1, ())
        for op_type in ("Conv2D", "BiasAdd", "Relu")
    )
    rows = tuple(row for row in analysis.op_types if row is not fused) + unfused
    analysis = dataclasses.replace(analysis, op_types=rows)
    assert remapper.propose(analysis) == []  # the remapper is on here
    monkeypatch.setattr(remapper, "remapping_enabled", lambda: False)
    (proposal,) = remapper.propose(analysis)
    assert proposal.worker_flags == ("--grappler", "remapping=on")
    assert proposal.evidence[0].share >= remapper.MIN_SHARE


GRAPPLER_HOOK = """
import json, os
import tensorflow as tf


def tfpgo_model(batch_size):
    @tf.function
    def step(x):
        # runs when the step is traced: after the worker applied its options
        options = tf.config.optimizer.get_experimental_options()
        with open(os.environ["GRAPPLER_SEEN"], "w") as seen:
            json.dump(options, seen)
        return tf.reduce_sum(x)

    return step, tf.ones((batch_size, 4))
"""


def test_grappler_flag_reaches_the_step_in_the_worker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tfpgo.proposer.worker import WorkerArm, grappler_options

    hook = tmp_path / "grappler_hook.py"
    hook.write_text(GRAPPLER_HOOK)
    monkeypatch.setenv("GRAPPLER_SEEN", str(tmp_path / "seen.json"))
    arm = WorkerArm(ModelSpec(str(hook), "infer", 2), 1, ("--grappler", "layout_optimizer=off"))
    try:
        arm.wait_ready()
    finally:
        arm.close()
    seen = json.loads((tmp_path / "seen.json").read_text())
    assert seen["layout_optimizer"] is False and "remapping" not in seen
    assert grappler_options(["remapping=on"]) == {"remapping": True}
    with pytest.raises(UserError, match="--grappler remaping=on: expected OPTION=on"):
        grappler_options(["remaping=on"])


def test_a_failing_worker_is_a_one_line_user_error() -> None:
    from tfpgo.proposer.worker import WorkerArm

    arm = WorkerArm(ModelSpec("no_such_model", "train", 2), 1, ("--inter-op", "1"))
    failure = r"optimize worker \(--inter-op 1\) failed: .*no_such_model"
    with pytest.raises(UserError, match=failure):
        arm.wait_ready()


def test_run_optimize_measures_records_and_diffs(tmp_path: Path, bfloat16_cpu: None) -> None:
    """The mlp analysis proposes jit_compile and threads; on a tiny step jit is
    measured in-process, threads (no model spec for workers) is recorded as not
    applied; the best candidate is profiled and diffed; optimize.json reads back
    to the same result."""
    from tfpgo.flow import trace_reader
    from tfpgo.models import profiling
    from tfpgo.proposer.optimize import ABSettings, run_optimize

    case = tiny_case()
    run = profiling.profile(case, tmp_path / "baseline", steps=2, warmup=1)
    baseline = trace_reader.run(run.logdir, build_graph=False).op_profile
    settings = ABSettings(repetitions=3, steps=2, warmup=1)
    result = run_optimize(
        case,
        None,
        analysis_of("mlp"),
        baseline,
        tmp_path,
        settings,
        profile_steps=2,
        read_profile=read_candidate_profile,
    )
    jit, clusters, dnn, thread, intra, mixed = result.trials
    assert mixed.rule == "mixed_precision" and mixed.result is None
    assert (clusters.rule, intra.rule) == ("auto_clustering", "intra_threads")
    assert clusters.result is intra.result is None  # workers need a model spec
    assert dnn.rule == "onednn" and dnn.result is None
    assert jit.rule == "jit_compile" and jit.result is not None and not jit.not_applicable
    assert jit.numerics.startswith("same outputs")
    assert jit.samples is not None
    assert len(jit.samples.baseline_ns) == 3 and jit.samples.order == ("AB", "BA", "AB")
    assert thread.rule == "threads" and thread.result is None
    assert "worker processes" in thread.not_applicable
    assert result.best == "jit_compile"
    assert result.diff_files == ("optimize/diff.md", "optimize/diff.html", "optimize/diff.svg")
    assert all((tmp_path / name).is_file() for name in result.diff_files)
    assert (tmp_path / "optimize" / "op_profile.json").is_file()
    assert dict(result.diff_summary)["B"].startswith("jit_compile")
    assert read(tmp_path / "optimize.json") == result


# --- report and flag -------------------------------------------------------


def test_report_section_lists_each_proposal_with_interval_and_verdict() -> None:
    from tfpgo.report.optimize_tables import optimize_tables

    result = read(DATA / "mlp_train.optimize.json")
    (title, header, rows), *rest = optimize_tables(result)
    assert title == "Measured proposals" and "interval" in header
    by_rule = {row[0]: row for row in rows}
    jit = by_rule["jit_compile"]
    trial = result.trials[0]
    assert trial.result is not None
    assert jit[5] == f"{trial.result.ratio:.3f}"
    assert jit[6].startswith(f"[{trial.result.low:.3f}, {trial.result.high:.3f}]")
    assert jit[7] == trial.result.verdict.value
    assert "AssignSubVariableOp" in jit[2]
    assert rest and rest[-1][0].startswith(f"Best candidate ({result.best})")


def test_optimize_flags_reach_the_flow_options() -> None:
    from tfpgo.flow.pgo import build_parser, options_from_args

    args = build_parser().parse_args(["--optimize", "--ab-repetitions", "6", "--ab-steps", "4"])
    options = options_from_args(args)
    assert (options.optimize, options.ab_repetitions, options.ab_steps) == (True, 6, 4)
    assert options_from_args(build_parser().parse_args([])).optimize is False
    assert options.optimize_unchecked is False
    args = build_parser().parse_args(["--optimize", "--optimize-unchecked"])
    assert options_from_args(args).optimize_unchecked is True


def test_optimize_unchecked_goes_with_optimize(tmp_path: Path) -> None:
    from tfpgo.flow.stages import FlowOptions, run_flow

    options = FlowOptions(optimize_unchecked=True, output_dir=tmp_path / "out")
    with pytest.raises(UserError, match=r"--optimize-unchecked .* add --optimize"):
        run_flow(options)
    assert not (tmp_path / "out").exists()


def test_optimize_refuses_a_trace_without_a_model(tmp_path: Path) -> None:
    from tfpgo.flow.stages import FlowOptions, run_flow

    trace, mlir = tmp_path / "trace.json", tmp_path / "model.mlir"
    trace.write_text("{}")
    mlir.write_text("")
    options = FlowOptions(from_trace=trace, mlir=mlir, optimize=True, output_dir=tmp_path / "out")
    with pytest.raises(UserError, match="--optimize measures the loaded model"):
        run_flow(options)


def test_a_proposal_not_advised_is_refined_from_its_profile_and_the_narrower_one_measured(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`Proposal.refine` gets the baseline's and the re-profiled candidate's op
    profiles; what it returns is measured like any proposal, and a reason instead
    is recorded as a trial that was not applied."""
    from dataclasses import replace

    from tfpgo.flow import trace_reader
    from tfpgo.models import profiling
    from tfpgo.proposer import measure as measuring
    from tfpgo.proposer import optimize
    from tfpgo.proposer.optimize import ABSettings, run_optimize
    from tfpgo.proposer.proposal import Proposal, narrowed

    case = tiny_case()
    run = profiling.profile(case, tmp_path / "baseline", steps=2, warmup=1)
    baseline = trace_reader.run(run.logdir, build_graph=False).op_profile
    seen = []

    def same_step(current):
        return replace(current, name=f"{current.name} (same)")

    def narrower(before, after, directory):
        seen.append((before, after, directory))
        return Proposal(
            "same_kept", "the same step again", "narrowed", (), apply=same_step, tests=2
        )

    def refused(before, after, directory):
        return "nothing narrower"

    proposals = [
        Proposal("same", "the same step", "test", (), apply=same_step, refine=narrower, tests=2),
        Proposal("other", "the same step", "test", (), apply=same_step, refine=refused),
    ]
    monkeypatch.setattr(optimize, "propose", lambda analysis: proposals)
    # The real steps run (warmup, numerics, the profile); every A/B returns samples
    # whose verdict is known: 1.003 [0.820, 1.228], neither a gain to measure twice
    # nor one that helps, so nothing is advised whatever the machine.
    monkeypatch.setattr(measuring, "interleave", lambda *_args, **_kw: STRADDLING)
    assert not wants_second(STRADDLING) and judge(STRADDLING, 0.03).verdict is Verdict.NO_EFFECT
    settings = ABSettings(repetitions=3, steps=2, warmup=1)
    result = run_optimize(
        case,
        None,
        analysis_of("mlp"),
        baseline,
        tmp_path,
        settings,
        read_profile=read_candidate_profile,
    )
    assert [t.rule for t in result.trials] == ["same", "same_kept", "other", "other_kept"]
    assert narrowed("same_kept") == "same_kept_2" and narrowed("same_kept_2") == "same_kept_3"
    assert result.trials[1].result is not None  # the narrower one was measured
    # Two tests of one question, neither helped: each at Holm's α / 2 (97.5%); the
    # other rule's one test at 95%.
    levels = [t.result.confidence if t.result else None for t in result.trials]
    assert levels == [pytest.approx(0.975), pytest.approx(0.975), 0.95, None]
    assert read(tmp_path / "optimize.json") == result
    assert result.trials[3].not_applicable == "nothing narrower"
    ((before, after, directory),) = seen
    assert before is baseline and after.ops and directory == tmp_path / "optimize" / "same"
    assert any(op.name.endswith("Relu") for op in after.ops)  # the candidate, profiled


# --- --optimize-budget --------------------------------------------------------


class FakeClock:
    """time.monotonic for a Budget: advanced by the injected A/Bs only."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def budget_run(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    seconds_per_ab: list[float],
    budget_s: float | None,
    step_s: float = 1.0,
):
    """run_optimize on the tiny step with three proposals promising 20%, 60% (with a
    refinement) and 40% of op time; each A/B returns STRADDLING (no gain: nothing
    advised, nothing measured twice) and advances the clock by the next of
    `seconds_per_ab`. Returns the result, the clock and the refinements made."""
    from dataclasses import replace

    from tfpgo.proposer import measure as measuring
    from tfpgo.proposer import optimize
    from tfpgo.proposer.budget import Budget
    from tfpgo.proposer.optimize import ABSettings, run_optimize
    from tfpgo.proposer.proposal import Evidence

    def same_step(current):
        return replace(current, name=f"{current.name} (same)")

    refined: list[str] = []

    def narrower(before, after, directory):
        refined.append(str(directory))
        return "nothing narrower"

    def proposal(rule: str, share: float, **kwargs) -> Proposal:
        evidence = (Evidence(EvidenceKind.OP_TYPE, "Mul", share),)
        return Proposal(rule, f"{rule} change", "test", evidence, apply=same_step, **kwargs)

    proposals = [proposal("small", 0.2), proposal("large", 0.6, refine=narrower)]
    proposals.append(proposal("middle", 0.4))
    monkeypatch.setattr(optimize, "propose", lambda analysis: proposals)
    clock = FakeClock()
    durations = list(seconds_per_ab)

    def timed_ab(*_args, **_kwargs) -> ABSamples:
        clock.now += durations.pop(0)
        return STRADDLING

    monkeypatch.setattr(measuring, "interleave", timed_ab)
    budget = None if budget_s is None else Budget(budget_s, step_s, clock)
    baseline = OpProfile.read(DATA / "mlp_train.op_profile.json")
    settings = ABSettings(repetitions=2, steps=2, warmup=1)
    result = run_optimize(
        tiny_case(),
        None,
        analysis_of("mlp"),
        baseline,
        tmp_path,
        settings,
        budget=budget,
        read_profile=read_candidate_profile,
    )
    return result, clock, refined


def test_a_budget_measures_the_largest_promise_first_and_lists_what_it_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A trial of 2 x 2 steps an arm, warmup 1, is estimated at 22 steps (2 A/Bs of
    2 arms x 2 x 2, and 2 arms x (1 + 2)), 22 s at 1 s a step. With 30 s, `large`
    (60%) is measured first and takes 20 s; its narrowing (4 profiled steps + 22)
    and the next trials (22 x 20/22 = 20 s each) have no room in the 10 s left."""
    from tfpgo.proposer.budget import trial_steps
    from tfpgo.proposer.optimize import ABSettings
    from tfpgo.proposer.trials import BUDGET_SPENT
    from tfpgo.report.optimize_tables import optimize_tables

    assert trial_steps(JIT_PROPOSAL, ABSettings(2, 2, 1)) == 22
    result, clock, refined = budget_run(tmp_path, monkeypatch, [20.0], budget_s=30.0)
    assert [t.rule for t in result.trials] == ["large", "large_kept", "middle", "small"]
    large, kept, middle, small = result.trials
    assert large.result is not None and refined == []  # measured; never re-profiled
    assert kept.not_tried == middle.not_tried == small.not_tried == BUDGET_SPENT
    assert middle.result is small.result is None and not middle.not_applicable
    assert clock.now == 20.0 <= 30.0
    document = json.loads((tmp_path / "optimize.json").read_text())
    assert document["method"]["budget_s"] == 30.0
    assert [t["not_tried"] for t in document["trials"]] == ["", *[BUDGET_SPENT] * 3]
    assert read(tmp_path / "optimize.json") == result
    *_, (title, _, rows) = optimize_tables(result)
    assert title == "Proposals not tried"
    narrowing = "a narrower change, from the candidate re-profiled"
    assert rows == [
        ["large_kept", narrowing, "not tried: the budget was spent"],
        ["middle", "middle change", "not tried: the budget was spent"],
        ["small", "small change", "not tried: the budget was spent"],
    ]


def test_a_trial_that_overruns_its_estimate_is_the_only_overrun(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Estimates from a step time 10x too short (0.1 s): the first trial, estimated at
    2.2 s, takes 20 s, and later estimates learn it (x 20/2.2): its narrowing (26
    steps, 23.6 s) and the second trial (20 s) each start with 25 s left; the second
    takes 40 s, and nothing starts after it. The stage ends 15 s past its 45 s, less
    than that one trial."""
    result, clock, refined = budget_run(
        tmp_path, monkeypatch, [20.0, 40.0], budget_s=45.0, step_s=0.1
    )
    assert [t.rule for t in result.trials] == ["large", "large_kept", "middle", "small"]
    assert [t.result is not None for t in result.trials] == [True, False, True, False]
    assert len(refined) == 1 and result.trials[1].not_applicable == "nothing narrower"
    assert result.trials[3].not_tried == "the budget was spent"
    assert clock.now == 60.0 and clock.now - 45.0 < 40.0


def test_estimates_learn_from_the_trials_measured(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same 45 s, a trial first estimated at 2.2 s taking 20 s then 10 s: after
    them 15 s are left, and the third, estimated at 2.2 x 20/2.2 = 20 s (the largest
    ratio so far), is not started; at 2.2 s it would have been."""
    result, clock, _ = budget_run(
        tmp_path, monkeypatch, [20.0, 10.0, 10.0], budget_s=45.0, step_s=0.1
    )
    assert [t.result is not None for t in result.trials] == [True, False, True, False]
    assert result.trials[3].not_tried == "the budget was spent" and clock.now == 30.0


def test_without_a_budget_every_proposal_is_measured_in_rule_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result, _, refined = budget_run(tmp_path, monkeypatch, [1000.0] * 3, budget_s=None)
    assert [t.rule for t in result.trials] == ["small", "large", "large_kept", "middle"]
    assert [t.result is not None for t in result.trials] == [True, True, False, True]
    assert result.trials[2].not_applicable == "nothing narrower" and len(refined) == 1
    assert not any(t.not_tried for t in result.trials) and result.budget_s is None


def test_the_promised_gain_orders_the_proposals() -> None:
    from tfpgo.proposer.budget import promised
    from tfpgo.proposer.proposal import Evidence

    def promise(*evidence: Evidence) -> float:
        return promised(Proposal("r", "c", "", evidence, worker_flags=("--x",)))

    mlp = analysis_of("mlp")
    (jit,) = jit_compile.propose(mlp)
    assert promised(jit) == max(e.share for e in jit.evidence)
    (one_op,) = threads.propose(mlp)
    assert promised(one_op) == pytest.approx(1 - 1 / one_op.evidence[0].share)
    region = EvidenceKind.XLA_REGION
    assert promise(Evidence(region, "a", 0.1), Evidence(region, "b", 0.15)) == pytest.approx(0.25)
    cpu = Evidence(EvidenceKind.CPU, "isa", 1.0, "AVX-512")  # not a share of op time
    assert promise(cpu, Evidence(EvidenceKind.OP_TYPE, "MatMul", 0.55)) == 0.55
