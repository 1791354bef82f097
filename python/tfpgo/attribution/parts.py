"""The one rule for splitting measured time over several holders, in exact
integer picoseconds (docs/formats.md, "Conservation"). The C++ passes apply the
same rule (`EqualPart` in op_timing.h)."""

from __future__ import annotations

from collections.abc import Sequence


def split_equally(total_ps: int, parts: int) -> list[int]:
    """`total_ps` in `parts` integer parts that differ by at most 1 and sum exactly;
    the first parts take the remainder, one unit each."""
    base, remainder = divmod(total_ps, parts)
    return [base + 1 if i < remainder else base for i in range(parts)]


def split_in_proportion(total_ps: int, weights: Sequence[int]) -> list[int]:
    """`total_ps` in integer parts proportional to `weights` (largest remainder:
    the floors, then one unit each to the largest fractional parts, earlier
    first), summing exactly; all-zero weights split equally."""
    whole = sum(weights)
    if whole <= 0:
        return split_equally(total_ps, len(weights))
    parts = [total_ps * w // whole for w in weights]
    left = total_ps - sum(parts)
    by_remainder = sorted(range(len(weights)), key=lambda i: (-(total_ps * weights[i] % whole), i))
    for i in by_remainder[:left]:
        parts[i] += 1
    return parts
