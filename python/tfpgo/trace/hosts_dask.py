"""The map of a multi-host logdir (`tfpgo.trace.hosts`) on a Dask distributed
cluster (`--scheduler ADDRESS`).

Each host file is one task running `tfpgo.trace.host_parts.read_host` on a worker; the
parts come back to this process, which merges them in host-file order exactly as
the local pool's parts are merged. Workers read the files themselves, so the
logdir must be at the same path on them (a shared file system), and they must
import tfpgo (installed, or on their PYTHONPATH). Imported only when a scheduler
is given: Dask is needed for nothing else.
"""

from __future__ import annotations

import importlib.util
import uuid
from pathlib import Path
from typing import Any

from tfpgo.errors import UserError
from tfpgo.trace.host_parts import HostPart, HostReading, read_host, report_part
from tfpgo.trace.readers.base import Progress

_INSTALL = "install tfpgo on the workers and the scheduler, or put it on their PYTHONPATH"


def read_on_cluster(
    files: list[Path], source: str, reading: HostReading, progress: Progress | None
) -> list[HostPart]:
    """Every file read by a task on the cluster at `reading.scheduler`, in file order."""
    distributed = _import_distributed()
    address = reading.scheduler
    client = _connect(distributed, address, reading.connect_timeout_s)
    with client:
        if progress:
            progress(f"reading {len(files)} hosts on the Dask cluster at {address}")
        run = uuid.uuid4().hex[:8]
        futures = [
            client.submit(read_host, str(file.absolute()), source, key=f"tfpgo-read-host-{run}-{i}")
            for i, file in enumerate(files)
        ]
        index = {future.key: i for i, future in enumerate(futures)}
        parts: list[HostPart | None] = [None] * len(files)
        try:
            for done in distributed.as_completed(futures, loop=client.loop):
                i = index[done.key]
                parts[i] = _result(done, files[i], address)
                report_part(progress, parts[i])
        except BaseException:
            client.cancel(futures)
            raise
    return [part for part in parts if part is not None]


def _import_distributed() -> Any:
    try:
        import distributed
    except ImportError:
        raise UserError(
            "--scheduler needs Dask distributed: pip install the dask and distributed "
            "pins of requirements.txt"
        ) from None
    return distributed


def _connect(distributed: Any, address: str | None, timeout_s: float) -> Any:
    """A client of the scheduler with at least one worker, or one UserError line."""
    try:
        client = distributed.Client(
            address, timeout=timeout_s, set_as_default=False, direct_to_workers=False
        )
    except (OSError, TimeoutError, ValueError) as error:
        raise UserError(
            f"--scheduler {address}: cannot reach the Dask scheduler within {timeout_s:g} s "
            f"({_reason(error)})"
        ) from None
    try:
        client.wait_for_workers(1, timeout=timeout_s)
    except (OSError, TimeoutError) as error:
        client.close()
        raise UserError(
            f"--scheduler {address}: the scheduler has no worker after {timeout_s:g} s "
            f"({_reason(error)}); start some with `dask worker {address}`"
        ) from None
    _check_workers_import_tfpgo(client, address)
    return client


def _check_workers_import_tfpgo(client: Any, address: str | None) -> None:
    """Fails unless every worker finds tfpgo: a task a worker cannot unpickle is
    retried, not failed, so without this check the read would wait forever.
    The probe is a standard-library function, which every worker can unpickle."""
    try:
        specs = client.run(importlib.util.find_spec, "tfpgo.trace.host_parts")
        reason = ", ".join(sorted(worker for worker, spec in specs.items() if spec is None))
    except Exception as error:
        reason = _reason(error)
    if not reason:
        return
    client.close()
    raise UserError(
        f"--scheduler {address}: workers of the Dask cluster cannot import tfpgo ({reason}); "
        f"{_INSTALL}"
    )


def _result(future: Any, file: Path, address: str | None) -> HostPart:
    try:
        part = future.result()
    except UserError:
        raise
    except Exception as error:
        environment = isinstance(error, ImportError) or "deserializ" in str(error)
        raise UserError(
            f"{file}: reading on the Dask cluster at {address} failed ({_reason(error)})"
            + (f"; {_INSTALL}" if environment else "")
        ) from None
    assert isinstance(part, HostPart)
    return part


def _reason(error: BaseException) -> str:
    text = " ".join(str(error).split())
    return f"{type(error).__name__}: {text}" if text else type(error).__name__
