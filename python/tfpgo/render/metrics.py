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
    """Picoseconds in the largest unit that fits, 3 significant digits: 999 ps,
    1 ns, 1.5 ns, 830 µs, 7.39 ms, 2.5 s. A value that rounds up to 1000 of a
    unit is shown in the next one (999.6 ns is 1 µs). tfpgo's one time format:
    labels, tooltips, reports and diffs."""
    for scale, unit in _UNITS:
        # 0.9995 of a unit rounds to 1 at 3 significant digits.
        if abs(ps) >= scale * 0.9995:
            value = ps / scale
            return f"{value:.0f} {unit}" if abs(value) >= 1000 else f"{value:.3g} {unit}"
    return f"{ps:.0f} ps"


def format_value(value: float, metric: Metric) -> str:
    """A metric value as shown in labels and the legend."""
    if metric.is_time:
        return format_ps(value)
    return f"{value * 100:.3g}%"
