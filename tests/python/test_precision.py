"""--precision bf16 (tfpgo.tune.precision): --tune demotes contractions' inputs
to bfloat16 only where the user allows it, holds the program to the user's
--max-output-error instead of float32's tolerance, and says what the kept
program computes in and what it cost (real IREE compiler and runtime on a small
matmul)."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from ab_samples import injected_abs

from tfpgo.errors import UserError
from tfpgo.flow import pgo
from tfpgo.flow.stages import FlowOptions
from tfpgo.iree import run as iree_run
from tfpgo.iree.output_check import FLOAT32, program_precision
from tfpgo.iree.program import Workload, check_outputs, profile_program
from tfpgo.report.tune_tables import tune_summary
from tfpgo.tune import candidates
from tfpgo.tune.candidates import CANDIDATES
from tfpgo.tune.loop import Tuning, tune
from tfpgo.tune.precision import demotion_flags
from tfpgo.tune.records import Records

BY_NAME = {candidate.name: candidate for candidate in CANDIDATES}
BF16 = ("bf16-contractions", "bf16-matmuls", "bf16-convolutions")
MATMUL = """
func.func @main(%x: tensor<16x256xf32>, %w: tensor<256x16xf32>) -> tensor<16x16xf32> {
  %0 = "stablehlo.dot_general"(%x, %w) <{dot_dimension_numbers = #stablehlo.dot<
      lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]>}>
      : (tensor<16x256xf32>, tensor<256x16xf32>) -> tensor<16x16xf32> loc("matmul")
  return %0 : tensor<16x16xf32>
}
"""


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    """The matmul, profiled as `--lower iree` profiles it, its expected output
    computed in float64."""
    scratch = tmp_path_factory.mktemp("precision")
    stablehlo = scratch / "stablehlo.mlir"
    stablehlo.write_text(MATMUL)
    rng = np.random.default_rng(7)
    x = rng.standard_normal((16, 256)).astype(np.float32)
    w = rng.standard_normal((256, 16)).astype(np.float32)
    np.save(scratch / "x.npy", x)
    np.save(scratch / "w.npy", w)
    want = (x.astype(np.float64) @ w.astype(np.float64)).astype(np.float32)
    inputs = (scratch / "x.npy", scratch / "w.npy")
    workload = Workload("main", inputs, (want,), 2, 1, {"matmul": 1000}, {})
    baseline = profile_program(stablehlo, (), scratch / "iree", workload, "model.iree.vmfb")
    return stablehlo, workload, baseline


def _copy(stablehlo: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "program" / stablehlo.name
    copy.parent.mkdir(parents=True)
    copy.write_bytes(stablehlo.read_bytes())
    return copy


def _with_units(monkeypatch) -> None:
    """The CPU's bfloat16 units as IREE's runtime reports them, whatever this
    machine has (IREE computes the demoted program correctly either way)."""
    monkeypatch.setattr(candidates, "host_features", lambda: {"avx512bf16": True})


def test_without_precision_nothing_changes_it(program, tmp_path, monkeypatch):
    stablehlo, workload, baseline = program
    _with_units(monkeypatch)
    baseline.profile.write(tmp_path / "iree_profile.json")
    tried = tuple(BY_NAME[name] for name in BF16)
    document = tune(_copy(stablehlo, tmp_path), workload, baseline, tmp_path, Tuning(600, 3),
                    candidates=tried)  # fmt: skip
    assert [(t.name, t.outcome) for t in document.trials] == [(name, "skipped") for name in BF16]
    assert all("--precision bf16 allows" in t.reason for t in document.trials)
    assert (document.precision, document.max_output_error, document.output_error) == (
        FLOAT32, None, None
    )  # fmt: skip
    assert "without --precision bf16 no candidate changes that" in tune_summary(document)
    # A bfloat16 program is refused outright where no lower precision is allowed.
    flags = demotion_flags("all")
    vmfb = tmp_path / "demoted.vmfb"
    iree_run.compile_vmfb(stablehlo, vmfb, flags)
    with pytest.raises(UserError, match="computes with bf16 inputs to contractions, which only"):
        check_outputs(vmfb, workload, tmp_path, flags)


def test_the_budget_refuses_a_demotion_beyond_it_and_keeps_one_within(
    program, tmp_path, monkeypatch
):
    stablehlo, workload, baseline = program
    _with_units(monkeypatch)
    baseline.profile.write(tmp_path / "iree_profile.json")
    strict = replace(workload, output_budget=1e-6)
    tried = (BY_NAME["bf16-contractions"],)
    document = tune(_copy(stablehlo, tmp_path / "strict"), strict, baseline, tmp_path,
                    Tuning(600, 3), candidates=tried)  # fmt: skip
    (trial,) = document.trials
    assert trial.outcome == "rejected" and trial.result is None  # refused before any timing
    found = re.search(r"differ from the float32 ones by ([0-9.e-]+) of their", trial.reason)
    assert found and "beyond --max-output-error 1e-06" in trial.reason
    error = float(found.group(1))
    assert 1e-5 < error < 0.02  # bfloat16 inputs, float32 sums: truly demoted
    assert document.precision == FLOAT32 and document.max_output_error == 1e-6
    # Within a budget above that error, it is timed (a constructed A/B) and kept.
    injected_abs(monkeypatch, 0.5, 0.5)
    loose = replace(workload, output_budget=0.05)
    kept = tune(_copy(stablehlo, tmp_path / "loose"), loose, baseline, tmp_path / "loose",
                Tuning(600, 3), candidates=tried)  # fmt: skip
    (trial,) = kept.trials
    assert trial.outcome == "kept", trial.reason
    assert "held to --max-output-error 0.05" in trial.change
    assert kept.precision == "bf16 inputs to contractions" == program_precision(kept.flags)
    assert kept.output_error == pytest.approx(error, rel=2e-3)  # the line says 3 digits
    assert "computes with bf16 inputs to contractions" in tune_summary(kept)
    assert "(--max-output-error 0.05)" in tune_summary(kept)


def test_no_bfloat16_without_the_units(program, tmp_path, monkeypatch):
    stablehlo, workload, baseline = program
    monkeypatch.setattr(candidates, "host_features", lambda: {"avx512f": True})
    baseline.profile.write(tmp_path / "iree_profile.json")
    allowed = replace(workload, output_budget=0.05)
    document = tune(_copy(stablehlo, tmp_path), allowed, baseline, tmp_path, Tuning(600, 3),
                    candidates=(BY_NAME["bf16-matmuls"],))  # fmt: skip
    (trial,) = document.trials
    assert trial.outcome == "skipped" and "this CPU has no bfloat16 units" in trial.reason
    assert "none was kept" in tune_summary(document)


def test_convolutions_are_demoted_only_where_there_are_some(program, tmp_path, monkeypatch):
    stablehlo, workload, baseline = program
    _with_units(monkeypatch)
    baseline.profile.write(tmp_path / "iree_profile.json")
    allowed = replace(workload, output_budget=0.05)
    document = tune(_copy(stablehlo, tmp_path), allowed, baseline, tmp_path, Tuning(600, 3),
                    candidates=(BY_NAME["bf16-convolutions"],))  # fmt: skip
    (trial,) = document.trials
    assert (trial.outcome, trial.reason) == ("skipped", "the program has no convolution")


def test_the_precision_flags(tmp_path):
    def options(*args: str) -> FlowOptions:
        return pgo.options_from_args(pgo.build_parser().parse_args(list(args)))

    assert options("--lower", "iree", "--tune").max_output_error is None
    allowed = options("--lower", "iree", "--tune", "--precision", "bf16")
    assert allowed.max_output_error == 0.01
    given = ("--lower", "iree", "--tune", "--precision", "bf16", "--max-output-error", "0.002")
    assert options(*given).max_output_error == 0.002
    for args, message in [
        (("--precision", "bf16"), "--precision bf16 lets --tune try it: add --tune"),
        (("--tune", "--max-output-error", "0.1"), "add --precision bf16"),
        (("--tune", "--precision", "bf16", "--max-output-error", "0"), "allows no difference"),
    ]:
        with pytest.raises(UserError, match=re.escape(message)):
            options(*args)
    # Runs that allowed bfloat16 are recorded apart: a float32 run never builds theirs.
    program = tmp_path / "p.mlir"
    program.write_text(MATMUL)
    db = tmp_path / "t.db"
    plain = Records.open(db, program, False, lambda _: None)
    lower = Records.open(db, program, False, lambda _: None, lower_precision=True)
    assert plain is not None and lower is not None and plain.original != lower.original
    plain.db.close()
    lower.db.close()
