"""Multi-host logdirs: each host's `.xplane.pb` read apart (a map), merged in host order (a reduce).

Multi-worker training writes one `plugins/profile/<run>/<host>.xplane.pb` per
host. The serial reader (`tfpgo.trace.readers.read_trace`) feeds them one after the
other into one `TableBuilder`; here each file is read on its own into a
`HostPart` (the host's event columns with exact durations, its names and tracks
numbered locally, its stats, flows, step markers and XLA modules), in a process
pool or on a Dask cluster, and `merge_parts` replays the parts into one builder
in the serial order. Every id, index and time then comes out as the serial read
gives it, so the event table, and everything built from it (DAG, op profile
with its percentiles, HLO profile), is identical: the merge is of events, not of
summaries, and nothing is rounded.

Times: the serial read counts every host from the earliest line of the first
file (`base_ns`); a part counts from its own, and the merge shifts it by the
difference, in integers.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import multiprocessing
import os
import urllib.parse
from pathlib import Path

from tfpgo.cli import positive_int
from tfpgo.errors import UserError
from tfpgo.trace.events import EventTable
from tfpgo.trace.host_parts import HostPart, HostReading, merge_parts, read_host, report_part
from tfpgo.trace.readers import (
    build_table,
    logdir_source,
    paused_gc,
    read_trace,
    require_events,
    resolve_xplanes,
)
from tfpgo.trace.readers.base import Progress

# Below this many bytes of host files the default reads serially: a spawned worker
# costs ~0.5 s of start-up and imports, about what reading 3 MB of XPlane takes.
POOL_MIN_BYTES = 16 * 1024 * 1024


def read_logdir_trace(
    path: Path,
    run: str | None = None,
    progress: Progress | None = None,
    reading: HostReading | None = None,
) -> EventTable:
    """`tfpgo.trace.readers.read_trace`, with the hosts of a multi-host logdir read in
    parallel (local processes, or the Dask cluster `reading.scheduler`)."""
    reading = reading or HostReading()
    if not path.is_dir():
        return read_trace(path, run, progress)
    files = resolve_xplanes(path, run)
    workers = _local_workers(reading, files)
    if reading.scheduler is None and workers <= 1:
        return read_trace(path, run, progress)
    source = logdir_source(files)
    if reading.scheduler is not None:
        from tfpgo.trace.hosts_dask import read_on_cluster

        parts = read_on_cluster(files, source, reading, progress)
    else:
        parts = _read_in_processes(files, source, workers, progress)
    with paused_gc():
        return require_events(build_table(merge_parts(parts, source)), path)


def _local_workers(reading: HostReading, files: list[Path]) -> int:
    """`reading.workers` if given; by default one per host up to the CPU count, or
    1 (serial) when the files are too small to repay starting processes."""
    if reading.workers is not None:
        if reading.workers < 1:
            raise UserError(f"--host-workers must be at least 1 (got {reading.workers})")
        return min(len(files), reading.workers)
    if sum(_size(f) for f in files) < POOL_MIN_BYTES:
        return 1
    return min(len(files), os.cpu_count() or 1)


def _size(file: Path) -> int:
    try:
        return file.stat().st_size
    except OSError:
        return 0  # the reader names the file and the reason


def _read_in_processes(
    files: list[Path], source: str, workers: int, progress: Progress | None
) -> list[HostPart]:
    """Reads every file in a pool of `workers` fresh processes ("spawn": safe in a
    process that has started threads, as the flow's TensorFlow has)."""
    context = multiprocessing.get_context("spawn")
    parts: list[HostPart | None] = [None] * len(files)
    with concurrent.futures.ProcessPoolExecutor(workers, mp_context=context) as pool:
        pending = {pool.submit(read_host, str(f), source): i for i, f in enumerate(files)}
        try:
            for done in concurrent.futures.as_completed(pending):
                index = pending[done]
                parts[index] = _result(done, files[index])
                report_part(progress, parts[index])
        except BaseException:
            for future in pending:
                future.cancel()
            raise
    return [part for part in parts if part is not None]


def _result(future: concurrent.futures.Future[HostPart], file: Path) -> HostPart:
    try:
        return future.result()
    except concurrent.futures.process.BrokenProcessPool:
        raise UserError(
            f"{file}: the process reading this host died (out of memory?); "
            "retry with fewer --host-workers"
        ) from None


_SCHEDULER_SCHEMES = ("tcp", "tls", "ucx", "inproc", "ws", "wss")


def scheduler_address(text: str) -> str:
    """argparse type: a Dask scheduler address, [SCHEME://]HOST[:PORT]."""
    parts = urllib.parse.urlsplit(text if "://" in text else f"tcp://{text}")
    try:
        port = parts.port or 0  # raises for a port that is no number, or out of range
    except ValueError:
        port = -1
    if parts.scheme not in _SCHEDULER_SCHEMES or not parts.hostname or port < 0:
        raise argparse.ArgumentTypeError(
            "not a Dask scheduler address; give [tcp://]HOST[:PORT], e.g. tcp://10.0.0.1:8786"
        )
    return text


def add_host_reading_arguments(parser: argparse.ArgumentParser) -> None:
    """`--scheduler` and `--host-workers`, shared by trace_reader and the flow."""
    group = parser.add_argument_group("multi-host logdirs (one .xplane.pb per host)")
    group.add_argument(
        "--scheduler",
        type=scheduler_address,
        metavar="ADDRESS",
        help="read the hosts on the Dask distributed cluster whose scheduler is at ADDRESS "
        "(e.g. tcp://10.0.0.1:8786); its workers must import tfpgo and see the logdir at "
        "the same path. Default: local processes. The result is the same either way. "
        "With //:pgo's --tune, its candidates also compile there (measured here)",
    )
    group.add_argument(
        "--host-workers",
        type=positive_int,
        metavar="N",
        help="local processes reading hosts (default: one per host up to the CPU count "
        "when the host files hold 16 MB or more, else 1; 1 reads them one after the other "
        "in this process)",
    )
    group.add_argument(
        "--scheduler-timeout",
        type=float,
        default=HostReading.connect_timeout_s,
        metavar="S",
        help="with --scheduler: give up connecting, or waiting for a worker, after S seconds "
        "(default: %(default)g)",
    )


def host_reading_from_args(args: argparse.Namespace) -> HostReading:
    if not args.scheduler_timeout > 0:  # nan too
        raise UserError(
            f"--scheduler-timeout {args.scheduler_timeout:g}: must be a positive number of "
            f"seconds (default {HostReading.connect_timeout_s:g})"
        )
    return HostReading(args.host_workers, args.scheduler, args.scheduler_timeout)
