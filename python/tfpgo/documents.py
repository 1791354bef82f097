"""Reading tfpgo's versioned JSON documents (docs/formats.md), one way for all.

Every interchange file names its `format` and `version` (at the top level, or in
`meta` for the event DAG). Readers parse it here, so a missing file, bad JSON, a
different document or a newer version give the same one-line errors everywhere.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tfpgo.atomic import atomic_output_file
from tfpgo.errors import UserError

# Newest version read, per format; formats not listed are at version 1.
SUPPORTED_VERSIONS = {"tfpgo.op_profile": 3, "tfpgo.hlo_profile": 2}


def read_json(path: Path) -> Any:
    """Parses a JSON file, turning every I/O or syntax problem into a UserError."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise UserError(f"{path}: no such file") from None
    except OSError as error:
        raise UserError(f"{path}: cannot read: {error.strerror or error}") from None
    try:
        return json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise UserError(f"{path}: not valid JSON ({error})") from None
    except RecursionError:  # arrays or objects nested deeper than Python's stack
        raise UserError(f"{path}: not valid JSON (nested too deeply)") from None


def write_compact_json(
    path: Path, document: Any, default: Callable[[Any], Any] | None = None
) -> None:
    """Writes `document` as one compact JSON line, atomically (no half-written file);
    `default` encodes what json cannot (see json.dumps)."""
    with atomic_output_file(path) as handle:
        # one dumps call: json.dump would issue a write per token
        handle.write(json.dumps(document, separators=(",", ":"), default=default) + "\n")


def new_header(fmt: str, version: int, source: str) -> dict[str, Any]:
    """The fields every tfpgo document opens with (times are integer picoseconds)."""
    return {"format": fmt, "version": version, "time_unit": "ps", "source": source}


def document_header(path: Path | str, document: Any) -> tuple[str, int]:
    """Returns (format, version) from `meta` (event DAG) or the top level (others)."""
    if not isinstance(document, dict):
        raise UserError(f"{path}: expected a JSON object, got {type(document).__name__}")
    meta = document.get("meta")
    header: dict[str, Any] = meta if isinstance(meta, dict) else document
    fmt, version = header.get("format"), header.get("version")
    if not isinstance(fmt, str):
        raise UserError(
            f"{path}: no 'format' field; expected an event DAG (mlir_graph.json), "
            "an op graph (op_graph.json) or an op profile (see docs/formats.md)"
        )
    if not fmt.isprintable():  # quoted, so the error stays one line
        fmt = repr(fmt)
    if not isinstance(version, int) or isinstance(version, bool):
        raise UserError(f"{path}: '{fmt}' document without an integer 'version'")
    supported = SUPPORTED_VERSIONS.get(fmt, 1)
    if version > supported:
        raise UserError(
            f"{path}: {fmt} version {version} is newer than this tool reads "
            f"({supported}); update tfpgo"
        )
    return fmt, version


def expect_format(path: Path | str, document: Any, expected: str) -> None:
    """Checks that `document` is a supported version of the `expected` format."""
    if not isinstance(document, dict):
        kind = type(document).__name__
        raise UserError(f"{path}: not a {expected} document (a JSON {kind}, not an object)")
    fmt, _ = document_header(path, document)
    if fmt != expected:
        raise UserError(f"{path}: a {fmt} document, not a {expected} document")


def read_document(path: Path, expected: str) -> dict[str, Any]:
    """Reads a JSON file that must be a supported version of `expected`."""
    document = read_json(path)
    expect_format(path, document, expected)
    return document
