"""Trace readers: any supported input into one EventTable, detected by content.

`read_trace(path)` accepts
  * a TensorBoard logdir (`plugins/profile/<run>/*.xplane.pb`): every host of
    the newest run, or of `run` if given; a run directory itself also works;
  * an `.xplane.pb` file (XSpace protobuf), whatever its name;
  * the protobuf-JSON form of an XSpace (an object with `planes`);
  * a Chrome trace-event JSON document, plain or gzip-compressed.
The file name never decides the format: the bytes do. A gzip file is
unpacked first; then each registered reader (`READERS`, one module each,
interface in `tfpgo.trace.readers.base`) is asked whether the content is its
format, and the first that accepts reads it.
"""

from __future__ import annotations

import contextlib
import gc
import gzip
import zlib
from collections.abc import Iterator
from pathlib import Path

from tfpgo.errors import UserError
from tfpgo.trace.device import link_launches
from tfpgo.trace.events import EventTable, TableBuilder
from tfpgo.trace.readers import chrome, xplane
from tfpgo.trace.readers.base import Progress, TraceInput, TraceReader

_GZIP_MAGIC = b"\x1f\x8b"


def find_runs(logdir: Path) -> list[Path]:
    """Run directories under `logdir/plugins/profile`, oldest first (names are dates)."""
    root = logdir / "plugins" / "profile"
    if not root.is_dir():
        return []
    return sorted(p for p in root.iterdir() if p.is_dir() and any(p.glob("*.xplane.pb")))


def resolve_xplanes(path: Path, run: str | None = None) -> list[Path]:
    """The `.xplane.pb` files a directory stands for (logdir or run directory)."""
    direct = sorted(path.glob("*.xplane.pb"))
    if direct and run is None:
        return direct
    runs = find_runs(path)
    if not runs:
        raise UserError(
            f"{path}: no plugins/profile/<run>/*.xplane.pb and no .xplane.pb "
            "in this directory; pass a TensorBoard logdir or a trace file"
        )
    if run is None:
        return sorted(runs[-1].glob("*.xplane.pb"))
    chosen = [r for r in runs if r.name == run]
    if not chosen:
        names = ", ".join(r.name for r in runs)
        raise UserError(f"{path}: no run {run!r}; runs: {names}")
    return sorted(chosen[0].glob("*.xplane.pb"))


def check_trace_input(path: Path, flag: str) -> None:
    """One error line, before any work, for a trace input that cannot be one: a
    directory holding no `.xplane.pb`, a file that cannot be read or is empty. (Its
    format is found only by reading it: protobuf has no magic number.)"""
    if not path.exists():
        raise UserError(f"{flag} {path}: no such file or directory")
    if path.is_dir():
        resolve_xplanes(path)
        return
    try:
        with path.open("rb") as handle:
            head = handle.read(1)
    except OSError as error:
        raise UserError(f"{flag} {path}: cannot read: {error.strerror}") from None
    if not head:
        raise UserError(f"{flag} {path}: empty file; not a trace")


@contextlib.contextmanager
def paused_gc() -> Iterator[None]:
    """Pauses the cyclic garbage collector while millions of objects are built.

    The JSON readers create (and drop) objects per event (a Chrome trace's
    dicts); no cycles are made, but each allocation burst triggers full
    collections that cost about a fifth of the reading time.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def read_trace(path: Path, run: str | None = None, progress: Progress | None = None) -> EventTable:
    """Reads any supported trace input (see the module doc) into an EventTable."""
    if not path.exists():
        raise UserError(f"{path}: no such file or directory")
    with paused_gc():
        return require_events(_read_any(path, run, progress), path)


def build_table(builder: TableBuilder) -> EventTable:
    """The table `builder` holds, its device events linked to their host launches
    (`tfpgo.trace.device.link_launches`): what every reader returns."""
    table = builder.build()
    link_launches(table)
    return table


def require_events(table: EventTable, path: Path) -> EventTable:
    """`table`, unless it is empty: then the one line that says so."""
    if len(table) == 0:
        raise UserError(f"{path}: the trace holds no events; profile at least one step")
    return table


def logdir_source(files: list[Path]) -> str:
    """The source a logdir's table records: its run directory when it has several
    hosts, else its one file."""
    return str(files[0].parent) if len(files) > 1 else str(files[0])


def _read_any(path: Path, run: str | None, progress: Progress | None) -> EventTable:
    if path.is_dir():
        files = resolve_xplanes(path, run)
        return build_table(xplane.read_xplane_files(files, logdir_source(files), progress))
    return _read_file(path, progress)


# Asked in this order; the first that accepts the content reads it.
READERS: tuple[TraceReader, ...] = (
    xplane.XPLANE_READER,
    xplane.XSPACE_JSON_READER,
    chrome.CHROME_READER,
)


def _read_file(path: Path, progress: Progress | None) -> EventTable:
    try:
        with path.open("rb") as handle:
            head = handle.read(64)
        data = None
        if head.startswith(_GZIP_MAGIC):
            data = path.read_bytes()
    except OSError as error:
        raise UserError(f"{path}: cannot read: {error.strerror}") from None
    if not head:
        raise UserError(f"{path}: empty file; not a trace")
    if data is not None:
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as error:
            raise UserError(f"{path}: corrupt gzip data ({error})") from None
        head = data[:64]
        if not head.lstrip().startswith((b"{", b"[")):
            raise UserError(f"{path}: gzip file does not hold a JSON trace")
    source = TraceInput(path, head, data)
    del data
    for reader in READERS:
        if reader.accepts(source):
            builder = TableBuilder(str(path), reader.kind)
            reader.read(source, builder, progress)
            return build_table(builder)
    document = source.document
    if isinstance(document, dict) and isinstance(document.get("meta"), dict):
        kind = document["meta"].get("format", "a tfpgo document")
        raise UserError(f"{path}: this is {kind}, an output of tfpgo, not a trace")
    expected = "; ".join(reader.describe for reader in READERS)
    what = "JSON but not a trace" if source.looks_like_json else "not a trace"
    raise UserError(f"{path}: {what} (expected {expected})")
