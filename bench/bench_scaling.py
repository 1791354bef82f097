"""Scaling curves, side by side: trace_reader vs xprof over events, tfpgo-opt vs mlir-opt over ops.

    bazel run //bench:bench_scaling                        # 100k..1M events, 10k..100k ops
    bazel run //bench:bench_scaling -- --max-events 10000000 --max-ops 1000000
    bazel run //bench:bench_scaling -- --only events --min-events 10000000 \
        --max-events 40000000 --repeat 1 --max-chrome-events 0 --max-xprof-events 0

Events (bench/synth_xplane.py, ResNet50-shaped traces at sizes 100k, 300k,
1M, 3M, 10M, 40M (~0.9 GB), with a GPU's kernels, copies and their launches
unless --no-device): per size, each in a fresh process, median of --repeat runs and
peak RSS:
  * trace_reader on the .xplane.pb and on the same events as Chrome JSON
    (event DAG of the op events + op profile, both JSON files written);
  * xprof on the same .xplane.pb, in a cold directory each run (it caches next
    to its input): `trace_viewer` (XSpace -> trace-viewer JSON) and
    `framework_op_stats` (per-op table).
Ops (bench/bench_pipeline.py's synthetic TF modules with matching op profiles,
10k, 30k, 100k, 300k, 1M ops): `tfpgo-opt --tf-profile-guided-pipeline` with the
op-graph export vs an `mlir-opt` parse + print round trip.
Each curve gets the exponent b of time ~ size^b (least squares, log-log).
Goal: b <= ~1.1 for every tfpgo curve (near-linear); issue 16's limits for
trace_reader (10M events: <= 10 s and <= 1 GB; 40M: <= 4 GB) get a verdict line.
xprof is skipped above --max-xprof-events (it needs 7.5 GB at 10M events).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import bench_pipeline
import harness
import synth_xplane

from tfpgo.cli import user_path

LADDER = (10_000, 30_000, 100_000, 300_000, 1_000_000, 3_000_000, 10_000_000, 40_000_000)
# Issue 16's limits for trace_reader on the XPlane: events -> (seconds or None, peak MB).
EVENT_GOALS = {10_000_000: (10.0, 1024.0), 40_000_000: (None, 4096.0)}

TRACE_READER = """
import sys
import time
from pathlib import Path
from tfpgo.flow.trace_reader import run
out = Path(sys.argv[2])
start = time.perf_counter()
result = run(Path(sys.argv[1]), dag_out=out / "mlir_graph.json",
             op_profile_out=out / "op_profile.json")
print(result.events, len(result.op_profile.ops), time.perf_counter() - start)
"""

XPROF = """
import sys
from xprof.convert import raw_to_tool_data
data, _ = raw_to_tool_data.xspace_to_tool_data([sys.argv[1]], sys.argv[2], {})
print(len(data))
"""

XPROF_BASELINES = {  # ratios printed: theirs / ours (> 1: trace_reader is faster)
    "xprof trace_viewer": "trace_reader xplane",
    "xprof framework_op_stats": "trace_reader xplane",
}


@dataclass(frozen=True)
class Point:
    """One size of one curve: every contender's measurement at that size."""

    size: int
    file_mb: float
    results: dict[str, harness.Measurement]


def ladder(low: int, high: int) -> list[int]:
    return [size for size in LADDER if low <= size <= high]


def compare(
    xplane: Path, chrome: Path | None, scratch: Path, repeat: int, xprof: bool
) -> dict[str, harness.Measurement]:
    """trace_reader on the XPlane (and the Chrome JSON), xprof's two tools on the same XPlane."""
    out = scratch / "out"
    out.mkdir(exist_ok=True)
    env = harness.python_env()
    inputs = {"xplane": xplane, "chrome": chrome}
    results = {}
    for kind, path in inputs.items():
        if path is not None:
            label = f"trace_reader {kind}"
            command = harness.python_command(TRACE_READER, path, out)
            results[label] = harness.measure(label, command, repeat, env)
    if xprof:
        cold = harness.fresh_copy_dir(xplane, scratch / "xprof")
        target = scratch / "xprof" / xplane.name
        for tool in ("trace_viewer", "framework_op_stats"):
            command = harness.python_command(XPROF, target, tool)
            label = f"xprof {tool}"
            results[label] = harness.measure(label, command, repeat, env, before_each=cold)
    return results


def events_point(size: int, scratch: Path, args: argparse.Namespace) -> Point:
    """Generates a trace of `size` events and times every contender on it.

    Chrome JSON is parsed whole (~1.5 GB per million events), so sizes above
    --max-chrome-events skip it rather than exhaust a shared machine.
    """
    xplane = scratch / "synth.xplane.pb"
    chrome = scratch / "synth.trace.json" if size <= args.max_chrome_events else None
    count = synth_xplane.generate(size, xplane, chrome, device=not args.no_device)
    xprof = not args.no_xprof and size <= args.max_xprof_events
    results = compare(xplane, chrome, scratch, args.repeat, xprof)
    if chrome:
        chrome.unlink()
    return Point(count, xplane.stat().st_size / 1e6, results)


def file_point(xplane: Path, scratch: Path, repeat: int) -> Point:
    """Every contender on a given (real) .xplane.pb (bench_trace_reader); the size is
    trace_reader's event count."""
    results = compare(xplane, None, scratch, repeat, xprof=True)
    events = int(results["trace_reader xplane"].outputs[-1].split()[0])
    return Point(events, xplane.stat().st_size / 1e6, results)


def ops_point(size: int, scratch: Path, repeat: int) -> Point:
    """Generates a module of about `size` ops and times the pipeline and mlir-opt on it."""
    mlir, profile = scratch / "m.mlir", scratch / "p.json"
    ops = bench_pipeline.generate(size, mlir, profile)
    out, graph = scratch / "out.mlir", scratch / "op_graph.json"
    options = f"enable-profile=true path-to-profile={profile} op-graph-output={graph}"
    ours = [
        str(harness.tfpgo_opt()),
        "--allow-unregistered-dialect",
        f"--tf-profile-guided-pipeline={options}",
        str(mlir),
        "-o",
        str(out),
    ]
    base = [str(harness.MLIR_OPT), "--allow-unregistered-dialect", str(mlir), "-o", str(out)]
    results = {
        "mlir-opt round trip": harness.measure("mlir-opt round trip", base, repeat),
        "tfpgo-opt pipeline": harness.measure("tfpgo-opt pipeline", ours, repeat),
    }
    return Point(ops, mlir.stat().st_size / 1e6, results)


def exponent(points: list[Point], label: str, in_process: bool) -> float | None:
    """The fitted b of one contender's curve (wall time, or the time it reported
    itself) over the sizes it ran at; None below two sizes."""
    measured = [(p.size, p.results[label]) for p in points if label in p.results]
    if len(measured) < 2:
        return None
    seconds = [m.median_reported_s if in_process else m.median_s for _, m in measured]
    return harness.fit_exponent([size for size, _ in measured], seconds)


def _listing(values: dict[str, float | None]) -> str:
    return ", ".join(f"{label} {value:.2f}" for label, value in values.items() if value is not None)


def report(title: str, unit: str, points: list[Point], baselines: dict[str, str]) -> str:
    """The curve as a markdown table, ratios to the baselines, and fitted exponents."""
    labels = list(dict.fromkeys(label for p in points for label in p.results))
    header = [unit, "MB", *(f"{label} s / MB RSS" for label in labels)]
    header += [f"{theirs} / {ours}" for theirs, ours in baselines.items()]
    rows = []
    for point in points:
        row: list[object] = [f"{point.size:,}", f"{point.file_mb:.1f}"]
        for label in labels:
            m = point.results.get(label)
            row.append(f"{m.median_s:.2f} / {m.peak_rss_mb:.0f}" if m else "—")
        row += [
            f"{point.results[theirs].median_s / point.results[ours].median_s:.2f}x"
            for theirs, ours in baselines.items()
        ]
        rows.append(row)
    lines = [f"### {title}", "", harness.markdown_table(header, rows), ""]
    if len(points) >= 2:
        wall = {label: exponent(points, label, in_process=False) for label in labels}
        lines.append(f"Fitted exponent b of wall time ~ {unit}^b: {_listing(wall)}.")
        own = {
            label: exponent(points, label, in_process=True)
            for label in labels
            if label.startswith("trace_reader")
        }
        if own:
            lines.append(f"Without interpreter start-up and imports (run() only): {_listing(own)}.")
    return "\n".join(lines) + "\n"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--min-events", type=int, default=100_000)
    parser.add_argument("--max-events", type=int, default=1_000_000, help="up to 40000000")
    parser.add_argument(
        "--max-chrome-events",
        type=int,
        default=3_000_000,
        help="time the Chrome JSON input only up to this size (memory)",
    )
    parser.add_argument(
        "--max-xprof-events",
        type=int,
        default=10_000_000,
        help="time xprof only up to this size (trace_viewer needed 7.5 GB at 10M events)",
    )
    parser.add_argument("--min-ops", type=int, default=10_000)
    parser.add_argument("--max-ops", type=int, default=100_000, help="up to 1000000")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-xprof", action="store_true", help="time trace_reader alone")
    parser.add_argument(
        "--no-device", action="store_true", help="host-only traces (no GPU plane, no launches)"
    )
    parser.add_argument("--only", choices=("events", "ops"), help="run one of the two curves")
    parser.add_argument("--json", type=Path, help="also write every measurement here")
    return parser


def events_curve(args: argparse.Namespace, scratch: Path) -> tuple[str, list[Point]]:
    points = []
    for size in ladder(args.min_events, args.max_events):
        points.append(events_point(size, scratch, args))
        print(report("events (progress)", "events", points[-1:], {}), flush=True)
    with_xprof = [p for p in points if "xprof trace_viewer" in p.results]
    baselines = XPROF_BASELINES if with_xprof == points and points else {}
    section = report("trace_reader vs xprof", "events", points, baselines)
    return section + "".join(goal_verdicts(points)), points


def goal_verdicts(points: list[Point]) -> list[str]:
    """One line per size with a limit (EVENT_GOALS): trace_reader's time and peak RSS."""
    lines = []
    for point in points:
        ours = point.results.get("trace_reader xplane")
        goal = next((g for size, g in EVENT_GOALS.items() if size <= point.size < size * 1.1), None)
        if ours is None or goal is None:
            continue
        seconds, megabytes = goal
        met = ours.peak_rss_mb <= megabytes and (seconds is None or ours.median_s <= seconds)
        limit = f"<= {seconds:.0f} s, " if seconds is not None else ""
        lines.append(
            f"{point.size:,} events: trace_reader {ours.median_s:.2f} s, peak "
            f"{ours.peak_rss_mb:.0f} MB: {'meets' if met else 'misses'} the goal "
            f"({limit}<= {megabytes:.0f} MB)\n"
        )
    return lines


def ops_curve(args: argparse.Namespace, scratch: Path) -> tuple[str, list[Point]]:
    points = []
    for size in ladder(args.min_ops, args.max_ops):
        points.append(ops_point(size, scratch, args.repeat))
        print(report("ops (progress)", "ops", points[-1:], {}), flush=True)
    baselines = {"tfpgo-opt pipeline": "mlir-opt round trip"}
    return report("tfpgo-opt vs mlir-opt", "ops", points, baselines), points


def main() -> int:
    args = build_parser().parse_args()
    if args.repeat < 1:
        sys.exit("bench_scaling: --repeat must be at least 1")
    machine = harness.machine()
    print(f"machine: {machine}", flush=True)
    sections: list[str] = []
    document: dict[str, object] = {"machine": machine, "events": [], "ops": []}
    with tempfile.TemporaryDirectory(prefix="tfpgo_scaling_") as work:
        scratch = Path(work)
        for curve, key in ((events_curve, "events"), (ops_curve, "ops")):
            if args.only in (None, key):
                section, document[key] = curve(args, scratch)
                sections.append(section)
    machine["load_avg_1m_after"] = harness.machine()["load_avg_1m"]
    print("\n".join(sections))
    if args.json:
        harness.write_json(user_path(str(args.json)), document)
    return 0


if __name__ == "__main__":
    harness.run_main(main, "bench_scaling")
