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

import uuid
from pathlib import Path
from typing import Any

from tfpgo.dask_cluster import connect, import_distributed, task_failure
from tfpgo.errors import UserError
from tfpgo.trace.host_parts import HostPart, HostReading, read_host, report_part
from tfpgo.trace.readers.base import Progress


def read_on_cluster(
    files: list[Path], source: str, reading: HostReading, progress: Progress | None
) -> list[HostPart]:
    """Every file read by a task on the cluster at `reading.scheduler`, in file order."""
    distributed = import_distributed()
    address = reading.scheduler
    client = connect(address, reading.connect_timeout_s, read_host.__module__)
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


def _result(future: Any, file: Path, address: str | None) -> HostPart:
    try:
        part = future.result()
    except UserError:
        raise
    except Exception as error:
        raise UserError(
            f"{file}: reading on the Dask cluster at {address} failed {task_failure(error)}"
        ) from None
    assert isinstance(part, HostPart)
    return part
