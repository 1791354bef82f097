"""A client of an existing Dask distributed cluster (`--scheduler ADDRESS`), for
the two things tfpgo runs there: reading a logdir's hosts (`tfpgo.trace.hosts_dask`)
and compiling `--tune`'s candidates (`tfpgo.iree.remote_compile`).

Connecting, waiting for a worker and checking that the workers can import the
module whose task they will run each fail as one UserError line. Imported only
when a scheduler is given: Dask is needed for nothing else.
"""

from __future__ import annotations

import importlib.util
from typing import Any

from tfpgo.errors import UserError

INSTALL = "install tfpgo on the workers and the scheduler, or put it on their PYTHONPATH"


class ClusterError(UserError):
    """The cluster failed, not the work sent to it (a lost connection, a worker
    that died or cannot run tfpgo): nothing more can be sent, so it ends the run."""


def import_distributed() -> Any:
    try:
        import distributed
    except ImportError:
        raise UserError(
            "--scheduler needs Dask distributed: pip install the dask and distributed "
            "pins of requirements.txt"
        ) from None
    return distributed


def connect(address: str | None, timeout_s: float, module: str) -> Any:
    """A client of the scheduler with at least one worker, every worker of which
    finds `module` (the tfpgo module of the tasks to come), or one UserError line."""
    distributed = import_distributed()
    try:
        client = distributed.Client(
            address, timeout=timeout_s, set_as_default=False, direct_to_workers=False
        )
    except (OSError, TimeoutError, ValueError) as error:
        raise UserError(
            f"--scheduler {address}: cannot reach the Dask scheduler within {timeout_s:g} s "
            f"({reason(error)})"
        ) from None
    try:
        client.wait_for_workers(1, timeout=timeout_s)
    except (OSError, TimeoutError) as error:
        client.close()
        raise UserError(
            f"--scheduler {address}: the scheduler has no worker after {timeout_s:g} s "
            f"({reason(error)}); start some with `dask worker {address}`"
        ) from None
    check_workers_import(client, address, module)
    return client


def check_workers_import(client: Any, address: str | None, module: str) -> None:
    """Fails unless every worker finds `module`: a task a worker cannot unpickle is
    retried, not failed, so without this check the work would wait forever.
    The probe is a standard-library function, which every worker can unpickle."""
    try:
        specs = client.run(importlib.util.find_spec, module)
        failed = ", ".join(sorted(worker for worker, spec in specs.items() if spec is None))
    except Exception as error:
        failed = reason(error)
    if not failed:
        return
    client.close()
    raise UserError(
        f"--scheduler {address}: workers of the Dask cluster cannot import tfpgo ({failed}); "
        f"{INSTALL}"
    )


def task_failure(error: BaseException) -> str:
    """Why a task failed, in parentheses, and what to do when the workers cannot
    load tfpgo's code (an import or a deserialization that failed there)."""
    environment = isinstance(error, ImportError) or "deserializ" in str(error)
    return f"({reason(error)})" + (f"; {INSTALL}" if environment else "")


def reason(error: BaseException) -> str:
    text = " ".join(str(error).split())
    return f"{type(error).__name__}: {text}" if text else type(error).__name__
