"""What every trace reader shares: the input it is shown and the interface it offers.

A reader is a `TraceReader`: `accepts` looks at the content (never the file
name) and says whether this is its format; `read` appends the events to a
`TableBuilder`. Readers register in `tfpgo.trace.readers.READERS`, which asks
each in turn, so a new format is one module plus one line there.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tfpgo.errors import UserError
from tfpgo.trace.events import TableBuilder

Progress = Callable[[str], None]


class TraceInput:
    """One trace file as the readers see it: its first bytes to decide on, the
    whole content only for a reader that asks (an XSpace is decoded from its
    path, never read whole), and its JSON document parsed at most once."""

    def __init__(self, path: Path, head: bytes, data: bytes | None = None) -> None:
        self.path = path
        self._data = data  # the content when already in memory (a gunzipped file)
        self.looks_like_json = head[:64].lstrip().startswith((b"{", b"["))

    def take_bytes(self) -> bytes:
        """The whole content, handed over: the reader that decodes it owns it."""
        data, self._data = self._data, None
        if data is not None:
            return data
        try:
            return self.path.read_bytes()
        except OSError as error:
            raise UserError(f"{self.path}: cannot read: {error.strerror}") from None

    @functools.cached_property
    def document(self) -> Any:
        """The parsed JSON document (None when the content is not JSON text)."""
        if not self.looks_like_json:
            return None
        try:
            return json.loads(self.take_bytes())
        except (UnicodeDecodeError, json.JSONDecodeError) as error:
            raise UserError(
                f"{self.path}: invalid JSON ({error}); the file is truncated or not a trace"
            ) from None
        except RecursionError:
            raise UserError(
                f"{self.path}: JSON nested too deeply to be a trace; the file is damaged"
            ) from None


@dataclass(frozen=True)
class TraceReader:
    kind: str  # the event table's `kind`: which reader made it
    describe: str  # what it reads, for the error when no reader accepts a file
    accepts: Callable[[TraceInput], bool]
    read: Callable[[TraceInput, TableBuilder, Progress | None], None]
