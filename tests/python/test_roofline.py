"""This machine's limit (tfpgo.tune.roofline, tools/roofline): the kernel's numbers
plausible against each other, the CPU's flags and numpy's sgemm; its JSON into a
MachineLimit and back; dispatch bounds on constructed numbers; a missing or
failing kernel as one error line.

The machine may be shared (2 cores, other engineers' builds): every band is
wide, and compares figures taken in the same test."""

import json
import os
from pathlib import Path

import pytest

from tfpgo import toolpaths
from tfpgo.errors import UserError
from tfpgo.iree.target import HostTarget
from tfpgo.tune.dispatch_names import dispatch_flops, dispatch_kind
from tfpgo.tune.roofline import (
    AT_LIMIT,
    DispatchWork,
    MachineLimit,
    achieved_fraction,
    at_limit,
    dispatch_bound,
    dispatch_work,
    element_bytes,
    measure,
    sgemm_gflops,
)

TARGET = HostTarget("test-cpu", "+fma")


def _cpu_flags() -> set[str]:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("flags"):
            return set(line.split(":", 1)[1].split())
    return set()


def _measure_quickly() -> MachineLimit:
    """Short repetitions, arrays 4x this machine's 32 MiB last-level cache."""
    return measure(TARGET, seconds=0.05, repeat=3, array_mib=128)


@pytest.fixture(scope="module")
def measured() -> MachineLimit:
    return _measure_quickly()


def test_the_kernel_gives_positive_numbers_that_agree_with_each_other(measured):
    """f32 has twice f64's lanes, copy and triad both stream through memory."""
    assert measured.target == TARGET
    assert measured.threads == os.cpu_count()
    assert all(rate > 0 for rate in measured.peak_gflops.values())
    assert measured.peak_gflops["f32"] >= measured.peak_gflops["f64"]
    assert 1 / 3 <= measured.copy_gbs / measured.triad_gbs <= 3
    # a core does at most 2 x 16 f32 FMAs a cycle, at most 6 GHz; memory < 1 TB/s
    assert measured.peak_gflops["f32"] <= measured.threads * 64 * 6
    assert measured.bandwidth_bytes_s < 1e12
    # each figure with the share of the cores its threads had (busy: below 1)
    assert set(measured.cpu_share) == {*measured.peak_gflops, "copy", "triad"}
    assert all(0 < share <= 1.2 for share in measured.cpu_share.values())


def test_the_native_types_are_those_of_the_cpu(measured):
    """Built with -march=native: the widest vectors and every native type."""
    flags = _cpu_flags()
    if "avx512f" in flags:
        assert measured.isa == "avx512"
    elif {"avx2", "fma"} <= flags:
        assert measured.isa == "avx2"
    assert ("bf16" in measured.peak_gflops) == ("avx512_bf16" in flags)
    assert ("f16" in measured.peak_gflops) == ("avx512_fp16" in flags)
    for element_type in ("bf16", "f16"):
        assert (element_type in measured.peak_gflops) != (element_type in measured.not_native)


def test_the_peak_is_about_what_sgemm_reaches_on_all_cores(measured):
    """OpenBLAS' sgemm runs near the FMA peak (~90% on AVX2 and AVX-512 cores):
    the kernel's peak is neither far below it (FMAs not in flight) nor far above
    it (FLOPs counted that were not computed). The sgemm is timed before and after
    a second measurement, best of all, so that both see the same load."""
    before = sgemm_gflops(1024, 5)
    peak = _measure_quickly().peak_gflops["f32"]
    sgemm = max(before, sgemm_gflops(1024, 5))
    assert sgemm / 2 <= max(peak, measured.peak_gflops["f32"])
    assert min(peak, measured.peak_gflops["f32"]) <= 5 * sgemm


def test_threads_and_bad_flags_reach_the_kernel():
    one = measure(TARGET, threads=1, seconds=0.02, repeat=1, array_mib=64)
    assert one.threads == 1
    with pytest.raises(UserError, match=r"exited with 2: usage: roofline") as error:
        measure(TARGET, threads=0)
    assert "\n" not in str(error.value)


def test_the_json_round_trips_into_a_machine_limit(measured):
    document = json.loads(json.dumps(measured.to_json()))
    assert document["format"] == "tfpgo.roofline" and document["version"] == 1
    assert MachineLimit.from_json(document) == measured
    kernel = {k: v for k, v in document.items() if k != "target"}
    assert MachineLimit.from_kernel(kernel, TARGET) == measured


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"format": "tfpgo.tune"}, r"a tfpgo\.tune document, not a tfpgo\.roofline"),
        ({"version": 2}, r"newer than this tool reads"),
        ({"bandwidth_gbs": {"copy": -1, "triad": 2}}, r"malformed .*not a positive rate"),
        ({"peak_gflops": {"f64": 1.0}}, r"without an f32 peak"),
        ({"peak_gflops": {"f32": "fast"}}, r"malformed .*not a number"),
        ({"cpu_share": {"f32": -0.5}}, r"malformed .*not a share of the cores"),
        ({"target": {"cpu": "x"}}, r"no 'target' with a 'cpu' and 'features'"),
    ],
)
def test_a_malformed_document_is_one_error_line(measured, change, message):
    document = {**measured.to_json(), **change}
    with pytest.raises(UserError, match=message) as error:
        MachineLimit.from_json(document, "limit.json")
    assert str(error.value).startswith("limit.json: ") and "\n" not in str(error.value)


def _limit(bf16_gflops: float | None = None) -> MachineLimit:
    """100 GFLOP/s f32, 50 f64, 20 GB/s at best (triad); f16 not native, nor
    bf16 unless given."""
    peaks = {"f32": 100.0, "f64": 50.0}
    not_native = {"f16": "no AVX512-FP16"}
    if bf16_gflops is None:
        not_native["bf16"] = "no AVX512-BF16"
    else:
        peaks["bf16"] = bf16_gflops
    shares = {"f32": 0.99, "f64": 0.5, "copy": 0.95, "triad": 0.89}
    return MachineLimit(TARGET, "test", "avx2", 2, peaks, 10.0, 20.0, not_native, shares)


def test_figures_measured_on_busy_cores_are_named():
    assert _limit().contended() == ["f64", "triad"]
    assert _limit().contended(below=0.4) == []


def test_the_bound_is_the_compute_term_when_flops_dominate():
    limit = _limit()
    assert dispatch_bound(DispatchWork(10**9, 10**6, "f32"), limit) == pytest.approx(0.01)
    assert dispatch_bound(DispatchWork(10**9, 10**6, "f64"), limit) == pytest.approx(0.02)


def test_the_bound_is_the_memory_term_when_bytes_dominate():
    limit = _limit()
    assert dispatch_bound(DispatchWork(10**6, 10**9, "f32"), limit) == pytest.approx(0.05)
    # no peak for integers: the bytes alone bound them
    assert dispatch_bound(DispatchWork(10**12, 10**9, "i8"), limit) == pytest.approx(0.05)


def test_types_without_arithmetic_of_their_own_run_at_f32s_peak():
    assert dispatch_bound(DispatchWork(10**9, 0, "f16"), _limit()) == pytest.approx(0.01)
    assert dispatch_bound(DispatchWork(10**9, 0, "bf16"), _limit()) == pytest.approx(0.01)
    native = _limit(bf16_gflops=400.0)
    assert dispatch_bound(DispatchWork(10**9, 0, "bf16"), native) == pytest.approx(0.0025)
    assert native.peak_flops("i32") is None


def test_dispatch_work_from_iree_names():
    matmul = dispatch_work("main_dispatch_0_matmul_512x64x256_f32")
    assert matmul == DispatchWork(2 * 512 * 64 * 256, (512 * 256 + 256 * 64 + 512 * 64) * 4, "f32")
    # conv_2d_nhwc_hwcf loops (n, oh, ow, f, kh, kw, c): input, filter, output
    conv = dispatch_work("main_dispatch_3_conv_4x16x16x64x3x3x16_f32")
    elements = 4 * 16 * 16 * 16 + 3 * 3 * 16 * 64 + 4 * 16 * 16 * 64
    assert conv == DispatchWork(2 * 4 * 16 * 16 * 64 * 3 * 3 * 16, elements * 4, "f32")
    depthwise = dispatch_work("m_dispatch_7_conv_8x56x56x32x3x3_f64")
    assert depthwise == DispatchWork(
        2 * 8 * 56 * 56 * 32 * 9, (2 * 8 * 56 * 56 * 32 + 9 * 32) * 8, "f64"
    )
    batch = dispatch_work("m_dispatch_2_batch_matmul_4x32x32x16_bf16")
    assert batch == DispatchWork(
        2 * 4 * 32 * 32 * 16, 4 * (32 * 16 + 16 * 32 + 32 * 32) * 2, "bf16"
    )
    assert dispatch_work("main_dispatch_3_elementwise_1024_f32") == DispatchWork(0, 4096, "f32")
    assert dispatch_work("main_dispatch_48_reduction_8x7x7x2048x1024_f32") is None
    assert dispatch_work("main_dispatch_9_slow_memcpy") is None


def test_dispatch_names_are_read_once_for_the_search_and_the_limit():
    name = "main_dispatch_1_matmul_128x64x256_f32"
    assert dispatch_flops(name) == 2 * 128 * 64 * 256
    assert dispatch_flops("main_dispatch_3_elementwise_1024_f32") == 0  # no contraction
    assert dispatch_kind(name) == "matmul"
    assert dispatch_kind("main_dispatch_1_batch_matmul_2x8x8x8_f32") == "batch_matmul"
    assert dispatch_kind("not a dispatch") is None
    assert [element_bytes(t) for t in ("f32", "bf16", "f64", "i1", "i8")] == [4, 2, 8, 1, 1]


def test_achieved_fraction_and_the_limit():
    assert achieved_fraction(0.5, 2.0) == 0.25
    assert at_limit(AT_LIMIT, 1.0)
    assert not at_limit(0.8, 1.0)
    with pytest.raises(ValueError):
        achieved_fraction(1.0, 0.0)


def test_a_missing_kernel_is_one_line_saying_how_to_build_it(tmp_path, monkeypatch):
    monkeypatch.setattr(toolpaths, "_runfiles_roots", list)
    monkeypatch.setattr(toolpaths, "_REPO_ROOT", tmp_path)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("TFPGO_ROOFLINE", raising=False)
    with pytest.raises(UserError, match=r"bazel build //tools:roofline") as error:
        measure(TARGET)
    assert "\n" not in str(error.value)
    monkeypatch.setenv("TFPGO_ROOFLINE", str(tmp_path / "absent"))
    with pytest.raises(UserError, match=r"TFPGO_ROOFLINE=.*absent: not an executable file"):
        measure(TARGET)


@pytest.mark.parametrize(
    ("script", "message"),
    [
        ("echo 'no memory' >&2; exit 1", r"exited with 1: no memory"),
        ("echo '{not json'", r"wrote no JSON document"),
        ('echo \'{"format": "tfpgo.roofline", "version": 1}\'', r"malformed"),
    ],
)
def test_a_failing_kernel_is_one_error_line(tmp_path, monkeypatch, script, message):
    kernel = tmp_path / "roofline"
    kernel.write_text(f"#!/bin/sh\n{script}\n")
    kernel.chmod(0o755)
    monkeypatch.setenv("TFPGO_ROOFLINE", str(kernel))
    with pytest.raises(UserError, match=message) as error:
        measure(TARGET)
    assert "\n" not in str(error.value)
