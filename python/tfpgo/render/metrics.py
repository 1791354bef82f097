"""The metric a picture is colored by, and time in units people read."""

from __future__ import annotations

import enum

from tfpgo.render.model import RenderNode


class Metric(enum.Enum):
    """What the color of a node encodes (`--metric`).

    SELF (default): time in the op itself, children excluded — where to optimize.
    TOTAL: time including nested work. MEAN: mean time of one execution.
    SHARE: SELF as a fraction of all profiled self time.
    """

    SELF = "self"
    TOTAL = "total"
    MEAN = "mean"
    SHARE = "share"

    @property
    def is_time(self) -> bool:
        return self is not Metric.SHARE


def metric_value(node: RenderNode, metric: Metric) -> float | None:
    """The node's value of `metric`; None for nodes without their own time."""
    timing = node.timing
    if timing is None:
        return None
    if metric is Metric.SELF:
        return float(timing.self_ps)
    if metric is Metric.TOTAL:
        return float(timing.total_ps)
    if metric is Metric.MEAN:
        return float(timing.mean_ps)
    return timing.share


_UNITS = ((1e12, "s"), (1e9, "ms"), (1e6, "µs"), (1e3, "ns"))


def format_ps(ps: float) -> str:
    """Picoseconds as a short human string: 1.25 ms, 830 µs, 12 ns, 0 ps."""
    for scale, unit in _UNITS:
        if abs(ps) >= scale:
            value = ps / scale
            digits = 0 if abs(value) >= 100 else 1 if abs(value) >= 10 else 2
            return f"{value:.{digits}f} {unit}"
    return f"{ps:.0f} ps"


def format_value(value: float, metric: Metric) -> str:
    """A metric value as shown in labels and the legend."""
    if metric.is_time:
        return format_ps(value)
    return f"{value * 100:.3g}%"
