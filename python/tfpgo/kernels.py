"""tfpgo's native kernels (tools/kernels/kernels.h) from Python, through ctypes.

The kernels are the sequential loops over every event or node that numpy
cannot vectorize: the DAG's critical path, nested self times, and rendering
rows of columns as text. Python owns every array: each wrapper makes its
inputs contiguous int64 and checks their shapes, so the C side only reads and
writes within them.
"""

from __future__ import annotations

import ctypes
import functools
from dataclasses import dataclass
from typing import Any

import numpy as np

from tfpgo import toolpaths
from tfpgo.errors import UserError

_INT64_P = ctypes.POINTER(ctypes.c_int64)
_MAX_DECIMAL = 20  # len("-9223372036854775808")


class _Segment(ctypes.Structure):
    _fields_ = [
        ("kind", ctypes.c_int32),
        ("reserved", ctypes.c_int32),
        ("text", ctypes.c_char_p),
        ("text_size", ctypes.c_int64),
        ("values", _INT64_P),
        ("offsets", _INT64_P),
        ("count", ctypes.c_int64),
        ("null_value", ctypes.c_int64),
    ]


@functools.cache
def _library() -> ctypes.CDLL:
    path = toolpaths.kernels_library()
    try:
        library = ctypes.CDLL(str(path))
    except OSError as error:
        reason = str(error).removeprefix(f"{path}: ")  # the loader names the file too
        raise UserError(
            f"{path}: cannot load tfpgo's native kernels ({reason}); "
            "rebuild them with `bazel build //tools:libtfpgo_kernels.so`"
        ) from None
    int64 = ctypes.c_int64
    library.tfpgo_critical_path.argtypes = [int64, _INT64_P, int64, _INT64_P, _INT64_P]
    library.tfpgo_critical_path.argtypes += [_INT64_P, _INT64_P, _INT64_P]
    library.tfpgo_critical_path.restype = int64
    library.tfpgo_nested_self_times.argtypes = [int64, *[_INT64_P] * 5]
    library.tfpgo_nested_self_times.restype = int64
    library.tfpgo_render_rows.argtypes = [ctypes.POINTER(_Segment), int64, int64]
    library.tfpgo_render_rows.argtypes += [ctypes.c_char_p, int64, ctypes.c_void_p, int64]
    library.tfpgo_render_rows.restype = int64
    return library


def _int64(values: Any) -> np.ndarray:
    return np.ascontiguousarray(values, dtype=np.int64)


def _pointer(array: np.ndarray) -> Any:
    return array.ctypes.data_as(_INT64_P)


def critical_path(durations: np.ndarray, edges: np.ndarray) -> tuple[np.ndarray, int]:
    """Longest duration-weighted path (node ids in path order, its length) of a DAG
    whose (m, 2) `edges` go from smaller to larger ids, sorted by source. The rule:
    relax the edges in that order, a node's best incoming total replaced only by a
    strictly larger one (the parent is the smallest predecessor reaching the
    maximum, none when that maximum is 0); the path ends at the first node of
    largest total."""
    weights = _int64(durations)
    count = weights.size
    sources, targets = _int64(edges[:, 0]), _int64(edges[:, 1])
    scratch = np.empty(2 * count, np.int64)
    path = np.empty(count, np.int64)
    length = ctypes.c_int64(0)
    size = _library().tfpgo_critical_path(
        count,
        _pointer(weights),
        sources.size,
        _pointer(sources),
        _pointer(targets),
        _pointer(scratch),
        _pointer(path),
        ctypes.byref(length),
    )
    if size < 0:
        raise ValueError("critical_path: edges must go forward, in range, sorted by source")
    return path[:size].copy(), int(length.value)


def nested_self_times(
    starts: np.ndarray, ends: np.ndarray, tracks: np.ndarray, order: np.ndarray, durations: Any
) -> np.ndarray:
    """Self time of intervals sorted by (track, start, longer first) (`order[i]`: the
    original index of sorted interval i; `durations` in original order): each one's
    duration minus the part inside it of every interval directly nested in it."""
    starts, ends, tracks, order = (_int64(a) for a in (starts, ends, tracks, order))
    result = np.array(durations, dtype=np.int64, copy=True)
    if not starts.size == ends.size == tracks.size == order.size == result.size:
        raise ValueError("nested_self_times: columns of different lengths")
    status = _library().tfpgo_nested_self_times(
        order.size, *map(_pointer, (starts, ends, tracks, order, result))
    )
    if status < 0:
        raise ValueError("nested_self_times: an index in `order` is out of range")
    return result


class StringTable:
    """Strings rendered by index (kernel lookups): encoded into one pool once."""

    def __init__(self, strings: list[str]) -> None:
        encoded = [text.encode() for text in strings]
        self.sizes = np.fromiter(map(len, encoded), np.int64, len(encoded))
        self.offsets = np.zeros(len(encoded) + 1, np.int64)
        np.cumsum(self.sizes, out=self.offsets[1:])
        self.pool = b"".join(encoded)

    def __len__(self) -> int:
        return self.sizes.size


@dataclass(frozen=True)
class Ints:
    """A number per row in decimal; "null" where it equals `null` (if given)."""

    values: np.ndarray
    null: int | None = None


@dataclass(frozen=True)
class Lookup:
    """Entry `indices[row]` of `table` per row."""

    table: StringTable
    indices: np.ndarray


@dataclass(frozen=True)
class IntLists:
    """values[offsets[row]:offsets[row + 1]] per row, in decimal, joined by ","."""

    offsets: np.ndarray
    values: np.ndarray


Segment = str | Ints | Lookup | IntLists


def render_rows(segments: list[Segment], count: int, separator: str) -> memoryview:
    """`count` rows, each its segments concatenated (a str is the same in every row),
    joined by `separator`, as UTF-8 bytes."""
    keep: list[Any] = []  # what the C structs point into, alive until the call returns
    structs = (_Segment * len(segments))()
    capacity = max(count - 1, 0) * len(separator.encode())
    for struct, segment in zip(structs, segments, strict=True):
        if isinstance(segment, str):
            text = segment.encode()
            keep.append(text)
            struct.kind, struct.text, struct.text_size = 0, text, len(text)
            capacity += count * len(text)
            continue
        if isinstance(segment, IntLists):
            offsets, values = _int64(segment.offsets), _int64(segment.values)
            if offsets.size != count + 1:
                raise ValueError("render_rows: a list column needs count + 1 offsets")
            struct.kind, struct.offsets, struct.count = 4, _pointer(offsets), values.size
            capacity += values.size * (_MAX_DECIMAL + 1)
            keep += [offsets, values]
        else:
            values = _int64(segment.values if isinstance(segment, Ints) else segment.indices)
            if values.size != count:
                raise ValueError("render_rows: a column needs one value per row")
            keep.append(values)
        struct.values = _pointer(values)
        if isinstance(segment, Ints):
            struct.kind = 1 if segment.null is None else 2
            struct.null_value = 0 if segment.null is None else segment.null
            capacity += count * _MAX_DECIMAL
        elif isinstance(segment, Lookup):
            table = segment.table
            struct.kind, struct.count = 3, len(table)
            struct.text, struct.text_size = table.pool, len(table.pool)
            struct.offsets = _pointer(table.offsets)
            if len(table):
                capacity += int(table.sizes[np.clip(values, 0, len(table) - 1)].sum())
    out = np.empty(capacity, np.uint8)
    separator_bytes = separator.encode()
    written = _library().tfpgo_render_rows(
        structs, len(segments), count, separator_bytes, len(separator_bytes),
        out.ctypes.data, capacity,
    )  # fmt: skip
    if written < 0:
        raise ValueError("render_rows: a lookup index or list offset is out of range")
    return out.data[:written]
