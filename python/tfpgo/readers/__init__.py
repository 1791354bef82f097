"""Trace readers: any supported input into one EventTable, detected by content.

`read_trace(path)` accepts
  * a TensorBoard logdir (`plugins/profile/<run>/*.xplane.pb`): every host of
    the newest run, or of `run` if given; a run directory itself also works;
  * an `.xplane.pb` file (XSpace protobuf), whatever its name;
  * the protobuf-JSON form of an XSpace (an object with `planes`);
  * a Chrome trace-event JSON document, plain or gzip-compressed.
The file name never decides the format: the bytes do (gzip magic, a JSON
opening bracket, otherwise protobuf).
"""

from __future__ import annotations

import contextlib
import gc
import gzip
import json
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tfpgo.cli import UserError
from tfpgo.events import EventTable, TableBuilder
from tfpgo.readers import chrome, xplane

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


@contextlib.contextmanager
def paused_gc() -> Iterator[None]:
    """Pauses the cyclic garbage collector while millions of objects are built.

    Readers create (and drop) a Python wrapper per protobuf event; no cycles
    are made, but each allocation burst triggers full collections that cost
    about a fifth of the reading time.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def read_trace(
    path: Path, run: str | None = None, progress: xplane.Progress | None = None
) -> EventTable:
    """Reads any supported trace input (see the module doc) into an EventTable."""
    if not path.exists():
        raise UserError(f"{path}: no such file or directory")
    with paused_gc():
        table = _read_any(path, run, progress)
    if len(table) == 0:
        raise UserError(f"{path}: the trace holds no events; profile at least one step")
    return table


def _read_any(path: Path, run: str | None, progress: xplane.Progress | None) -> EventTable:
    if path.is_dir():
        files = resolve_xplanes(path, run)
        source = str(files[0].parent) if len(files) > 1 else str(files[0])
        return xplane.read_xplane_files(files, source, progress).build()
    return _read_file(path, progress)


def _read_file(path: Path, progress: xplane.Progress | None) -> EventTable:
    """One file; an XSpace protobuf goes to the decoder by path, never read whole here."""
    try:
        with path.open("rb") as handle:
            head = handle.read(64)
    except OSError as error:
        raise UserError(f"{path}: cannot read: {error.strerror}") from None
    if not head:
        raise UserError(f"{path}: empty file; not a trace")
    if not head.startswith(_GZIP_MAGIC) and not _looks_like_json(head):
        builder = TableBuilder(str(path), "xplane")
        xplane.add_xplane_file(builder, path, path.name.split(".")[0])
        if progress:
            progress(f"decoded {path.name}")
        return builder.build()
    try:
        data = path.read_bytes()
    except OSError as error:
        raise UserError(f"{path}: cannot read: {error.strerror}") from None
    if data.startswith(_GZIP_MAGIC):
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as error:
            raise UserError(f"{path}: corrupt gzip data ({error})") from None
        if not _looks_like_json(data):
            raise UserError(f"{path}: gzip file does not hold a JSON trace")
    document = _parse_json(path, data)
    del data
    return _read_json_document(path, document)


def _read_json_document(path: Path, document: Any) -> EventTable:
    if isinstance(document, dict) and isinstance(document.get("planes"), list):
        builder = TableBuilder(str(path), "xspace_json")
        xplane.add_xspace_json(builder, path, document)
        return builder.build()
    if chrome.is_chrome_trace(document):
        builder = TableBuilder(str(path), "chrome")
        chrome.read_chrome(path, document, builder)
        return builder.build()
    if isinstance(document, dict) and isinstance(document.get("meta"), dict):
        kind = document["meta"].get("format", "a tfpgo document")
        raise UserError(f"{path}: this is {kind}, an output of tfpgo, not a trace")
    raise UserError(
        f"{path}: JSON but not a trace (expected Chrome 'traceEvents' or an XSpace with 'planes')"
    )


def _looks_like_json(data: bytes) -> bool:
    head = data[:64].lstrip()
    return head.startswith((b"{", b"["))


def _parse_json(path: Path, data: bytes) -> Any:
    try:
        return json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise UserError(
            f"{path}: invalid JSON ({error}); the file is truncated or not a trace"
        ) from None
