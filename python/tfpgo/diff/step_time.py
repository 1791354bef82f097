"""The step-time change between two profiles with a confidence interval.

Method: Welch's t interval for the difference of the mean step wall times
(B − A), from each profile's per-step durations (`step_wall_ps`). Welch's
interval does not assume equal variances, and with the handful of steps a
profile holds (5 by default) the t distribution, not the normal one, gives
the honest width. It needs at least two steps on each side.

The t quantile comes from the regularized incomplete beta function (a
continued fraction, Numerical Recipes §6.4) so no statistics package is needed.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

CONFIDENCE = 0.95


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


def t_quantile(probability: float, freedom: float) -> float:
    """The quantile of Student's t distribution (0.5 < probability < 1), by bisection."""
    low, high = 0.0, 1e6
    for _ in range(200):
        middle = (low + high) / 2
        if t_cdf(middle, freedom) < probability:
            low = middle
        else:
            high = middle
    return (low + high) / 2


def t_cdf(t: float, freedom: float) -> float:
    tail = 0.5 * regularized_beta(freedom / (freedom + t * t), freedom / 2, 0.5)
    return 1 - tail if t >= 0 else tail


def regularized_beta(x: float, a: float, b: float) -> float:
    """I_x(a, b) for 0 <= x <= 1."""
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    log_front = (
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    # The continued fraction converges fast for x < (a + 1) / (a + b + 2); use
    # the symmetry I_x(a, b) = 1 − I_{1−x}(b, a) on the other side.
    if x < (a + 1) / (a + b + 2):
        return math.exp(log_front) * _beta_fraction(x, a, b) / a
    return 1 - math.exp(log_front) * _beta_fraction(1 - x, b, a) / b


def _beta_fraction(x: float, a: float, b: float) -> float:
    """The continued fraction of I_x(a, b) by the modified Lentz method."""
    tiny = 1e-300
    c, d = 1.0, 1 - (a + b) * x / (a + 1)
    d = 1 / (d if abs(d) > tiny else tiny)
    result = d
    for m in range(1, 300):
        for numerator in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1 + numerator * d
            d = 1 / (d if abs(d) > tiny else tiny)
            c = 1 + numerator / c
            c = c if abs(c) > tiny else tiny
            result *= c * d
        if abs(c * d - 1) < 1e-15:
            break
    return result
