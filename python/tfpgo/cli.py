"""What every tfpgo command line shares: user paths, one-line errors, atomic output.

`bazel run` starts tools in the runfiles tree; the user's shell directory is in
BUILD_WORKING_DIRECTORY. Relative paths the user gives, and default outputs,
are taken relative to that directory so `bazel run //tools:x -- a.json` means
the `a.json` the user sees.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any, NoReturn


class UserError(Exception):
    """A problem with the user's input: reported as one line, exit status 1."""


def working_directory() -> Path:
    """The directory the user ran the command from (also under `bazel run`)."""
    return Path(os.environ.get("BUILD_WORKING_DIRECTORY") or os.getcwd())


def user_path(path: str | os.PathLike[str]) -> Path:
    """Resolves a path given by the user against their working directory."""
    expanded = Path(path).expanduser()
    if expanded.is_absolute():
        return expanded
    return working_directory() / expanded


def current_umask() -> int:
    """The process umask (reading it means setting it: set back at once)."""
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def atomic_output_file(path: Path, mode: str = "w") -> Iterator[IO[Any]]:
    """Opens a temporary sibling of `path` and renames it over `path` on success.

    A failure leaves no partial file behind: readers never see half a document.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, mode) as handle:
            yield handle
        # mkstemp creates 0600; the result gets the permissions of an ordinary file.
        os.chmod(tmp_name, 0o666 & ~current_umask())
        os.replace(tmp_name, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp_name)
        raise


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


class ArgumentParser(argparse.ArgumentParser):
    """argparse with the one-line errors of every other tfpgo failure: a bad
    flag prints `prog: error: ...` and where the flags are, not the usage block."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (--help lists every flag)\n")


def positive_int(text: str) -> int:
    """argparse type: an integer of at least 1."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def fraction(text: str) -> float:
    """argparse type: a share between 0 and 1."""
    value = float(text)
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError("must be a fraction between 0 and 1 (0.05 = 5%)")
    return value


def run_main(
    main: Callable[[list[str]], int | None], argv: list[str] | None = None, prog: str | None = None
) -> int:
    """Runs a CLI entry point, turning UserError into one line on stderr.

    Returns the exit status instead of exiting so tests can call CLIs in-process.
    """
    prog = prog or Path(sys.argv[0]).name
    try:
        return main(sys.argv[1:] if argv is None else argv) or 0
    except UserError as error:
        print(f"{prog}: error: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
