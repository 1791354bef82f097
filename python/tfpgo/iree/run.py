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
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tfpgo import HOT_OPS
from tfpgo.atomic import atomic_output_file
from tfpgo.attribution.parts import split_equally, split_in_proportion
from tfpgo.attribution.work_kind import Work, highest, kind_of
from tfpgo.documents import expect_format, new_header, read_json, write_compact_json
from tfpgo.errors import UserError
from tfpgo.iree.sites import (
    IN_NESTED_LOOPS,
    OUTSIDE_LOOPS,
    SiteOps,
    compute_ops,
    location_names,
    site_ops,
    translation,
    walk,
)
from tfpgo.iree.tools import compile_once, run_tool

FORMAT = "tfpgo.iree_profile"
VERSION = 1
IREE_FLAGS = (
    "--iree-input-type=stablehlo",
    "--iree-hal-target-device=local",
    "--iree-hal-local-target-device-backends=llvm-cpu",
    "--iree-llvmcpu-target-cpu=host",
)
DEVICE = "local-task"
ELIDE_ELEMENTS = 64  # constants larger than this are elided in model.dispatches.mlir
# Outputs must agree with TensorFlow's within RTOL relative + ATOL: float32
# kernels of another compiler reassociate sums.
RTOL = 1e-3
ATOL = 1e-5
# Whose outputs a program's are compared with: TensorFlow's step, or (a step that
# draws random numbers, which IREE draws with other bits) the original program's.
TENSORFLOW, ORIGINAL_PROGRAM = "TensorFlow's", "the original program's"


@dataclass(frozen=True)
class Site:
    """One place in the program where a dispatch runs (`tfpgo.iree.sites`), the tf
    ops of that place and the time of its invocations."""

    sources: tuple[str, ...]  # tf node names its ops carry
    total_ps: int
    tf_self_ps: int  # those ops' TensorFlow self time (op profile, the same steps)
    invocations: int = 1  # a run's invocations of it: a loop's measured trip count

    def parts(self) -> dict[str, int]:
        """Its time per tf op: equal integer parts, summing exactly."""
        if not self.sources:
            return {}
        return dict(zip(self.sources, split_equally(self.total_ps, len(self.sources)), strict=True))


# How a dispatch's time reached its sites: `program` (each invocation charged to
# its own site, in program order), `executable` (charged as a whole to the ops
# its executable's code names: the invocations did not match the sites).
BY_PROGRAM, BY_EXECUTABLE = "program", "executable"


@dataclass(frozen=True)
class Dispatch:
    """One dispatch function of the compiled program and what it ran."""

    name: str  # the dispatch function (`<entry>_dispatch_0_matmul_4x4096x1024_f32`)
    count: int
    total_ps: int
    sources: tuple[str, ...]  # tf node names of all its sites, in site order
    tf_self_ps: int  # those ops' TensorFlow self time, every site's (its bound)
    # `compute` (its linalg/arith ops carry them), `bindings` (only the values it
    # reads and writes do: a copy IREE made), "" (none: unattributed)
    found_in: str = ""
    sites: tuple[Site, ...] = ()
    sites_from: str = BY_EXECUTABLE

    def parts(self) -> dict[str, int]:
        """Its time per tf op it ran: each site's time in equal integer parts over
        that site's ops, summing exactly."""
        found: dict[str, int] = {}
        for site in self.sites:
            for name, ps in site.parts().items():
                found[name] = found.get(name, 0) + ps
        return found


@dataclass(frozen=True)
class IreeProfile:
    source: str
    entry: str
    runs: int
    warmup: int  # runs profiled before them and dropped
    outputs_max_abs: float  # |IREE - TensorFlow| over every output element
    rtol: float
    atol: float
    dispatches: tuple[Dispatch, ...]
    # per tf node: its share of the dispatches' time (equal integer parts)
    op_ps: dict[str, int] = field(default_factory=dict)
    # per tf node of `op_ps`: its TensorFlow self time over the profiled steps
    op_tf_ps: dict[str, int] = field(default_factory=dict)
    # Why the outputs could not be held to TensorFlow's ("" when they were).
    outputs_unchecked: str = ""

    @property
    def dispatch_ps(self) -> int:
        return sum(d.total_ps for d in self.dispatches)

    def outputs_text(self) -> str:
        """How IREE's outputs compare with TensorFlow's, for a line of the run or
        the report."""
        if self.outputs_unchecked:
            return (
                f"outputs not held to TensorFlow's (max |Δ| {self.outputs_max_abs:.3g}): "
                f"{self.outputs_unchecked}"
            )
        return f"outputs within {self.outputs_max_abs:.3g} of TensorFlow's"

    @property
    def attributed_ps(self) -> int:
        return sum(d.total_ps for d in self.dispatches if d.sources)

    def to_json(self) -> dict[str, Any]:
        return {
            **new_header(FORMAT, VERSION, self.source),
            "entry": self.entry,
            "runs": self.runs,
            "warmup": self.warmup,
            "outputs": {
                "max_abs": self.outputs_max_abs,
                "rtol": self.rtol,
                "atol": self.atol,
                "unchecked": self.outputs_unchecked or None,
            },
            "totals": {
                "dispatch_ps": self.dispatch_ps,
                "dispatch_attributed_ps": self.attributed_ps,
                "dispatch_unattributed_ps": self.dispatch_ps - self.attributed_ps,
            },
            "dispatches": [_dispatch_json(d) for d in self.dispatches],
            "ops": [
                {"name": name, "iree_ps": ps, "tf_self_ps": self.op_tf_ps.get(name, 0)}
                for name, ps in self.op_ps.items()
            ],
        }

    def write(self, path: Path) -> None:
        write_compact_json(path, self.to_json())

    @staticmethod
    def read(path: Path) -> IreeProfile:
        return IreeProfile.from_json(read_json(path), path)

    @staticmethod
    def from_json(document: Any, path: Path) -> IreeProfile:
        expect_format(path, document, FORMAT)
        try:
            outputs = document["outputs"]
            return IreeProfile(
                document["source"],
                document["entry"],
                document["runs"],
                document["warmup"],
                outputs["max_abs"],
                outputs["rtol"],
                outputs["atol"],
                tuple(_read_dispatch(d) for d in document["dispatches"]),
                {op["name"]: op["iree_ps"] for op in document["ops"]},
                {op["name"]: op["tf_self_ps"] for op in document["ops"]},
                outputs.get("unchecked") or "",
            )
        except (KeyError, TypeError) as error:
            raise UserError(f"{path}: malformed {FORMAT} document ({error})") from None


def _dispatch_json(dispatch: Dispatch) -> dict[str, Any]:
    return {
        **asdict(dispatch),
        "sources": list(dispatch.sources),
        "sites": [{**asdict(site), "sources": list(site.sources)} for site in dispatch.sites],
    }


def _read_dispatch(item: dict[str, Any]) -> Dispatch:
    """A dispatch of the document; one written before sites were read is one site."""
    sources = tuple(item["sources"])
    sites = tuple(
        Site(
            tuple(site["sources"]),
            site["total_ps"],
            site["tf_self_ps"],
            site.get("invocations", 1),
        )
        for site in item.get("sites", ())
    ) or (Site(sources, item["total_ps"], item["tf_self_ps"]),)
    return Dispatch(
        item["name"], item["count"], item["total_ps"], sources, item["tf_self_ps"],
        item["found_in"], sites, item.get("sites_from", BY_EXECUTABLE),
    )  # fmt: skip


IREE_OP_GRAPH = "op_graph.iree.json"


def write_iree_op_graph(linalg_graph: Path, profile: IreeProfile, path: Path) -> None:
    """The linalg op graph (`tfpgo.op_graph`) with every record timed by IREE. Each
    tf op's dispatch time (`IreeProfile.op_ps`) is split over the linalg ops that
    carry it in proportion to the parts of its TensorFlow time they are charged
    (`source_parts`), so the ops doing the work carry it there too and the graph
    sums exactly to the dispatch time it holds; a tf op no linalg op carries is
    listed in `unplaced` with its time. The hottest ops by IREE time are marked."""
    document = read_json(linalg_graph)
    runs = max(profile.runs, 1)
    carriers: dict[str, list[tuple[dict, int]]] = {}
    for node in document["nodes"]:
        node["hot"], node["hot_rank"] = False, None
        for source, tf_ps in source_parts(node.get("profiler_data")).items():
            carriers.setdefault(source, []).append((node, tf_ps))
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
        {"source": source, "ps": ps, "reason": "no op of the linalg module carries it"}
        for source, ps in profile.op_ps.items()
        if source not in carriers
    ]
    write_compact_json(path, document)


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
    vmfb) is copied (`tools.compile_once`)."""
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
    compile_once("iree-compile", stablehlo, [*IREE_FLAGS, *flags], vmfb, "iree level", timeout_s)


def parse_sources(sources: Path) -> Any:
    """The executable sources as an MLIR module (IREE's Python bindings), parsed once
    for `dispatch_sources` and `write_dispatch_sources`."""
    from iree.compiler import ir

    return ir.Module.parse(sources.read_text(), ir.Context())


def dispatch_sources(module: Any) -> dict[str, tuple[tuple[str, ...], str]]:
    """Per executable export (the dispatch function's name): the tf node names its
    compute ops carry, in first-seen order, and where they were found: `compute`,
    or `bindings` when no compute op carries one (a copy or layout change IREE
    made: the names of the values it reads and writes), "" when none. The code of
    an executable several sites share names one site's ops (`tfpgo.iree.sites`)."""
    found: dict[str, tuple[tuple[str, ...], str]] = {}
    for executable in module.body.operations:
        if executable.operation.name != "hal.executable":
            continue
        site = site_ops(executable.operation)
        for export, _ in executable_exports(executable.operation):
            found[export] = (site.names, site.found_in)
    return found


DISPATCHES_MODULE = "model.dispatches.mlir"


def write_dispatch_sources(
    module: Any,
    profile: IreeProfile,
    fused_into: dict[str, str],
    path: Path,
    sites: dict[str, tuple[SiteOps, ...]] | None = None,
) -> None:
    """The executable sources (each dispatch's code, large constants elided) with
    the dispatch time on the ops that ran it. Each site's part for a tf op
    (`Site.parts`) is split over the linalg ops of its executable that name that
    op (or one TensorFlow ran inside its kernel, `fused_into`), those of the
    highest kind of work (`tfpgo.attribution.work_kind`, the C++ passes' rule), as
    `iree_self`; the tf op's TensorFlow self
    time the same way over all its linalg ops, as `self`. An executable several
    sites share names one site's ops: another site's op is found through it
    (`sites.translation`), and an op that ran for several sites lists their tf ops
    in `site_sources`. A part no linalg op names stays on the dispatch's
    `hal.executable.export` (`iree_self` there), so `iree_self` sums to the
    attributed dispatch time."""
    from iree.compiler import ir

    dispatches = {d.name: d for d in profile.dispatches}
    placed: list[tuple[Any, str, str, int]] = []  # (op, source, dispatch, iree ps)
    left_on: dict[str, tuple[Any, int]] = {}  # dispatch -> (export op, iree ps)
    for executable in module.body.operations:
        if executable.operation.name != "hal.executable":
            continue
        named: dict[str, list[Any]] = {}
        kinds: dict[Any, Work] = {}
        for op in walk(executable.operation):
            kind_of(op, kinds)
        for op in compute_ops(executable.operation):
            if not op.name.startswith("linalg."):
                continue
            for name in dict.fromkeys(fused_into.get(n, n) for n in location_names(op.location)):
                named.setdefault(name, []).append(op)
        for export_name, export in executable_exports(executable.operation):
            dispatch = dispatches.get(export_name)
            if dispatch is None:
                continue
            left = 0
            through = _site_translations(dispatch, (sites or {}).get(export_name, ()), named,
                                         fused_into)  # fmt: skip
            for site, translated in zip(dispatch.sites, through, strict=True):
                for source, ps in site.parts().items():
                    ops = highest(named.get(translated.get(source, source), []), kinds)
                    if not ops:
                        left += ps
                        continue
                    for op, part in zip(ops, split_equally(ps, len(ops)), strict=True):
                        placed.append((op, source, export_name, part))
            left_on[export_name] = (export, left)
    tf_parts = _tf_parts(placed, profile)
    with module.context:
        i64 = ir.IntegerType.get_signless(64)
        by_op: dict[Any, dict[str, Any]] = {}
        for op, source, export_name, part in placed:
            record = by_op.setdefault(
                op, {"sources": {}, "dispatch": export_name, "iree_self": 0, "self": 0}
            )
            record["sources"].setdefault(source, None)
            record["iree_self"] += part
            record["self"] += next(tf_parts[source])
        for op, record in by_op.items():
            source, *others = record["sources"]
            attributes = {
                "source": ir.StringAttr.get(source),
                "dispatch": ir.StringAttr.get(record["dispatch"]),
                "self": ir.IntegerAttr.get(i64, record["self"]),
                "iree_self": ir.IntegerAttr.get(i64, record["iree_self"]),
                "source_self": ir.IntegerAttr.get(i64, profile.op_tf_ps.get(source, 0)),
                "source_iree_self": ir.IntegerAttr.get(i64, profile.op_ps[source]),
            }
            if others:
                attributes["site_sources"] = ir.ArrayAttr.get(
                    [ir.StringAttr.get(name) for name in record["sources"]]
                )
            op.attributes["profiler_data"] = ir.DictAttr.get(attributes)
        for name, (export, left) in left_on.items():
            export.attributes["profiler_data"] = ir.DictAttr.get(
                {
                    "dispatch_ps": ir.IntegerAttr.get(i64, dispatches[name].total_ps),
                    "iree_self": ir.IntegerAttr.get(i64, left),
                }
            )
    text = module.operation.get_asm(large_elements_limit=ELIDE_ELEMENTS)
    with atomic_output_file(path) as handle:
        handle.write(text)


def _site_translations(
    dispatch: Dispatch,
    own: tuple[SiteOps, ...],
    named: dict[str, list[Any]],
    fused_into: dict[str, str],
) -> list[dict[str, str]]:
    """Per site of `dispatch`, the name its executable's code carries for each of
    the site's tf ops: the code keeps the locations of one site (the one naming
    most of them), and another site's op is the one in the same place."""
    if dispatch.sites_from != BY_PROGRAM or len(own) != len(dispatch.sites):
        return [{} for _ in dispatch.sites]
    keeper = max(own, key=lambda site: sum(fused_into.get(n, n) in named for n in site.names))
    found = []
    for site in own:
        pairs = translation(keeper, site).items()
        found.append(
            {fused_into.get(their, their): fused_into.get(its, its) for their, its in pairs}
        )
    return found


def executable_exports(op: Any) -> list[tuple[str, Any]]:
    """The `hal.executable.export` ops under `op`, with their names."""
    return [
        (str(inner.attributes["sym_name"]).strip('"'), inner)
        for inner in walk(op)
        if inner is not op and inner.name == "hal.executable.export"
    ]


def _tf_parts(
    placed: list[tuple[Any, str, str, int]], profile: IreeProfile
) -> dict[str, Iterator[int]]:
    """Each tf op's TensorFlow self time in equal parts over its placements."""
    count: dict[str, int] = {}
    for _, source, _, _ in placed:
        count[source] = count.get(source, 0) + 1
    return {
        source: iter(split_equally(profile.op_tf_ps.get(source, 0), n))
        for source, n in count.items()
    }


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


def compare_outputs(
    entry: str, outputs: Sequence[Any], expected: Sequence[Any], whose: str = TENSORFLOW
) -> float:
    """max |IREE - expected| over the outputs; a mismatch beyond RTOL/ATOL is one
    UserError line (OutputsDiffer) naming `whose` outputs were expected."""
    import numpy as np

    for index, (got, want) in enumerate(zip(outputs, expected, strict=True)):
        want = np.asarray(want)
        if got.shape != want.shape or not np.allclose(got, want, rtol=RTOL, atol=ATOL):
            difference = largest_difference((got,), (want,))
            raise OutputsDiffer(
                f"iree level: output {index} of {entry} differs from {whose} "
                f"(max |Δ| {difference:.3g}, shapes {got.shape} and {want.shape}, tolerance "
                f"{RTOL:g} relative + {ATOL:g})"
            )
    return largest_difference(outputs, expected)


def largest_difference(outputs: Sequence[Any], expected: Sequence[Any]) -> float:
    """max |IREE - expected| over outputs of the same shapes (inf where they differ)."""
    import numpy as np

    worst = 0.0
    for got, want in zip(outputs, expected, strict=True):
        want = np.asarray(want)
        if got.shape != want.shape:
            return float("inf")
        worst = max(worst, float(np.abs(got - want).max()) if got.size else 0.0)
    return worst


class OutputsDiffer(UserError):
    """IREE's outputs are not the expected ones: `what` says which and by how much;
    the line blames IREE unless a caller knows another cause."""

    def __init__(self, what: str) -> None:
        super().__init__(f"{what}: IREE computes something else; report it with model.iree.vmfb")
        self.what = what

    def __reduce__(self) -> tuple[type[OutputsDiffer], tuple[str]]:
        return OutputsDiffer, (self.what,)  # as it was made (pickled by a Dask worker)


@dataclass(frozen=True)
class Timing:
    """One dispatch function's profiled invocations over the measured runs."""

    count: int
    total_ps: int
    # Per k: the time of its k-th invocation within a run, summed over the runs;
    # () when the runs invoked it a different number of times.
    invocation_ps: tuple[int, ...] = ()


def profile_dispatches(
    vmfb: Path, entry: str, inputs: Sequence[Path], runs: int, scratch: Path, warmup: int = 0
) -> dict[str, Timing]:
    """Per dispatch function, its invocations over `runs` runs of `entry`, after
    `warmup` runs that are profiled too and then dropped: each run is the same
    number of queue submissions, in time order (`submission_id`), and within a run
    the invocations are in the order they were recorded (command buffer, command
    index), so the k-th of a function is its k-th site (`tfpgo.iree.sites`)."""
    bundle = scratch / "run.ireeprof"
    args = [f"--module={vmfb}", f"--device={DEVICE}", f"--function={entry}"]
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


def _timing(per_run_ps: list[list[int]]) -> Timing:
    count = sum(len(run) for run in per_run_ps)
    total = sum(sum(run) for run in per_run_ps)
    if len({len(run) for run in per_run_ps}) != 1:
        return Timing(count, total)
    return Timing(count, total, tuple(sum(column) for column in zip(*per_run_ps, strict=True)))


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
    timings: dict[str, Timing],
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

    # name -> per site: (ops, ps, invocations a run)
    planned: dict[str, tuple[tuple[tuple[str, ...], int, int], ...]] = {}
    by_program: set[str] = set()
    for name, timing in timings.items():
        own = (sites or {}).get(name, ())
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
