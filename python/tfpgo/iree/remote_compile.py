"""`--tune --scheduler ADDRESS`: the candidates' whole programs compiled on the
workers of a Dask distributed cluster, and measured here.

Compiling a candidate's whole program (minutes for ResNet50) is the part of the
tuning loop another machine can do; measuring it is not: the A/B times it on the
machine it is tuned for, one program at a time. So each compile is one task.
The StableHLO and every file a flag names (a tuning spec) go to the worker as
bytes, because workers share no file system with this machine. The worker runs
`iree_run.compile_vmfb` (the same timeout and retry, and no later than the
deadline of the stage here: `tools.tools_deadline`) in a directory of its own,
and the vmfb's bytes come back, written atomically where a local compile would
have written it, and remembered as a local compile's would be (a kept
candidate's re-profile copies it). It is then checked and timed here like any
other.

`--iree-llvmcpu-target-cpu=host` would target the worker's CPU, so the CPU is
resolved here, once (`host_target`), and named explicitly after IREE_FLAGS
(iree-compile takes the last of a repeated flag). The executables then target
exactly what `host` gives here: only the input's path, which the vmfb records,
differs from a local compile.

Workers must import tfpgo and run this machine's version of IREE's compiler.
Both are checked before any task is sent: a worker that cannot unpickle a task
retries it forever, and another compiler version would compile other code.

Candidates compile one after another. Each is proposed from the program the one
before left (kept or not), so the next one cannot be compiled while the current
one is measured.
"""

from __future__ import annotations

import importlib.metadata
import tempfile
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

from tfpgo.atomic import staged_file
from tfpgo.dask_cluster import ClusterError, connect, task_failure
from tfpgo.errors import UserError
from tfpgo.iree import run as iree_run
from tfpgo.iree import tools
from tfpgo.iree.compiled_source import compiled_source
from tfpgo.iree.target import host_target

_COMPILER = "iree-base-compiler"


class ClusterCompiler:
    """`compile_vmfb` on the workers of the cluster at `address`, for this
    machine's CPU; a context manager that holds the connection."""

    def __init__(self, address: str, timeout_s: float) -> None:
        self.address = address
        self._target = host_target()
        self._client = connect(address, timeout_s, compile_on_worker.__module__)
        try:
            _check_workers_compiler(self._client, address)
        except BaseException:
            self._client.close()
            raise

    def __enter__(self) -> ClusterCompiler:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._client.close()

    def compile_vmfb(
        self, stablehlo: Path, vmfb: Path, flags: Sequence[str] = (), timeout_s: float | None = None
    ) -> None:
        """`iree_run.compile_vmfb`, run on a worker. The program's own compile
        errors (and timeouts) are its UserError; a cluster that fails is a
        ClusterError. A program compiled already is copied (`tools.compile_once`)."""
        stablehlo = compiled_source(stablehlo)
        keyed_on = [*iree_run.IREE_FLAGS, *flags]  # as a local compile_vmfb is
        if tools.reuse_compiled("iree-compile", stablehlo, keyed_on, vmfb):
            return
        files = {}  # a flag's value that is a file here (a tuning spec) goes with it
        for index, flag in enumerate(flags):
            value = Path(flag.partition("=")[2])
            if value.name and value.is_file():
                files[index] = (value.name, value.read_bytes())
        program = future = None
        try:
            program = self._client.scatter(stablehlo.read_bytes(), hash=False)
            future = self._client.submit(
                compile_on_worker,
                program,
                stablehlo.name,
                (*flags, *self._target.flags()),
                files,
                timeout_s,
                tools.deadline_left(),
                key=f"tfpgo-compile-{stablehlo.stem}-{uuid.uuid4().hex[:8]}",
                pure=False,
            )
            data = future.result()
        except UserError:
            raise
        except Exception as error:
            raise ClusterError(
                f"--scheduler {self.address}: compiling {stablehlo} on the Dask cluster "
                f"failed {task_failure(error)}"
            ) from None
        finally:  # the program and the vmfb are not kept on the cluster
            self._client.cancel([sent for sent in (program, future) if sent is not None])
        with staged_file(vmfb) as staged:
            staged.write_bytes(data)
        tools.remember_compiled("iree-compile", stablehlo, keyed_on, vmfb)


def compile_on_worker(
    program: bytes,
    name: str,
    flags: Sequence[str],
    files: dict[int, tuple[str, bytes]],
    timeout_s: float | None,
    left: tuple[float, str] | None = None,
) -> bytes:
    """The task: `program` (the StableHLO file `name`) compiled with `flags`, whose
    flag at each index of `files` names that file (name, bytes): all written to a
    directory of this worker's own first; within `left` (seconds, and what they
    are: `tools.deadline_left` where the task was sent). Returns the vmfb's bytes."""
    until = None if left is None else time.monotonic() + left[0]
    with tempfile.TemporaryDirectory(prefix="tfpgo-compile-") as scratch:
        directory = Path(scratch)
        here = list(flags)
        for index, (file_name, data) in files.items():
            path = directory / f"flag_{index}" / file_name
            path.parent.mkdir()
            path.write_bytes(data)
            here[index] = f"{flags[index].partition('=')[0]}={path}"
        stablehlo = directory / name
        stablehlo.write_bytes(program)
        vmfb = directory / "program.vmfb"
        with tools.tools_deadline(until, left[1] if left else ""):
            iree_run.compile_vmfb(stablehlo, vmfb, here, timeout_s)
        return vmfb.read_bytes()


def _check_workers_compiler(client: Any, address: str) -> None:
    """Fails unless every worker has this machine's version of IREE's compiler."""
    wanted = importlib.metadata.version(_COMPILER)
    found = client.run(importlib.metadata.version, _COMPILER, on_error="return")
    wrong = {
        worker: "none" if isinstance(version, BaseException) else version
        for worker, version in found.items()
        if version != wanted
    }
    if wrong:
        listed = ", ".join(f"{worker}: {version}" for worker, version in sorted(wrong.items()))
        raise UserError(
            f"--scheduler {address}: workers of the Dask cluster do not have this machine's "
            f"IREE compiler, {_COMPILER} {wanted} ({listed}); pip install "
            f"{_COMPILER}=={wanted} on them (the pin of requirements.txt)"
        )
