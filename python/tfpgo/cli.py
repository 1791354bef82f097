"""What every tfpgo command line shares: user paths, flag types, one-line errors.

`bazel run` starts tools in the runfiles tree; the user's shell directory is in
BUILD_WORKING_DIRECTORY. Relative paths the user gives, and default outputs,
are taken relative to that directory so `bazel run //tools:x -- a.json` means
the `a.json` the user sees.
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn

from tfpgo.errors import UserError


def working_directory() -> Path:
    """The directory the user ran the command from (also under `bazel run`)."""
    return Path(os.environ.get("BUILD_WORKING_DIRECTORY") or os.getcwd())


def user_path(path: str | os.PathLike[str]) -> Path:
    """Resolves a path given by the user against their working directory."""
    expanded = Path(path).expanduser()
    if expanded.is_absolute():
        return expanded
    return working_directory() / expanded


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


def nonnegative_int(text: str) -> int:
    """argparse type: an integer of at least 0."""
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError("must not be negative")
    return value


def port_number(text: str) -> int:
    """argparse type: a TCP port, 1 to 65535."""
    value = int(text)
    if not 1 <= value <= 65535:
        raise argparse.ArgumentTypeError("must be a TCP port from 1 to 65535")
    return value


def check_port_free(port: int, flag: str = "--port", host: str = "127.0.0.1") -> None:
    """One error line if `host`:`port` cannot be listened on ("": every interface),
    checked before any work (a server would fail later with its own message, or
    quietly take another port)."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as servers do
            probe.bind(address)
    except OSError as error:
        raise UserError(
            f"{flag} {port}: cannot listen on {host or '*'}:{port} ({error.strerror}); "
            f"choose a free port with {flag}"
        ) from None


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
