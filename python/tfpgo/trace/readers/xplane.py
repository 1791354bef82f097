"""XSpace (`.xplane.pb`, and its protobuf-JSON form) into an EventTable.

An XSpace holds planes (`/host:CPU`, devices), each with lines (threads) of
events. An event refers to its name through `metadata_id` and carries
`offset_ps` from its line's `timestamp_ns`, `duration_ps` and stats.

Stats with a meaning for tfpgo are decoded, the rest kept as they are:
  * `step_num` marks a profiled step (`Trace(..., step_num=i, _r=1)`);
  * `_p`/`_pt` (producer) and `_c`/`_ct` (consumer) are TensorFlow's context
    ids: every producer -> consumer pair with the same (type, id) becomes a flow
    (the first producer of a pair in file order; ids compare as 64-bit values).
The `/host:metadata` plane has no lines; the XLA modules it holds (`HloProto`
stats, see `tfpgo.trace.readers.hlo_metadata`) go to the builder's `hlo_modules`.

Decoding is native (`tfpgo.trace.readers.xplane_columns`): Python never touches
an event, only names, flows and the few stats kept. The XSpace JSON form is
converted to protobuf bytes and takes the same path: one decoder.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from tfpgo.errors import UserError
from tfpgo.trace.events import TableBuilder
from tfpgo.trace.readers.base import Progress, TraceInput, TraceReader
from tfpgo.trace.readers.xplane_columns import add_xplane_file
from tfpgo.trace.readers.xplane_proto import xplane_pb2


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


def add_xspace_json(builder: TableBuilder, path: Path, document: dict[str, Any]) -> None:
    """Appends the events of an XSpace in protobuf-JSON form (through the decoder)."""
    data = parse_xspace_json(path, document).SerializeToString()
    with tempfile.NamedTemporaryFile(suffix=".xplane.pb") as scratch:
        scratch.write(data)
        scratch.flush()
        add_xplane_file(builder, Path(scratch.name), _host_hint(path), shown=path)


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
            size = path.stat().st_size
        except OSError as error:
            raise UserError(f"{path}: cannot read: {error.strerror}") from None
        if progress:
            progress(f"reading {path.name} ({size / 1e6:.1f} MB)")
        host_hint = path.name.removesuffix(".xplane.pb")
        base_ns = add_xplane_file(builder, path, host_hint, base_ns)
    return builder


def _host_hint(path: Path) -> str:
    return path.name.split(".")[0]


def _read_xplane(source: TraceInput, builder: TableBuilder, progress: Progress | None) -> None:
    add_xplane_file(builder, source.path, _host_hint(source.path))  # by path: never read whole
    if progress:
        progress(f"decoded {source.path.name}")


def _is_xspace_json(source: TraceInput) -> bool:
    document = source.document
    return isinstance(document, dict) and isinstance(document.get("planes"), list)


def _read_xspace_json(source: TraceInput, builder: TableBuilder, _: Progress | None) -> None:
    add_xspace_json(builder, source.path, source.document)


# Protobuf has no magic number: a file that is not JSON text (nor gzip, which must
# hold JSON) is tried as an XSpace.
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
