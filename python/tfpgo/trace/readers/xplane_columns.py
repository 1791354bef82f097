"""The native XPlane decoder's client: `tools/xplane-columns` (C++, no
libprotobuf) walks an `.xplane.pb`'s protobuf wire format and streams each
line's events as fixed-width columns (records in docs/formats.md); this module
reads that stream into a TableBuilder with numpy, never a Python object per
event, and pairs the context-stat flows. A file the decoder rejects is handed
to protobuf, so every damaged file gives protobuf's one-line error.
"""

from __future__ import annotations

import io
import struct
import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from tfpgo import toolpaths
from tfpgo.errors import UserError
from tfpgo.trace.events import TableBuilder, distinct_values, join_chunks
from tfpgo.trace.readers import hlo_metadata
from tfpgo.trace.readers.xplane_proto import parse_message, parse_xspace, xplane_pb2

_HEADER = struct.Struct("<4sQ")
_U64 = struct.Struct("<Q")
# Stat value kinds of the STAT record.
_NONE, _DOUBLE, _UINT64, _INT64, _STR, _BYTES, _REF = range(7)
_UINT64_MASK = (1 << 64) - 1
# metadata ids below this map through a lookup array instead of np.unique
_DENSE_IDS = 1 << 22


class _Malformed(Exception):
    """The decoder's output or a string in it is not what a valid XSpace gives."""


def add_xplane_file(
    builder: TableBuilder,
    path: Path,
    host_hint: str,
    base_ns: int | None = None,
    shown: Path | None = None,
) -> int:
    """Appends every event of the `.xplane.pb` at `path`; returns the time base (ns).

    Line timestamps are absolute nanoseconds; times become picoseconds from
    `base_ns` (the earliest line of the first file) to stay within int64.
    `shown` is the path error messages name (default `path`).
    """
    shown = shown or path
    command = [str(toolpaths.xplane_columns()), str(path)]
    if base_ns is not None:
        command.append(str(base_ns))
    space = _Space(builder, host_hint)
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as process:
        assert isinstance(process.stdout, io.BufferedReader) and process.stderr is not None
        try:
            space.read(process.stdout)
            failure = ""
        except (_Malformed, UnicodeDecodeError) as error:
            failure = str(error)
            process.kill()
        stderr = process.stderr.read().decode(errors="replace").strip()
    if process.returncode != 0 or failure:
        _reject(shown, path, stderr or failure)
    if space.planes == 0 and path.stat().st_size:
        raise UserError(
            f"{shown}: parses as protobuf but holds no XSpace planes; not an .xplane.pb"
        )
    # flows are paired on a thread while the caller goes on (builds the table)
    pairing = ThreadPoolExecutor(max_workers=1)
    builder.add_flows_later(pairing.submit(space.flow_pairs))
    pairing.shutdown(wait=False)
    return space.base_ns


def _reject(shown: Path, path: Path, reason: str) -> None:
    """Raises the one-line error for a file the decoder rejected: protobuf's own
    message when protobuf rejects it too (so every damaged file reads the same)."""
    try:
        data = path.read_bytes()
    except OSError as error:
        raise UserError(f"{shown}: cannot read: {error.strerror}") from None
    parse_xspace(shown, data)
    raise UserError(
        f"{shown}: not a valid XSpace protobuf ({reason}); the file is truncated or "
        "not an .xplane.pb"
    )


@dataclass
class _Flows:
    """Context-stat endpoints of one file, in file order (global event indices)."""

    events: list[np.ndarray] = field(default_factory=list)
    roles: list[np.ndarray] = field(default_factory=list)
    types: list[np.ndarray] = field(default_factory=list)
    ids: list[np.ndarray] = field(default_factory=list)


class _Space:
    """Reads the decoder's record stream into a TableBuilder."""

    def __init__(self, builder: TableBuilder, host_hint: str) -> None:
        self.builder = builder
        self.host: str | None = None
        self.host_hint = host_hint
        self.base_ns = 0
        self.planes = 0
        self.plane = ""
        self.event_names: dict[int, str] = {}
        self.stat_names: dict[int, str] = {}
        self.name_of_metadata: dict[int, int] = {}
        self.flows = _Flows()
        self.line_first = 0  # the builder's index of the last LINE's first event

    def read(self, stream: io.BufferedReader) -> None:
        handlers = {
            b"BASE": self._base,
            b"HOST": self._hostname,
            b"PLAN": self._plane,
            b"EMET": self._event_metadata,
            b"SMET": self._stat_metadata,
            b"META": self._metadata_plane,
            b"LINE": self._line,
            b"FLOW": self._flow,
            b"STAT": self._stats,
        }
        while True:
            header = stream.read(_HEADER.size)
            if len(header) < _HEADER.size:
                raise _Malformed("the decoder stopped early")
            tag, size = _HEADER.unpack(header)
            if tag == b"DONE":
                self.planes = _U64.unpack(_exact(stream, 8))[0]
                return
            handler = handlers.get(tag)
            if handler is None:
                raise _Malformed(f"unknown record {tag!r}")
            handler(stream, size)

    def _base(self, stream: io.BufferedReader, size: int) -> None:
        self.base_ns = struct.unpack("<q", _exact(stream, size))[0]

    def _hostname(self, stream: io.BufferedReader, size: int) -> None:
        host = _exact(stream, size).decode()
        if self.host is None:
            self.host = host

    def _plane(self, stream: io.BufferedReader, size: int) -> None:
        self.plane = _exact(stream, size).decode()
        self.event_names, self.stat_names, self.name_of_metadata = {}, {}, {}

    def _event_metadata(self, stream: io.BufferedReader, size: int) -> None:
        self.event_names = _read_names(stream)

    def _stat_metadata(self, stream: io.BufferedReader, size: int) -> None:
        self.stat_names = _read_names(stream)

    def _metadata_plane(self, stream: io.BufferedReader, size: int) -> None:
        plane = parse_message(xplane_pb2().XPlane(), _exact(stream, size), "metadata plane;")
        for module in hlo_metadata.read_metadata_plane(plane, self.builder.source):
            self.builder.add_hlo_module(module)
        self.builder.jax |= hlo_metadata.recorded_by_jax(plane)

    def _line(self, stream: io.BufferedReader, size: int) -> None:
        count, name_size = struct.unpack("<QQ", _exact(stream, 16))
        line = _exact(stream, name_size).decode()
        metadata_ids = _array(stream, count, np.int64)
        starts = _array(stream, count, np.int64)
        durations = _array(stream, count, np.int64)
        name_ids = self._name_ids(metadata_ids)
        del metadata_ids
        host = self.host if self.host is not None else self.host_hint
        track = self.builder.track_id(host, self.plane, line)
        self.line_first = self.builder.add_columns(track, name_ids, starts, durations)

    def _name_ids(self, metadata_ids: np.ndarray) -> np.ndarray:
        """Builder name ids of a line's metadata ids (names resolved once per id)."""
        if metadata_ids.size and metadata_ids.min() >= 0 and metadata_ids.max() < _DENSE_IDS:
            present = np.bincount(metadata_ids)
            unique = np.flatnonzero(present)
            lookup = np.zeros(present.size, np.int32)
            lookup[unique] = self._resolve(unique)
            return lookup[metadata_ids]
        unique, inverse = np.unique(metadata_ids, return_inverse=True)
        return self._resolve(unique)[inverse]

    def _resolve(self, unique: np.ndarray) -> np.ndarray:
        for metadata_id in unique.tolist():
            if metadata_id not in self.name_of_metadata:
                name = self.event_names.get(metadata_id, f"<metadata {metadata_id}>")
                self.name_of_metadata[metadata_id] = self.builder.name_id(name)
        return np.array([self.name_of_metadata[m] for m in unique.tolist()], dtype=np.int32)

    def _flow(self, stream: io.BufferedReader, size: int) -> None:
        """A FLOW record: the context stats of the last LINE's events."""
        first = self.line_first
        count = _U64.unpack(_exact(stream, 8))[0]
        events = _array(stream, count, np.int64) + first
        self.flows.events.append(events.astype(np.int32) if first + count < 2**31 else events)
        self.flows.roles.append(_array(stream, count, np.int64) != 0)  # consumer
        self.flows.types.append(_array(stream, count, np.int64))
        self.flows.ids.append(_array(stream, count, np.int64))

    def _stats(self, stream: io.BufferedReader, size: int) -> None:
        """A STAT record: the last LINE's kept stats into the builder's column stats;
        `step_num` marks steps."""
        first = self.line_first
        count = _U64.unpack(_exact(stream, 8))[0]
        events = _array(stream, count, np.int64) + first
        ids = _array(stream, count, np.int64)
        raw = _array(stream, count, np.int64)
        kinds = _array(stream, count, np.uint8)
        sizes = _array(stream, count, np.int64)
        payload = _exact(stream, int(sizes.sum()))
        names = self.stat_names
        column_stats = self.builder.column_stats
        # Refs and strings become string ids (no Python object per stat): a ref's
        # name is resolved once per distinct ref, a string's text once per distinct text.
        is_string = (kinds == _REF) | (kinds == _STR)
        refs = np.flatnonzero(kinds == _REF)
        if refs.size:
            unique, inverse = np.unique(raw[refs], return_inverse=True)
            found = [names.get(int(key) & _UINT64_MASK) for key in unique.tolist()]
            string_ids = np.array([-1 if n is None else column_stats.string_id(n) for n in found])
            resolved = string_ids[inverse.ravel()]
            is_string[refs[resolved < 0]] = False  # a ref to no stat name: kept as it was
            raw[refs] = np.where(resolved >= 0, resolved, raw[refs])
        texts = np.flatnonzero(kinds == _STR)
        ends = np.cumsum(sizes)
        if texts.size:
            starts = (ends - sizes)[texts].tolist()
            known: dict[bytes, int] = {}
            for at, start, end in zip(texts.tolist(), starts, ends[texts].tolist(), strict=True):
                text = payload[start:end]
                if (sid := known.get(text)) is None:
                    sid = known[text] = column_stats.string_id(text.decode())
                raw[at] = sid
        other: dict[int, Any] = {}  # position -> a value that is not an int64 or a string
        special = np.flatnonzero((kinds != _INT64) & ~is_string).tolist()
        for at in special:
            text = payload[int(ends[at] - sizes[at]) : int(ends[at])]
            other[at] = _stat_value(int(kinds[at]), int(raw[at]), text, names)
        unique, inverse = np.unique(ids, return_inverse=True)
        name_ids = np.array(
            [column_stats.name_id(names.get(key, str(key))) for key in unique.tolist()],
            dtype=np.int32,
        )[inverse.ravel()]
        column_stats.add(events, name_ids, raw, other, is_string)
        # step markers: the last `step_num` of each event that has one, in row order
        step_id = column_stats.name_id("step_num")
        marked = np.flatnonzero(name_ids == step_id)
        if marked.size:
            rows = events[marked]
            marked = marked[np.append(rows[1:] != rows[:-1], True)]
            for at in marked.tolist():
                value = other.get(at, column_stats.strings[raw[at]] if is_string[at] else raw[at])
                self.builder.step_events.append((int(events[at]), int(value)))

    def flow_pairs(self) -> np.ndarray:
        """(producer, consumer) rows: each consumer with the first producer of its
        (type, id) in the file."""
        flows = self.flows
        if not flows.events:
            return np.zeros((0, 2), np.int64)
        self.flows = _Flows()
        columns = [flows.events, flows.roles, flows.types, flows.ids]
        del flows
        events, consumes, types, ids = (join_chunks(columns, i) for i in range(4))
        producing, consuming = np.flatnonzero(~consumes), np.flatnonzero(consumes)
        del consumes
        consumer = events[consuming]
        producer = np.full(consuming.size, -1, dtype=np.int64)
        for kind in distinct_values(types).tolist():  # a few context types
            mine = producing[types[producing] == kind]
            known, first = np.unique(ids[mine], return_index=True)  # first in file order
            if known.size == 0:
                continue
            wanted = np.flatnonzero(types[consuming] == kind)
            wanted_ids = ids[consuming[wanted]]
            slot = np.minimum(np.searchsorted(known, wanted_ids), known.size - 1)
            hit = known[slot] == wanted_ids
            producer[wanted[hit]] = events[mine[first[slot[hit]]]]
        keep = (producer >= 0) & (producer != consumer)
        return np.stack([producer[keep], consumer[keep]], axis=1)


def _stat_value(kind: int, raw: int, text: bytes, names: dict[int, str]) -> Any:
    """A kept stat's value as protobuf gives it (`raw`: the int64 bits)."""
    unsigned = raw & _UINT64_MASK
    if kind == _DOUBLE:
        return struct.unpack("<d", struct.pack("<Q", unsigned))[0]
    if kind == _UINT64:
        return unsigned
    if kind == _STR:
        return text.decode()
    if kind == _BYTES:
        return text.hex()
    if kind == _REF:
        return names.get(unsigned, unsigned)
    return None


def _exact(stream: io.BufferedReader, size: int) -> bytes:
    data = stream.read(size)
    if len(data) != size:
        raise _Malformed("the decoder stopped early")
    return data


def _array(stream: io.BufferedReader, count: int, dtype: type) -> np.ndarray:
    """`count` values of `dtype` read straight into a new array."""
    array: np.ndarray = np.empty(count, dtype=dtype)
    view = array.view(np.uint8).data
    filled = 0
    while filled < view.nbytes:
        got = stream.readinto(view[filled:])
        if not got:
            raise _Malformed("the decoder stopped early")
        filled += got
    return array


def _read_names(stream: io.BufferedReader) -> dict[int, str]:
    """An EMET/SMET record: id -> name."""
    count = _U64.unpack(_exact(stream, 8))[0]
    ids = _array(stream, count, np.int64).tolist()
    sizes = _array(stream, count, np.int64).tolist()
    blob = _exact(stream, sum(sizes))
    names = {}
    at = 0
    for key, size in zip(ids, sizes, strict=True):
        names[key] = blob[at : at + size].decode()
        at += size
    return names
