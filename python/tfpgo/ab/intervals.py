"""Student's t, and the interval of a ratio from the estimate of its logarithm.

The t quantile comes from the regularized incomplete beta function (a continued
fraction, Numerical Recipes §6.4), so no statistics package is needed.
"""

from __future__ import annotations

import math

CONFIDENCE = 0.95


def ratio_interval(
    log_ratio: float, se: float, df: float, confidence: float = CONFIDENCE
) -> tuple[float, float, float]:
    """The ratio exp(`log_ratio`) and its two-sided interval at `confidence`:
    Student's t with `df` degrees of freedom on the standard error `se`."""
    margin = t_quantile((1 + confidence) / 2, df) * se
    return math.exp(log_ratio), math.exp(log_ratio - margin), math.exp(log_ratio + margin)


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
