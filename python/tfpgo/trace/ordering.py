"""Sorting event columns: `lexsort`, np.lexsort's permutation at the speed of one
stable argsort.

Trace columns arrive nearly sorted (events by line, then by time), which a stable
argsort (timsort runs, radix for small ints) exploits and np.lexsort does not: on
2.4M events by (track, start, longer first) np.lexsort takes 1.2 s and this 0.03 s.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

_KEY_BITS = 64


def lexsort(keys: Sequence[np.ndarray]) -> np.ndarray:
    """The permutation np.lexsort(keys) gives: the last key primary, ties kept in
    index order. The most significant keys are packed into one uint64 as far as their
    value ranges fit, sorted by one stable argsort; only runs that tie on all of them
    are sorted by the remaining keys."""
    columns = [np.asarray(key) for key in keys]
    count = columns[-1].shape[0]
    packed = np.zeros(count, np.uint64)
    used_bits = packed_keys = 0
    for column in reversed(columns):
        if count == 0:
            break
        low, width = _span(column)
        if packed_keys and used_bits + width > _KEY_BITS:
            break
        offset = _above(column, low)
        packed = (packed << np.uint64(width)) | offset if width < _KEY_BITS else offset
        used_bits += width
        packed_keys += 1
    order = np.argsort(packed, kind="stable")
    rest = columns[: len(columns) - packed_keys]
    if not rest or count < 2:
        return order
    ordered = packed[order]
    tied = ordered[1:] == ordered[:-1]
    if not tied.any():
        return order
    in_run = np.zeros(count, bool)
    in_run[1:] = tied
    in_run[:-1] |= tied
    positions = np.flatnonzero(in_run)
    run = np.cumsum(~np.concatenate(([False], tied)))[positions]
    members = order[positions]  # each run's members in index order (the sort was stable)
    order[positions] = members[np.lexsort([*(key[members] for key in rest), run])]
    return order


def sort_within_groups(groups: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(groups, values) sorted by group, then value: what indexing both by
    np.lexsort((values, groups)) gives. When both ranges fit in one uint64 the pairs
    are sorted as packed numbers, without a permutation (a SIMD sort in numpy)."""
    groups, values = np.asarray(groups, np.int64), np.asarray(values, np.int64)
    if groups.size == 0:
        return groups, values
    group_low, group_bits = _span(groups)
    value_low, value_bits = _span(values)
    if value_bits == _KEY_BITS or group_bits + value_bits > _KEY_BITS:  # no room to pack
        order = lexsort((values, groups))
        return groups[order], values[order]
    shift = np.uint64(value_bits)
    packed = _above(groups, group_low) << shift
    packed |= _above(values, value_low)
    packed.sort()
    mask = np.uint64(2**value_bits - 1)
    sorted_values = ((packed & mask) + value_low).view(np.int64)
    sorted_groups = ((packed >> shift) + group_low).view(np.int64)
    return sorted_groups, sorted_values


def _span(column: np.ndarray) -> tuple[np.uint64, int]:
    """The column's minimum as a uint64 (its two's-complement bits) and the bits its
    values above that minimum take (at most 64)."""
    low = int(column.min())
    return np.uint64(low % 2**_KEY_BITS), (int(column.max()) - low).bit_length()


def _above(column: np.ndarray, low: np.uint64) -> np.ndarray:
    """Each value minus the minimum `low`: exact in uint64, whose arithmetic wraps."""
    return column.astype(np.uint64) - low
