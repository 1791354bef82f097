"""trace_reader vs xprof's trace-viewer conversion on one large XPlane, side by side.

    bazel run //bench:bench_trace_reader -- --make-profile /tmp/resnet_logdir
    bazel run //bench:bench_trace_reader -- --xplane /tmp/resnet_logdir

`--make-profile DIR` first profiles ResNet50 (batch 1, 400 inference steps, host
tracer level 3: ~2M events, ~46 MB) into DIR. Each contender runs in its own
process; wall time and that process's peak RSS (wait4) are reported.
Goal: trace_reader (DAG + op profile + both JSON files) takes at most a third
of xprof's `xspace_to_tool_data([path], "trace_viewer", {})`, below 1.5 GB RSS.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TRACE_READER = """
import sys
from pathlib import Path
from tfpgo.dag import DagEvents
from tfpgo.trace_reader import run
out = Path(sys.argv[2])
result = run(Path(sys.argv[1]), dag_out=out / "mlir_graph.json",
             op_profile_out=out / "op_profile.json", dag_events=DagEvents(sys.argv[3]))
print(result.events, len(result.dag), " ".join(f"{k}={v:.2f}" for k, v in
      result.timings_s.items()))
"""

XPROF = """
import sys
from xprof.convert import raw_to_tool_data
data, _ = raw_to_tool_data.xspace_to_tool_data([sys.argv[1]], "trace_viewer", {})
print(len(data), "bytes of trace-viewer JSON")
"""


def measure(label: str, code: str, args: list[str]) -> tuple[float, float]:
    """Runs `code` in a fresh interpreter; returns (wall seconds, peak RSS in MB)."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(p for p in sys.path if p),
        "TF_CPP_MIN_LOG_LEVEL": "2",
    }
    start = time.perf_counter()
    child = subprocess.Popen(
        [sys.executable, "-c", code, *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    output = child.stdout.read() if child.stdout else ""
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        sys.exit(f"bench_trace_reader: {label} failed with status {child.returncode}")
    rss_mb = usage.ru_maxrss / 1024
    print(f"{label:<28} {wall:7.2f} s  {rss_mb:7.0f} MB   {output.strip()}")
    return wall, rss_mb


def make_profile(logdir: Path, steps: int) -> Path:
    from tfpgo import models, profiling

    case = models.load_model("resnet50", "infer", batch_size=1)
    run = profiling.profile(case, logdir, steps=steps, warmup=5)
    return run.xplane_paths[0]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--xplane", type=Path, help="an .xplane.pb or a logdir")
    source.add_argument(
        "--make-profile", type=Path, metavar="DIR", help="profile ResNet50 into DIR first"
    )
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument(
        "--all-events",
        action="store_true",
        help="also time the DAG over every event (--dag-events all)",
    )
    args = parser.parse_args()
    cwd = Path(os.environ.get("BUILD_WORKING_DIRECTORY", "."))
    if args.make_profile:
        xplane = make_profile(cwd / args.make_profile, args.steps)
    else:
        xplane = cwd / args.xplane
        if xplane.is_dir():
            xplane = sorted(xplane.rglob("*.xplane.pb"))[-1]
    print(f"input: {xplane} ({xplane.stat().st_size / 1e6:.1f} MB)")
    with tempfile.TemporaryDirectory() as out:
        ours, ours_rss = measure("trace_reader (ops DAG)", TRACE_READER, [str(xplane), out, "ops"])
        if args.all_events:
            measure("trace_reader (all events)", TRACE_READER, [str(xplane), out, "all"])
        theirs, _ = measure("xprof trace_viewer", XPROF, [str(xplane)])
    ratio = theirs / ours
    verdict = "meets" if ratio >= 3 and ours_rss < 1536 else "misses"
    print(
        f"speedup {ratio:.2f}x over xprof, peak {ours_rss:.0f} MB: {verdict} the goal "
        "(>= 3x, < 1536 MB)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
