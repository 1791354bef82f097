"""Benchmark: render a ResNet50-sized op graph (~1.2k ops) and a 10k-op graph to SVG.

    bazel run //bench:bench_plot_graph            # or: PYTHONPATH=python python3 bench/...

Goals (issue 6): ResNet50 ≤ 5 s, 10k ops ≤ 60 s, end to end (load the JSON,
mark hot ops, write DOT, lay out, write SVG). The graphs are synthetic but
shaped like the real ones: op_graph.json documents with TF node names, fused
kernels, never-executed ops and realistic ps times. Exit status 1 if a goal is
missed.
"""

from __future__ import annotations

import json
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tfpgo.render import RenderOptions, load_graph
from tfpgo.render.plot_graph import plot_graph

GOALS_S = {"resnet50": 5.0, "ops10k": 60.0}
# A ResNet50 bottleneck block as TF emits it: (op, name suffix, mean µs, fused into).
BLOCK = (
    ("tf.Conv2D", "1_conv/Conv2D", 0.0, "1_relu/Relu"),
    ("tf.BiasAdd", "1_conv/BiasAdd", 0.0, "1_relu/Relu"),
    ("tf.FusedBatchNormV3", "1_bn/FusedBatchNormV3", 0.0, "1_relu/Relu"),
    ("tf.Relu", "1_relu/Relu", 180.0, None),
    ("tf.Conv2D", "2_conv/Conv2D", 0.0, "2_relu/Relu"),
    ("tf.FusedBatchNormV3", "2_bn/FusedBatchNormV3", 0.0, "2_relu/Relu"),
    ("tf.Relu", "2_relu/Relu", 420.0, None),
    ("tf.Conv2D", "3_conv/Conv2D", 210.0, None),
    ("tf.FusedBatchNormV3", "3_bn/FusedBatchNormV3", 35.0, None),
    ("tf.AddV2", "add/add", 40.0, None),
    ("tf.Relu", "out/Relu", 22.0, None),
    ("tf.ReadVariableOp", "1_conv/Conv2D/ReadVariableOp", 0.4, None),
    ("tf.ReadVariableOp", "2_conv/Conv2D/ReadVariableOp", 0.4, None),
    ("tf.ReadVariableOp", "3_conv/Conv2D/ReadVariableOp", 0.4, None),
    ("tf.ReadVariableOp", "3_bn/ReadVariableOp", 0.3, None),
    ("tf.ReadVariableOp", "3_bn/ReadVariableOp_1", 0.3, None),
    ("tf.Identity", "out/Identity", 0.0, None),  # never executed (pruned by grappler)
)
DATA_EDGES = (
    (0, 1),
    (1, 2),
    (2, 3),
    (3, 4),
    (4, 5),
    (5, 6),
    (6, 7),
    (7, 8),
    (8, 9),
    (9, 10),
    (11, 0),
    (12, 4),
    (13, 7),
    (14, 8),
    (15, 8),
    (10, 16),
)


def synthetic_op_graph(blocks: int, seed: int = 7) -> dict:
    """An op_graph.json document of `blocks` bottleneck blocks (17 ops each) in one function."""
    rng = random.Random(seed)
    function = "__inference_predict_step_4213"
    nodes: list[dict[str, Any]] = []
    edges: list[dict[str, Any]] = []
    previous_out: int | None = None
    for block in range(blocks):
        stage, index = 2 + block * 4 // max(blocks, 1), block + 1
        scope = f"resnet50/conv{stage}_block{index}_"
        base = len(nodes)
        for offset, (op, suffix, mean_us, fused) in enumerate(BLOCK):
            profile = None
            if mean_us > 0:
                durations = sorted(int(mean_us * 1e6 * rng.uniform(0.8, 1.3)) for _ in range(3))
                profile = {
                    "ts": (base + offset) * 1_000_000,
                    "dur": sum(durations) // 3,
                    "count": 3,
                    "total": sum(durations),
                    "self": sum(durations),
                    "min": durations[0],
                    "max": durations[-1],
                    "p50": durations[1],
                    "p95": durations[-1],
                    "share": 0.0,
                }
            nodes.append(
                {
                    "id": base + offset,
                    "op": op,
                    "name": scope + suffix,
                    "function": function,
                    "parent": None,
                    "profiler_data": profile,
                    "fused_into": scope + fused if fused else None,
                    "hot": False,
                    "hot_rank": None,
                }
            )
        edges += [{"from": base + a, "to": base + b, "kind": "data"} for a, b in DATA_EDGES]
        if previous_out is not None:
            edges += [
                {"from": previous_out, "to": base, "kind": "data"},
                {"from": previous_out, "to": base + 9, "kind": "data"},
            ]  # skip path
        previous_out = base + 10
    total_self = sum(n["profiler_data"]["self"] for n in nodes if n["profiler_data"])
    for node in nodes:
        if node["profiler_data"]:
            node["profiler_data"]["share"] = node["profiler_data"]["self"] / total_self
    return {
        "format": "tfpgo.op_graph",
        "version": 1,
        "time_unit": "ps",
        "functions": [{"name": function, "entry": True}],
        "nodes": nodes,
        "edges": edges,
    }


def bench(name: str, blocks: int, workdir: Path) -> tuple[float, int, str]:
    source = workdir / f"{name}_op_graph.json"
    source.write_text(json.dumps(synthetic_op_graph(blocks)))
    start = time.perf_counter()
    result = plot_graph(load_graph(source), workdir / f"{name}.svg", RenderOptions())
    return time.perf_counter() - start, result.nodes_drawn, result.engine or "-"


def main() -> int:
    cases = {"resnet50": 72, "ops10k": 590}  # 17 ops per block: 1224 and 10030 ops
    failed = False
    with tempfile.TemporaryDirectory(prefix="bench_plot_graph.") as tmp:
        for name, blocks in cases.items():
            seconds, nodes, engine = bench(name, blocks, Path(tmp))
            ok = seconds <= GOALS_S[name]
            failed |= not ok
            print(
                f"{name:9s} {nodes:6d} ops  engine={engine:5s} {seconds:7.2f} s  "
                f"(goal {GOALS_S[name]:.0f} s) {'ok' if ok else 'MISSED'}"
            )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
