"""XSpace (`.xplane.pb`, and its protobuf-JSON form) into an EventTable.

An XSpace holds planes (`/host:CPU`, devices), each with lines (threads) of
events. An event refers to its name through `metadata_id` and carries
`offset_ps` from its line's `timestamp_ns`, `duration_ps` and stats.

Stats with a meaning for tfpgo are decoded, the rest kept as they are:
  * `step_num` marks a profiled step (`Trace(..., step_num=i, _r=1)`);
  * `_p`/`_pt` (producer) and `_c`/`_ct` (consumer) are TensorFlow's context
    ids: every producer -> consumer pair with the same (type, id) becomes a flow.
The `/host:metadata` plane has no lines; the XLA modules it holds (`HloProto`
stats, see `tfpgo.trace.readers.hlo_metadata`) go to the builder's `hlo_modules`.
Per event only three integers go through Python lists; names are resolved per
metadata entry, not per event, which keeps two million events at a few seconds.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from tfpgo.errors import UserError
from tfpgo.trace.events import TableBuilder
from tfpgo.trace.readers import hlo_metadata
from tfpgo.trace.readers.base import Progress, TraceInput, TraceReader
from tfpgo.trace.readers.xplane_proto import parse_message, xplane_pb2

_FLOW_PRODUCER = {"_p": "id", "_pt": "type"}
_FLOW_CONSUMER = {"_c": "id", "_ct": "type"}
_FLOW_STATS = frozenset({*_FLOW_PRODUCER, *_FLOW_CONSUMER})


def parse_xspace(path: Path, data: bytes) -> Any:
    """`data` as an XSpace; a UserError names the file if it is not one."""
    space = parse_message(
        xplane_pb2().XSpace(),
        data,
        f"{path}: not a valid XSpace protobuf; the file is truncated or not an .xplane.pb",
    )
    if not space.planes and data:
        raise UserError(f"{path}: parses as protobuf but holds no XSpace planes; not an .xplane.pb")
    return space


def parse_xspace_json(path: Path, document: dict[str, Any]) -> Any:
    """The protobuf-JSON form of an XSpace (snake_case or camelCase fields)."""
    from google.protobuf import json_format

    space = xplane_pb2().XSpace()
    try:
        json_format.ParseDict(document, space)
    except json_format.ParseError as error:
        # protobuf's message spans lines (and quotes the document's field names)
        detail = " ".join(str(error).split())
        raise UserError(f"{path}: JSON with 'planes' but not an XSpace: {detail}") from None
    except SystemError as error:
        # upb looks a field name with a lone surrogate ("\ud800") up, fails to
        # encode it and surfaces the UnicodeEncodeError as a SystemError
        if not isinstance(error.__cause__, UnicodeError):
            raise
        raise UserError(
            f"{path}: JSON with 'planes' but not an XSpace: a field name is not valid "
            "Unicode (an unpaired surrogate escape)"
        ) from None
    return space


def add_xspace(
    builder: TableBuilder, space: Any, host_hint: str, base_ns: int | None = None
) -> int:
    """Appends every event of `space`; returns the time base (ns) it used.

    Line timestamps are absolute nanoseconds; times become picoseconds from
    `base_ns` (the earliest line of the first space) to stay within int64.
    """
    host = space.hostnames[0] if len(space.hostnames) else host_hint
    if base_ns is None:
        stamps = [line.timestamp_ns for plane in space.planes for line in plane.lines]
        base_ns = min(stamps) if stamps else 0
    producers: dict[tuple[int, int], int] = {}
    consumers: list[tuple[tuple[int, int], int]] = []
    for plane in space.planes:
        if plane.name == hlo_metadata.METADATA_PLANE:
            for module in hlo_metadata.read_metadata_plane(plane, builder.source):
                builder.hlo_modules[module.name] = module
            continue
        _add_plane(builder, plane, host, base_ns, producers, consumers)
    builder.flow_pairs.extend(
        (producers[key], consumer)
        for key, consumer in consumers
        if key in producers and producers[key] != consumer
    )
    return base_ns


def _add_plane(
    builder: TableBuilder,
    plane: Any,
    host: str,
    base_ns: int,
    producers: dict[tuple[int, int], int],
    consumers: list[tuple[tuple[int, int], int]],
) -> None:
    metadata = plane.event_metadata
    stat_names = {key: value.name for key, value in plane.stat_metadata.items()}
    name_of_metadata: dict[int, int] = {}
    for line in plane.lines:
        events = line.events
        if not events:
            continue
        metadata_ids, offsets, durations = _columns(events)
        unique, inverse = np.unique(metadata_ids, return_inverse=True)
        for metadata_id in unique.tolist():
            if metadata_id not in name_of_metadata:
                entry = metadata.get(metadata_id)
                name = entry.name if entry is not None else f"<metadata {metadata_id}>"
                name_of_metadata[metadata_id] = builder.name_id(name)
        name_ids = np.array([name_of_metadata[m] for m in unique.tolist()], dtype=np.int32)
        track = builder.track_id(host, plane.name, line.display_name or line.name)
        starts = offsets + (line.timestamp_ns - base_ns) * 1000
        first = builder.add_columns(track, name_ids[inverse], starts, durations)
        _add_stats(builder, events, first, stat_names, producers, consumers)


def _columns(events: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The three integer columns of a line's events."""
    count = len(events)
    return (
        np.fromiter((e.metadata_id for e in events), np.int64, count),
        np.fromiter((e.offset_ps for e in events), np.int64, count),
        np.fromiter((e.duration_ps for e in events), np.int64, count),
    )


def _add_stats(
    builder: TableBuilder,
    events: Any,
    first: int,
    stat_names: dict[int, str],
    producers: dict[tuple[int, int], int],
    consumers: list[tuple[tuple[int, int], int]],
) -> None:
    """Decodes stats: flows and step numbers to their tables, the rest kept.

    Flow stats are most of all stats (thread-pool handoffs); they take a fast
    path that reads the integer without asking which oneof field is set.
    """
    flow_kind = {key: name for key, name in stat_names.items() if name in _FLOW_STATS}
    kept_stats = builder.stats
    for offset, event in enumerate(events):
        stats = event.stats
        if not stats:
            continue
        index = first + offset
        kept: dict[str, Any] = {}
        producer = consumer = producer_type = consumer_type = None
        for stat in stats:
            key = stat.metadata_id
            kind = flow_kind.get(key)
            if kind is None:
                kept[stat_names.get(key, str(key))] = _stat_value(stat, stat_names)
            elif kind == "_p":
                producer = stat.uint64_value or stat.int64_value
            elif kind == "_c":
                consumer = stat.uint64_value or stat.int64_value
            elif kind == "_pt":
                producer_type = stat.int64_value or stat.uint64_value
            else:
                consumer_type = stat.int64_value or stat.uint64_value
        if producer is not None:
            producers.setdefault((producer_type or 0, producer), index)
        if consumer is not None:
            consumers.append(((consumer_type or 0, consumer), index))
        if kept:
            if "step_num" in kept:
                builder.step_events.append((index, int(kept["step_num"])))
            kept_stats[index] = kept


def _stat_value(stat: Any, stat_names: dict[int, str]) -> Any:
    which = stat.WhichOneof("value")
    if which is None:
        return None
    value = getattr(stat, which)
    if which == "ref_value":
        return stat_names.get(value, value)
    if which == "bytes_value":
        return value.hex()
    return value


def read_xplane_files(
    paths: list[Path],
    source: str,
    progress: Progress | None = None,
    builder: TableBuilder | None = None,
) -> TableBuilder:
    """Reads `.xplane.pb` files (one per host) into one builder."""
    builder = builder or TableBuilder(source, "xplane")
    base_ns = None
    for path in paths:
        try:
            data = path.read_bytes()
        except OSError as error:
            raise UserError(f"{path}: cannot read: {error.strerror}") from None
        if progress:
            progress(f"reading {path.name} ({len(data) / 1e6:.1f} MB)")
        space = parse_xspace(path, data)
        del data
        host_hint = path.name.removesuffix(".xplane.pb")
        base_ns = add_xspace(builder, space, host_hint, base_ns)
    return builder


def _host_hint(path: Path) -> str:
    return path.name.split(".")[0]


def _read_xplane(source: TraceInput, builder: TableBuilder, progress: Progress | None) -> None:
    space = parse_xspace(source.path, source.take_bytes())
    if progress:
        progress(f"parsed {source.path.name}")
    add_xspace(builder, space, _host_hint(source.path))


def _is_xspace_json(source: TraceInput) -> bool:
    document = source.document
    return isinstance(document, dict) and isinstance(document.get("planes"), list)


def _read_xspace_json(source: TraceInput, builder: TableBuilder, _: Progress | None) -> None:
    space = parse_xspace_json(source.path, source.document)
    add_xspace(builder, space, _host_hint(source.path))


# Protobuf has no magic number: anything that is not JSON text is tried as an XSpace.
XPLANE_READER = TraceReader(
    "xplane",
    "an XSpace protobuf (.xplane.pb)",
    lambda source: not source.looks_like_json,
    _read_xplane,
)
XSPACE_JSON_READER = TraceReader(
    "xspace_json",
    "an XSpace as protobuf JSON (an object with 'planes')",
    _is_xspace_json,
    _read_xspace_json,
)
