"""Benchmark: XLA's CPU fusions against TensorFlow's kernels, per pattern.

    bazel run //bench:bench_xla_cpu_fusion   # or: PYTHONPATH=python python3 bench/...

The evidence behind `tf-profile-guided-xla-regions`'s default (`with-reductions=false`):
each pattern runs as a `tf.function` on TensorFlow's kernels (the anchor) and the
same function with `jit_compile=True` (one XLA cluster), on tensors of an
EfficientNetB0 block at batch 8 (8x32x32x192 float32). The table gives the median
time of each and their ratio XLA / TF: below 1 XLA's fusion wins. Elementwise
chains are what the pass hands to XLA; reductions fused with their producers
(column sums over N, H, W as batch normalization's, spatial means, softmax) are
what it keeps on TensorFlow's kernels by default. Exit status 1 if the measured
ratios no longer say so (an elementwise chain not faster under XLA, or the fused
column sum not slower), which means the default should be revisited.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

SHAPE = (8, 32, 32, 192)  # an EfficientNetB0 expanded block at batch 8, 128x128 input
NHW = [0, 1, 2]


def patterns() -> dict[str, tuple[str, Callable[..., Any]]]:
    """name -> (kind, function of two tensors of SHAPE)."""
    import tensorflow as tf

    def swish_grad(x: Any, g: Any) -> Any:
        s = tf.sigmoid(x)
        return g * (s * (1 + x * (1 - s))) + x * s

    def bn_normalize(x: Any, g: Any) -> Any:
        mean = tf.reduce_mean(x, NHW)
        variance = tf.reduce_mean(tf.square(x - mean), NHW)
        return (x - mean) * tf.math.rsqrt(variance + 1e-3) * 1.5 + 0.2

    def bn_grad(x: Any, g: Any) -> Any:
        mean = tf.reduce_mean(x, NHW)
        inverse = tf.math.rsqrt(tf.reduce_mean(tf.square(x - mean), NHW) + 1e-3)
        normalized = (x - mean) * inverse
        dgamma = tf.reduce_sum(g * normalized, NHW)
        dbeta = tf.reduce_sum(g, NHW)
        count = SHAPE[0] * SHAPE[1] * SHAPE[2]
        return inverse * (g - (dbeta + normalized * dgamma) / count), dgamma, dbeta

    return {
        "elementwise: x * g": ("elementwise", lambda x, g: x * g),
        "elementwise: swish gradient chain": ("elementwise", swish_grad),
        "reduction alone: column sum over N,H,W": (
            "reduction",
            lambda x, g: tf.reduce_sum(x, NHW),
        ),
        "reduction fused: column sum of x * g": (
            "reduction",
            lambda x, g: tf.reduce_sum(x * g, NHW),
        ),
        "reduction fused: spatial mean of x * g": (
            "reduction",
            lambda x, g: tf.reduce_mean(x * g, [1, 2]),
        ),
        "reduction fused: row sum of x * g": ("reduction", lambda x, g: tf.reduce_sum(x * g, -1)),
        "softmax of x * g": ("reduction", lambda x, g: tf.nn.softmax(x * g, -1)),
        "batch normalization": ("reduction", bn_normalize),
        "batch normalization gradient": ("reduction", bn_grad),
    }


def median_us(function: Callable[..., Any], args: tuple[Any, ...], runs: int, repeat: int) -> float:
    for _ in range(3):  # compiles (XLA) and warms up
        function(*args)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(runs):
            function(*args)
        times.append((time.perf_counter() - start) / runs * 1e6)
    return statistics.median(times)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=30, help="calls a repeat (default 30)")
    parser.add_argument("--repeat", type=int, default=5, help="repeats; the median is shown")
    args = parser.parse_args(argv)
    import numpy as np
    import tensorflow as tf

    rng = np.random.default_rng(0)
    x, g = (tf.constant(rng.standard_normal(SHAPE, dtype=np.float32)) for _ in range(2))
    print(f"shape {SHAPE} float32; median of {args.repeat} x {args.runs} calls")
    print("| pattern | TF kernels (anchor) | XLA cluster | XLA / TF |\n|---|---|---|---|")
    ratios: dict[str, float] = {}
    for name, (_kind, function) in patterns().items():
        tf_us = median_us(tf.function(function), (x, g), args.runs, args.repeat)
        xla_us = median_us(tf.function(function, jit_compile=True), (x, g), args.runs, args.repeat)
        ratios[name] = xla_us / tf_us
        print(f"| {name} | {tf_us:.0f} µs | {xla_us:.0f} µs | {ratios[name]:.2f} |")
    chain = ratios["elementwise: swish gradient chain"]
    fused = ratios["reduction fused: column sum of x * g"]
    if chain < 1 < fused:
        print(f"the default holds: chains {chain:.2f}x under XLA, fused column sums {fused:.2f}x")
        return 0
    print(f"revisit with-reductions' default: chain {chain:.2f}x, fused column sum {fused:.2f}x")
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
