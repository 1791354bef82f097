"""trace_reader: a trace in, the event DAG (`mlir_graph.json`) and per-op profile out,
and for XLA-compiled steps the HLO profile (`hlo_profile.json`).

Library: `run(path, dag_out=..., op_profile_out=..., filters=...)` returns the
records it wrote. CLI: `main(argv)` (flags of the reference tool,
`--path-to-trace` and `--store-output`, plus `--op-profile` and filters).
Every output is written to a staged file and takes its name only when all are
written (the DAG JSON on a thread while the profiles are computed): bad input,
or a failure on the way, leaves no file behind.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from collections.abc import Callable, Collection
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from tfpgo import cli, errors
from tfpgo.atomic import check_output_path, staged_file
from tfpgo.attribution.device_attribution import attribute_device
from tfpgo.attribution.hlo_profile import HloProfile, build_hlo_profile
from tfpgo.attribution.op_profile import OpProfile, build_op_profile
from tfpgo.attribution.xla_attribution import attribute
from tfpgo.trace.allocator import HUGE_TRACE_BYTES, return_freed_memory_early
from tfpgo.trace.dag import DagEvents, EventDag, build_dag
from tfpgo.trace.dag_json import write_dag
from tfpgo.trace.event_filter import EventFilter, parse_steps
from tfpgo.trace.events import EventTable
from tfpgo.trace.hosts import (
    HostReading,
    add_host_reading_arguments,
    host_reading_from_args,
    read_logdir_trace,
)

PROG = "trace_reader"
_PROGRESS_BYTES = 16 * 1024 * 1024  # inputs at least this big report progress
_PS_PER_US = 1_000_000


@dataclass(frozen=True)
class TraceReaderResult:
    """What one run produced; `timings_s` maps stage -> seconds."""

    source: str
    events: int
    dag: EventDag | None
    op_profile: OpProfile
    dag_path: Path | None
    op_profile_path: Path | None
    timings_s: dict[str, float] = field(default_factory=dict)
    hlo_profile: HloProfile | None = None  # None: the trace holds no HLO events
    hlo_profile_path: Path | None = None
    # Why the op profile is empty (no TF op and no HLO events); "" when it is not.
    empty_reason: str = ""


def _is_huge(path: Path) -> bool:
    """Whether the trace file, or the files under a logdir, reach HUGE_TRACE_BYTES."""
    if not path.is_dir():
        return path.is_file() and path.stat().st_size >= HUGE_TRACE_BYTES
    total = 0
    for file in path.rglob("*"):
        total += file.stat().st_size if file.is_file() else 0
        if total >= HUGE_TRACE_BYTES:
            return True
    return False


def run(
    path: Path,
    *,
    dag_out: Path | None = None,
    op_profile_out: Path | None = None,
    hlo_profile_out: Path | None = None,
    filters: EventFilter | None = None,
    dag_events: DagEvents = DagEvents.OPS,
    run_name: str | None = None,
    build_graph: bool = True,
    progress: Callable[[str], None] | None = None,
    show_source: Callable[[str], str] | None = None,
    reading: HostReading | None = None,
    keep_nodes: Collection[str] | None = None,
) -> TraceReaderResult:
    """Reads `path`, filters, builds the DAG, op profile and HLO profile, writes
    what is asked (`hlo_profile_out` only when the trace holds HLO events).

    `keep_nodes`: the node names the module to annotate has; a device event whose
    nodes it has only in part is split over those (`attribute_device`).

    `show_source` maps the source path the outputs record (their `source`): a
    caller reading from a staging directory names where the trace will be.
    `reading`: how the hosts of a multi-host logdir are read (default: in local
    processes from 16 MB of host files on; see tfpgo.trace.hosts); the result is the
    same whichever way.
    """
    stages = _Stages(progress or (lambda _message: None))
    table = _read(path, run_name, reading, show_source, stages)
    table = _filtered(table, filters or EventFilter(), path, stages)
    dag = _built_dag(table, dag_events, stages) if build_graph or dag_out is not None else None
    # The DAG JSON is rendered and written in C, without the GIL, on a thread while
    # the profiles are computed and written. Every output is staged and takes its
    # name only when all are written, so a failure on the way leaves none behind.
    written: list[Path] = []
    with contextlib.ExitStack() as outputs:

        def staged(output: Path) -> Path:
            written.append(output)
            return outputs.enter_context(staged_file(output))

        with ThreadPoolExecutor(max_workers=1) as pool:
            dag_written = None  # (an EventDag without nodes is falsy: compare with None)
            if dag is not None and dag_out is not None:
                dag_written = pool.submit(write_dag, dag, staged(dag_out))
            profiles = _built_profiles(table, keep_nodes, stages)
            hlo_path = hlo_profile_out if profiles.hlo is not None else None
            if op_profile_out is not None:
                profiles.op_profile.write(staged(op_profile_out))
            if profiles.hlo is not None and hlo_path is not None:
                profiles.hlo.write(staged(hlo_path))
            if dag_written is not None:
                dag_written.result()
    for output in written:
        stages.report(f"wrote {output}")
    stages.lap("write")
    return TraceReaderResult(
        table.source,
        len(table),
        dag,
        profiles.op_profile,
        dag_out,
        op_profile_out,
        stages.timings,
        profiles.hlo,
        hlo_path,
        profiles.empty_reason,
    )


class _Stages:
    """The progress messages of one run, and the seconds each stage took: a lap is
    the time since the previous one (or since the run started)."""

    def __init__(self, report: Callable[[str], None]) -> None:
        self.report = report
        self.timings: dict[str, float] = {}
        self._clock = time.perf_counter()

    def lap(self, stage: str) -> float:
        now = time.perf_counter()
        self.timings[stage] = now - self._clock
        self._clock = now
        return self.timings[stage]


def _read(
    path: Path,
    run_name: str | None,
    reading: HostReading | None,
    show_source: Callable[[str], str] | None,
    stages: _Stages,
) -> EventTable:
    if _is_huge(path):
        return_freed_memory_early()
    table = read_logdir_trace(path, run=run_name, progress=stages.report, reading=reading)
    if show_source is not None:
        table.source = show_source(table.source)
    seconds = stages.lap("read")
    stages.report(f"read {len(table):,} events from {len(table.tracks)} lines in {seconds:.1f} s")
    return table


def _filtered(table: EventTable, filters: EventFilter, path: Path, stages: _Stages) -> EventTable:
    """The events that pass `filters`; a UserError if none does."""
    if filters.is_empty():
        return table
    table = filters.apply(table)
    stages.lap("filter")
    if len(table) == 0:
        raise errors.UserError(
            f"{path}: no event passes the filters; widen --start-us/--end-us, --steps, "
            "--hosts, --thread, --name or --min-duration-us"
        )
    stages.report(f"{len(table):,} events pass the filters")
    return table


def _built_dag(table: EventTable, dag_events: DagEvents, stages: _Stages) -> EventDag:
    dag = build_dag(table, dag_events)
    stages.lap("dag")
    stages.report(
        f"DAG: {len(dag):,} nodes, {dag.edges.shape[0]:,} edges, critical path "
        f"{dag.critical_path.size:,} nodes ({dag.critical_path_ps / 1e6:.1f} us)"
    )
    return dag


@dataclass(frozen=True)
class _Profiles:
    op_profile: OpProfile
    hlo: HloProfile | None  # None: the trace holds no HLO events
    empty_reason: str  # why the op profile is empty; "" when it is not


def _built_profiles(
    table: EventTable, keep_nodes: Collection[str] | None, stages: _Stages
) -> _Profiles:
    """The op profile and, when there are HLO events or device events on
    instructions, the HLO profile."""
    xla = attribute(table)
    device = attribute_device(table, keep_nodes)
    profile = build_op_profile(table, xla, device)
    on_instructions = any(r.instruction for r in device.resolutions)
    hlo = (
        build_hlo_profile(table.source, xla, device, table)
        if xla.events or on_instructions
        else None
    )
    stages.lap("op_profile")
    if profile.has_device:
        totals = profile.totals
        stages.report(
            f"device: {totals.device_events:,} events on {len(device.devices)} "
            f"device(s), {totals.device_attributed_ps / max(totals.device_ps, 1):.1%} "
            "of their time on ops"
        )
    if hlo is not None and xla.events:
        stages.report(
            f"XLA: {len(hlo.modules)} modules, {len(xla.events):,} HLO events, "
            f"{hlo.attributed_ps / max(hlo.hlo_ps, 1):.1%} of their time on TF nodes, "
            f"{hlo.xla_inserted_ps / 1e6:.1f} us XLA-inserted"
        )
    empty_reason = "" if profile.ops else no_op_events_reason(table)
    if empty_reason:
        stages.report(f"warning: {empty_reason}; the op profile is empty")
    return _Profiles(profile, hlo, empty_reason)


def no_op_events_reason(table: EventTable) -> str:
    """Why a trace gave no op to annotate: it has neither TF op events nor HLO events."""
    if table.hlo_modules:
        return (
            f"the trace holds no TensorFlow op events and no HLO instruction events, "
            f"though it describes {len(table.hlo_modules)} XLA module(s): the step ran under "
            "XLA but the profiler recorded none of its instructions (host tracer level "
            "below 3? profile with --host-tracer-level 3)"
        )
    return (
        "the trace holds no TensorFlow op events (node:Type) and no HLO instruction "
        "events, so there is nothing to annotate; the step ran under XLA but no HLO "
        "events were recorded, the host tracer level is too low (use 3), or the trace "
        "belongs to another model"
    )


def build_parser() -> argparse.ArgumentParser:
    parser = cli.ArgumentParser(
        prog=PROG,
        description="Read a profiler trace and write the event DAG (mlir_graph.json) and "
        "the per-op profile (op_profile.json). Formats: docs/formats.md.",
        epilog="Example: trace_reader --path-to-trace logdir --store-output mlir_graph.json "
        "--op-profile op_profile.json --steps 1-3",
    )
    parser.add_argument(
        "--path-to-trace",
        required=True,
        metavar="PATH",
        help="the trace: a TensorBoard logdir (newest run, all hosts), a run directory, an "
        ".xplane.pb, XSpace protobuf-JSON, or Chrome trace JSON (plain or .gz); the format "
        "is detected from the content",
    )
    parser.add_argument(
        "--store-output", metavar="PATH", help="write the event DAG here (mlir_graph.json format)"
    )
    parser.add_argument(
        "--op-profile",
        metavar="PATH",
        help="write the per-op profile here (op_profile.json format)",
    )
    parser.add_argument(
        "--hlo-profile",
        metavar="PATH",
        help="for XLA-compiled steps: write per-module, per-instruction and per-fusion "
        "HLO times with the TF nodes each covers here (hlo_profile.json format)",
    )
    parser.add_argument(
        "--run",
        metavar="NAME",
        help="with a logdir: the run directory name to read instead of the newest",
    )
    parser.add_argument(
        "--dag-events",
        choices=[e.value for e in DagEvents],
        default=DagEvents.OPS.value,
        help="DAG nodes: 'ops' = TensorFlow op events (default), 'all' = "
        "every event, runtime events included",
    )
    add_host_reading_arguments(parser)
    _add_filters(parser.add_argument_group("filters (all must hold)"))
    noise = parser.add_mutually_exclusive_group()
    noise.add_argument(
        "--progress",
        action="store_true",
        help="report progress on stderr (default: only for inputs over 16 MB)",
    )
    noise.add_argument("--quiet", action="store_true", help="no progress, no summary")
    return parser


def _add_filters(window: argparse._ArgumentGroup) -> None:
    """The filters on the events read: a window of time, steps, hosts, threads,
    names and a least duration."""
    window.add_argument(
        "--start-us",
        type=float,
        metavar="US",
        help="keep events starting at or after US microseconds from the profile start",
    )
    window.add_argument(
        "--end-us",
        type=float,
        metavar="US",
        help="keep events starting before US microseconds from the profile start",
    )
    window.add_argument(
        "--steps", metavar="LIST", help="keep events of these profiled steps, e.g. 0,2,5-7"
    )
    window.add_argument(
        "--hosts", metavar="LIST", help="keep events of these hosts (comma-separated)"
    )
    window.add_argument(
        "--thread", metavar="REGEX", help="keep events on threads (lines) whose name matches REGEX"
    )
    window.add_argument(
        "--name", metavar="REGEX", help="keep events whose name matches REGEX (e.g. 'dense')"
    )
    window.add_argument(
        "--min-duration-us",
        type=float,
        default=0.0,
        metavar="US",
        help="keep events lasting at least US microseconds",
    )


def filters_from_args(args: argparse.Namespace) -> EventFilter:
    def ps(value: float | None) -> int | None:
        return None if value is None else round(value * _PS_PER_US)

    if args.min_duration_us < 0:
        raise errors.UserError("--min-duration-us must not be negative")
    hosts = frozenset(h.strip() for h in args.hosts.split(",") if h.strip()) if args.hosts else None
    return EventFilter(
        start_ps=ps(args.start_us),
        end_ps=ps(args.end_us),
        steps=parse_steps(args.steps) if args.steps else None,
        hosts=hosts,
        thread_regex=args.thread,
        name_regex=args.name,
        min_duration_ps=ps(args.min_duration_us) or 0,
    )


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    path = cli.user_path(args.path_to_trace)
    dag_out = cli.user_path(args.store_output) if args.store_output else None
    profile_out = cli.user_path(args.op_profile) if args.op_profile else None
    hlo_out = cli.user_path(args.hlo_profile) if args.hlo_profile else None
    outputs = {"--store-output": dag_out, "--op-profile": profile_out, "--hlo-profile": hlo_out}
    for flag, output in outputs.items():
        if output is not None:  # checked before the trace is read
            check_output_path(output, flag)
    if args.run and path.is_file():
        raise errors.UserError(
            f"--run {args.run}: picks a run of a logdir, and {path} is a file; drop --run "
            "or pass the logdir"
        )
    show_progress = not args.quiet and (args.progress or _big(path))
    result = run(
        path,
        dag_out=dag_out,
        op_profile_out=profile_out,
        hlo_profile_out=hlo_out,
        filters=filters_from_args(args),
        dag_events=DagEvents(args.dag_events),
        run_name=args.run,
        build_graph=dag_out is not None,
        progress=_stderr_progress if show_progress else None,
        reading=host_reading_from_args(args),
    )
    if not args.quiet:
        _print_summary(result)
    return 0


def _big(path: Path) -> bool:
    try:
        if path.is_dir():
            return sum(p.stat().st_size for p in path.rglob("*.xplane.pb")) >= _PROGRESS_BYTES
        return path.stat().st_size >= _PROGRESS_BYTES
    except OSError:
        return False


def _stderr_progress(message: str) -> None:
    print(f"{PROG}: {message}", file=sys.stderr, flush=True)


def _print_summary(result: TraceReaderResult, top: int = 10) -> None:
    totals = result.op_profile.totals
    print(
        f"{result.events:,} events, {totals.op_events:,} TF op events, "
        f"{len(result.op_profile.ops)} ops; wall {totals.wall_ps / 1e6:.1f} us, "
        f"op self {totals.op_self_ps / 1e6:.1f} us, no op {totals.non_op_ps / 1e6:.1f} us"
    )
    if result.op_profile.has_device:
        print(
            f"device: {totals.device_ps / 1e6:.1f} us in {totals.device_events:,} events "
            f"(kernels {totals.device_kernel_ps / 1e6:.1f} us, copies "
            f"{totals.device_copy_ps / 1e6:.1f} us), "
            f"{totals.device_attributed_ps / max(totals.device_ps, 1):.1%} on ops; idle "
            f"{totals.device_idle_ps / 1e6:.1f} of "
            f"{(totals.device_busy_ps + totals.device_idle_ps) / 1e6:.1f} us inside the steps"
        )
    if result.hlo_profile is not None and result.hlo_profile.hlo_ps:
        hlo = result.hlo_profile
        print(
            f"XLA: {len(hlo.modules)} modules, {len(hlo.fusions())} fusions; "
            f"HLO {hlo.hlo_ps / 1e6:.1f} us, {hlo.attributed_ps / max(hlo.hlo_ps, 1):.1%} "
            f"on TF nodes, {hlo.xla_inserted_ps / 1e6:.1f} us XLA-inserted"
        )
    device = result.op_profile.has_device
    for op in result.op_profile.ops[:top]:
        ps, count, whole = (
            (op.device_self_ps, op.device_count, totals.device_ps)
            if device
            else (op.self_ps, op.count, totals.op_self_ps)
        )
        print(
            f"  {ps / whole if whole else 0.0:6.1%}  {ps / 1e6:12.1f} us  x{count:<5} "
            f"{'device ' if device else ''}{op.name} ({', '.join(op.op_types)})"
        )


if __name__ == "__main__":
    sys.exit(cli.run_main(main, prog=PROG))
