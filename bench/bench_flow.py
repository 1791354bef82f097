"""The whole `//:pgo` flow after the build: wall time per stage (run by hand).

    bazel run //bench:bench_flow                          # the default flow, 3 runs
    bazel run //bench:bench_flow -- --repeat 1 -- --model resnet50 --steps 3

Each run is a fresh interpreter doing what `bazel run //:pgo` does after Bazel
has built it (TensorFlow import, model, profile, MLIR export, trace reader,
tfpgo-opt pipeline, TF verification, pictures, report) into a scratch
directory; flags after `--` go to the flow. Reported: median wall time of the
whole process, the median of every stage (the flow's own clock), the rest
(interpreter start, imports, staging) and peak RSS. Goal: <= 60 s in total for
the default flow. Exit status 1 if the goal is missed.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from pathlib import Path

import harness

GOAL_S = 60.0

FLOW = """
import json
import sys
from tfpgo.flow import stages
from tfpgo.flow import pgo
options = pgo.options_from_args(pgo.build_parser().parse_args(sys.argv[1:]))
result = stages.run_flow(options)
print(json.dumps({"stages": result.stage_seconds, "coverage": result.attribution.coverage}))
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("flow_args", nargs="*", help="flags for the flow (after --)")
    args = parser.parse_args()
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    env = {**harness.python_env(), "TFPGO_OPT": str(harness.tfpgo_opt())}
    print(f"machine: {harness.machine()}", flush=True)
    with tempfile.TemporaryDirectory(prefix="tfpgo_flow_") as scratch:
        out = Path(scratch, "pgo_out")
        command = harness.python_command(FLOW, *args.flow_args, "--output-dir", out)
        run = harness.measure("pgo flow", command, args.repeat, env)
    documents = [json.loads(output.splitlines()[-1]) for output in run.outputs]
    stages: dict[str, list[float]] = {}
    for document in documents:
        for name, seconds in document["stages"]:
            stages.setdefault(name, []).append(seconds)
    medians = {name: statistics.median(values) for name, values in stages.items()}
    rest = run.median_s - sum(medians.values())
    flags = " ".join(args.flow_args) or "(defaults)"
    header = ["flow", "total s", *medians, "start-up + rest", "peak RSS MB", "goal"]
    verdict = "met" if run.median_s <= GOAL_S else "MISSED"
    row = [flags, run.median_s, *medians.values(), rest, f"{run.peak_rss_mb:.0f}"]
    row.append(f"<= {GOAL_S:.0f} s {verdict}")
    runs = f"{args.repeat} run" + ("s" if args.repeat > 1 else "")
    print(f"median of {runs}; coverage {documents[-1]['coverage']:.2%}")
    print(harness.markdown_table(header, [row]))
    return 0 if run.median_s <= GOAL_S else 1


if __name__ == "__main__":
    harness.run_main(main, "bench_flow")
