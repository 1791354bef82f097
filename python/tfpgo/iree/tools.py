"""IREE's tools as tfpgo runs them: every run under a timeout and tried twice, and a
compile already made in this process copied instead of made again.

IREE 3.13's iree-compile now and then deadlocks (README, "IREE's intermittent
compile hang"): the same command finishes when run again. So `run_tool`, the one
place that starts IREE's tools, kills a run at its timeout and starts it once
more, and never lets a run outlast the deadline of the stage it runs in
(`tools_deadline`: `--tune`'s budget plus one measurement). The timeout is the
caller's (a tuning compile: a few times what the original's took) or
TOOL_TIMEOUT_S; $TFPGO_IREE_TIMEOUT_S (seconds) replaces both, for a machine
slower than they assume, and for tests. Tools are found as iree.compiler finds
its own: `$IREE_TOOL_PATH` first (the runtime's tools too), then the wheels.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, nullcontext
from contextvars import ContextVar
from pathlib import Path

from tfpgo.errors import UserError

# A run's timeout when its caller gives none: the first compile of the whole model,
# a run of it, its profile. Far above any of those measured here (a whole-model
# compile takes minutes for ResNet50), and a hang still ends the flow with one line.
TOOL_TIMEOUT_S = 1800.0
TIMEOUT_VARIABLE = "TFPGO_IREE_TIMEOUT_S"
TOOL_PATH_VARIABLE = "IREE_TOOL_PATH"  # iree.compiler's own
TRIES = 2  # a run killed at its timeout is started once more
# Tools of the compiler wheel (iree-base-compiler); the rest are the runtime's.
_COMPILER_TOOLS = frozenset({"iree-compile", "iree-opt"})
# The deadline of the stage running (a time.monotonic() value) and what it is.
_DEADLINE: ContextVar[tuple[float, str] | None] = ContextVar("tfpgo_iree_deadline", default=None)
# Outputs compiled in this process, by what they were compiled from (`_digest`), with
# their size and modification time then (a file changed since is not reused).
_COMPILED: dict[str, tuple[Path, int, int]] = {}


class ToolTimeout(UserError):
    """An IREE tool killed at its timeout on every try, or at its stage's deadline."""


class ToolFailed(UserError):
    """An IREE tool that exited with an error: which `tool`, and the first line of
    its error output (`detail`), for a caller that knows a cause to name."""

    def __init__(self, what: str, tool: str, detail: str) -> None:
        super().__init__(f"{what}: {tool} failed: {detail}")
        self.what, self.tool, self.detail = what, tool, detail

    def __reduce__(self) -> tuple[type[ToolFailed], tuple[str, str, str]]:
        # As it was made: a Dask worker's failure crosses to the client pickled.
        return ToolFailed, (self.what, self.tool, self.detail)


@contextmanager
def tools_deadline(deadline: float | None, what: str) -> Iterator[None]:
    """No IREE tool run inside the block outlasts `deadline` (a time.monotonic()
    value; None: no deadline), `what` ("--tune-budget (600 s) and ..."), which the
    error line names. A deadline inside another never extends it."""
    outer = _DEADLINE.get()
    if deadline is None or (outer is not None and outer[0] <= deadline):
        yield
        return
    token = _DEADLINE.set((deadline, what))
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def deadline_left() -> tuple[float, str] | None:
    """Seconds left until the deadline of the stage running, and what it is (None:
    no deadline); for a process that runs tools elsewhere (a Dask worker)."""
    current, left = _DEADLINE.get(), _seconds_left()
    return None if current is None or left is None else (left, current[1])


def tool_timeout_s(asked: float | None = None) -> float:
    """A run's timeout: `asked` or TOOL_TIMEOUT_S, $TFPGO_IREE_TIMEOUT_S instead of
    either when set (the stage's deadline aside)."""
    override = os.environ.get(TIMEOUT_VARIABLE)
    if override:
        try:
            return float(override)
        except ValueError:
            raise UserError(f"{TIMEOUT_VARIABLE}={override}: not a number of seconds") from None
    return TOOL_TIMEOUT_S if asked is None else asked


def run_tool(
    tool: str,
    args: Sequence[str],
    what: str,
    timeout_s: float | None = None,
    stderr_file: Path | None = None,
    cwd: Path | None = None,
) -> str:
    """Runs one of IREE's tools and returns its output; a failure is one UserError
    line. A run is killed at its timeout (`tool_timeout_s(timeout_s)`) and started
    once more, and killed at the stage's deadline; killed on both tries, or at the
    deadline, it is one ToolTimeout line. `stderr_file` takes what the tool
    writes to stderr (MLIR's IR dumps), too much to hold in memory; `cwd` is the
    directory it runs in (relative paths in `args` are from there)."""
    command = [_executable(tool, what), *args]
    return run_command(command, tool, what, timeout_s, stderr_file=stderr_file, cwd=cwd)


def run_command(
    command: Sequence[str],
    tool: str,
    what: str,
    timeout_s: float | None = None,
    env: Mapping[str, str] | None = None,
    beyond_s: float = 0.0,
    stderr_file: Path | None = None,
    cwd: Path | None = None,
) -> str:
    """`run_tool` for a command line of its own (`tool` names it in messages), in
    `env` (default: this process's): the same timeouts, second try and deadline;
    the timeout is `beyond_s` more (the seconds the command is asked to run for)."""
    args = command[1:]
    limit = tool_timeout_s(timeout_s) + beyond_s
    for _ in range(TRIES):
        left = _seconds_left()
        if left is not None and left <= 0:
            break
        try:
            to = stderr_file.open("w") if stderr_file else nullcontext(subprocess.PIPE)
            with to as errors:
                done = subprocess.run(
                    command,
                    stdout=subprocess.PIPE,
                    stderr=errors,
                    text=True,
                    check=False,
                    timeout=limit if left is None else min(limit, left),
                    env=env,
                    cwd=cwd,
                )
        except subprocess.TimeoutExpired:
            continue  # killed: the deadlock is intermittent, so once more
        if done.returncode != 0:
            stderr = done.stderr if stderr_file is None else _tail(stderr_file)
            lines = [line for line in stderr.splitlines() if "error" in line.lower()]
            detail = (lines or stderr.strip().splitlines() or ["no message"])[0].strip()
            raise ToolFailed(what, tool, detail)
        return done.stdout
    subject = _subject(args)
    on = f" on {subject}" if subject else ""
    current = _DEADLINE.get()
    left = _seconds_left()
    if current is not None and left is not None and left <= 0:
        raise ToolTimeout(f"{what}: {tool}{on} was stopped: {current[1]} ran out")
    raise ToolTimeout(
        f"{what}: {tool}{on} did not finish in {_seconds(limit)}, killed both times it "
        "was tried; IREE 3.13's compiler now and then deadlocks: run it again, or set "
        f"{TIMEOUT_VARIABLE} to more seconds if IREE is only this slow here"
    )


def _tail(path: Path, size: int = 65536) -> str:
    """The last `size` bytes of a file, where a failing tool's message is."""
    with path.open("rb") as stream:
        stream.seek(max(path.stat().st_size - size, 0))
        return stream.read().decode(errors="replace")


def _seconds_left() -> float | None:
    current = _DEADLINE.get()
    return None if current is None else current[0] - time.monotonic()


def _seconds(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds >= 10 else f"{seconds:.2g} s"


def _subject(args: Sequence[str]) -> str:
    """The file a run works on: its module, or its first argument that is a file."""
    for arg in args:
        value = arg.removeprefix("--module=")
        if not value.startswith("-") and _is_file(value):
            return value
    return ""


def _is_file(text: str) -> bool:
    """Whether `text` names a file (a flag's value may be no path at all: a list of
    CPU features longer than a file name may be)."""
    try:
        return bool(text) and Path(text).is_file()
    except (OSError, ValueError):
        return False


def _executable(tool: str, what: str) -> str:
    try:
        if tool in _COMPILER_TOOLS:
            from iree.compiler.tools.binaries import find_tool

            return find_tool(tool)  # $IREE_TOOL_PATH first
        return runtime_tool(tool)
    except Exception:
        raise UserError(
            f"{what}: IREE's {tool} is not installed (pip install iree-base-compiler "
            "iree-base-runtime; see requirements.txt)"
        ) from None


def runtime_tool(tool: str) -> str:
    """A tool of the runtime wheel (iree-base-runtime ships them in its package),
    unless a directory of $IREE_TOOL_PATH has one."""
    for entry in os.environ.get(TOOL_PATH_VARIABLE, "").split(os.pathsep):
        candidate = Path(entry) / tool
        if entry and candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    import iree.runtime

    path = Path(iree.runtime.__file__).resolve().parents[1] / "_runtime_libs" / tool
    if not path.is_file():
        raise FileNotFoundError(path)
    return str(path)


def compile_once(
    tool: str,
    source: Path,
    flags: Sequence[str],
    output: Path,
    what: str,
    asked_s: float | None = None,
) -> None:
    """`tool` (iree-compile, iree-opt) run on `source` with `flags` into `output`
    (`run_tool`), unless this process made that output already (`reuse_compiled`).
    A run that fails or is killed leaves no output behind."""
    if reuse_compiled(tool, source, flags, output):
        return
    try:
        run_tool(tool, [*flags, str(source), "-o", str(output)], what, asked_s)
    except UserError:
        output.unlink(missing_ok=True)
        raise
    remember_compiled(tool, source, flags, output)


def reuse_compiled(tool: str, source: Path, flags: Sequence[str], output: Path) -> bool:
    """Whether this process made `output`'s content already, from the same bytes of
    `source`, the same flags and the same bytes of every file a flag names (a tuning
    spec), into a file unchanged since; if so it is copied to `output`. A compile
    that dumps files besides its output (`-dump-` flags) is never reused."""
    key = _digest(tool, source, flags)
    made = _COMPILED.get(key) if key else None
    if made is None or not _unchanged(made):
        return False
    if made[0] != output:
        output.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(made[0], output)
    return True


def remember_compiled(tool: str, source: Path, flags: Sequence[str], output: Path) -> None:
    """Records that `output` was made from `source` with `flags` (`reuse_compiled`)."""
    key = _digest(tool, source, flags)
    if key and output.is_file():
        stat = output.stat()
        _COMPILED[key] = (output, stat.st_size, stat.st_mtime_ns)


def _unchanged(made: tuple[Path, int, int]) -> bool:
    path, size, modified = made
    return path.is_file() and (path.stat().st_size, path.stat().st_mtime_ns) == (size, modified)


def _digest(tool: str, source: Path, flags: Sequence[str]) -> str | None:
    if any("-dump-" in flag for flag in flags):
        return None
    digest = hashlib.sha256(tool.encode())
    digest.update(source.read_bytes())
    for flag in flags:
        digest.update(b"\0" + flag.encode())
        named = flag.partition("=")[2]
        if _is_file(named):
            digest.update(Path(named).read_bytes())
    return digest.hexdigest()
