"""`--tune --scheduler`: candidates compiled on a Dask cluster's workers
(tfpgo.iree.remote_compile) compute what a local compile computes, for this
machine's CPU, with the tuning spec a flag names; a compile that fails there
is one line (a real `LocalCluster` of worker processes, real iree-compile)."""

from __future__ import annotations

import importlib.metadata
import os
from pathlib import Path

import numpy as np
import pytest
from ab_samples import constructed_alternation

from tfpgo.ab.result import Verdict
from tfpgo.dask_cluster import ClusterError
from tfpgo.errors import UserError
from tfpgo.flow import lower_stage, stages
from tfpgo.iree import remote_compile
from tfpgo.iree import run as iree_run
from tfpgo.iree.program import Workload, profile_program
from tfpgo.iree.target import host_target
from tfpgo.trace.host_parts import HostReading
from tfpgo.tune.candidates import Candidate, ProposedVariant, Variant
from tfpgo.tune.loop import Tuning, tune
from tfpgo.tune.tile_configs import SPEC_FLAG, neighbours, root_configs, spec_text

MATMUL_RELU = """
func.func @main(%a: tensor<128x256xf32>, %b: tensor<256x128xf32>) -> tensor<128x128xf32> {
  %0 = "stablehlo.dot_general"(%a, %b) <{dot_dimension_numbers = #stablehlo.dot<
      lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]>}>
      : (tensor<128x256xf32>, tensor<256x128xf32>) -> tensor<128x128xf32>
  %zero = stablehlo.constant dense<0.0> : tensor<128x128xf32>
  %1 = stablehlo.maximum %0, %zero : tensor<128x128xf32>
  return %1 : tensor<128x128xf32>
}
"""
MATMUL = "main_dispatch_0_matmul_128x128x256_f32"
MISTYPED = """
func.func @main(%x: tensor<4xf32>) -> tensor<8xf32> {
  return %x : tensor<4xf32>
}
"""
TIMEOUT_S = 120  # IREE 3.13 now and then deadlocks with a tuning spec (compile_vmfb)


@pytest.fixture(scope="module")
def compiler():
    distributed = pytest.importorskip("distributed")
    with (
        distributed.LocalCluster(
            n_workers=1, processes=True, threads_per_worker=1, dashboard_address=None
        ) as local,
        remote_compile.ClusterCompiler(local.scheduler_address, 30) as cluster,
    ):
        yield cluster


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    """MATMUL_RELU and its inputs (.npy)."""
    scratch = tmp_path_factory.mktemp("program")
    stablehlo = scratch / "matmul.mlir"
    stablehlo.write_text(MATMUL_RELU)
    rng = np.random.default_rng(0)
    inputs = []
    for name, shape in (("a", (128, 256)), ("b", (256, 128))):
        np.save(scratch / f"{name}.npy", rng.standard_normal(shape, dtype=np.float32))
        inputs.append(scratch / f"{name}.npy")
    return stablehlo, tuple(inputs)


def _outputs(vmfb: Path, inputs: tuple[Path, ...], scratch: Path) -> np.ndarray:
    out = scratch / f"{vmfb.stem}.out.npy"
    args = [f"--module={vmfb}", f"--device={iree_run.DEVICE}", "--function=main"]
    args += [f"--input=@{path}" for path in inputs] + [f"--output=@{out}"]
    iree_run.run_tool("iree-run-module", args, "test")
    return np.load(out)


def test_the_host_cpu_named_explicitly_compiles_what_host_compiles(program, tmp_path):
    # The same input path, `host` against the named CPU: the very same bytes.
    stablehlo, _ = program
    target = host_target()
    assert target.cpu and target.cpu != "host" and target.features.startswith(("+", "-"))
    iree_run.compile_vmfb(stablehlo, tmp_path / "host.vmfb", (), TIMEOUT_S)
    iree_run.compile_vmfb(stablehlo, tmp_path / "named.vmfb", target.flags(), TIMEOUT_S)
    assert (tmp_path / "named.vmfb").read_bytes() == (tmp_path / "host.vmfb").read_bytes()


def test_a_vmfb_compiled_on_the_cluster_computes_what_a_local_one_does(compiler, program, tmp_path):
    stablehlo, inputs = program
    iree_run.compile_vmfb(stablehlo, tmp_path / "local.vmfb", (), TIMEOUT_S)
    compiler.compile_vmfb(stablehlo, tmp_path / "remote.vmfb", (), TIMEOUT_S)
    local = _outputs(tmp_path / "local.vmfb", inputs, tmp_path)
    remote = _outputs(tmp_path / "remote.vmfb", inputs, tmp_path)
    assert local.shape == (128, 128) and np.array_equal(remote, local)
    assert not list(tmp_path.glob(".remote.vmfb.*"))  # written whole, then renamed


def test_the_tuning_spec_a_flag_names_goes_to_the_worker(program, tmp_path):
    # The task on its own, with a spec path that does not exist here: it compiles
    # with the bytes it was sent, and IREE applies them (the dumped configuration).
    stablehlo, _ = program
    dump = tmp_path / "default"
    iree_run.compile_vmfb(
        stablehlo,
        tmp_path / "default.vmfb",
        (f"--iree-hal-dump-executable-configurations-to={dump}",),
        TIMEOUT_S,
    )
    chosen = root_configs(dump)[MATMUL]
    wanted = next(n for n in neighbours(chosen) if n.distribution != chosen.distribution)
    dump = tmp_path / "tuned"
    flags = (
        f"--iree-hal-dump-executable-configurations-to={dump}",
        f"{SPEC_FLAG}/nowhere/spec.mlir",
    )
    vmfb = remote_compile.compile_on_worker(
        stablehlo.read_bytes(),
        stablehlo.name,
        flags,
        {1: ("spec.mlir", spec_text([wanted]).encode())},
        TIMEOUT_S,
    )
    assert vmfb.startswith(b"PK")  # a vmfb is a zip of the module and its executables
    assert root_configs(dump)[MATMUL] == wanted


def test_a_program_the_worker_cannot_compile_is_one_line(compiler, tmp_path):
    broken = tmp_path / "broken.mlir"
    broken.write_text(MISTYPED)
    vmfb = tmp_path / "broken.vmfb"
    with pytest.raises(UserError) as error:
        compiler.compile_vmfb(broken, vmfb, (), TIMEOUT_S)
    # The candidate's fault (rejected, the loop goes on), not the cluster's.
    assert not isinstance(error.value, ClusterError)
    message = str(error.value)
    assert message.startswith("iree level: iree-compile failed: ") and "\n" not in message
    assert not vmfb.exists()


class _ClientWithoutIree:
    """Stands for a Client whose workers lack IREE's compiler, or have another."""

    def run(self, function, name, on_error):
        here = importlib.metadata.version(name)
        missing = importlib.metadata.PackageNotFoundError(name)
        return {"tcp://10.0.0.2:40000": missing, "tcp://10.0.0.3:40000": "3.0.0",
                "tcp://10.0.0.4:40000": here}  # fmt: skip


def test_workers_without_this_machines_iree_are_one_line():
    with pytest.raises(UserError) as error:
        remote_compile._check_workers_compiler(_ClientWithoutIree(), "tcp://10.0.0.1:8786")
    here = importlib.metadata.version("iree-base-compiler")
    assert str(error.value) == (
        "--scheduler tcp://10.0.0.1:8786: workers of the Dask cluster do not have this "
        f"machine's IREE compiler, iree-base-compiler {here} (tcp://10.0.0.2:40000: none, "
        f"tcp://10.0.0.3:40000: 3.0.0); pip install iree-base-compiler=={here} on them "
        "(the pin of requirements.txt)"
    )


@pytest.fixture(scope="module")
def profiled(program, tmp_path_factory):
    """MATMUL_RELU's workload and its program profiled as `--lower iree` does."""
    stablehlo, inputs = program
    expected = np.maximum(np.load(inputs[0]) @ np.load(inputs[1]), 0)
    workload = Workload("main", inputs, (expected,), 2, 1, {}, {})
    scratch = tmp_path_factory.mktemp("iree")
    return workload, profile_program(stablehlo, (), scratch, workload, "model.iree.vmfb")


# The share of the baseline's call time any other program takes: the loop's
# A/Bs have a known verdict.
CANDIDATE_SHARE = 0.5


def test_the_loop_compiles_its_candidates_on_the_cluster(
    compiler, program, profiled, tmp_path, monkeypatch
):
    # The loop with the cluster's compile: a candidate IREE rejects is rejected with
    # IREE's line; one that compiles is checked here and timed here, on the vmfb the
    # cluster wrote. Its timing is constructed (half the baseline's), so its verdict
    # is known: kept, at a ratio of CANDIDATE_SHARE.
    stablehlo, _ = program
    workload, baseline = profiled
    baseline.profile.write(tmp_path / "iree_profile.json")

    def flags(*added: str) -> Candidate:
        proposal = ProposedVariant(added[0], Variant(stablehlo, added))
        return Candidate(added[0], lambda current, evidence, scratch: proposal)

    compiled: list[Path] = []

    def compile_on_cluster(stablehlo, vmfb, flags, timeout_s):
        compiled.append(vmfb)
        compiler.compile_vmfb(stablehlo, vmfb, flags, timeout_s)

    tried = (flags("--iree-no-such-option"), flags("--iree-opt-level=O2"))
    timed: list[Path] = []
    constructed_alternation(monkeypatch, baseline.vmfb, CANDIDATE_SHARE, timed)
    document = tune(
        stablehlo, workload, baseline, tmp_path, Tuning(600, 3), candidates=tried,
        compile_vmfb=compile_on_cluster,
    )  # fmt: skip
    unknown, o2 = document.trials
    assert unknown.outcome == "rejected"
    assert unknown.reason.startswith("iree level: iree-compile failed: ")
    # Checked against the expected outputs, and kept at the constructed ratio.
    assert o2.outcome == "kept" and o2.result is not None
    assert o2.result.verdict is Verdict.HELPS
    assert o2.result.ratio == pytest.approx(CANDIDATE_SHARE, abs=0.002)  # the jitter
    assert o2.result.high is not None and o2.result.high < 1
    assert o2.max_abs is not None and o2.max_abs < 1e-3
    assert [vmfb.parent.name for vmfb in compiled] == ["candidate_0", "candidate_1"]
    assert not compiled[0].exists() and compiled[1].is_file()
    # The threads were chosen on the baseline alone; the A/B timed it against the
    # vmfb the cluster wrote; the candidate rejected before timing never was.
    ways = 2 * len(os.sched_getaffinity(0))  # a process each way first: count, pinned or not
    assert timed[:ways] == [baseline.vmfb] * ways
    assert timed[ways : ways + 2] == [baseline.vmfb, compiled[1]]
    assert compiled[0] not in timed
    # The whole, timed against the original the same way, is the tuned program.
    assert document.end_to_end is not None and document.tuned is not None
    assert document.end_to_end.ratio == pytest.approx(CANDIDATE_SHARE, abs=0.002)


def test_the_flow_compiles_on_the_scheduler_it_was_given(program, profiled, tmp_path):
    # --tune with --scheduler reaches for that cluster before any candidate.
    stablehlo, _ = program
    workload, baseline = profiled
    reading = HostReading(scheduler="tcp://127.0.0.1:1", connect_timeout_s=1)
    options = stages.FlowOptions(tune_budget_s=60, host_reading=reading)
    tune_program = lower_stage.tuner(tmp_path, options, lambda _: None)
    with pytest.raises(UserError) as error:
        tune_program(stablehlo, workload, baseline)
    assert str(error.value).startswith(
        "--scheduler tcp://127.0.0.1:1: cannot reach the Dask scheduler within 1 s"
    )
    assert not (tmp_path / "tune.json").exists()
