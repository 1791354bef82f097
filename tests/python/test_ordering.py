"""tfpgo.trace.ordering.lexsort gives np.lexsort's permutation, whatever the keys."""

import numpy as np

from tfpgo.trace.ordering import lexsort, sort_within_groups


def test_lexsort_equals_numpy_lexsort_on_random_keys():
    """Narrow and full 64-bit ranges (so keys are packed, partly packed or not),
    negative values, int32 and bool columns, constant keys, many ties."""
    rng = np.random.default_rng(13)
    extremes = np.array([-(2**63), 2**63 - 1, 0, -1], np.int64)
    for _ in range(3000):
        count = int(rng.integers(0, 40))
        keys: list[np.ndarray] = []
        for _ in range(int(rng.integers(1, 5))):
            kind = int(rng.integers(0, 5))
            if kind == 0:
                keys.append(rng.integers(0, 3, count).astype(np.int32))
            elif kind == 1:
                keys.append(rng.integers(-(2**40), 2**40, count))
            elif kind == 2:
                keys.append(rng.choice(extremes, count))
            elif kind == 3:
                keys.append(rng.integers(0, 2, count).astype(bool))
            else:
                keys.append(np.full(count, 5, np.int64))
        assert lexsort(keys).tolist() == np.lexsort(keys).tolist()


def test_lexsort_on_presorted_columns_with_rare_ties():
    """The trace shape it is built for: tracks grouped, starts mostly rising."""
    rng = np.random.default_rng(17)
    starts = np.sort(rng.integers(0, 10**14, 50_000))
    starts[::97] = starts[::97] // 2  # out-of-order events
    starts[1::89] = starts[::89][: starts[1::89].size]  # equal starts
    tracks = np.repeat(np.arange(5), 10_000)
    durations = rng.integers(0, 10**9, starts.size)
    for keys in ((-durations, starts, tracks), (tracks, -durations, starts)):
        assert lexsort(keys).tolist() == np.lexsort(keys).tolist()


def test_sort_within_groups_equals_sorting_by_lexsort():
    """Packed (narrow ranges) and not (full 64-bit values), negatives, one group."""
    rng = np.random.default_rng(19)
    extremes = np.array([-(2**63), 2**63 - 1, 0, -1], np.int64)
    for _ in range(2000):
        count = int(rng.integers(0, 30))
        groups = rng.integers(-3, 4, count) if rng.integers(0, 3) else np.full(count, 2)
        values = (
            rng.choice(extremes, count) if rng.integers(0, 2) else rng.integers(-9, 10**12, count)
        )
        order = np.lexsort((values, groups))
        got_groups, got_values = sort_within_groups(groups, values)
        assert got_groups.tolist() == groups[order].tolist()
        assert got_values.tolist() == values[order].tolist()
