"""This machine's limit (issue 39, point 6): its peak FLOP/s and memory
bandwidth, measured once per target, and each dispatch's roofline under them.

`measure` runs the native kernel `//tools:roofline` (tools/roofline/roofline.cc:
FMA chains on all cores, STREAM's copy and triad) and returns a `MachineLimit`
keyed by the target IREE compiles for (`target.host_target`: the CPU's
name and features), so that a tuning database keeps one per target.

A dispatch's bound (`dispatch_bound`) is the larger of its FLOPs at the peak of
its element type and its bytes at the bandwidth: no schedule of its loops runs
faster on this machine. `dispatch_work` reads both from what tfpgo knows of a
dispatch, the name IREE gives it (`..._matmul_512x64x256_f32`): its FLOPs as
`tune.dispatch_tiles` counts them, its bytes as each operand read or written
once (a lower bound, as the bound must be). Measured against the bound, a
dispatch's time gives its achieved fraction (`achieved_fraction`); at
`AT_LIMIT` or above, it has nothing left to gain here (`at_limit`).

The JSON documents (format `tfpgo.roofline`): docs/formats.md.
"""

from __future__ import annotations

import json
import math
import re
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tfpgo import toolpaths
from tfpgo.documents import expect_format, malformed_as_error
from tfpgo.errors import UserError
from tfpgo.iree.target import HostTarget, host_target
from tfpgo.tune.dispatch_names import dispatch_flops, dispatch_kind, loop_ranges

FORMAT = "tfpgo.roofline"
VERSION = 1
# The kernel runs 3 element types x 10 repetitions of 0.1 s plus 20 passes over
# 3 x 256 MiB: 5.3 s on the 2-core development machine, 2-3x that when other
# work shares its cores; the limit is ten times the loaded figure.
MEASURE_TIMEOUT_S = 180.0
# A figure whose best repetition had less of its cores than this was measured
# while other processes ran on them: below the machine's (`MachineLimit.contended`).
FULL_CORES = 0.9
# A dispatch at this fraction of its bound or above is within 15% of it: the
# tuning loop spends no budget on it (issue 39).
AT_LIMIT = 0.85
# Element types whose arithmetic runs in f32 when the CPU has none of its own
# (the kernel names them in `not_native`): f32's peak is their fastest rate.
_WIDENED_TO_F32 = ("f16", "bf16")
_BITS = re.compile(r"[a-z]+(\d+)$")


@dataclass(frozen=True)
class MachineLimit:
    """The ceilings of one target: peak GFLOP/s per element type measured on all
    `threads` cores, and STREAM's copy and triad bandwidth in GB/s (10^9 bytes
    read plus written a second). `not_native` names the element types with no
    arithmetic of their own on this CPU, and why (they run widened to f32).
    `cpu_share`: per figure (element type, `copy`, `triad`), the share of the
    cores the kernel's threads had in the repetition that gave it."""

    target: HostTarget
    cpu: str  # the CPU's brand string, for people; `target` is the key
    isa: str  # the vector instructions the kernel ran: avx512, avx2 or sse2
    threads: int
    peak_gflops: Mapping[str, float]
    copy_gbs: float
    triad_gbs: float
    not_native: Mapping[str, str] = field(default_factory=dict)
    cpu_share: Mapping[str, float] = field(default_factory=dict)

    def peak_flops(self, element_type: str) -> float | None:
        """FLOP/s of `element_type` (`f32`, `bf16`, ...): as measured; f32's for
        a type with no arithmetic of its own; None for one not measured (the
        integers: their bound is their bytes alone)."""
        if element_type in self.peak_gflops:
            return self.peak_gflops[element_type] * 1e9
        if element_type in _WIDENED_TO_F32 and element_type in self.not_native:
            return self.peak_gflops["f32"] * 1e9
        return None

    def contended(self, below: float = FULL_CORES) -> list[str]:
        """The figures measured with less than `below` of their cores: other
        processes shared them, so the figure is low and its bounds too high (a
        dispatch would look nearer its limit than it is); measure again."""
        return sorted(name for name, share in self.cpu_share.items() if share < below)

    @property
    def bandwidth_bytes_s(self) -> float:
        """Bytes a second: the higher of copy and triad (the bound must not be
        above what some access pattern reached)."""
        return max(self.copy_gbs, self.triad_gbs) * 1e9

    def to_json(self) -> dict[str, Any]:
        """The kernel's document with the target it was measured for."""
        return {
            "format": FORMAT,
            "version": VERSION,
            "target": {"cpu": self.target.cpu, "features": self.target.features},
            "cpu": self.cpu,
            "isa": self.isa,
            "threads": self.threads,
            "peak_gflops": dict(self.peak_gflops),
            "not_native": dict(self.not_native),
            "bandwidth_gbs": {"copy": self.copy_gbs, "triad": self.triad_gbs},
            "cpu_share": dict(self.cpu_share),
        }

    @classmethod
    def from_json(cls, document: Any, where: str = "machine limit") -> MachineLimit:
        """A limit written by `to_json`; a malformed one is one UserError line."""
        target = document.get("target") if isinstance(document, dict) else None
        if not isinstance(target, dict) or not all(
            isinstance(target.get(key), str) for key in ("cpu", "features")
        ):
            raise UserError(f"{where}: no 'target' with a 'cpu' and 'features'")
        return cls.from_kernel(document, HostTarget(target["cpu"], target["features"]), where)

    @classmethod
    def from_kernel(
        cls, document: Any, target: HostTarget, where: str = "roofline"
    ) -> MachineLimit:
        """The kernel's output (one JSON object) as the limit of `target`."""
        expect_format(where, document, FORMAT)
        with malformed_as_error(where, FORMAT, "measure it again (rebuild //tools:roofline)"):
            peaks = {str(k): _positive(v) for k, v in document["peak_gflops"].items()}
            bandwidth = document["bandwidth_gbs"]
            limit = cls(
                target,
                str(document["cpu"]),
                str(document["isa"]),
                int(document["threads"]),
                peaks,
                _positive(bandwidth["copy"]),
                _positive(bandwidth["triad"]),
                {str(k): str(v) for k, v in document.get("not_native", {}).items()},
                {str(k): _share(v) for k, v in document.get("cpu_share", {}).items()},
            )
        if "f32" not in peaks or limit.threads < 1:
            raise UserError(f"{where}: {FORMAT} document without an f32 peak or threads")
        return limit


def _positive(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{value!r} is not a number")
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{value!r} is not a positive rate")
    return float(value)


def _share(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{value!r} is not a number")
    if not (math.isfinite(value) and value >= 0):
        raise ValueError(f"{value!r} is not a share of the cores")
    return float(value)


def roofline_binary() -> Path:
    """The kernel, found as `tfpgo.toolpaths` finds every built tool
    ($TFPGO_ROOFLINE, the runfiles, bazel-bin, PATH); missing, one UserError line
    saying how to build it. (Through toolpaths' private finder until it has a
    `roofline()` of its own beside `xplane_columns()`.)"""
    return toolpaths._built_tool(
        "roofline",
        "TFPGO_ROOFLINE",
        "roofline (the kernel measuring this machine's peak FLOP/s and bandwidth)",
        "run through bazel",
    )


def measure(
    target: HostTarget | None = None,
    *,
    threads: int | None = None,
    repeat: int | None = None,
    seconds: float | None = None,
    array_mib: int | None = None,
    timeout_s: float = MEASURE_TIMEOUT_S,
) -> MachineLimit:
    """Runs the kernel on all cores (or `threads`) and returns this machine's
    limit, for `target` (default: what `host` resolves to, from iree-compile).
    The other arguments pass to the kernel's flags (its defaults: 10
    repetitions of 0.1 s, arrays of max(4 x last-level cache, 256 MiB)). On a
    shared machine, check `contended()` before keeping the limit."""
    command = [str(roofline_binary())]
    flags = (("--threads", threads), ("--repeat", repeat), ("--seconds", seconds))
    for flag, value in (*flags, ("--array-mib", array_mib)):
        if value is not None:
            command += [flag, str(value)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        raise UserError(f"roofline: no result within {timeout_s:g} s") from None
    except OSError as error:
        raise UserError(f"roofline: cannot run {command[0]}: {error.strerror}") from None
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
        raise UserError(f"roofline: {command[0]} exited with {done.returncode}: {last}")
    try:
        document = json.loads(done.stdout)
    except json.JSONDecodeError as error:
        raise UserError(f"roofline: {command[0]} wrote no JSON document ({error})") from None
    return MachineLimit.from_kernel(document, target or host_target(), command[0])


@dataclass(frozen=True)
class DispatchWork:
    """What one run of a dispatch computes and moves: its FLOPs (0: not known,
    its loops not one multiply-add each) and a lower bound on the bytes it reads
    and writes (0: not known), in `element_type` (`f32`, ...)."""

    flops: int
    bytes_moved: int
    element_type: str


def element_bytes(element_type: str) -> int | None:
    """Bytes of one element of `element_type` (`f32`: 4, `i1`: 1), or None."""
    bits = _BITS.search(element_type)
    return None if bits is None else max(1, int(bits[1]) // 8)


def _operand_elements(kind: str, loops: tuple[int, ...]) -> int:
    """Elements of the operands and result of a root op of `kind` with `loops`,
    each counted once (0 where the loops do not say). Loop orders are those of
    the linalg ops StableHLO from TensorFlow becomes: matmul (m, n, k),
    batch_matmul (b, m, n, k), conv_2d_nhwc_hwcf (n, oh, ow, f, kh, kw, c),
    depthwise_conv_2d_nhwc_hwc (n, oh, ow, c, kh, kw); a strided input holds at
    least one pixel per output pixel. An elementwise op writes its loops once
    (what it reads may be broadcast)."""
    if kind == "matmul" and len(loops) == 3:
        m, n, k = loops
        return m * k + k * n + m * n
    if kind == "batch_matmul" and len(loops) == 4:
        b, m, n, k = loops
        return b * (m * k + k * n + m * n)
    if kind == "conv" and len(loops) == 7:
        n, oh, ow, f, kh, kw, c = loops
        return n * oh * ow * c + kh * kw * c * f + n * oh * ow * f
    if kind == "conv" and len(loops) == 6:
        n, oh, ow, c, kh, kw = loops
        return 2 * n * oh * ow * c + kh * kw * c
    if kind == "elementwise":
        return math.prod(loops)
    return 0


def dispatch_work(name: str) -> DispatchWork | None:
    """FLOPs and bytes of one run of the dispatch IREE named `name`, or None if
    its name gives neither (no loop ranges, or a kind they say nothing about)."""
    loops = loop_ranges(name)
    kind = dispatch_kind(name)
    if loops is None or kind is None:
        return None
    element_type = name.rpartition("_")[2]  # loop_ranges matched `_<type><bits>` there
    size = element_bytes(element_type) or 0
    work = DispatchWork(dispatch_flops(name), _operand_elements(kind, loops) * size, element_type)
    return work if work.flops or work.bytes_moved else None


def dispatch_bound(work: DispatchWork, limit: MachineLimit) -> float:
    """Seconds one run of `work` takes at least on `limit`'s machine: the larger
    of its FLOPs at the peak of its element type and its bytes at the bandwidth
    (a term not known, or no peak for the type, drops out)."""
    peak = limit.peak_flops(work.element_type)
    compute_s = work.flops / peak if peak else 0.0
    return max(compute_s, work.bytes_moved / limit.bandwidth_bytes_s)


def bound_by(work: DispatchWork, limit: MachineLimit) -> str:
    """What sets `work`'s bound on `limit`'s machine: "memory" when its bytes at
    the bandwidth take longer than its FLOPs at the peak, else "compute"."""
    peak = limit.peak_flops(work.element_type)
    compute_s = work.flops / peak if peak else 0.0
    return "memory" if work.bytes_moved / limit.bandwidth_bytes_s > compute_s else "compute"


def achieved_fraction(bound_s: float, measured_s: float) -> float:
    """The fraction of the machine's limit a dispatch reached: its bound over its
    measured time (both for one run, or both for all runs)."""
    if measured_s <= 0:
        raise ValueError(f"measured time {measured_s!r} s is not positive")
    return bound_s / measured_s


def at_limit(bound_s: float, measured_s: float) -> bool:
    """Whether a dispatch runs within 15% of its bound (nothing to gain here)."""
    return achieved_fraction(bound_s, measured_s) >= AT_LIMIT


def dispatch_bound_ps(name: str, invocations: int, limit: MachineLimit) -> int | None:
    """The roofline bound (ps) of `invocations` runs of the dispatch IREE named
    `name` on `limit`'s machine, or None when its name says too little."""
    work = dispatch_work(name)
    if work is None:
        return None
    return round(dispatch_bound(work, limit) * 1e12 * invocations)


def hot_fractions(
    dispatches: Sequence[tuple[str, int, int]], limit: MachineLimit, min_share: float
) -> tuple[tuple[str, float], ...]:
    """Per dispatch (name, invocations, ps) of at least `min_share` of their whole
    time with a roofline bound, the fraction of this machine's limit it reached,
    hottest first."""
    total = max(sum(ps for _, _, ps in dispatches), 1)
    found = []
    for name, count, ps in sorted(dispatches, key=lambda d: -d[2]):
        bound = dispatch_bound_ps(name, count, limit) if ps >= min_share * total else None
        if bound is not None and ps > 0:
            found.append((name, achieved_fraction(bound, ps)))
    return tuple(found)


def model_fraction(dispatches: Sequence[tuple[str, int, int]], limit: MachineLimit) -> float:
    """The fraction of this machine's limit a whole program reached: the sum of its
    dispatches' roofline bounds over their time (dispatch name, invocations, ps),
    a dispatch whose name gives no bound counting as bound 0 (as if it had all of
    its time to gain). At AT_LIMIT or above, the program as a whole is within 15%
    of its limit: however it is tuned, it gains at most that."""
    total = sum(ps for _, _, ps in dispatches)
    if total <= 0:
        return 0.0
    bounds = (dispatch_bound_ps(name, count, limit) for name, count, _ in dispatches)
    return sum(bound or 0 for bound in bounds) / total


def sgemm_gflops(n: int, runs: int) -> float:
    """The reference the measured peak is held against: numpy's (OpenBLAS) float32
    n x n matmul on all cores, the best GFLOP/s of `runs` after a warm-up."""
    import numpy as np

    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((n, n), dtype=np.float32) for _ in range(2))
    out = np.empty_like(a)
    np.matmul(a, b, out=out)  # warms up the threads
    best = 0.0
    for _ in range(runs):
        start = time.perf_counter()
        np.matmul(a, b, out=out)
        best = max(best, 2 * n**3 / (time.perf_counter() - start) / 1e9)
    return best
