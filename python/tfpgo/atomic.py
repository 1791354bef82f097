"""Atomic output: a file or directory appears whole or not at all.

Every output is written to a temporary sibling and renamed over its final name
when complete, so a failure never leaves half a document behind.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from tfpgo.errors import UserError


def current_umask() -> int:
    """The process umask (reading it means setting it: set back at once)."""
    mask = os.umask(0)
    os.umask(mask)
    return mask


def check_output_path(path: Path, flag: str, directory: bool = False) -> None:
    """One error line, before any work, when `path` (a file, or with `directory` a
    directory) could not be written: it exists as the other kind, or the nearest
    existing folder above it is a file or is not writable."""
    if directory and path.exists() and not path.is_dir():
        raise UserError(f"{flag} {path}: exists and is not a directory; name a new directory")
    if not directory and path.is_dir():
        raise UserError(f"{flag} {path}: is a directory; name a file to write")
    above = path.parent
    while not above.exists() and above != above.parent:
        above = above.parent
    if not above.is_dir():
        raise UserError(
            f"{flag} {path}: {above} is a file, not a directory; name a path in a directory"
        )
    if not os.access(above, os.W_OK | os.X_OK):
        raise UserError(f"{flag} {path}: cannot write in {above}; name a writable directory")


@contextlib.contextmanager
def staged_file(path: Path) -> Iterator[Path]:
    """A temporary sibling of `path` to write (here or on a thread); renamed over
    `path` when the block succeeds, removed when it fails. Whoever writes it must
    have finished when the block ends. Readers never see half a document."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    os.close(fd)
    staged = Path(tmp_name)
    try:
        yield staged
        # mkstemp creates 0600; the result gets the permissions of an ordinary file.
        os.chmod(staged, 0o666 & ~current_umask())
        os.replace(staged, path)
    except BaseException:
        staged.unlink(missing_ok=True)
        raise


@contextlib.contextmanager
def atomic_output_file(path: Path, mode: str = "w") -> Iterator[IO[Any]]:
    """`path` opened through a staged file (`staged_file`): it appears whole or not
    at all."""
    with staged_file(path) as staged, open(staged, mode) as handle:
        yield handle


@contextlib.contextmanager
def atomic_output_dir(path: Path) -> Iterator[Path]:
    """Yields a staging directory that replaces `path` only when the block succeeds."""
    if path.exists() and not path.is_dir():
        raise UserError(f"{path}: exists and is not a directory; name a new directory")
    path.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{path.name}.", dir=path.parent))
    try:
        yield staging
        os.chmod(staging, 0o777 & ~current_umask())  # mkdtemp creates 0700
        if path.exists():
            retired = Path(tempfile.mkdtemp(prefix=f".{path.name}.old.", dir=path.parent))
            os.replace(path, retired / path.name)
            os.replace(staging, path)
            shutil.rmtree(retired, ignore_errors=True)
        else:
            os.replace(staging, path)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
