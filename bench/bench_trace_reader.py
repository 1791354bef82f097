"""trace_reader vs xprof on a real large XPlane: ResNet50, 400 inference steps.

    bazel run //bench:bench_trace_reader -- --make-profile /tmp/resnet_logdir
    bazel run //bench:bench_trace_reader -- --xplane /tmp/resnet_logdir

`--make-profile DIR` first profiles ResNet50 (batch 1, 400 inference steps, host
tracer level 3: ~1.9M events, ~46 MB) into DIR. The comparison is
bench_scaling's, on that one file: trace_reader (DAG + op profile + both JSON
files) against xprof's `trace_viewer` and `framework_op_stats` conversions, each
in a fresh process, medians over repeats and peak RSS (GNU time).
Goal (issue 16): at least 3x faster than xprof's `framework_op_stats` (its per-op
table, the closest xprof equivalent of op_profile.json) with peak RSS no higher
than trace_reader's before the native decoder (756 MB on the 1.87M-event file of
the issue; `--max-rss-mb`). The ratio against `trace_viewer` is printed too.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import bench_scaling
import harness

from tfpgo.cli import user_path


def make_profile(logdir: Path, steps: int) -> Path:
    """Profiles ResNet50 inference into `logdir`; returns the .xplane.pb."""
    from tfpgo import models
    from tfpgo.models import profiling

    case = models.load_model("resnet50", "infer", batch_size=1)
    return profiling.profile(case, logdir, steps=steps, warmup=5).xplane_paths[0]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--xplane", help="an .xplane.pb or a logdir")
    source.add_argument("--make-profile", metavar="DIR", help="profile ResNet50 into DIR first")
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--max-rss-mb",
        type=float,
        default=756,
        help="peak RSS trace_reader must stay within (its peak before issue 16)",
    )
    args = parser.parse_args()
    if args.make_profile:
        xplane = make_profile(user_path(args.make_profile), args.steps)
    else:
        xplane = user_path(args.xplane)
        if xplane.is_dir():
            xplane = sorted(xplane.rglob("*.xplane.pb"))[-1]
    print(f"machine: {harness.machine()}")
    print(f"input: {xplane} ({xplane.stat().st_size / 1e6:.1f} MB)", flush=True)
    with tempfile.TemporaryDirectory(prefix="tfpgo_trace_reader_") as work:
        point = bench_scaling.file_point(xplane, Path(work), args.repeat)
    title = f"trace_reader vs xprof on {xplane.name}"
    print(bench_scaling.report(title, "events", [point], bench_scaling.XPROF_BASELINES))
    ours = point.results["trace_reader xplane"]
    viewer = point.results["xprof trace_viewer"]
    op_stats = point.results["xprof framework_op_stats"]
    print(f"trace_reader: {viewer.median_s / ours.median_s:.2f}x faster than trace_viewer")
    ratio = op_stats.median_s / ours.median_s
    verdict = "meets" if ratio >= 3 and ours.peak_rss_mb <= args.max_rss_mb else "misses"
    print(
        f"trace_reader: {ratio:.2f}x faster than framework_op_stats "
        f"({ours.median_s:.2f} s vs {op_stats.median_s:.2f} s), peak {ours.peak_rss_mb:.0f} MB: "
        f"{verdict} the goal (>= 3x, <= {args.max_rss_mb:.0f} MB)"
    )
    return 0


if __name__ == "__main__":
    harness.run_main(main, "bench_trace_reader")
