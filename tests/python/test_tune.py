"""`--tune`: candidates proposed from the profile, checked against TensorFlow's
outputs, timed against the current best and kept only when they win (real IREE
compiler and runtime, real tfpgo-opt; small StableHLO programs)."""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import ab_samples
import numpy as np
import pytest
from ab_samples import injected_abs
from iree_tile_oracle import spec_tiles, tiles_of

from tfpgo.ab import paired
from tfpgo.ab.result import ABResult, Verdict
from tfpgo.errors import UserError
from tfpgo.flow import pgo
from tfpgo.flow.stages import FlowOptions, run_flow
from tfpgo.iree import run as iree_run
from tfpgo.iree.alternation import Arm
from tfpgo.iree.profile_document import IreeProfile
from tfpgo.iree.program import Workload, check_outputs, profile_program
from tfpgo.mlir.lowering import write_generic_stablehlo
from tfpgo.report.tune_tables import (
    decision_rows,
    limit_text,
    op_rows,
    stale_text,
    trial_rows,
    tune_summary,
)
from tfpgo.tune import dispatch_tiles, loop, program_ab, tile_climb, tile_configs
from tfpgo.tune.candidates import CANDIDATES, Candidate, CandidateContext, ProposedVariant, Variant
from tfpgo.tune.db import default_path
from tfpgo.tune.db_records import ProgramRun
from tfpgo.tune.document import CandidateTrial, Decision, EndToEnd, OpChange, Tuned, TuneDocument
from tfpgo.tune.loop import Tuning, tune
from tfpgo.tune.records import Records, RunSummary, file_digest
from tfpgo.tune.roofline import AT_LIMIT, MachineLimit
from tfpgo.tune.tile_configs import RootConfig
from tfpgo.tune.tuned_output import TUNED_PROFILE, TUNED_VMFB

BY_NAME = {candidate.name: candidate for candidate in CANDIDATES}

# The baseline squares its input and, beside it, multiplies a 384x384 matrix
# built from the input by itself and adds 0 times its sum: the same outputs as
# a program without the product, which must therefore be far faster.
WASTEFUL = """
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.multiply %x, %x : tensor<4xf32> loc("square")
  %e = "stablehlo.slice"(%x) <{start_indices = array<i64: 0>, limit_indices = array<i64: 1>,
      strides = array<i64: 1>}> : (tensor<4xf32>) -> tensor<1xf32> loc("waste")
  %m = "stablehlo.broadcast_in_dim"(%e) <{broadcast_dimensions = array<i64: 0>}>
      : (tensor<1xf32>) -> tensor<384x384xf32> loc("waste")
  %p = "stablehlo.dot_general"(%m, %m) <{dot_dimension_numbers = #stablehlo.dot<
      lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]>}>
      : (tensor<384x384xf32>, tensor<384x384xf32>) -> tensor<384x384xf32> loc("waste")
  %q = "stablehlo.dot_general"(%p, %m) <{dot_dimension_numbers = #stablehlo.dot<
      lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]>}>
      : (tensor<384x384xf32>, tensor<384x384xf32>) -> tensor<384x384xf32> loc("waste")
  %zero = stablehlo.constant dense<0.0> : tensor<f32> loc("waste")
  %s = stablehlo.reduce(%q init: %zero) applies stablehlo.add across dimensions = [0, 1]
      : (tensor<384x384xf32>, tensor<f32>) -> tensor<f32> loc("waste")
  %z = stablehlo.multiply %s, %zero : tensor<f32> loc("waste")
  %b = "stablehlo.broadcast_in_dim"(%z) <{broadcast_dimensions = array<i64>}>
      : (tensor<f32>) -> tensor<4xf32> loc("waste")
  %1 = stablehlo.add %0, %b : tensor<4xf32> loc("square")
  return %1 : tensor<4xf32>
}
"""
LEAN = """
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.multiply %x, %x : tensor<4xf32> loc("square")
  return %0 : tensor<4xf32>
}
"""
WRONG = """
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.add %x, %x : tensor<4xf32> loc("square")
  return %0 : tensor<4xf32>
}
"""

# A 3x3 convolution, same padding, 2x8x8x4 to 8 channels.
CONVOLUTION_3X3 = """
func.func @main(%x: tensor<2x8x8x4xf32>, %w: tensor<3x3x4x8xf32>) -> tensor<2x8x8x8xf32> {
  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f],
      window = {stride = [1, 1], pad = [[1, 1], [1, 1]]}
      {batch_group_count = 1 : i64, feature_group_count = 1 : i64}
      : (tensor<2x8x8x4xf32>, tensor<3x3x4x8xf32>) -> tensor<2x8x8x8xf32>
  return %0 : tensor<2x8x8x8xf32>
}
"""


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    """The wasteful program, profiled as `--lower iree` profiles it."""
    scratch = tmp_path_factory.mktemp("tune")
    stablehlo = scratch / "stablehlo.mlir"
    stablehlo.write_text(WASTEFUL)
    x = np.array([0.5, 1.0, 1.5, 2.0], dtype=np.float32)
    np.save(scratch / "x.npy", x)
    workload = Workload(
        "main", (scratch / "x.npy",), (x * x,), 2, 1, {"square": 1000, "waste": 10}, {}
    )
    baseline = profile_program(stablehlo, (), scratch / "iree", workload, "model.iree.vmfb")
    return stablehlo, workload, baseline


def _module(text: str) -> Callable[[Variant, CandidateContext, Path], ProposedVariant]:
    def propose(current: Variant, context: CandidateContext, scratch: Path) -> ProposedVariant:
        assert context.profile_path.name == "iree_profile.json" and current.flags == ()
        path = scratch / "candidate.mlir"
        write_generic_stablehlo(text, path)  # as the flow hands StableHLO on
        return ProposedVariant(f"the program of {len(text)} characters", Variant(path))

    return propose


def _flags(*flags: str) -> Callable[[Variant, CandidateContext, Path], ProposedVariant]:
    def propose(current: Variant, context: CandidateContext, scratch: Path) -> ProposedVariant:
        return ProposedVariant(" ".join(flags), Variant(current.stablehlo, flags))

    return propose


def test_a_candidate_is_kept_only_when_it_computes_the_same_and_wins(
    program, tmp_path, monkeypatch
):
    """Which candidates reach an A/B, and what the loop keeps from its ratio: the
    lean program's A/B and the final one return constructed samples (0.3 of the
    baseline's time), so the machine's load decides nothing."""
    stablehlo, workload, baseline = program
    left = injected_abs(monkeypatch, 0.3, 0.3)
    baseline.profile.write(tmp_path / "iree_profile.json")

    def failing(current: Variant, context: CandidateContext, scratch: Path) -> ProposedVariant:
        raise UserError("dispatch-tiles (a generation): alternation failed: error: boom")

    tried = (
        Candidate("nothing", lambda current, profile, scratch: "nothing hot in the profile"),
        Candidate("uncompilable", _flags("--iree-no-such-option")),
        Candidate("failing", failing),
        Candidate("wrong", _module(WRONG)),
        Candidate("lean", _module(LEAN)),
    )
    document = tune(stablehlo, workload, baseline, tmp_path, Tuning(600, 3), candidates=tried)
    outcomes = [(trial.name, trial.outcome) for trial in document.trials]
    assert outcomes == [
        ("nothing", "skipped"),
        ("uncompilable", "rejected"),
        ("failing", "rejected"),
        ("wrong", "rejected"),
        ("lean", "kept"),
    ]
    skipped, uncompilable, failing_trial, wrong, lean = document.trials
    # A tool that fails while a candidate proposes rejects that candidate, with its line.
    assert failing_trial.reason == "dispatch-tiles (a generation): alternation failed: error: boom"
    # A program IREE cannot compile is a rejected candidate, not a failed run.
    assert uncompilable.reason.startswith("iree level: iree-compile failed: ")
    assert skipped.reason == "nothing hot in the profile" and skipped.result is None
    # Outputs that differ are rejected before any timing, with the check's own line.
    assert wrong.reason.startswith("iree level: output 0 of main differs from TensorFlow's")
    assert wrong.result is None
    assert lean.result is not None and lean.result.verdict is Verdict.HELPS
    assert lean.result.high is not None and lean.result.high < 1 and lean.max_abs == 0
    # The kept program, timed against the original in the same run and profiled again.
    tuned, whole = document.tuned, document.end_to_end
    assert tuned is not None and whole is not None
    assert whole.ratio < 0.5 and whole.ci_high is not None and whole.ci_high < 1
    assert not left  # exactly two A/Bs: the candidate's and the final one
    assert whole.tuned_ps < whole.baseline_ps and whole.max_abs == 0
    assert (tmp_path / TUNED_VMFB).is_file() and (tmp_path / TUNED_PROFILE).is_file()
    # One decision a measured whole-program change, its run times from its own A/B.
    runs = baseline.profile.runs
    assert [(d.candidate, d.dispatch, d.kept) for d in document.decisions] == [
        ("uncompilable", "", False),
        ("wrong", "", False),
        ("lean", "", True),
    ]
    assert document.decisions[1].after_ps is None  # rejected before it was timed
    assert document.decisions[2].before_ps == round(lean.result.baseline_ms * 1e9 * runs)
    # The program itself changed: the kept StableHLO is written (the lean one).
    rewritten = (tmp_path / "model.tuned.stablehlo.mlir").read_text()
    assert '"stablehlo.multiply"' in rewritten and '"stablehlo.dot_general"' not in rewritten
    # The op the change sped up comes first; the tuned profile no longer has it.
    first = tuned.ops[0]
    assert first.name == "waste" and first.after_ps == 0
    assert first.before_ps == baseline.profile.op_ps["waste"] > 0
    after = json.loads((tmp_path / TUNED_PROFILE).read_text())
    assert {op["name"] for op in after["ops"]} == {"square"}
    assert TuneDocument.read(tmp_path / "tune.json") == document


def _own_copy(stablehlo: Path, tmp_path: Path) -> Path:
    """The module fixture's program in a directory of this test's, where the loop
    makes its own scratch directory."""
    copy = tmp_path / "program" / stablehlo.name
    copy.parent.mkdir(parents=True)
    copy.write_bytes(stablehlo.read_bytes())
    return copy


@pytest.mark.parametrize(("ratio", "outcome"), [(0.96, "kept"), (0.995, "rejected")])
def test_one_a_b_keeps_a_gain_past_one_percent(program, tmp_path, monkeypatch, ratio, outcome):
    """The paired A/B is precise enough that one decides: a 4% gain (which the
    block A/B had to measure twice) is kept; 0.5%, its interval below 1 or not,
    is no gain worth a change (paired.MIN_GAIN). Real compile and output check;
    the A/Bs injected."""
    shared, workload, baseline = program
    stablehlo = _own_copy(shared, tmp_path)
    left = injected_abs(monkeypatch, ratio, 0.9)  # the candidate's, the final one
    o2 = (Candidate("o2", _flags("--iree-opt-level=O2")),)
    (trial,) = tune(stablehlo, workload, baseline, tmp_path, Tuning(600, 3), candidates=o2).trials
    assert trial.result is not None and trial.outcome == outcome
    assert trial.result.ratio == pytest.approx(ratio, abs=0.002)
    assert trial.reason.startswith("helps: " if outcome == "kept" else "no measurable effect: ")
    assert len(left) == (0 if outcome == "kept" else 1)


TILE = RootConfig((8, 8, 8), (8, 8, 0), (8, 8, 0), (0, 0, 8), "DoubleTilingExpert")


def test_a_repeating_candidate_goes_again_after_the_others_while_it_is_kept(program, tmp_path):
    """Round 1 is kept; round 2, on the program round 1 made, adds tiles whose spec
    IREE cannot read, and is rejected: no round 3, and round 1's tiles (in the
    final program) stay kept while round 2's are not."""
    shared, workload, baseline = program
    stablehlo = _own_copy(shared, tmp_path)
    baseline.profile.write(tmp_path / "iree_profile.json")
    seen: list[Variant] = []
    other = replace(TILE, loops=(16, 8, 8))

    def tiles(current: Variant, context: CandidateContext, scratch: Path) -> ProposedVariant:
        seen.append(current)
        if len(seen) == 1:
            lean = _module(LEAN)(current, context, scratch)
            return replace(lean, variant=replace(lean.variant, tiles=(TILE,)))
        missing = f"--iree-codegen-tuning-spec-path={scratch / 'missing.mlir'}"
        return ProposedVariant(
            "more tiles", replace(current, flags=(missing,), tiles=(TILE, other))
        )

    tried = (
        Candidate("tiles", tiles, repeats=True),
        Candidate("after", lambda current, context, scratch: "nothing to try"),
    )
    document = tune(stablehlo, workload, baseline, tmp_path, Tuning(600, 3), candidates=tried)
    assert [(t.name, t.outcome) for t in document.trials] == [
        ("tiles", "kept"),
        ("after", "skipped"),
        ("tiles (round 2)", "rejected"),
    ]
    assert seen[1].tiles == (TILE,) and seen[1].stablehlo != stablehlo
    assert [(d.candidate, d.kept) for d in document.decisions] == [
        ("tiles", True),
        ("tiles (round 2)", False),
    ]


def test_a_later_dispatch_tiles_round_tunes_other_dispatches_and_keeps_the_earlier_tiles(
    tmp_path, monkeypatch
):
    """Round 2 leaves out a dispatch searched in round 1 and one the kept tiles
    already match (same loop ranges), searches the rest with the kept tiles as its
    base, and proposes a program with all of them, on the driver the current one
    runs on."""
    profile = _write_iree_profile(
        tmp_path / "iree_profile.json",
        [
            _dispatch("m_dispatch_0_matmul_8x8x8_f32", "s/a", 4000, 100),  # TILE matches it
            _dispatch("m_dispatch_1_matmul_16x8x8_f32", "s/b", 4000, 100),  # searched
            _dispatch("m_dispatch_2_matmul_32x8x8_f32", "s/c", 4000, 100),
        ],
    )
    wanted = replace(TILE, loops=(32, 8, 8))
    asked: dict[str, object] = {}

    def search(stablehlo, flags, targets, *rest, recorded=None):
        assert recorded is None  # no tuning database in this test
        asked.update(targets=[t.name for t in targets], flags=flags, base=rest[-1])
        trial = tile_climb.TileTrial(wanted, 1.0, 2.0)
        names = {t.name: wanted for t in targets}
        return dispatch_tiles.Search(
            names, {n: [trial] for n in names}, {n: trial for n in names}, {}
        )

    monkeypatch.setattr(dispatch_tiles, "search", search)
    spec = f"{tile_configs.SPEC_FLAG}/earlier/tuning_spec.mlir"
    current = Variant(tmp_path / "m.mlir", ("--keep", spec), (TILE,),
                      frozenset({"m_dispatch_1_matmul_16x8x8_f32"}), "local-sync")  # fmt: skip
    proposal = BY_NAME["dispatch-tiles"].propose(current, _context(profile), tmp_path)
    assert isinstance(proposal, ProposedVariant)
    assert asked == {"targets": ["m_dispatch_2_matmul_32x8x8_f32"], "flags": ("--keep",),
                     "base": (TILE,)}  # fmt: skip
    new_spec = f"{tile_configs.SPEC_FLAG}{tmp_path / tile_configs.SPEC}"
    assert proposal.variant == Variant(
        current.stablehlo,
        ("--keep", new_spec),
        (TILE, wanted),
        frozenset({"m_dispatch_1_matmul_16x8x8_f32", "m_dispatch_2_matmul_32x8x8_f32"}),
        "local-sync",
    )
    # The spec holds the kept tiles and the new ones, per their dispatches' loop ranges
    # (8x8x8, 32x8x8), as IREE's parser reads it.
    assert spec_tiles((tmp_path / tile_configs.SPEC).read_text()) == {
        (8, 8, 8): tiles_of(TILE),
        (32, 8, 8): tiles_of(wanted),
    }
    assert [d.dispatch for d in proposal.decisions] == ["m_dispatch_2_matmul_32x8x8_f32"]
    # Targets whose tiles the search cannot read (data tiling's root ops): said so.
    monkeypatch.setattr(
        dispatch_tiles, "search", lambda *_, **__: dispatch_tiles.Search({}, {}, {}, {})
    )
    reason = BY_NAME["dispatch-tiles"].propose(current, _context(profile), tmp_path)
    assert reason == (
        "none of the 1 dispatches with most headroom has root-op tiles this search can read in "
        "IREE's dumped configuration (one lowering_config per loop; data tiling's mmt4d ops "
        "have none)"
    )


def test_no_candidate_starts_once_the_budget_is_spent(program, tmp_path):
    stablehlo, workload, baseline = program
    lean = (Candidate("lean", _module(LEAN)),)
    document = tune(stablehlo, workload, baseline, tmp_path, Tuning(0), candidates=lean)
    assert [(t.name, t.outcome) for t in document.trials] == [("lean", "not tried")]
    assert document.tuned is None and not (tmp_path / TUNED_VMFB).exists()


CONV = """
func.func @main(%x: tensor<1x8x8x4xf32>, %w: tensor<1x1x4x8xf32>) -> tensor<1x4x4x8xf32> {
  %0 = "stablehlo.convolution"(%x, %w) <{batch_group_count = 1 : i64,
      dimension_numbers = #stablehlo.conv<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>,
      feature_group_count = 1 : i64, window_strides = array<i64: 2, 2>}>
      : (tensor<1x8x8x4xf32>, tensor<1x1x4x8xf32>) -> tensor<1x4x4x8xf32> loc(#shortcut)
  return %0 : tensor<1x4x4x8xf32>
}
#shortcut = loc(fused<{profiler_data = {count = 1 : i64, dur = 90 : i64, max = 90 : i64,
    min = 90 : i64, p50 = 90 : i64, p95 = 90 : i64, self = 90 : i64, share = 0.9 : f64,
    source = "block/shortcut/BiasAdd", total = 90 : i64, ts = 0 : i64}}>["shortcut"])
"""


def _iree_profile(path: Path, total_ps: int, tf_self_ps: int) -> Path:
    """One dispatch that ran block/shortcut/BiasAdd."""
    return _write_iree_profile(
        path,
        [_dispatch("main_dispatch_0_reduction", "block/shortcut/BiasAdd", total_ps, tf_self_ps)],
    )


def _dispatch(name: str, source: str, total_ps: int, tf_self_ps: int, count: int = 1) -> dict:
    return {
        "name": name, "count": count, "total_ps": total_ps, "sources": [source],
        "tf_self_ps": tf_self_ps, "found_in": "compute",
    }  # fmt: skip


def _write_iree_profile(path: Path, dispatches: list[dict]) -> Path:
    """An iree_profile.json of one profiled run with these dispatches, all
    attributed."""
    total_ps = sum(d["total_ps"] for d in dispatches)
    totals = {
        "dispatch_ps": total_ps, "dispatch_attributed_ps": total_ps, "dispatch_unattributed_ps": 0
    }  # fmt: skip
    document = {
        "format": "tfpgo.iree_profile", "version": 1, "time_unit": "ps",
        "source": "model.iree.vmfb", "entry": "main", "runs": 1, "warmup": 0,
        "outputs": {"max_abs": 0.0, "rtol": 1e-3, "atol": 1e-5}, "totals": totals,
        "dispatches": dispatches, "ops": [],
    }  # fmt: skip
    path.write_text(json.dumps(document))
    return path


def _context(profile: Path) -> CandidateContext:
    workload = Workload("main", (), (), 1, 0, {}, {})
    return CandidateContext(
        profile, IreeProfile.read(profile), workload, time.monotonic() + 60, 600
    )


def test_conv_to_dot_proposes_what_the_pass_rewrites_and_skips_otherwise(tmp_path):
    stablehlo = tmp_path / "conv.mlir"
    stablehlo.write_text(CONV)
    # The op took 90 ps under TensorFlow: its dispatch 2700 ps is 30x that.
    slow = _context(_iree_profile(tmp_path / "slow.json", 2700, 100))
    (tmp_path / "a").mkdir()
    proposal = BY_NAME["conv-to-dot"].propose(Variant(stablehlo), slow, tmp_path / "a")
    assert isinstance(proposal, ProposedVariant)
    assert proposal.change == "1 hot 1x1 convolutions as dot_generals: block/shortcut/BiasAdd"
    rewritten = proposal.variant.stablehlo.read_text()
    assert '"stablehlo.slice"' in rewritten and '"stablehlo.dot_general"' in rewritten
    assert '"stablehlo.convolution"' not in rewritten and "#loc" in rewritten  # profile kept
    report = json.loads((tmp_path / "a" / "rewrites.json").read_text())
    assert [r["slowdown"] for r in report["rewritten"]] == [30]
    near = _context(_iree_profile(tmp_path / "near.json", 99, 100))  # 1.1x: near its bound
    (tmp_path / "b").mkdir()
    reason = BY_NAME["conv-to-dot"].propose(Variant(stablehlo), near, tmp_path / "b")
    assert reason == (
        "tf-profile-guided-conv-to-dot found no hot 1x1 convolution far slower than "
        "TensorFlow (1 hot ones declined; rewrites.json says why)"
    )


# A strided 1x1 projection and a padded, strided 3x3 convolution, both hot and
# far slower compiled than under TensorFlow (the profile below: 30x).
CONVS = """
func.func @main(%x: tensor<2x9x8x5xf32>, %w: tensor<1x1x5x6xf32>, %v: tensor<3x3x5x7xf32>)
    -> (tensor<2x5x4x6xf32>, tensor<2x5x4x7xf32>) {
  %0 = "stablehlo.convolution"(%x, %w) <{batch_group_count = 1 : i64,
      dimension_numbers = #stablehlo.conv<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>,
      feature_group_count = 1 : i64, window_strides = array<i64: 2, 2>}>
      : (tensor<2x9x8x5xf32>, tensor<1x1x5x6xf32>) -> tensor<2x5x4x6xf32> loc(#shortcut)
  %1 = "stablehlo.convolution"(%x, %v) <{batch_group_count = 1 : i64,
      dimension_numbers = #stablehlo.conv<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>,
      feature_group_count = 1 : i64, padding = dense<[[1, 1], [0, 1]]> : tensor<2x2xi64>,
      window_strides = array<i64: 2, 2>}>
      : (tensor<2x9x8x5xf32>, tensor<3x3x5x7xf32>) -> tensor<2x5x4x7xf32> loc(#spatial)
  return %0, %1 : tensor<2x5x4x6xf32>, tensor<2x5x4x7xf32>
}
#shortcut = loc(fused<{profiler_data = {count = 1 : i64, dur = 45 : i64, max = 45 : i64,
    min = 45 : i64, p50 = 45 : i64, p95 = 45 : i64, self = 45 : i64, share = 0.45 : f64,
    source = "block/shortcut/BiasAdd", total = 45 : i64, ts = 0 : i64}}>["shortcut"])
#spatial = loc(fused<{profiler_data = {count = 1 : i64, dur = 45 : i64, max = 45 : i64,
    min = 45 : i64, p50 = 45 : i64, p95 = 45 : i64, self = 45 : i64, share = 0.45 : f64,
    source = "block/spatial/BiasAdd", total = 45 : i64, ts = 0 : i64}}>["spatial"])
"""


@pytest.mark.parametrize(
    ("candidate", "rewritten_source", "form"),
    [
        ("conv-to-dot", "block/shortcut/BiasAdd", "slice + dot_general"),
        (
            "conv-to-shifted-dots",
            "block/spatial/BiasAdd",
            "pad + 9 shifted slices + dot_generals, summed",
        ),
    ],
)
def test_each_rewrite_computes_what_tensorflow_computes(
    tmp_path, monkeypatch, candidate, rewritten_source, form
):
    """Each pattern rewrites its kind only, and IREE's program of the rewrite
    gives TensorFlow's convolutions within the tolerance --lower iree uses (the
    kxk form's own timing, alone, is made to favour the rewrite: this test is
    about numerics, not speed)."""
    import tensorflow as tf

    _time_forms(monkeypatch, convolution_ms=2.0, rewritten_ms=1.0)

    arrays, inputs = _random_inputs(tmp_path, 7, x=(2, 9, 8, 5), w=(1, 1, 5, 6), v=(3, 3, 5, 7))
    expected = (
        tf.nn.conv2d(arrays["x"], arrays["w"], 2, "VALID").numpy(),
        tf.nn.conv2d(arrays["x"], arrays["v"], 2, [[0, 0], [1, 1], [0, 1], [0, 0]]).numpy(),
    )
    workload = Workload("main", inputs, expected, 1, 0, {}, {})
    stablehlo = tmp_path / "convs.mlir"
    stablehlo.write_text(CONVS)
    profile = _write_iree_profile(
        tmp_path / "iree_profile.json",
        [
            _dispatch(f"main_dispatch_{i}_conv", source, 3000, 100)
            for i, source in enumerate(["block/shortcut/BiasAdd", "block/spatial/BiasAdd"])
        ],
    )
    context = CandidateContext(
        profile, IreeProfile.read(profile), workload, time.monotonic() + 60, 600
    )
    (tmp_path / "scratch").mkdir()
    proposal = BY_NAME[candidate].propose(Variant(stablehlo), context, tmp_path / "scratch")
    assert isinstance(proposal, ProposedVariant)
    assert [(d.tf_ops, d.change.split(" (")[0]) for d in proposal.decisions] == [
        ((rewritten_source,), form)
    ]
    rewritten = proposal.variant.stablehlo.read_text()
    assert rewritten.count('"stablehlo.convolution"') == 1  # the other kind is left
    vmfb = tmp_path / "rewritten.vmfb"
    iree_run.compile_vmfb(proposal.variant.stablehlo, vmfb)
    assert check_outputs(vmfb, workload, tmp_path, ()) < 1e-3


# A ViT's 4x4 patch embedding (stride 4) and its filter gradient as TensorFlow's
# bridge writes it (the image with its batch as features, the output gradient as
# the kernel, dilated 4), both hot and far slower compiled than under TensorFlow.
PATCHES = """
func.func @main(%x: tensor<2x8x8x3xf32>, %w: tensor<4x4x3x16xf32>, %dy: tensor<2x2x2x16xf32>)
    -> (tensor<2x2x2x16xf32>, tensor<4x4x3x16xf32>) {
  %0 = "stablehlo.convolution"(%x, %w) <{batch_group_count = 1 : i64,
      dimension_numbers = #stablehlo.conv<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>,
      feature_group_count = 1 : i64, window_strides = array<i64: 4, 4>,
      window_reversal = array<i1: false, false>}>
      : (tensor<2x8x8x3xf32>, tensor<4x4x3x16xf32>) -> tensor<2x2x2x16xf32> loc(#patches)
  %1 = "stablehlo.convolution"(%x, %dy) <{batch_group_count = 1 : i64,
      dimension_numbers = #stablehlo.conv<[f, 0, 1, b]x[i, 0, 1, o]->[0, 1, b, f]>,
      feature_group_count = 1 : i64, padding = dense<0> : tensor<2x2xi64>,
      rhs_dilation = array<i64: 4, 4>, window_strides = array<i64: 1, 1>}>
      : (tensor<2x8x8x3xf32>, tensor<2x2x2x16xf32>) -> tensor<4x4x3x16xf32> loc(#gradient)
  return %0, %1 : tensor<2x2x2x16xf32>, tensor<4x4x3x16xf32>
}
#patches = loc(fused<{profiler_data = {count = 1 : i64, dur = 45 : i64, max = 45 : i64,
    min = 45 : i64, p50 = 45 : i64, p95 = 45 : i64, self = 45 : i64, share = 0.45 : f64,
    source = "vit/patches/Conv2D", total = 45 : i64, ts = 0 : i64}}>["patches"])
#gradient = loc(fused<{profiler_data = {count = 1 : i64, dur = 45 : i64, max = 45 : i64,
    min = 45 : i64, p50 = 45 : i64, p95 = 45 : i64, self = 45 : i64, share = 0.45 : f64,
    source = "gradient_tape/vit/patches/Conv2DBackpropFilter", total = 45 : i64,
    ts = 0 : i64}}>["gradient"])
"""


def test_window_tiling_convolutions_compute_what_tensorflow_computes(tmp_path):
    """conv-to-tiled-dot rewrites a patch embedding and its filter gradient as one
    matrix product each; IREE's program of the rewrite gives TensorFlow's conv2d
    and conv2d_backprop_filter within --lower iree's tolerance."""
    import tensorflow as tf

    arrays, inputs = _random_inputs(tmp_path, 11, x=(2, 8, 8, 3), w=(4, 4, 3, 16), dy=(2, 2, 2, 16))
    expected = (
        tf.nn.conv2d(arrays["x"], arrays["w"], 4, "VALID").numpy(),
        tf.compat.v1.nn.conv2d_backprop_filter(
            arrays["x"], [4, 4, 3, 16], arrays["dy"], [1, 4, 4, 1], "VALID"
        ).numpy(),
    )
    workload = Workload("main", inputs, expected, 1, 0, {}, {})
    stablehlo = tmp_path / "patches.mlir"
    stablehlo.write_text(PATCHES)
    sources = ["vit/patches/Conv2D", "gradient_tape/vit/patches/Conv2DBackpropFilter"]
    profile = _write_iree_profile(
        tmp_path / "iree_profile.json",
        [_dispatch(f"main_dispatch_{i}_conv", s, 3000, 100) for i, s in enumerate(sources)],
    )
    context = CandidateContext(
        profile, IreeProfile.read(profile), workload, time.monotonic() + 60, 600
    )
    (tmp_path / "scratch").mkdir()
    proposal = BY_NAME["conv-to-tiled-dot"].propose(
        Variant(stablehlo), context, tmp_path / "scratch"
    )
    assert isinstance(proposal, ProposedVariant)
    assert proposal.change.startswith("2 hot window-tiling convolutions as dot_generals: ")
    assert [(d.tf_ops, d.change.split(" (")[0]) for d in proposal.decisions] == [
        ((source,), "reshape + dot_general") for source in sources
    ]
    rewritten = proposal.variant.stablehlo.read_text()
    assert '"stablehlo.convolution"' not in rewritten and "#loc" in rewritten
    vmfb = tmp_path / "rewritten.vmfb"
    iree_run.compile_vmfb(proposal.variant.stablehlo, vmfb)
    assert check_outputs(vmfb, workload, tmp_path, ()) < 1e-3
    # conv-to-shifted-dots leaves both to it: neither is a kxk rewrite.
    (tmp_path / "kxk").mkdir()
    left = BY_NAME["conv-to-shifted-dots"].propose(Variant(stablehlo), context, tmp_path / "kxk")
    assert isinstance(left, str) and "found no hot non-1x1 convolution" in left
    declined = json.loads((tmp_path / "kxk" / "rewrites.kxk.json").read_text())["declined"]
    assert {d["reason"] for d in declined} == {
        "windows tile the input (kernels=tiles rewrites it)",
        "layout is not NHWC/HWIO",
    }


def _random_inputs(
    tmp_path: Path, seed: int, **shapes: tuple[int, ...]
) -> tuple[dict[str, np.ndarray], tuple[Path, ...]]:
    """Standard normal float32 arrays of these shapes, each saved as <name>.npy:
    the arrays and their files, in order."""
    rng = np.random.default_rng(seed)
    arrays = {name: rng.standard_normal(shape, dtype=np.float32) for name, shape in shapes.items()}
    for name, array in arrays.items():
        np.save(tmp_path / f"{name}.npy", array)
    return arrays, tuple(tmp_path / f"{name}.npy" for name in arrays)


def _time_forms(monkeypatch, convolution_ms: float, rewritten_ms: float) -> list[Path]:
    """Replaces the timing of a form's two programs (both still compiled by IREE)
    by fixed times; returns the modules timed."""
    timed: list[Path] = []

    def fixed(default: Arm, variants: list[Arm], scratch: Path, what: str) -> list[tuple]:
        (rewritten,) = variants
        for arm in (default, rewritten):
            assert arm.function == "main" and len(arm.inputs) == 2 and Path(arm.vmfb).is_file()
            timed.append(Path(arm.vmfb))
        assert Path(rewritten.vmfb).stem == "rewritten"
        return [(rewritten_ms * 1e9, convolution_ms * 1e9)]

    monkeypatch.setattr(program_ab, "generation", fixed)
    return timed


def test_kxk_rewrites_only_the_forms_that_win_alone(tmp_path, monkeypatch):
    """Each selected form is compiled alone both ways and timed; the rewrite is
    proposed only for the forms whose rewrite is faster beyond the noise, and
    conv_forms.json says how long each took."""
    stablehlo = tmp_path / "convs.mlir"
    stablehlo.write_text(CONVS)
    profile = _write_iree_profile(
        tmp_path / "iree_profile.json",
        [_dispatch("main_dispatch_0_conv", "block/spatial/BiasAdd", 3000, 100)],
    )
    context = _context(profile)
    timed = _time_forms(monkeypatch, convolution_ms=2.0, rewritten_ms=1.95)  # 2.5%: noise
    (tmp_path / "a").mkdir()
    reason = BY_NAME["conv-to-shifted-dots"].propose(Variant(stablehlo), context, tmp_path / "a")
    assert reason == (
        "none of the 1 forms of the 1 hot, slow non-1x1 convolutions ran faster rewritten, "
        "each timed alone (conv_forms.json says how long, or why not)"
    )
    assert sorted(path.name for path in timed) == ["convolution.vmfb", "rewritten.vmfb"]
    (form,) = json.loads((tmp_path / "a" / "conv_forms.json").read_text())
    assert form == {
        "form": "2x9x8x5xf32 by 3x3x5x7xf32, strides [2, 2], padding [1, 1, 0, 1]",
        "sources": ["block/spatial/BiasAdd"],
        "convolution_ps": 2_000_000_000,
        "rewritten_ps": 1_950_000_000,
        "rewritten": False,
    }
    _time_forms(monkeypatch, convolution_ms=2.0, rewritten_ms=1.0)
    (tmp_path / "b").mkdir()
    proposal = BY_NAME["conv-to-shifted-dots"].propose(Variant(stablehlo), context, tmp_path / "b")
    assert isinstance(proposal, ProposedVariant)
    (decision,) = proposal.decisions
    assert decision.change.endswith(", alone 2.00 -> 1.00 ms")
    # A form IREE cannot time is left as it was, with IREE's line, not the loop ended.

    def fails(default: Arm, variants: list[Arm], scratch: Path, what: str) -> list[tuple]:
        raise UserError(f"{what}: alternation failed: error: IREE could not load or call it")

    monkeypatch.setattr(program_ab, "generation", fails)
    (tmp_path / "c").mkdir()
    reason = BY_NAME["conv-to-shifted-dots"].propose(Variant(stablehlo), context, tmp_path / "c")
    assert isinstance(reason, str) and reason.startswith("none of the 1 forms")
    (form,) = json.loads((tmp_path / "c" / "conv_forms.json").read_text())
    assert form["rewritten"] is False and form["convolution_ps"] is None
    assert form["failed"] == (
        "conv-to-shifted-dots (a form timed alone): alternation failed: error: IREE could not "
        "load or call it"
    )


def test_o2_is_proposed_once(tmp_path):
    current = Variant(Path("m.mlir"))
    context = _context(_iree_profile(tmp_path / "p.json", 1, 1))
    proposal = BY_NAME["iree-O2"].propose(current, context, tmp_path)
    assert isinstance(proposal, ProposedVariant) and proposal.variant.flags == (
        "--iree-opt-level=O2",
    )
    again = BY_NAME["iree-O2"].propose(proposal.variant, context, tmp_path)
    assert again == "the current program is compiled with it already"
    # Data tiling makes matmuls mmt4d: a tuning spec for the old root ops is dropped.
    spec = "--iree-codegen-tuning-spec-path=/s/tuning_spec.mlir"
    searched = frozenset({"d_dispatch_0_matmul_8x8x8_f32"})
    tuned = Variant(Path("m.mlir"), (spec,), (TILE,), searched, "local-sync")
    tiled = BY_NAME["iree-data-tiling"].propose(tuned, context, tmp_path)
    assert isinstance(tiled, ProposedVariant) and tiled.change.endswith(
        "(without the tuning spec, whose tiles are for other root ops)"
    )
    data_tiling = ("--iree-opt-data-tiling", "--iree-llvmcpu-enable-ukernels=all")
    assert tiled.variant == Variant(Path("m.mlir"), data_tiling, driver="local-sync")
    o2 = BY_NAME["iree-O2"].propose(tuned, context, tmp_path)
    assert isinstance(o2, ProposedVariant)  # O2 keeps the spec, its tiles and what was searched
    assert o2.variant == replace(tuned, flags=(spec, "--iree-opt-level=O2"))


def test_the_report_section_states_what_was_kept_and_what_it_sped_up():
    helps = ABResult(0.25, 0.2, 0.3, Verdict.HELPS, 40.0, 10.0, 5, 0.95, 0.05)
    ops = (OpChange("a/conv", 8_000, 60_000_000, 20_000_000), OpChange("a/relu", 2, 8, 8))
    decision = Decision(
        "conv-to-dot", "d_48", ("a/conv", "a/bn", "a/add"), "slice + dot_general",
        600_000_000, 60_000_000, True,
    )  # fmt: skip
    document = TuneDocument(
        600.0,
        2,
        (
            CandidateTrial("conv-to-dot", "2 hot 1x1 convolutions", "kept", "helps", helps, 1e-6),
            CandidateTrial("iree-O2", "", "not tried", "the --tune-budget was spent"),
        ),
        (decision,),
        (),
        Tuned(TUNED_VMFB, TUNED_PROFILE, ops),
        whole := EndToEnd.of(helps, 1e-6),
    )
    summary = tune_summary(document)
    assert summary.startswith("2 candidates, 1 measured, budget 10 min: kept conv-to-dot.")
    assert "takes 10 ms a run against 40 ms, ratio 0.250 [0.200, 0.300] (95%)" in summary
    unconfirmed = replace(
        document, tuned=None, end_to_end=replace(whole, verdict="no measurable effect", ratio=0.97)
    )
    assert tune_summary(unconfirmed).endswith(
        "conv-to-dot won their own A/B, but together they were not confirmed against the "
        "original (no measurable effect, ratio 0.970); the program --lower iree compiled stays. "
        "It computes in float32: without --precision bf16 no candidate changes that."
    )
    assert decision_rows(document) == [
        ["conv-to-dot", "d_48", "a/conv, a/bn, +1 more", "slice + dot_general", "300 µs",
         "30 µs", "yes"]
    ]  # fmt: skip
    assert trial_rows(document)[1] == [
        "iree-O2", "–", "not tried", "–", "the --tune-budget was spent"
    ]  # fmt: skip
    # Per step: 2 profiled runs, 4 TensorFlow steps; unchanged ops are left out.
    assert op_rows(document, 4, 10) == [["a/conv", "2 ns", "30 µs", "10 µs", "0.33x"]]


def test_tune_needs_the_compiled_program_and_a_positive_budget(tmp_path, capsys):
    with pytest.raises(UserError) as error:
        run_flow(FlowOptions(output_dir=tmp_path / "out", tune_budget_s=60))
    assert str(error.value) == "--tune tunes the program IREE compiles: add --lower iree"
    assert not (tmp_path / "out").exists()
    for bad in ("-1", "inf", "soon"):
        with pytest.raises(SystemExit):
            pgo.build_parser().parse_args(["--tune", "--tune-budget", bad])
        assert "argument --tune-budget: " in capsys.readouterr().err
    args = pgo.build_parser().parse_args(["--lower", "iree", "--tune", "--tune-budget", "2.5"])
    assert pgo.options_from_args(args).tune_budget_s == 150
    assert pgo.options_from_args(pgo.build_parser().parse_args([])).tune_budget_s is None
    default = pgo.build_parser().parse_args(["--lower", "iree", "--tune"])
    assert pgo.options_from_args(default).tune_budget_s == 600
    with pytest.raises(UserError) as alone:
        pgo.options_from_args(pgo.build_parser().parse_args(["--tune-budget", "5"]))
    assert str(alone.value) == "--tune-budget bounds --tune: add --tune (and --lower iree)"


# Two identical 3x3 convolutions: IREE ran them as one executable, invoked twice
# a run and named after the first, whose sources name only the first.
TWINS = """
func.func @main(%x: tensor<1x6x6x4xf32>, %w: tensor<3x3x4x4xf32>)
    -> (tensor<1x6x6x4xf32>, tensor<1x6x6x4xf32>) {
  %0 = "stablehlo.convolution"(%x, %w) <{batch_group_count = 1 : i64,
      dimension_numbers = #stablehlo.conv<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>,
      feature_group_count = 1 : i64, padding = dense<1> : tensor<2x2xi64>}>
      : (tensor<1x6x6x4xf32>, tensor<3x3x4x4xf32>) -> tensor<1x6x6x4xf32> loc(#first)
  %1 = "stablehlo.convolution"(%0, %w) <{batch_group_count = 1 : i64,
      dimension_numbers = #stablehlo.conv<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>,
      feature_group_count = 1 : i64, padding = dense<1> : tensor<2x2xi64>}>
      : (tensor<1x6x6x4xf32>, tensor<3x3x4x4xf32>) -> tensor<1x6x6x4xf32> loc(#second)
  return %0, %1 : tensor<1x6x6x4xf32>, tensor<1x6x6x4xf32>
}
#first = loc(fused<{profiler_data = {count = 1 : i64, dur = 45 : i64, max = 45 : i64,
    min = 45 : i64, p50 = 45 : i64, p95 = 45 : i64, self = 45 : i64, share = 0.5 : f64,
    source = "s/first", total = 45 : i64, ts = 0 : i64}}>["first"])
#second = loc(fused<{profiler_data = {count = 1 : i64, dur = 45 : i64, max = 45 : i64,
    min = 45 : i64, p50 = 45 : i64, p95 = 45 : i64, self = 45 : i64, share = 0.5 : f64,
    source = "s/second", total = 45 : i64, ts = 0 : i64}}>["second"])
"""


def test_identical_convolutions_are_one_decision_with_their_shared_time(tmp_path, monkeypatch):
    """The second convolution, which no dispatch names, is judged by the first's
    executable and rewritten with it; the decision names both tf ops and counts
    the executable's time once."""
    stablehlo = tmp_path / "twins.mlir"
    stablehlo.write_text(TWINS)
    profile = _write_iree_profile(
        tmp_path / "iree_profile.json",
        [_dispatch("main_dispatch_0_conv", "s/first", 4000, 45, count=2)],
    )
    _time_forms(monkeypatch, convolution_ms=2.0, rewritten_ms=1.0)
    (tmp_path / "a").mkdir()
    proposal = BY_NAME["conv-to-shifted-dots"].propose(
        Variant(stablehlo), _context(profile), tmp_path / "a"
    )
    assert isinstance(proposal, ProposedVariant)
    assert '"stablehlo.convolution"' not in proposal.variant.stablehlo.read_text()
    (decision,) = proposal.decisions
    assert decision.dispatch == "main_dispatch_0_conv"
    assert decision.tf_ops == ("s/first", "s/second")
    assert decision.before_ps == 4000
    report = json.loads((tmp_path / "a" / "rewrites.kxk.json").read_text())
    assert [(r["source"], r.get("twin"), r["slowdown"]) for r in report["rewritten"]] == [
        ("s/first", None, pytest.approx(2000 / 45)),
        ("s/second", "s/first", pytest.approx(2000 / 45)),
    ]


def _records(path: Path, stablehlo: Path, retune: bool = False) -> Records:
    notes: list[str] = []
    records = Records.open(path, stablehlo, retune, notes.append)
    assert records is not None and not notes
    # A limit no dispatch comes near, so that the loop tunes: on this machine's own,
    # the test program's matmul runs within 15% of it, and the loop would stop there.
    here = records.target.machine
    records.db.put_limit(records.target, MachineLimit(here, "c", "avx2", 1, {"f32": 1e9}, 1e9, 1e9))
    return records


def _never(current: Variant, context: CandidateContext, scratch: Path) -> ProposedVariant:
    raise AssertionError("a candidate the records settled was proposed again")


def test_a_finished_run_is_built_again_from_its_record(program, tmp_path, monkeypatch):
    """Tune once, build many: the second run of the same program measures no
    candidate; with a budget it confirms the recorded program by one A/B, with
    --tune-budget 0 it writes the very same bytes without one."""
    original, workload, baseline = program
    stablehlo = _own_copy(original, tmp_path)
    db = tmp_path / "tuning.db"
    first = tmp_path / "first"
    first.mkdir()
    tried = (Candidate("wrong", _module(WRONG)), Candidate("lean", _module(LEAN)))
    with _records(db, stablehlo).db:
        pass  # created empty: the first run finds nothing
    records = _records(db, stablehlo)
    document = tune(stablehlo, workload, baseline, first, Tuning(600, 3), candidates=tried,
                    records=records)  # fmt: skip
    assert [t.outcome for t in document.trials] == ["rejected", "kept"]
    (run,) = records.db.runs(records.target, records.original)
    assert document.end_to_end is not None
    assert run.finished and run.ratio == document.end_to_end.ratio and run.rewritten
    names = {d.name: d for d in records.db.decisions(records.target, records.original)}
    assert names["wrong"].verdict == "" and not names["wrong"].kept
    assert names["lean"].verdict == "helps" and names["lean"].kept
    never = (Candidate("wrong", _never), Candidate("lean", _never))
    again = tmp_path / "again"
    again.mkdir()
    measured: list[ABResult] = []
    real_ab = loop._ab

    def counted_ab(*args: Any) -> Any:
        measured.append(real_ab(*args))
        return measured[-1]

    monkeypatch.setattr(loop, "_ab", counted_ab)
    confirmed = tune(stablehlo, workload, baseline, again, Tuning(600, 3), candidates=never,
                     records=records)  # fmt: skip
    # One sequential A/B confirms a recorded gain of more than 2x: at its first look.
    (result,) = measured
    assert result.verdict is Verdict.HELPS and result.processes == paired.MIN_PROCESSES
    monkeypatch.setattr(loop, "_ab", real_ab)
    ((name, outcome),) = [(t.name, t.outcome) for t in confirmed.trials]
    assert (name, outcome) == ("tuning record", "kept") and confirmed.tuned is not None
    assert confirmed.end_to_end is not None and confirmed.end_to_end.ratio < 0.5
    built = tmp_path / "built"
    built.mkdir()
    rebuilt = tune(stablehlo, workload, baseline, built, Tuning(0), candidates=never,
                   records=records)  # fmt: skip
    assert rebuilt.trials[0].result is None and rebuilt.trials[0].max_abs == 0
    assert (built / TUNED_VMFB).read_bytes() == (first / TUNED_VMFB).read_bytes()
    # The record names the vmfb it kept; the rebuild says it made the same bytes.
    assert run.vmfb == hashlib.sha256((first / TUNED_VMFB).read_bytes()).hexdigest()
    assert "byte-identical to the program it kept" in rebuilt.trials[0].reason
    assert "byte-identical to the program it kept" in confirmed.trials[0].reason
    # tune.json says what each stage took: the rebuild, a fraction of the first.
    spent = [TuneDocument.read(d / "tune.json").tune_s for d in (first, again, built)]
    assert spent == [d.tune_s for d in (document, confirmed, rebuilt)]
    assert 0 < spent[2] < spent[0]
    records.db.close()


def test_a_run_cut_short_goes_on_where_it_stopped(program, tmp_path):
    """A recorded run that did not finish: what it measured on this program is
    not measured again (`--retune` measures it all again)."""
    original, workload, baseline = program
    stablehlo = _own_copy(original, tmp_path)
    records = _records(tmp_path / "tuning.db", stablehlo)
    wrong = CandidateTrial("wrong", "the program of 9 characters", "rejected", "differs")
    records.record([(wrong, Variant(stablehlo), (), False)], Variant(stablehlo), stablehlo,
                   RunSummary("m", False, None, 1.0, ("lean",)))  # fmt: skip
    tried = (Candidate("wrong", _never), Candidate("lean", _module(LEAN)))
    document = tune(stablehlo, workload, baseline, tmp_path, Tuning(600, 3), candidates=tried,
                    records=records)  # fmt: skip
    skipped, lean = document.trials
    assert skipped.outcome == "skipped" and "--retune measures again" in skipped.reason
    assert skipped.reason.endswith(": differs")
    assert lean.outcome == "kept", lean.reason
    retuned = _records(tmp_path / "tuning.db", stablehlo, retune=True)
    assert retuned.last_run() is None and retuned.decided(Variant(stablehlo)) == {}
    records.db.close()
    retuned.db.close()


def test_a_candidate_whose_search_was_cut_is_proposed_again(program, tmp_path):
    """A candidate whose climbs the budget cut short is not recorded as decided:
    the next run proposes it again (its search resumes from the tile records),
    and neither run counts as finished."""
    original, workload, baseline = program
    proposed: list[Path] = []

    def cut_short(current: Variant, context: CandidateContext, scratch: Path) -> str:
        proposed.append(scratch)
        found = dispatch_tiles.Search({}, {}, {}, {}, cut=["main_dispatch_0"])
        assert context.tile_records is not None
        context.tile_records.record_search(found, scratch / "none", (), current.stablehlo)
        return "no tile variant beat IREE's own in the time its climbs had"

    for run in ("first", "second"):
        stablehlo = _own_copy(original, tmp_path / run)  # one program, a run's own scratch
        records = _records(tmp_path / "tuning.db", stablehlo)
        tune(stablehlo, workload, baseline, tmp_path / run, Tuning(600, 3),
             candidates=(Candidate("tiles", cut_short),), records=records)  # fmt: skip
        assert records.db.decisions(records.target, records.original) == []
        last = records.last_run()
        assert last is not None and not last.finished
        records.db.close()
    assert len(proposed) == 2


def test_a_rebuild_says_why_its_bytes_differ_from_the_recorded_program(program, tmp_path):
    """Issue 64: a build from a record is compared with the vmfb the record kept;
    where the bytes differ, the cause is named."""
    original, _, _ = program
    records = _records(tmp_path / "tuning.db", _own_copy(original, tmp_path))
    vmfb = tmp_path / "rebuilt.vmfb"
    vmfb.write_bytes(b"the program built again")
    run = ProgramRun(records.original, "m", True, ("--iree-opt-level=O2",), "", (), 0.5, 60.0,
                     (), (), 1.0, values=records.values)  # fmt: skip
    assert "has no digest" in records.rebuild_text(run, vmfb)
    kept = replace(run, vmfb=file_digest(vmfb))
    assert records.rebuild_text(kept, vmfb) == "byte-identical to the program it kept"
    other = replace(run, vmfb=hashlib.sha256(b"another program").hexdigest())
    assert records.rebuild_text(other, vmfb).endswith("IREE's compile of this program is not "
                                                      "deterministic")  # fmt: skip
    retrained = replace(other, values="other weights")
    assert records.rebuild_text(retrained, vmfb).endswith(": the model's weights differ")
    records.db.close()


def test_a_build_from_records_without_one_keeps_the_program(program, tmp_path):
    """No run of this program on this target: only a run of it by another
    iree-compile, which is never applied, and which the report lists as stale."""
    original, workload, baseline = program
    stablehlo = _own_copy(original, tmp_path)
    notes: list[str] = []
    records = _records(tmp_path / "tuning.db", stablehlo)
    older = replace(records.target, compiler="3.12.0 @ 0123abcd")
    run = ProgramRun(records.original, "m", True, ("--iree-opt-level=O2",), "", (), 0.5, 60.0,
                     (), (), 1.0)  # fmt: skip
    assert records.db.add_run(older, run)
    document = tune(stablehlo, workload, baseline, tmp_path, Tuning(0), notes.append,
                    candidates=(Candidate("lean", _never),), records=records)  # fmt: skip
    assert document.tuned is None and document.trials == ()
    assert "holds no run of this program on this target" in document.unconfirmed
    assert "; it holds runs of it for iree-compile 3.12.0 @ 0123abcd:" in document.unconfirmed
    assert notes == [f"tune: {document.unconfirmed}"]
    stale = "iree-compile 3.12.0 @ 0123abcd: 0 tile records, 0 decisions, 1 runs"
    assert document.stale == (stale,)
    assert TuneDocument.read(tmp_path / "tune.json").stale == document.stale
    assert stale_text(document).startswith(
        "The tuning database holds records of 1 other target(s), never applied here (stale): "
        "iree-compile 3.12.0 @ 0123abcd"
    )
    records.db.close()


def test_a_program_at_this_machines_limit_is_not_tuned(program, tmp_path):
    """With this machine's limit recorded (a constructed one: 1 byte/s, so the
    program's roofline bound is far above its time), the loop proposes nothing,
    says why in one line, and ends at once."""
    original, workload, baseline = program
    stablehlo = _own_copy(original, tmp_path)
    records = _records(tmp_path / "tuning.db", stablehlo)
    here = records.target.machine
    slow = MachineLimit(here, "c", "avx2", 1, {"f32": 1e-9}, 1e-9, 1e-9)
    records.db.put_limit(records.target, slow)
    notes: list[str] = []
    document = tune(stablehlo, workload, baseline, tmp_path, Tuning(600, 3), notes.append,
                    candidates=(Candidate("lean", _never),), records=records)  # fmt: skip
    (trial,) = document.trials
    assert trial.outcome == "not tried" and "nothing left to gain here" in trial.reason
    assert document.limit_fraction is not None and document.limit_fraction >= AT_LIMIT
    assert notes == [f"tune: {trial.reason}; no candidate tried"]
    assert document.tuned is None and document.tune_s < 60
    assert limit_text(document).endswith("nothing left to gain here.")
    records.db.close()


def test_a_file_that_is_no_tuning_database_is_one_line_and_the_run_goes_on(tmp_path):
    stablehlo = tmp_path / "m.mlir"
    stablehlo.write_text(LEAN)
    corrupt = tmp_path / "tuning.db"
    corrupt.write_bytes(b"not a database at all" * 10)
    notes: list[str] = []
    assert Records.open(corrupt, stablehlo, False, notes.append) is None
    (line,) = notes
    assert line.startswith(f"tuning database {corrupt}: not a tfpgo tuning database")
    assert line.endswith("; going on without one")
    assert corrupt.read_bytes() == b"not a database at all" * 10


def test_the_tuning_database_flags(capsys):
    def options(*args: str) -> FlowOptions:
        return pgo.options_from_args(pgo.build_parser().parse_args(list(args)))

    built = options("--lower", "iree", "--tune", "--tune-budget", "0", "--tuning-db", "t.db")
    assert built.tune_budget_s == 0 and built.tuning_db == Path("t.db") and not built.retune
    assert options("--lower", "iree", "--tune", "--no-tuning-db").tuning_db is None
    assert options("--lower", "iree", "--tune").tuning_db == default_path()
    assert options().tuning_db == default_path()  # unused without --tune
    for args, message in [
        (("--retune",), "--retune is for --tune: add --tune (and --lower iree)"),
        (("--tune", "--tune-budget", "0", "--no-tuning-db"), "--tune-budget 0 builds from"),
        (("--tune", "--tune-budget", "0", "--retune"), "which --retune leaves aside"),
    ]:
        with pytest.raises(UserError, match=re.escape(message)):
            options(*args)
    with pytest.raises(SystemExit):
        pgo.build_parser().parse_args(["--tune", "--tuning-db", "a", "--no-tuning-db"])
    assert "not allowed with argument" in capsys.readouterr().err


def test_a_record_for_other_weights_gives_its_flags_not_its_program(tmp_path):
    """The stored program is compiled again only for the same weights (the same
    bytes, the same vmfb); for new weights a run that kept flags, a spec and tiles
    applies them to the new program, and one whose program a pass rewrote gives
    nothing (the rewritten program holds the old weights)."""
    old, new = tmp_path / "old.mlir", tmp_path / "new.mlir"
    old.write_text(WASTEFUL)
    new.write_text(WASTEFUL.replace("dense<0.0>", "dense<1.0>"))  # other weights
    records = _records(tmp_path / "tuning.db", old)
    spec = tmp_path / "spec.mlir"
    spec.write_text(tile_configs.spec_text([TILE]))
    variant = Variant(old, ("--iree-opt-level=O2", f"{tile_configs.SPEC_FLAG}{spec}"), (TILE,))
    records.record([], variant, old, RunSummary("m", True, 0.5, 1.0, ()))
    (run,) = records.db.runs(records.target, records.original)
    same = records.variant_of(run, old, tmp_path)
    assert same is not None and same.stablehlo.read_bytes() == old.read_bytes()
    assert same.stablehlo != old and same.tiles == (TILE,)  # the stored copy
    assert same.flags[0] == "--iree-opt-level=O2"
    assert Path(same.flags[1].removeprefix(tile_configs.SPEC_FLAG)).read_text() == spec.read_text()
    renewed = _records(tmp_path / "tuning.db", new)
    assert renewed.original == records.original and renewed.values != records.values
    other = renewed.variant_of(run, new, tmp_path)
    assert other is not None and other.stablehlo == new and other.flags == same.flags
    rewritten = replace(run, rewritten=True)
    assert renewed.variant_of(rewritten, new, tmp_path) is None
    assert records.variant_of(rewritten, old, tmp_path) is not None
    records.db.close()
    renewed.db.close()


def test_local_sync_is_decided_from_the_host_share_and_recorded(program, tmp_path, monkeypatch):
    """The driver candidate proposes local-sync unless the profiled dispatches
    fill the measured call (constructed here: 4%, 90% and 120%). The
    loop times it with each arm on its driver (the A/Bs injected), profiles the
    kept program on local-sync, writes the driver into tune.json and the record,
    and a build from the record runs on it again."""
    original, workload, baseline = program
    stablehlo = _own_copy(original, tmp_path)
    sync = BY_NAME["local-sync"]
    dispatch_s = baseline.profile.dispatch_ps / baseline.profile.runs / 1e12
    context = CandidateContext(
        tmp_path / "iree_profile.json", baseline.profile, workload, time.monotonic() + 60, 60,
        call_s=lambda: dispatch_s / 1.2,
    )  # fmt: skip
    filled = sync.propose(Variant(stablehlo), context, tmp_path)
    assert isinstance(filled, str) and filled.startswith("its dispatches add up to 120% of a call")
    assert filled.endswith("on one core they would take the whole call at least")
    # 90%: on one core between 0.9 and 1.8 calls (two workers): the A/B decides.
    most = replace(context, call_s=lambda: dispatch_s / 0.9)
    between = sync.propose(Variant(stablehlo), most, tmp_path)
    assert isinstance(between, ProposedVariant) and "add up to 90% of a call" in between.change
    untimed = sync.propose(Variant(stablehlo), replace(context, call_s=None), tmp_path)
    assert untimed == "the program's call was not timed, so its host share is not known"
    host = replace(context, call_s=lambda: dispatch_s / 0.04)
    proposal = sync.propose(Variant(stablehlo), host, tmp_path)
    assert isinstance(proposal, ProposedVariant)
    assert "(its dispatches add up to 4% of a call" in proposal.change
    assert proposal.variant == Variant(stablehlo, driver="local-sync")
    again = sync.propose(proposal.variant, host, tmp_path)
    assert again == "the current program runs on local-sync already"

    asked: list[tuple[str, str]] = []
    results = [ab_samples.result(0.6), ab_samples.result(0.6)]

    def injected(*args: Any) -> ABResult:
        asked.append(args[-1])
        return results.pop(0)

    monkeypatch.setattr(loop, "_ab", injected)
    monkeypatch.setattr(program_ab.ProgramAB, "call_s", lambda self: dispatch_s / 0.04)
    records = _records(tmp_path / "tuning.db", stablehlo)
    first = tmp_path / "first"
    first.mkdir()
    document = tune(stablehlo, workload, baseline, first, Tuning(600, 3), candidates=(sync,),
                    records=records)  # fmt: skip
    # The candidate's A/B and the final one: the original on local-task each time.
    assert asked == [("local-task", "local-sync")] * 2
    assert document.kept == ("local-sync",) and document.flags == ()
    assert document.tuned is not None and document.tuned.driver == "local-sync"
    assert TuneDocument.read(first / "tune.json") == document
    summary = tune_summary(document)
    assert "The tuned program (model.tuned.vmfb, on IREE's local-sync driver) takes " in summary
    tuned_profile = json.loads((first / TUNED_PROFILE).read_text())
    assert tuned_profile["totals"]["dispatch_ps"] > 0  # profiled on local-sync
    (run,) = records.db.runs(records.target, records.original)
    assert run.driver == "local-sync" and run.kept_something and run.flags == ()
    # Built again from the record with --tune-budget 0: the same driver, no A/B.
    built = tmp_path / "built"
    built.mkdir()
    rebuilt = tune(stablehlo, workload, baseline, built, Tuning(0), candidates=(sync,),
                   records=records)  # fmt: skip
    assert rebuilt.tuned is not None and rebuilt.tuned.driver == "local-sync"
    assert rebuilt.trials[0].change == "IREE's local-sync driver" and not asked[2:]
    records.db.close()


def test_convolution_data_tiling_flags_compile_a_convolution(tmp_path):
    """The candidate's flags, spelled as IREE 3.13 takes them (a list option given
    once a family), compile a convolution; a tuning spec is dropped as for data tiling."""
    context = _context(_iree_profile(tmp_path / "p.json", 1, 1))
    spec = "--iree-codegen-tuning-spec-path=/s/tuning_spec.mlir"
    tuned = Variant(Path("m.mlir"), (spec,), (TILE,))
    proposal = BY_NAME["iree-conv-data-tiling"].propose(tuned, context, tmp_path)
    assert isinstance(proposal, ProposedVariant) and spec not in proposal.variant.flags
    assert "--iree-dispatch-creation-experimental-set-data-tiling-ops=convolution" in (
        proposal.variant.flags
    )
    program = tmp_path / "conv.mlir"
    program.write_text(CONVOLUTION_3X3)
    iree_run.compile_vmfb(program, tmp_path / "conv.vmfb", proposal.variant.flags, 300)
    assert (tmp_path / "conv.vmfb").stat().st_size > 0


def test_im2col_with_data_tiling_is_proposed_for_convolutions_and_compiles_them(tmp_path):
    """Proposed for a program with a convolution (and dropping a tuning spec, as
    data tiling does), not for one without; its flags compile the convolution,
    which then computes what the convolution computes."""
    context = _context(_iree_profile(tmp_path / "p.json", 1, 1))
    plain = tmp_path / "plain.mlir"
    plain.write_text(LEAN)
    assert BY_NAME["iree-im2col-data-tiling"].propose(Variant(plain), context, tmp_path) == (
        "the program has no convolution"
    )
    program = tmp_path / "conv.mlir"
    write_generic_stablehlo(CONVOLUTION_3X3, program)
    spec = "--iree-codegen-tuning-spec-path=/s/tuning_spec.mlir"
    proposal = BY_NAME["iree-im2col-data-tiling"].propose(
        Variant(program, (spec,), (TILE,)), context, tmp_path
    )
    assert isinstance(proposal, ProposedVariant) and spec not in proposal.variant.flags
    assert "--iree-global-opt-use-im2col-for-convs" in proposal.variant.flags
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 8, 8, 4)).astype(np.float32)
    w = rng.standard_normal((3, 3, 4, 8)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "w.npy", w)
    padded = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
    want = sum(
        np.einsum("bhwi,io->bhwo", padded[:, i : i + 8, j : j + 8], w[i, j])
        for i in range(3)
        for j in range(3)
    )
    workload = Workload("main", (tmp_path / "x.npy", tmp_path / "w.npy"), (want,), 1, 0, {}, {})
    vmfb = tmp_path / "conv.vmfb"
    iree_run.compile_vmfb(program, vmfb, proposal.variant.flags, 300)
    assert check_outputs(vmfb, workload, tmp_path, proposal.variant.flags) < 1e-4
