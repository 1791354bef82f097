"""An IREE tool that hangs (IREE 3.13's intermittent iree-compile deadlock) costs
`--tune` a candidate or its final A/B, never a stuck run: a stand-in found first
on $IREE_TOOL_PATH sleeps where the real tool would have run, in each place the
loop starts one (real IREE compiler and runtime otherwise; small programs).
$TFPGO_IREE_TIMEOUT_S makes every timeout TIMEOUT_S."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from ab_samples import injected_abs

from tfpgo.iree import alternation, tools
from tfpgo.iree import run as iree_run
from tfpgo.iree.program import Workload, profile_program
from tfpgo.report.tune_tables import tune_summary
from tfpgo.tune import loop
from tfpgo.tune.candidates import CANDIDATES, Candidate, CandidateContext, ProposedVariant, Variant
from tfpgo.tune.loop import Tuning, tune
from tfpgo.tune.tile_configs import SPEC_FLAG

TIMEOUT_S = 3  # each run of an IREE tool here (a real one takes under a second)
SLEEP_S = 300  # a hang: far longer than any of these tests may take
ALWAYS = 1000
O2 = "--iree-opt-level=O2"
# One matmul whose TensorFlow time (1 ps) it runs far above: dispatch-tiles targets it.
MATMUL = """
func.func @main(%a: tensor<64x128xf32>, %b: tensor<128x64xf32>) -> tensor<64x64xf32> {
  %0 = "stablehlo.dot_general"(%a, %b) <{dot_dimension_numbers = #stablehlo.dot<
      lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]>}>
      : (tensor<64x128xf32>, tensor<128x64xf32>) -> tensor<64x64xf32> loc("mm")
  return %0 : tensor<64x64xf32>
}
"""
STAND_IN = '''#!{python}
"""{tool}, standing in: logs every call; sleeps on the first {times} calls whose
arguments hold all of {patterns!r}, and runs the real one otherwise."""
import os, sys, time
line = " ".join(sys.argv[1:])
with open({log!r}, "a") as log:
    log.write(line + "\\n")
if all(p in line for p in {patterns!r}):
    with open({log!r}) as log:
        seen = sum(all(p in logged for p in {patterns!r}) for logged in log)
    if seen <= {times}:
        time.sleep({sleep})
        sys.exit(1)
os.execv({real!r}, [{real!r}, *sys.argv[1:]])
'''


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    """MATMUL profiled as `--lower iree` profiles it (no stand-in, no short timeout)."""
    scratch = tmp_path_factory.mktemp("timeouts")
    stablehlo = scratch / "matmul.mlir"
    stablehlo.write_text(MATMUL)
    rng = np.random.default_rng(0)
    a, b = (rng.random(shape, dtype=np.float32) for shape in ((64, 128), (128, 64)))
    np.save(scratch / "a.npy", a)
    np.save(scratch / "b.npy", b)
    inputs = (scratch / "a.npy", scratch / "b.npy")
    workload = Workload("main", inputs, (a @ b,), 2, 1, {"mm": 1}, {})
    baseline = profile_program(stablehlo, (), scratch / "iree", workload, "model.iree.vmfb")
    return stablehlo, workload, baseline


@pytest.fixture
def hang(tmp_path, monkeypatch):
    """`hang(tool, *patterns, times=ALWAYS)`: puts the stand-in for `tool` first on
    $IREE_TOOL_PATH (for "python": in place of the A/B's interpreter) and returns
    its log; every IREE tool gets TIMEOUT_S. Each test starts with no compile to
    reuse."""
    monkeypatch.setattr(tools, "_COMPILED", {})
    monkeypatch.setenv(tools.TIMEOUT_VARIABLE, str(TIMEOUT_S))
    directory = tmp_path / "stand_ins"
    directory.mkdir()
    monkeypatch.setenv(tools.TOOL_PATH_VARIABLE, str(directory))

    def install(tool: str, *patterns: str, times: int = ALWAYS) -> Path:
        monkeypatch.delenv(tools.TOOL_PATH_VARIABLE)
        real = sys.executable if tool == "python" else tools._executable(tool, "test")
        monkeypatch.setenv(tools.TOOL_PATH_VARIABLE, str(directory))
        log = directory / f"{tool}.log"
        script = directory / tool
        script.write_text(
            STAND_IN.format(python=sys.executable, tool=tool, times=times, patterns=patterns,
                            log=str(log), sleep=SLEEP_S, real=real)
        )  # fmt: skip
        script.chmod(0o755)
        if tool == "python":  # the A/B's alternation process (tfpgo.iree.alternation)
            monkeypatch.setattr(alternation, "PYTHON", str(script))
        return log

    return install


def _calls(log: Path, *patterns: str, unless: str = "\0") -> int:
    """The logged calls with all of `patterns` in their arguments and not `unless`."""
    lines = log.read_text().splitlines() if log.is_file() else []
    return sum(all(p in line for p in patterns) and unless not in line for line in lines)


def _own_copy(stablehlo: Path, tmp_path: Path) -> Path:
    """The program in a directory of the test's own (the loop's scratch is beside it)."""
    copy = tmp_path / "program" / stablehlo.name
    copy.parent.mkdir(parents=True)
    copy.write_bytes(stablehlo.read_bytes())
    return copy


def _o2(stablehlo: Path) -> tuple[Candidate, ...]:
    def propose(current: Variant, context: CandidateContext, scratch: Path) -> ProposedVariant:
        return ProposedVariant(O2, Variant(stablehlo, (O2,)))

    return (Candidate("o2", propose),)


def _tuned(program, tmp_path, candidates=None, budget_s=600.0):
    """`tune` on the test's own copy of the program.

    No test here bounds the seconds it took: that a hung tool was stopped shows in
    what the loop decided and said ("killed both times", "was stopped"; a hang
    waited out would end in the stand-in's failure, not a timeout), and a
    deadline in the timeouts the runs were given (`_timeouts`)."""
    shared, workload, baseline = program
    stablehlo = _own_copy(shared, tmp_path)
    return tune(
        stablehlo, workload, baseline, tmp_path, Tuning(budget_s, 3),
        candidates=candidates or _o2(stablehlo),
    )  # fmt: skip


def _timeouts(monkeypatch, *patterns: str) -> list[float]:
    """The timeout (s) each IREE tool run whose arguments hold all of `patterns`
    is given, in order: where a deadline cut it, what was left of the deadline."""
    given: list[float] = []
    real = subprocess.run

    def run(command, *args, **kwargs):
        if all(p in " ".join(map(str, command)) for p in patterns):
            given.append(float(kwargs["timeout"]))
        return real(command, *args, **kwargs)

    monkeypatch.setattr(tools.subprocess, "run", run)
    return given


def test_a_candidate_whose_compile_hangs_is_rejected_with_the_tool_and_the_file(
    program, tmp_path, hang
):
    log = hang("iree-compile", O2)
    document = _tuned(program, tmp_path)
    (trial,) = document.trials
    assert trial.outcome == "rejected" and trial.result is None
    stablehlo = tmp_path / "program" / "matmul.mlir"
    assert trial.reason.startswith(
        f"iree level: iree-compile on {stablehlo} did not finish in 3 s, killed both times it "
        "was tried; "
    )
    assert tools.TIMEOUT_VARIABLE in trial.reason and "\n" not in trial.reason
    assert _calls(log, O2) == 2  # tried once more, then given up
    assert document.tuned is None and document.end_to_end is None


def test_a_compile_that_hangs_once_is_tried_again_and_measured(
    program, tmp_path, hang, monkeypatch
):
    log = hang("iree-compile", O2, times=1)
    left = injected_abs(monkeypatch, 1.0)  # measured, no gain: nothing to re-profile
    document = _tuned(program, tmp_path)
    (trial,) = document.trials
    assert not left
    assert trial.outcome == "rejected" and trial.result is not None and trial.max_abs is not None
    assert trial.reason.startswith("no measurable effect: ")
    assert _calls(log, O2) == 2


def test_the_kept_program_is_profiled_from_the_vmfb_its_candidate_compiled(
    program, tmp_path, hang, monkeypatch
):
    # Its executable sources hang once: compiled again; its vmfb is never compiled again.
    log = hang("iree-compile", O2, "--compile-to=executable-sources", times=1)
    left = injected_abs(monkeypatch, 0.8, 0.8)  # the candidate's A/B and the final one
    document = _tuned(program, tmp_path)
    (trial,) = document.trials
    assert not left
    assert trial.outcome == "kept" and document.tuned is not None
    assert _calls(log, O2, unless="--compile-to") == 1  # the candidate's compile only
    assert _calls(log, O2, "--compile-to=executable-sources") == 2
    candidate = tmp_path / "program" / "tune" / "candidate_0"
    kept = (candidate / "kept" / "model.iree.vmfb").read_bytes()
    assert kept == (candidate / "model.iree.vmfb").read_bytes()


def test_a_kept_candidate_whose_re_profile_hangs_is_rejected(program, tmp_path, hang, monkeypatch):
    log = hang("iree-compile", O2, "--compile-to=executable-sources")
    left = injected_abs(monkeypatch, 0.8)
    document = _tuned(program, tmp_path)
    (trial,) = document.trials
    assert not left
    assert trial.outcome == "rejected" and trial.result is not None
    assert trial.reason.startswith("helps: ")
    assert "; but its program could not be profiled again: iree level (executable sources): " in (
        trial.reason
    )
    assert "did not finish in 3 s, killed both times" in trial.reason
    assert _calls(log, O2, "--compile-to=executable-sources") == 2
    assert [d.kept for d in document.decisions] == [False]
    assert document.tuned is None and document.end_to_end is None and not document.unconfirmed


def test_a_tile_benchmark_whose_compile_hangs_rejects_dispatch_tiles(program, tmp_path, hang):
    # The dispatch's own benchmark (dispatch_benchmark.compile_benchmark) hangs.
    log = hang("iree-compile", "/unconfigured/")
    tiles = tuple(c for c in CANDIDATES if c.name == "dispatch-tiles")
    document = _tuned(program, tmp_path, tiles)
    (trial,) = document.trials
    assert (trial.name, trial.outcome, trial.change) == ("dispatch-tiles", "rejected", "")
    assert trial.reason.startswith("iree level: iree-compile on ") and "/unconfigured/" in (
        trial.reason
    )
    assert "did not finish in 3 s, killed both times" in trial.reason
    assert _calls(log, "/unconfigured/") == 2
    assert _calls(log, "--iree-hal-dump-executable-benchmarks-to=") == 1  # the program's, real


def test_a_final_a_b_that_hangs_leaves_the_original_and_says_why(
    program, tmp_path, hang, monkeypatch
):
    # The alternation process of the final A/B (it times the kept program) hangs.
    log = hang("python", "tfpgo.iree.alternation", "/kept/")
    left = injected_abs(monkeypatch, 0.8)  # the candidate's A/B; the final one is run
    document = _tuned(program, tmp_path)
    (trial,) = document.trials
    assert not left
    assert trial.outcome == "kept"
    assert document.tuned is None and document.end_to_end is None and document.flags == ()
    request = tmp_path / "program" / "tune" / "candidate_0" / "kept" / "ab"
    assert document.unconfirmed.startswith(
        f"--tune (A/B): alternation on {request / 'alternation.request.json'} did not finish in "
    )
    assert "killed both times" in document.unconfirmed
    assert [d.kept for d in document.decisions] == [False]
    assert _calls(log, "tfpgo.iree.alternation", "/kept/") == 2
    assert "could not be timed against the original" in tune_summary(document)
    assert loop.TuneDocument.read(tmp_path / "tune.json") == document


def test_no_tool_outlasts_the_budget_plus_one_measurement(program, tmp_path, hang, monkeypatch):
    # A measurement here is one compile at its timeout (TIMEOUT_S + 2 s) and no A/B:
    # the second try of the hung compile is stopped at the deadline, before its timeout.
    monkeypatch.setenv(tools.TIMEOUT_VARIABLE, str(TIMEOUT_S + 2))
    monkeypatch.setattr(loop, "OVERRUN_ABS", 0)
    hang("iree-compile", O2)
    given = _timeouts(monkeypatch, O2)
    document = _tuned(program, tmp_path, budget_s=1.0)
    (trial,) = document.trials
    # Each run of the hung compile was given at most what was left of the deadline
    # (the budget and one measurement: 1 + TIMEOUT_S + 2 s from the start), so all
    # of them together fit in it, however slowly the machine got there; without
    # the deadline the second try would have had its own TIMEOUT_S + 2 s again.
    assert given and given[0] <= TIMEOUT_S + 2
    assert sum(given) <= 1.0 + TIMEOUT_S + 2
    assert trial.outcome == "rejected"
    assert trial.reason.endswith(
        "was stopped: --tune-budget (1 s) and one measurement past it (5 s) ran out"
    )


def test_a_deadline_stops_a_tool_before_its_timeout(program, tmp_path, hang, monkeypatch):
    monkeypatch.delenv(tools.TIMEOUT_VARIABLE)
    hang("iree-compile")
    given = _timeouts(monkeypatch, "iree-compile")
    stablehlo, _, _ = program
    with (
        tools.tools_deadline(time.monotonic() + 1.5, "the test's time"),
        pytest.raises(tools.ToolTimeout) as error,
    ):
        iree_run.compile_vmfb(stablehlo, tmp_path / "m.vmfb", (), timeout_s=60)
    # One run, given what was left of the deadline rather than its own 60 s; killed
    # there, it left nothing of the deadline for a second try (none at all when a
    # loaded machine took the 1.5 s before the first could start).
    assert len(given) <= 1 and all(0 < timeout <= 1.5 for timeout in given)
    assert str(error.value) == (
        f"iree level: iree-compile on {stablehlo} was stopped: the test's time ran out"
    )
    assert not (tmp_path / "m.vmfb").exists()


def test_a_compile_is_reused_only_for_the_same_program_flags_and_named_files(
    program, tmp_path, hang, monkeypatch
):
    log = hang("iree-compile", "no call hangs", times=0)
    # Nothing hangs here: a compile slowed past TIMEOUT_S by other tests on the
    # machine would be killed and started again, a second call this test counts.
    monkeypatch.setenv(tools.TIMEOUT_VARIABLE, "120")
    stablehlo, _, _ = program
    first, second = tmp_path / "first.vmfb", tmp_path / "second.vmfb"
    iree_run.compile_vmfb(stablehlo, first, ("--iree-opt-level=O1",))
    iree_run.compile_vmfb(stablehlo, second, ("--iree-opt-level=O1",))  # the same: copied
    assert _calls(log, "--iree-opt-level=O1") == 1
    assert second.read_bytes() == first.read_bytes()
    iree_run.compile_vmfb(stablehlo, second, ())  # other flags: compiled
    assert _calls(log) == 2
    # A file a flag names counts by its bytes, and an output changed since is not reused.
    spec = tmp_path / "spec.mlir"
    spec.write_text("// one spec")
    flags = ["--iree-opt-level=O1", f"{SPEC_FLAG}{spec}"]
    tools.remember_compiled("iree-compile", stablehlo, flags, first)
    assert tools.reuse_compiled("iree-compile", stablehlo, flags, tmp_path / "copy.vmfb")
    spec.write_text("// another spec")
    assert not tools.reuse_compiled("iree-compile", stablehlo, flags, tmp_path / "other.vmfb")
    spec.write_text("// one spec")
    first.write_bytes(b"changed")
    assert not tools.reuse_compiled("iree-compile", stablehlo, flags, tmp_path / "other.vmfb")
    assert not (tmp_path / "other.vmfb").exists()


def test_a_tool_failure_and_an_output_mismatch_cross_a_pickle_whole():
    """A Dask worker's errors reach the client pickled: each comes back of its own
    kind, with its line and the parts a caller reads to name a cause."""
    import pickle

    from tfpgo.iree.output_check import OutputsDiffer
    from tfpgo.iree.tools import ToolFailed

    for error in (ToolFailed("iree level", "iree-compile", "LLVM ERROR: out of memory"),
                  OutputsDiffer("iree level: output 0 of main differs")):  # fmt: skip
        back = pickle.loads(pickle.dumps(error))
        assert type(back) is type(error) and str(back) == str(error)
        assert vars(back) == vars(error)
