"""The step-time change between two profiles with a confidence interval.

Method: Welch's t interval for the difference of the mean step wall times
(B − A), from each profile's per-step durations (`step_wall_ps`). Welch's
interval does not assume equal variances, and with the handful of steps a
profile holds (5 by default) the t distribution, not the normal one, gives
the honest width. It needs at least two steps on each side.

Student's t comes from the measurement layer (tfpgo.ab.intervals).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from tfpgo.ab.intervals import CONFIDENCE, t_quantile


@dataclass(frozen=True)
class StepTimeChange:
    mean_a_ps: float
    mean_b_ps: float
    steps_a: int
    steps_b: int
    delta_ps: float  # mean B − mean A
    low_ps: float | None  # the interval; None when a side has fewer than 2 steps
    high_ps: float | None
    confidence: float = CONFIDENCE

    @property
    def relative(self) -> float:
        return self.delta_ps / self.mean_a_ps if self.mean_a_ps else 0.0


def step_time_change(
    walls_a: tuple[float, ...], walls_b: tuple[float, ...], confidence: float = CONFIDENCE
) -> StepTimeChange | None:
    """None when a profile has no per-step durations (no step markers)."""
    if not walls_a or not walls_b:
        return None
    mean_a, mean_b = statistics.fmean(walls_a), statistics.fmean(walls_b)
    delta = mean_b - mean_a
    low = high = None
    if len(walls_a) >= 2 and len(walls_b) >= 2:
        var_a = statistics.variance(walls_a) / len(walls_a)
        var_b = statistics.variance(walls_b) / len(walls_b)
        standard_error = math.sqrt(var_a + var_b)
        if standard_error == 0:
            low = high = delta
        else:
            freedom = (var_a + var_b) ** 2 / (
                var_a**2 / (len(walls_a) - 1) + var_b**2 / (len(walls_b) - 1)
            )
            half_width = t_quantile(0.5 + confidence / 2, freedom) * standard_error
            low, high = delta - half_width, delta + half_width
    return StepTimeChange(mean_a, mean_b, len(walls_a), len(walls_b), delta, low, high, confidence)
