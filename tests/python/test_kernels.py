"""The native kernels (tfpgo.kernels) against their rules written plainly in Python."""

import numpy as np
import pytest

from tfpgo import kernels
from tfpgo.errors import UserError
from tfpgo.kernels import (
    IntLists,
    Ints,
    Lookup,
    StringTable,
    critical_path,
    nested_self_times,
    render_rows,
)
from tfpgo.trace.dag import unique_pairs


def _critical_path_by_relaxing(durations, edges):
    """The rule critical_path implements, written as the plain one-pass relaxation
    of the edges in source order (the specification the kernel must meet)."""
    best_in = [0] * len(durations)
    parent = [-1] * len(durations)
    for source, target in edges.tolist():
        candidate = best_in[source] + int(durations[source])
        if candidate > best_in[target]:
            best_in[target], parent[target] = candidate, source
    totals = np.asarray(best_in, dtype=np.int64) + durations
    node = int(np.argmax(totals))
    length, path = int(totals[node]), []
    while node >= 0:
        path.append(node)
        node = parent[node]
    return path[::-1], length


def test_critical_path_equals_the_relaxation_on_random_dags():
    """Ties, zero durations, merges and chains: same path and length, node for node."""
    rng = np.random.default_rng(7)
    for _ in range(2000):
        count = int(rng.integers(1, 40))
        sources, targets = rng.integers(0, count, (2, int(rng.integers(0, 80))))
        forward = sources < targets
        edges = unique_pairs(np.stack([sources[forward], targets[forward]], axis=1))
        durations = rng.integers(0, 3, count) * rng.integers(0, 2, count)
        path, length = critical_path(durations, edges)
        assert (path.tolist(), length) == _critical_path_by_relaxing(durations, edges)


def test_critical_path_rejects_edges_it_cannot_relax_in_one_pass():
    durations = np.ones(3, np.int64)
    for edges in ([[1, 0]], [[0, 3]], [[1, 2], [0, 1]], [[0, 0]]):
        with pytest.raises(ValueError, match="edges must go forward"):
            critical_path(durations, np.array(edges, np.int64))
    assert critical_path(np.zeros(0, np.int64), np.zeros((0, 2), np.int64))[1] == 0


def _self_times_by_stack(starts, durations, tracks):
    """Self time by the rule: walk events by (track, start, longer first) keeping the
    stack of enclosing ones; each event's overlap with its parent leaves the parent."""
    order = sorted(range(len(starts)), key=lambda i: (tracks[i], starts[i], -durations[i]))
    result = [int(d) for d in durations]
    stack: list[int] = []
    for position, event in enumerate(order):
        if position and tracks[event] != tracks[order[position - 1]]:
            stack.clear()
        end = starts[event] + durations[event]
        while stack and starts[stack[-1]] + durations[stack[-1]] <= starts[event]:
            stack.pop()
        if stack:
            parent = stack[-1]
            result[parent] -= min(end, starts[parent] + durations[parent]) - starts[event]
        stack.append(event)
    return result


def test_nested_self_times_equals_the_stack_walk_on_random_intervals():
    """Nesting, outlasting children (clipped), equal starts, zero durations, tracks."""
    from tfpgo.attribution.op_profile import nested_self_times as self_times_of_events

    rng = np.random.default_rng(3)
    for _ in range(1000):
        count = int(rng.integers(1, 30))
        starts = rng.integers(0, 50, count)
        durations = rng.integers(0, 20, count)
        tracks = rng.integers(0, 3, count)
        expected = _self_times_by_stack(starts.tolist(), durations.tolist(), tracks.tolist())
        assert self_times_of_events(starts, durations, tracks).tolist() == expected


def test_nested_self_times_rejects_an_order_out_of_range():
    zeros = np.zeros(2, np.int64)
    with pytest.raises(ValueError, match="index in `order` is out of range"):
        nested_self_times(zeros, zeros, zeros, np.array([0, 5]), zeros)
    with pytest.raises(ValueError, match="different lengths"):
        nested_self_times(zeros, zeros, zeros, np.array([0]), zeros)


def test_render_rows_writes_what_python_formats():
    """Every segment kind, the int64 extremes, nulls, empty lists, non-ASCII entries."""
    rng = np.random.default_rng(5)
    extremes = [0, -1, 9, 10, 99, 100, -(2**63), 2**63 - 1, 10**18, -(10**15)]
    for _ in range(200):
        count = int(rng.integers(0, 12))
        numbers = rng.choice(extremes + rng.integers(-(2**62), 2**62, 5).tolist(), count)
        steps = rng.choice([-7, 3, 12345], count)
        sizes = rng.integers(0, 4, count)
        offsets = np.concatenate([[0], np.cumsum(sizes)])
        items = rng.integers(-5, 10**12, int(offsets[-1]))
        names = ["", "a", '"q"', "\u00e9\u4e2d"]
        picks = rng.integers(0, len(names), count)
        rows = render_rows(
            [
                "{",
                Ints(numbers),
                ",",
                Ints(steps, null=-7),
                ",[",
                IntLists(offsets, items),
                "],",
                Lookup(StringTable(names), picks),
                "}",
            ],
            count,
            ",\n",
        )
        expected = ",\n".join(
            f"{{{numbers[row]},{'null' if steps[row] == -7 else steps[row]},"
            f"[{','.join(map(str, items[offsets[row] : offsets[row + 1]].tolist()))}],"
            f"{names[picks[row]]}}}"
            for row in range(count)
        )
        assert bytes(rows) == expected.encode()


def test_render_rows_rejects_bad_indices_and_shapes():
    table = StringTable(["x"])
    with pytest.raises(ValueError, match="out of range"):
        render_rows([Lookup(table, np.array([0, 1]))], 2, ",")
    with pytest.raises(ValueError, match="out of range"):
        render_rows([IntLists(np.array([0, 3]), np.array([1, 2]))], 1, ",")
    with pytest.raises(ValueError, match="one value per row"):
        render_rows([Ints(np.array([1]))], 2, ",")
    with pytest.raises(ValueError, match="count \\+ 1 offsets"):
        render_rows([IntLists(np.array([0]), np.array([], np.int64))], 1, ",")


@pytest.fixture
def fresh_library():
    """The library is loaded once per process: load it again, before and after."""
    kernels._library.cache_clear()
    yield
    kernels._library.cache_clear()


def test_a_missing_or_broken_library_is_one_clear_error(tmp_path, monkeypatch, fresh_library):
    broken = tmp_path / "libtfpgo_kernels.so"
    broken.write_bytes(b"not a shared object")
    broken.chmod(0o755)
    monkeypatch.setenv("TFPGO_KERNELS", str(broken))
    message = r"libtfpgo_kernels.so: cannot load tfpgo's native kernels \(file too short\); rebuild"
    with pytest.raises(UserError, match=message):
        critical_path(np.ones(2, np.int64), np.array([[0, 1]]))
    kernels._library.cache_clear()
    monkeypatch.setenv("TFPGO_KERNELS", str(tmp_path / "absent.so"))
    with pytest.raises(UserError, match=r"TFPGO_KERNELS=.*absent\.so: not an executable file"):
        critical_path(np.ones(2, np.int64), np.array([[0, 1]]))
