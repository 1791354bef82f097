"""Shared measuring helpers for the benchmarks in bench/ (run by hand, never by tests).

Every measurement runs the contender in a fresh process under GNU time, so
its peak RSS is its own and no warm cache of an earlier repeat leaks into the
next. A `Measurement` keeps every repeat; the
reported numbers are medians of wall time and the peak RSS of all repeats.

Scaling curves are summarized by the exponent b of time ~ a * size^b, a
least-squares fit of log(time) against log(size): b near 1 is linear, 2
quadratic.
"""

from __future__ import annotations

import json
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, is_dataclass
from pathlib import Path

from tfpgo import toolpaths
from tfpgo.errors import UserError

REPO = Path(__file__).resolve().parents[1]
MLIR_OPT = Path("/usr/lib/llvm-22/bin/mlir-opt")
GNU_TIME = Path("/usr/bin/time")  # Debian package `time`


class BenchError(Exception):
    """A contender failed; the message says which and how."""


def run_main(main: Callable[[], int], name: str) -> None:
    """Exits with `main`'s status; a BenchError ends it as one `name: problem` line."""
    try:
        sys.exit(main())
    except BenchError as error:
        sys.exit(f"{name}: {error}")


@dataclass(frozen=True)
class Measurement:
    """`repeat` runs of one contender: median wall seconds, peak RSS of all runs.

    `outputs` keeps each run's stdout; contenders that time their own work
    print those seconds as the last word (see `median_reported_s`).
    """

    label: str
    seconds: tuple[float, ...]
    peak_rss_mb: float
    outputs: tuple[str, ...] = ()

    @property
    def median_s(self) -> float:
        return statistics.median(self.seconds)

    @property
    def median_reported_s(self) -> float:
        """Median of the seconds the contender reported itself (its last output word)."""
        return statistics.median(float(output.split()[-1]) for output in self.outputs)


def run_once(command: Sequence[str], env: dict[str, str] | None = None) -> tuple[float, float, str]:
    """Runs `command` in a fresh process: (wall seconds, peak RSS in MB, stdout).

    The peak comes from GNU time's %M, not from our own `wait4`: Linux folds
    the RSS high-water mark of the address space a child replaced at exec into
    the child's `ru_maxrss`, and a child spawned from this (possibly large)
    benchmark process starts with ours. /usr/bin/time is tiny, so its child's
    peak is the contender's own.
    """
    if not GNU_TIME.exists():
        raise BenchError(f"{GNU_TIME} not found: install GNU time (apt-get install time)")
    with tempfile.NamedTemporaryFile("r") as peak, tempfile.TemporaryFile() as errors:
        timed = [str(GNU_TIME), "-f", "%M", "-o", peak.name, *command]
        start = time.perf_counter()
        child = subprocess.run(timed, env=env, stdout=subprocess.PIPE, stderr=errors, text=True)
        wall = time.perf_counter() - start
        if child.returncode != 0:
            errors.seek(0)
            tail = errors.read().decode(errors="replace").strip().splitlines()[-3:]
            raise BenchError(
                f"{' '.join(command)[:200]} exited with {child.returncode}: {' | '.join(tail)}"
            )
        peak_kb = int(peak.read().split()[-1])
    return wall, peak_kb / 1024, child.stdout


def measure(
    label: str,
    command: Sequence[str],
    repeat: int,
    env: dict[str, str] | None = None,
    before_each: Callable[[], object] | None = None,
) -> Measurement:
    """`repeat` fresh runs of `command`; `before_each` resets state (caches) first."""
    seconds, outputs, peak = [], [], 0.0
    for _ in range(repeat):
        if before_each:
            before_each()
        # dirty pages of earlier runs (a 10M-event DAG is 1 GB of JSON) are written
        # out first: the kernel would otherwise throttle this run's writes for them
        os.sync()
        wall, rss, output = run_once(command, env)
        seconds.append(wall)
        outputs.append(output.strip())
        peak = max(peak, rss)
    return Measurement(label, tuple(seconds), peak, tuple(outputs))


def python_env() -> dict[str, str]:
    """The environment for `python -c` contenders: this interpreter's path, quiet TF."""
    paths = [str(REPO / "python"), *(p for p in sys.path if p)]
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(dict.fromkeys(paths)),
        "TF_CPP_MIN_LOG_LEVEL": "2",
    }


def python_command(code: str, *args: object) -> list[str]:
    return [sys.executable, "-c", code, *(str(a) for a in args)]


def fresh_copy_dir(source: Path, scratch: Path) -> Callable[[], Path]:
    """A resetter for tools that cache next to their input (xprof does).

    Each call empties `scratch` and hard-links (or copies) `source` into it,
    returning the new path; the contender then always sees a cold directory.
    """
    target = scratch / source.name

    def reset() -> Path:
        shutil.rmtree(scratch, ignore_errors=True)
        scratch.mkdir(parents=True)
        try:
            os.link(source, target)
        except OSError:
            shutil.copyfile(source, target)
        return target

    return reset


def fit_exponent(sizes: Sequence[float], seconds: Sequence[float]) -> float:
    """b of seconds ~ a * size^b (least squares in log-log); needs two distinct sizes."""
    points = [(math.log(s), math.log(t)) for s, t in zip(sizes, seconds, strict=True) if t > 0]
    if len({x for x, _ in points}) < 2:
        raise ValueError("fit_exponent needs at least two distinct sizes")
    mean_x = statistics.fmean(x for x, _ in points)
    mean_y = statistics.fmean(y for _, y in points)
    covariance = sum((x - mean_x) * (y - mean_y) for x, y in points)
    variance = sum((x - mean_x) ** 2 for x, _ in points)
    return covariance / variance


def tfpgo_opt() -> Path:
    """The driver the benchmarks run, found as the flow finds it
    (`tfpgo.toolpaths`): $TFPGO_OPT pins one binary for a whole run while the
    work tree is rebuilt."""
    try:
        return toolpaths.tfpgo_opt()
    except UserError as error:
        raise BenchError(str(error)) from None


def machine() -> dict[str, object]:
    """What the numbers were measured on, and how busy it was."""
    model = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    memory_gib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return {
        "cpu": model,
        "cores": os.cpu_count(),
        "memory_gib": round(memory_gib, 1),
        "python": platform.python_version(),
        "load_avg_1m": load_avg_1m(),
    }


def load_avg_1m() -> float:
    """The one-minute load average, rounded for reports."""
    return round(os.getloadavg()[0], 2)


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A GitHub-markdown table; floats are printed with 2 decimals."""

    def cell(value: object) -> str:
        return f"{value:.2f}" if isinstance(value, float) else str(value)

    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def write_json(path: Path, document: object) -> None:
    """Writes results (dataclasses become dicts) for later comparison."""

    def default(value: object) -> object:
        if is_dataclass(value) and not isinstance(value, type):
            return asdict(value)
        if isinstance(value, Path):
            return str(value)
        raise TypeError(f"not JSON serializable: {type(value).__name__}")

    path.write_text(json.dumps(document, indent=1, default=default) + "\n")
