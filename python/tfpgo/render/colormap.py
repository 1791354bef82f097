"""A cool→hot colormap and the scale that maps a metric onto it.

The map is "Turbo" (Mikhailo, Google 2019) from its published polynomial fit,
so no plotting library is needed. Turbo runs blue → cyan → green → yellow →
orange → red with smooth, evenly perceived steps, which readers take as cold →
hot at a glance. Its near-black ends are cut off (positions 0.10–0.95) so that
labels stay readable; `text_color` picks black or white by luminance.

Scale: linear between the smallest and largest value, or logarithmic when the
positive values span at least `LOG_SCALE_RATIO` (100×) — op times often span
five orders of magnitude, and on a linear scale everything but the hottest op
would be the same blue.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

LOG_SCALE_RATIO = 100.0
_LOW, _HIGH = 0.10, 0.95

_TURBO = (
    (0.13572138, 4.61539260, -42.66032258, 132.13108234, -152.94239396, 59.28637943),
    (0.09140261, 2.19418839, 4.84296658, -14.18503333, 4.27729857, 2.82956604),
    (0.10667330, 12.64194608, -60.58204836, 110.36276771, -89.90310912, 27.34824973),
)


def _poly(coefficients: tuple[float, ...], x: float) -> float:
    result = 0.0
    for coefficient in reversed(coefficients):
        result = result * x + coefficient
    return min(1.0, max(0.0, result))


def colormap_rgb(position: float) -> tuple[int, int, int]:
    """RGB (0–255) at `position` in [0, 1]: 0 coolest, 1 hottest."""
    x = _LOW + (_HIGH - _LOW) * min(1.0, max(0.0, position))
    red, green, blue = (round(255 * _poly(channel, x)) for channel in _TURBO)
    return red, green, blue


def hex_color(rgb: tuple[int, int, int]) -> str:
    return "#{:02x}{:02x}{:02x}".format(*rgb)


def colormap_hex(position: float) -> str:
    return hex_color(colormap_rgb(position))


def text_color(rgb: tuple[int, int, int]) -> str:
    """Black on light fills, white on dark ones (WCAG relative luminance)."""

    def linear(channel: int) -> float:
        value = channel / 255
        return value / 12.92 if value <= 0.04045 else ((value + 0.055) / 1.055) ** 2.4

    red, green, blue = (linear(channel) for channel in rgb)
    luminance = 0.2126 * red + 0.7152 * green + 0.0722 * blue
    return "#000000" if luminance > 0.22 else "#ffffff"


@dataclass(frozen=True)
class ColorScale:
    """Maps metric values in [low, high] to colormap positions in [0, 1]."""

    low: float
    high: float
    log: bool

    @staticmethod
    def from_values(values: list[float]) -> ColorScale:
        """Fits the scale to the values; logarithmic when they span ≥ 100×."""
        if not values:
            return ColorScale(0.0, 1.0, log=False)
        low, high = min(values), max(values)
        positive = [value for value in values if value > 0]
        if positive and max(positive) / min(positive) >= LOG_SCALE_RATIO:
            return ColorScale(min(positive), max(positive), log=True)
        return ColorScale(low, high, log=False)

    def position(self, value: float) -> float:
        if self.high <= self.low:
            return 1.0 if value >= self.high else 0.0
        if self.log:
            if value <= self.low:
                return 0.0
            return min(1.0, math.log(value / self.low) / math.log(self.high / self.low))
        return min(1.0, max(0.0, (value - self.low) / (self.high - self.low)))

    def value_at(self, position: float) -> float:
        """Inverse of `position`, for legend ticks."""
        if self.log:
            return self.low * (self.high / self.low) ** position
        return self.low + (self.high - self.low) * position

    def rgb(self, value: float) -> tuple[int, int, int]:
        return colormap_rgb(self.position(value))


_DIVERGING_LOW = (33, 102, 172)  # blue: less (faster)
_DIVERGING_HIGH = (178, 24, 43)  # red: more (slower)


def diverging_hex(position: float) -> str:
    """A blue-white-red map for signed changes: -1 blue, 0 white, +1 red."""
    position = min(1.0, max(-1.0, position))
    end = _DIVERGING_HIGH if position > 0 else _DIVERGING_LOW
    weight = abs(position)
    red, green, blue = (round(255 + (channel - 255) * weight) for channel in end)
    return hex_color((red, green, blue))
