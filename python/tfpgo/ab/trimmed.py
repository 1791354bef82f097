"""A robust estimate of a paired log-ratio: the trimmed mean of the pairs'
log(t_candidate / t_baseline), with the Tukey-McLaughlin standard error (the
winsorized variance; degrees of freedom n - 2g - 1). On this 2-core machine
about one call or block in ten runs up to twice its median (a thread off its
core), so a tenth to a fifth of the pairs sit far out on either side; trimming
a fifth from each end removes them where a mean would follow them. Used by the
A/B of TensorFlow steps (tfpgo.proposer.blocks, `TRIM`) and the paired A/B of
IREE programs (tfpgo.ab.paired, 30%: mlp's calls are slow more often).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

TRIM = 0.2


@dataclass(frozen=True)
class Estimate:
    """A log-ratio (candidate over baseline), its standard error and degrees of
    freedom, from `pairs` pairs."""

    log_ratio: float
    se: float
    df: int
    pairs: int


def trimmed(values: Sequence[float], trim: float = TRIM) -> Estimate:
    """The `trim` trimmed mean of `values`, its Tukey-McLaughlin standard error
    and degrees of freedom."""
    ordered = sorted(values)
    n = len(ordered)
    g = math.floor(trim * n)
    if n - 2 * g < 2:
        raise ValueError(f"{n} pairs are too few for a {trim:.0%} trimmed mean")
    kept = ordered[g : n - g]
    winsorized = [kept[0]] * g + kept + [kept[-1]] * g
    se = statistics.stdev(winsorized) / ((1 - 2 * trim) * math.sqrt(n))
    return Estimate(statistics.fmean(kept), se, n - 2 * g - 1, n)
