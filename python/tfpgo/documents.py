"""Reading tfpgo's versioned JSON documents (docs/formats.md), one way for all.

Every interchange file names its `format` and `version` (at the top level, or in
`meta` for the event DAG). Readers parse it here (`read_versioned`), so a missing
file, bad JSON, a different document, a newer version or a malformed one give
the same one-line errors everywhere.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from tfpgo.atomic import atomic_output_file
from tfpgo.errors import UserError

# Newest version read, per format; formats not listed are at version 1.
SUPPORTED_VERSIONS = {"tfpgo.op_profile": 3, "tfpgo.hlo_profile": 2}
# What reading the fields of a document of the right format but another shape
# raises: a field missing (KeyError), of another type (TypeError, or
# AttributeError calling a dict's method on a list), a value out of range
# (ValueError, a reader's own checks).
_MALFORMED = (KeyError, TypeError, ValueError, AttributeError)
# What to do about a malformed document tfpgo wrote: it was cut short or edited.
REWRITE = "run the step that writes it again"
Parsed = TypeVar("Parsed")


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


@contextmanager
def malformed_as_error(path: Path | str, fmt: str, remedy: str = REWRITE) -> Iterator[None]:
    """Turns a field of a `fmt` document that is missing, of another type or out of
    range, as the block reads it, into one UserError line naming `path`, the
    problem and `remedy`."""
    try:
        yield
    except _MALFORMED as error:
        # one line: a TypeError can quote a key of the document, newlines and all
        detail = " ".join(str(error).split())
        raise UserError(f"{path}: malformed {fmt} document ({detail}); {remedy}") from None


def read_versioned(
    path: Path, fmt: str, parse: Callable[[dict[str, Any]], Parsed], remedy: str = REWRITE
) -> Parsed:
    """What `parse` makes of the file `path`, a supported version of `fmt`; every
    failure (no file, bad JSON, another document, a newer version, a malformed
    one) is one UserError line naming the file, the problem and what to do."""
    document = read_document(path, fmt)
    with malformed_as_error(path, fmt, remedy):
        return parse(document)
