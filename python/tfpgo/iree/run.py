"""The lowered program, compiled and run by IREE, profiled at its dispatches.

`--lower iree` goes through every level up to linalg, then compiles the whole
StableHLO module (weights included, the profile's records in its locations)
with `iree-compile` for the host CPU (`model.iree.vmfb`), runs it with IREE's
runtime on the inputs the model was profiled with, and compares its outputs
with TensorFlow's: a mismatch is one error line, not a report.

Timing comes from IREE's own HAL profiling: `iree-benchmark-module` runs the
entry function `steps` times with `--device_profiling_mode=host-execution`
(the local CPU driver times each dispatch on the host; it has no
device-timestamped dispatch events), and `iree-profile dispatch
--format=jsonl` reads the `.ireeprof` bundle back: per dispatch function, its
count and total time. Which tf ops a dispatch runs comes from the compiler:
the executable sources (`--compile-to=executable-sources
--mlir-print-debuginfo`) keep the tf node names in the locations of each
executable's linalg ops, read with the MLIR Python bindings IREE ships. A
dispatch's time is split over its tf ops in equal integer parts, as an XLA
fusion's is; a dispatch with no tf node name is listed apart, never dropped.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tfpgo import HOT_OPS
from tfpgo.attribution.parts import split_equally, split_in_proportion
from tfpgo.documents import read_json, write_compact_json
from tfpgo.iree.compiled_source import compiled_source
from tfpgo.iree.output_check import ATOL, RTOL
from tfpgo.iree.profile_document import BY_EXECUTABLE, BY_PROGRAM, Dispatch, IreeProfile, Site
from tfpgo.iree.sites import (
    COMPUTE_DIALECTS,
    IN_NESTED_LOOPS,
    NOT_COMPUTE,
    OUTSIDE_LOOPS,
    SiteOps,
)
from tfpgo.iree.tools import compile_once, run_tool

IREE_FLAGS = (
    "--iree-input-type=stablehlo",
    "--iree-hal-target-device=local",
    "--iree-hal-local-target-device-backends=llvm-cpu",
    "--iree-llvmcpu-target-cpu=host",
)
DEVICE = "local-task"
# IREE's other CPU driver: every dispatch on the calling thread, in order.
SYNC = "local-sync"


IREE_OP_GRAPH = "op_graph.iree.json"


def write_iree_op_graph(
    linalg_graph: Path, profile: IreeProfile, path: Path, lost: Mapping[str, str] | None = None
) -> None:
    """The linalg op graph (`tfpgo.op_graph`) with every record timed by IREE. Each
    tf op's dispatch time (`IreeProfile.op_ps`) is split over the linalg ops that
    carry it in proportion to the parts of its TensorFlow time they are charged
    (`source_parts`), so the ops doing the work carry it there too and the graph
    sums exactly to the dispatch time it holds; a tf op no linalg op carries is
    listed in `unplaced` with its time and what became of it at linalg (`lost`:
    tf op → its reason, tfpgo.mlir.lost_ops). A tf op TensorFlow timed no work
    for, whose name IREE's dispatches carry, gets its time on the linalg ops its
    name locates (`_untimed_by_name`). The hottest ops by IREE time are marked."""
    document = read_json(linalg_graph)
    runs = max(profile.runs, 1)
    carriers: dict[str, list[tuple[dict, int]]] = {}
    for node in document["nodes"]:
        node["hot"], node["hot_rank"] = False, None
        for source, tf_ps in source_parts(node.get("profiler_data")).items():
            carriers.setdefault(source, []).append((node, tf_ps))
    for source, nodes in _untimed_by_name(document, profile, carriers).items():
        for node in nodes:  # TensorFlow started no kernel of it (ts 0): IREE's time is all
            node["profiler_data"] = {"source": source, "self": 0, "ts": 0}
            carriers.setdefault(source, []).append((node, 0))
    iree_parts: dict[int, dict[str, int]] = {}
    for source, held in carriers.items():
        ps = profile.op_ps.get(source)
        if ps is None:
            continue
        split = split_in_proportion(ps, [tf_ps for _, tf_ps in held])
        for (node, _), part in zip(held, split, strict=True):
            iree_parts.setdefault(node["id"], {})[source] = part
    whole = sum(sum(parts.values()) for parts in iree_parts.values()) or 1
    for node in document["nodes"]:
        record = node.get("profiler_data")
        parts = iree_parts.get(node["id"])
        if not record or parts is None:
            node["profiler_data"] = None
            continue
        node["profiler_data"] = _iree_record(record, parts, profile, runs, whole)
    timed = sorted(
        (n for n in document["nodes"] if n["profiler_data"] and n["profiler_data"]["self"] > 0),
        key=lambda n: -n["profiler_data"]["self"],
    )
    for rank, node in enumerate(timed[:HOT_OPS], start=1):
        node["hot"], node["hot_rank"] = True, rank
    document["unplaced"] = [
        {
            "source": source,
            "ps": ps,
            "reason": (lost or {}).get(source, "no op of the linalg module carries it"),
        }
        for source, ps in profile.op_ps.items()
        if source not in carriers
    ]
    write_compact_json(path, document)


def _untimed_by_name(
    document: dict[str, Any], profile: IreeProfile, carriers: Mapping[str, Any]
) -> dict[str, list[dict[str, Any]]]:
    """Per tf op with IREE time that no linalg op carries a record of, the linalg
    ops that compute and whose location names it: an op TensorFlow ran as no
    kernel of its own (a transpose Grappler folded into a matmul's flags, timed
    0) that IREE runs as a dispatch."""
    wanted = {source for source in profile.op_ps if source not in carriers}
    candidates = [
        node
        for node in document["nodes"]
        if node.get("name") in wanted
        and node["op"].startswith(COMPUTE_DIALECTS)
        and node["op"] not in NOT_COMPUTE
        and not node.get("profiler_data")
    ]
    inside = {node["id"] for node in candidates}  # a generic's body is the generic's work
    found: dict[str, list[dict[str, Any]]] = {}
    for node in candidates:
        if node.get("parent") not in inside:
            found.setdefault(node["name"], []).append(node)
    return found


def source_parts(record: dict[str, Any] | None) -> dict[str, int]:
    """Per source an op graph record carries: the part of its time charged to the
    op (`self` is the record's source's part plus its `fused_parts`)."""
    if not record or "self" not in record:
        return {}
    fused = dict(zip(record.get("fused_sources", ()), record.get("fused_parts", ()), strict=False))
    own = record["self"] - sum(fused.values())
    return {record.get("source", ""): own, **fused}


def _iree_record(
    record: dict[str, Any], parts: dict[str, int], profile: IreeProfile, runs: int, whole: int
) -> dict[str, Any]:
    ps = sum(parts.values())
    mean = ps // runs
    timed: dict[str, Any] = {
        "count": runs, "total": ps, "self": ps, "dur": mean, "min": mean, "max": mean,
        "p50": mean, "p95": mean, "share": ps / whole,
        "source_self": profile.op_ps.get(record.get("source", ""), 0),
    }  # fmt: skip
    kept = {k: v for k, v in record.items() if k not in ("fused_sources", "fused_parts")}
    fused = [name for name in record.get("fused_sources", ()) if name in parts]
    if fused:
        timed |= {"fused_sources": fused, "fused_parts": [parts[name] for name in fused]}
    return kept | timed


def compile_module(
    stablehlo: Path, vmfb: Path, sources: Path, bytecode: Path, flags: Sequence[str] = ()
) -> None:
    """The vmfb for the host CPU, the executable sources with locations, and the
    whole StableHLO program (weights included) as MLIR bytecode. `flags` go to
    iree-compile after IREE_FLAGS (a tuned program's options). A form this process
    compiled already from the same program and flags (a kept tuning candidate's
    vmfb) is copied (`tools.compile_once`). Each is made from the program without
    its profile (`compiled_source`)."""
    stablehlo = compiled_source(stablehlo)
    compile_once("iree-opt", stablehlo, ["--emit-bytecode"], bytecode, "iree level")
    compile_vmfb(stablehlo, vmfb, flags)
    compile_once(
        "iree-compile",
        stablehlo,
        [*IREE_FLAGS, *flags, "--compile-to=executable-sources", "--mlir-print-debuginfo"],
        sources,
        "iree level (executable sources)",
    )


def compile_vmfb(
    stablehlo: Path, vmfb: Path, flags: Sequence[str] = (), timeout_s: float | None = None
) -> None:
    """Only the runnable program (what a tuning candidate needs to be measured);
    `timeout_s` bounds a compile that may hang (IREE 3.13's iree-compile now and
    then deadlocks, waiting on a futex with no CPU, with a tuning spec; the same
    command then compiles: `run_tool` tries it once more)."""
    program = compiled_source(stablehlo)
    compile_once("iree-compile", program, [*IREE_FLAGS, *flags], vmfb, "iree level", timeout_s)


def run_outputs(
    vmfb: Path, entry: str, inputs: Sequence[Path], count: int, scratch: Path
) -> tuple[Any, ...]:
    """Runs `entry` once on `inputs` (.npy files): its `count` outputs (numpy)."""
    import numpy as np

    outputs = [scratch / f"iree_output_{i}.npy" for i in range(count)]
    args = [f"--module={vmfb}", f"--device={DEVICE}", f"--function={entry}"]
    args += [f"--input=@{path}" for path in inputs] + [f"--output=@{path}" for path in outputs]
    run_tool("iree-run-module", args, "iree level (run)")
    return tuple(np.load(path) for path in outputs)


@dataclass(frozen=True)
class DispatchTiming:
    """One dispatch function's profiled invocations over the measured runs."""

    count: int
    total_ps: int
    # Per k: the time of its k-th invocation within a run, summed over the runs;
    # () when the runs invoked it a different number of times.
    invocation_ps: tuple[int, ...] = ()


def profile_dispatches(
    vmfb: Path,
    entry: str,
    inputs: Sequence[Path],
    runs: int,
    scratch: Path,
    warmup: int = 0,
    driver: str = DEVICE,
) -> dict[str, DispatchTiming]:
    """Per dispatch function, its invocations over `runs` runs of `entry`, after
    `warmup` runs that are profiled too and then dropped: each run is the same
    number of queue submissions, in time order (`submission_id`), and within a run
    the invocations are in the order they were recorded (command buffer, command
    index), so the k-th of a function is its k-th site (`tfpgo.iree.sites`)."""
    bundle = scratch / "run.ireeprof"
    args = [f"--module={vmfb}", f"--device={driver}", f"--function={entry}"]
    args += [f"--input=@{path}" for path in inputs]
    args += [f"--benchmark_min_time={warmup + runs}x", "--benchmark_repetitions=1"]
    args += ["--device_profiling_mode=host-execution,executable-metadata"]
    args += [f"--device_profiling_output={bundle}"]
    run_tool("iree-benchmark-module", args, "iree level (profile)")
    listing = run_tool(
        "iree-profile",
        ["dispatch", "--dispatch_events", "--format=jsonl", str(bundle)],
        "iree level (profile)",
    )
    events = [json.loads(line) for line in listing.splitlines()]
    events = [e for e in events if e.get("type") == "host_dispatch_event" and e["valid"]]
    submissions = sorted({e["submission_id"] for e in events})
    per_run = max(len(submissions) // max(warmup + runs, 1), 1)
    measured = submissions[len(submissions) - per_run * runs :]
    run_of = {submission: index // per_run for index, submission in enumerate(measured)}
    invocations: dict[str, list[list[int]]] = {}  # per function, per run: ps in order
    recorded = sorted(
        (e for e in events if e["submission_id"] in run_of),
        key=lambda e: (e["submission_id"], e.get("command_buffer_id", 0),
                       e.get("command_index", 0), e["event_id"]),
    )  # fmt: skip
    for event in recorded:
        per_run_ps = invocations.setdefault(event["key"], [[] for _ in range(runs)])
        per_run_ps[run_of[event["submission_id"]]].append(event["duration_ns"] * 1000)
    return {key: _timing(per_run_ps) for key, per_run_ps in invocations.items()}


def _timing(per_run_ps: list[list[int]]) -> DispatchTiming:
    count = sum(len(run) for run in per_run_ps)
    total = sum(sum(run) for run in per_run_ps)
    if len({len(run) for run in per_run_ps}) != 1:
        return DispatchTiming(count, total)
    return DispatchTiming(
        count, total, tuple(sum(column) for column in zip(*per_run_ps, strict=True))
    )


# Per dispatch, per site: (its tf ops, its time, its invocations a run; 0: one site
# for the dispatch as a whole).
_Planned = dict[str, tuple[tuple[tuple[str, ...], int, int], ...]]


def _planned_sites(
    timings: dict[str, DispatchTiming],
    sources: dict[str, tuple[tuple[str, ...], str]],
    sites: dict[str, tuple[SiteOps, ...]],
    measured: Callable[[Sequence[str]], tuple[str, ...]],
) -> tuple[_Planned, set[str]]:
    """Each dispatch's sites with their ops and time, and the dispatches charged
    invocation by invocation to their own sites (`build_profile`)."""
    planned: _Planned = {}
    by_program: set[str] = set()
    for name, timing in timings.items():
        own = sites.get(name, ())
        order = invocation_sites(own, len(timing.invocation_ps)) if own else None
        if order is not None:
            site_ps, made = [0] * len(own), [0] * len(own)
            for index, ps in zip(order, timing.invocation_ps, strict=True):
                site_ps[index] += ps
                made[index] += 1
            planned[name] = tuple(
                (measured(site.names), ps, invocations)
                for site, ps, invocations in zip(own, site_ps, made, strict=True)
            )
            by_program.add(name)
        else:
            planned[name] = ((measured(sources.get(name, ((), ""))[0]), timing.total_ps, 0),)
    return planned, by_program


def invocation_sites(sites: Sequence[SiteOps], invocations: int) -> tuple[int, ...] | None:
    """Which site (index into `sites`, program order) each of a run's
    `invocations` of one dispatch runs at, in order; None when that cannot be
    known. Outside loops a site runs once. The sites of one loop's body (not
    nested) run in turn once per iteration, so a run makes
    `outside + iterations * inside` invocations: the iterations are measured."""
    if len(sites) == invocations:
        return tuple(range(invocations))
    inside = [index for index, site in enumerate(sites) if site.loop != OUTSIDE_LOOPS]
    loops = {sites[index].loop for index in inside}
    if (
        len(loops) != 1
        or IN_NESTED_LOOPS in loops
        or inside != list(range(inside[0], inside[-1] + 1))
    ):
        return None
    iterations, rest = divmod(invocations - (len(sites) - len(inside)), len(inside))
    if rest or iterations < 1:
        return None
    before, after = range(inside[0]), range(inside[-1] + 1, len(sites))
    return (*before, *(inside * iterations), *after)


def build_profile(
    source: str,
    entry: str,
    runs: int,
    warmup: int,
    max_abs: float,
    timings: dict[str, DispatchTiming],
    sources: dict[str, tuple[tuple[str, ...], str]],
    tf_self_ps: dict[str, int],
    fused_into: dict[str, str],
    sites: dict[str, tuple[SiteOps, ...]] | None = None,
    outputs_unchecked: str = "",
) -> IreeProfile:
    """The dispatches, largest first, each with its sites, their tf ops and TF self
    time; per tf op, its equal integer share of every site that ran it.

    A dispatch whose invocations a run makes one per site (`sites`, from the
    compiler) charges each invocation to its own site's ops; else its whole time
    goes to the ops its executable's code names (`sources`), as one site. A name
    TF ran inside another op's kernel (`fused_into`, a remapper fusion) stands for
    that op; the measured ops are kept when a site names any. A tf op several sites
    ran gives each an equal part of its TF time, so the TF column sums to the TF
    time of the ops covered. A dispatch with no tf op stays, unattributed."""

    def measured(named: Sequence[str]) -> tuple[str, ...]:
        canonical = tuple(dict.fromkeys(fused_into.get(n, n) for n in named))
        return tuple(n for n in canonical if n in tf_self_ps) or canonical

    planned, by_program = _planned_sites(timings, sources, sites or {}, measured)
    sites_of: dict[str, int] = {}
    for plan in planned.values():
        for ran, _, _ in plan:
            for node in ran:
                sites_of[node] = sites_of.get(node, 0) + 1
    # A tf op several sites ran gives each an equal integer part of its TF time.
    tf_parts = {
        node: iter(split_equally(tf_self_ps.get(node, 0), count))
        for node, count in sites_of.items()
    }
    dispatches = []
    op_ps: dict[str, int] = {}
    for name, timing in timings.items():
        found = tuple(
            Site(ran, ps, sum(next(tf_parts[node]) for node in ran), invocations or 1)
            for ran, ps, invocations in planned[name]
        )
        named = tuple(dict.fromkeys(node for site in found for node in site.sources))
        if name in by_program:
            kinds = {site.found_in for site in (sites or {})[name]}
            where = next((k for k in ("compute", "bindings") if k in kinds), "")
        else:
            where = sources.get(name, ((), ""))[1]
        dispatch = Dispatch(
            name, timing.count, timing.total_ps, named, sum(site.tf_self_ps for site in found),
            where, found, BY_PROGRAM if name in by_program else BY_EXECUTABLE,
        )  # fmt: skip
        for node, ps in dispatch.parts().items():  # none: unattributed, listed
            op_ps[node] = op_ps.get(node, 0) + ps
        dispatches.append(dispatch)
    dispatches.sort(key=lambda d: (-d.total_ps, d.name))
    op_tf = {node: tf_self_ps.get(node, 0) for node in op_ps}
    return IreeProfile(
        source, entry, runs, warmup, max_abs, RTOL, ATOL, tuple(dispatches), op_ps, op_tf,
        outputs_unchecked,
    )  # fmt: skip
