"""Times tf-profile-guided-pipeline on a synthetic 100k-op module (run by hand).

The goal: the pipeline (parse, annotate, mark hotspots, export the op graph,
print) costs at most 1.3x an `mlir-opt` parse + print round trip of the same
file, both with --allow-unregistered-dialect, measured side by side.

The module imitates a TF 2.21 export with show_debug_info: generic tf ops with
`fused["<Op>:", callsite("<node>"(file) at ...)]` locations behind location
aliases, Dense blocks (MatMul -> BiasAdd -> Relu, run as one fused kernel),
and While loops whose body functions run under `w/body/_1/<node>` names. The
op profile names every executed op the way the runtime does.

    bazel run //bench:bench_pipeline -- [--ops 100000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MLIR_OPT = "/usr/lib/llvm-22/bin/mlir-opt"
T = "tensor<4x4xf32>"
LOOP_EVERY = 50  # one While (with a 4-op body) per this many Dense blocks


def _tfpgo_opt() -> Path:
    for variable in ("RUNFILES_DIR", "TEST_SRCDIR"):
        if root := os.environ.get(variable):
            candidate = Path(root, "tfpgo", "tools", "tfpgo-opt")
            if candidate.exists():
                return candidate
    candidate = Path(sys.argv[0] + ".runfiles", "tfpgo", "tools", "tfpgo-opt")
    return candidate if candidate.exists() else REPO / "bazel-bin/tools/tfpgo-opt"


class _Module:
    """Accumulates IR lines, location aliases and profile entries."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.locs: list[str] = ['#loc0 = loc("model.py":1:1)', '#loc1 = loc("keras.py":2:1)']
        self.entries: list[dict] = []
        self.clock = 0

    def loc(self, op_type: str, node: str) -> str:
        n = len(self.locs)
        self.locs.append(f'#loc{n} = loc("{node}"(#loc0))')
        self.locs.append(f"#loc{n + 1} = loc(callsite(#loc{n} at #loc1))")
        self.locs.append(f'#loc{n + 2} = loc(fused["{op_type}:", #loc{n + 1}])')
        return f"#loc{n + 2}"

    def op(self, result: str, op_type: str, operands: str, node: str, extra: str = "") -> None:
        count = operands.count("%")
        types = ", ".join([T] * count)
        self.lines.append(
            f'    {result} = "tf.{op_type}"({operands}){extra} : ({types}) -> {T} '
            f"loc({self.loc(op_type, node)})"
        )

    def profile(self, runtime_name: str, kernel: str, durations: list[int]) -> None:
        durations = sorted(durations)
        self.clock += 1000
        self.entries.append(
            {
                "name": runtime_name,
                "op_types": [kernel],
                "count": len(durations),
                "total_ps": sum(durations),
                "self_ps": sum(durations),
                "mean_ps": sum(durations) // len(durations),
                "min_ps": durations[0],
                "max_ps": durations[-1],
                "p50_ps": durations[(len(durations) + 1) // 2 - 1],
                "p95_ps": durations[(95 * len(durations) + 99) // 100 - 1],
                "first_start_ps": self.clock,
                "durations_ps": durations,
            }
        )


def generate(target_ops: int, mlir_path: Path, profile_path: Path) -> int:
    """Writes the module and its op profile; returns the number of ops."""
    m = _Module()
    bodies: list[str] = []
    blocks = max(1, target_ops // 3)
    m.lines.append(f"  func.func @main(%arg0: {T}) -> {T} {{")
    value, ops = "%arg0", 0
    for b in range(blocks):
        name = f"model/dense_{b}"
        m.op(f"%mm{b}", "MatMul", f"{value}, {value}", f"{name}/MatMul")
        m.op(f"%ba{b}", "BiasAdd", f"%mm{b}, {value}", f"{name}/BiasAdd")
        m.op(f"%re{b}", "Relu", f"%ba{b}", f"{name}/Relu")
        m.profile(f"{name}/Relu", "_MklNativeFusedMatMul", [1000 + b % 97, 1500, 2000])
        value, ops = f"%re{b}", ops + 3
        if b % LOOP_EVERY == LOOP_EVERY - 1 and ops < target_ops:
            loop, body = f"model/while_{b}", f"while_body_{b}"
            m.op(f"%w{b}", "While", value, loop, f" <{{body = @{body}0, cond = @{body}0}}>")
            bodies.append(body)
            m.profile(f"{loop}/body/_1/{loop}/Tanh", "Tanh", [300, 400, 500, 600])
            value, ops = f"%w{b}", ops + 1
    m.lines.append(f"    return {value} : {T}\n  }}")
    for body in bodies:
        loop = "model/while_" + body.rsplit("_", 1)[1]
        m.lines.append(f"  func.func private @{body}0(%arg0: {T}) -> {T} {{")
        m.op("%0", "Tanh", "%arg0", f"{loop}/Tanh@{body}")
        m.lines.append(f"    return %0 : {T}\n  }}")
        ops += 2
    mlir_path.write_text("module {\n" + "\n".join(m.lines) + "\n}\n" + "\n".join(m.locs) + "\n")
    all_self = sum(e["self_ps"] for e in m.entries)
    profile = {
        "format": "tfpgo.op_profile",
        "version": 1,
        "time_unit": "ps",
        "source": "synthetic",
        "hosts": ["host0"],
        "steps": [0, 1, 2],
        "totals": {
            "wall_ps": m.clock,
            "op_total_ps": all_self,
            "op_self_ps": all_self,
            "non_op_ps": 0,
            "op_events": sum(e["count"] for e in m.entries),
            "events": sum(e["count"] for e in m.entries),
        },
        "ops": sorted(m.entries, key=lambda e: -e["self_ps"]),
    }
    profile_path.write_text(json.dumps(profile))
    return ops + blocks // LOOP_EVERY  # + the While's cond uses


def _time(command: list[str], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="tfpgo_bench_") as scratch:
        mlir, profile, graph = (Path(scratch, n) for n in ("m.mlir", "p.json", "g.json"))
        generate(args.ops, mlir, profile)
        out = Path(scratch, "out.mlir")
        base = [MLIR_OPT, "--allow-unregistered-dialect", str(mlir), "-o", str(out)]
        options = f"enable-profile=true path-to-profile={profile}"
        tool = [str(_tfpgo_opt()), "--allow-unregistered-dialect"]
        ours = [*tool, f"--tf-profile-guided-pipeline={options}", str(mlir), "-o", str(out)]
        export = f"--tf-profile-guided-pipeline={options} op-graph-output={graph}"
        ours_export = [*tool, export, str(mlir), "-o", str(out)]
        round_trip = _time(base, args.repeat)
        pipeline_export = _time(ours_export, args.repeat)
        pipeline = _time(ours, args.repeat)
        text = out.read_text()
        tf_ops = text.count('"tf.')
        print(
            f"module: {tf_ops} tf ops ({mlir.stat().st_size / 1e6:.1f} MB), "
            f"{text.count('profiler_data')} annotated"
        )
        print(f"mlir-opt round trip:           {round_trip:.3f} s (median of {args.repeat})")
        print(f"pipeline (annotate + hot):     {pipeline:.3f} s, ratio {pipeline / round_trip:.2f}")
        print(
            f"pipeline + op_graph.json:      {pipeline_export:.3f} s, "
            f"ratio {pipeline_export / round_trip:.2f} (goal <= 1.30)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
