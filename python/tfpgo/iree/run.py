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
import subprocess
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tfpgo import HOT_OPS
from tfpgo.atomic import atomic_output_file
from tfpgo.attribution.parts import split_equally, split_in_proportion
from tfpgo.documents import expect_format, new_header, read_json, write_compact_json
from tfpgo.errors import UserError

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
# Ops whose location is another dispatch's (bindings, loads and stores carry
# the producer's or consumer's location): not what the dispatch computes.
_COMPUTE_DIALECTS = ("linalg.", "arith.", "math.")
_NOT_COMPUTE = frozenset({"arith.constant", "linalg.yield", "linalg.fill"})
# Tools of the compiler wheel (iree-base-compiler); the rest are the runtime's.
_COMPILER_TOOLS = frozenset({"iree-compile", "iree-opt"})


@dataclass(frozen=True)
class Dispatch:
    """One dispatch function of the compiled program and what it ran."""

    name: str  # the dispatch function (`<entry>_dispatch_0_matmul_4x4096x1024_f32`)
    count: int
    total_ps: int
    sources: tuple[str, ...]  # tf node names its executable's ops carry
    tf_self_ps: int  # those ops' TensorFlow self time (op profile, the same steps)
    # `compute` (its linalg/arith ops carry them), `bindings` (only the values it
    # reads and writes do: a copy IREE made), "" (none: unattributed)
    found_in: str = ""

    def parts(self) -> dict[str, int]:
        """Its time per tf op it ran: equal integer parts, summing exactly."""
        if not self.sources:
            return {}
        return dict(zip(self.sources, split_equally(self.total_ps, len(self.sources)), strict=True))


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

    @property
    def dispatch_ps(self) -> int:
        return sum(d.total_ps for d in self.dispatches)

    @property
    def attributed_ps(self) -> int:
        return sum(d.total_ps for d in self.dispatches if d.sources)

    def to_json(self) -> dict[str, Any]:
        return {
            **new_header(FORMAT, VERSION, self.source),
            "entry": self.entry,
            "runs": self.runs,
            "warmup": self.warmup,
            "outputs": {"max_abs": self.outputs_max_abs, "rtol": self.rtol, "atol": self.atol},
            "totals": {
                "dispatch_ps": self.dispatch_ps,
                "dispatch_attributed_ps": self.attributed_ps,
                "dispatch_unattributed_ps": self.dispatch_ps - self.attributed_ps,
            },
            "dispatches": [{**asdict(d), "sources": list(d.sources)} for d in self.dispatches],
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
                tuple(
                    Dispatch(
                        d["name"],
                        d["count"],
                        d["total_ps"],
                        tuple(d["sources"]),
                        d["tf_self_ps"],
                        d["found_in"],
                    )
                    for d in document["dispatches"]
                ),
                {op["name"]: op["iree_ps"] for op in document["ops"]},
                {op["name"]: op["tf_self_ps"] for op in document["ops"]},
            )
        except (KeyError, TypeError) as error:
            raise UserError(f"{path}: malformed {FORMAT} document ({error})") from None


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
    iree-compile after IREE_FLAGS (a tuned program's options)."""
    run_tool("iree-opt", [str(stablehlo), "--emit-bytecode", "-o", str(bytecode)], "iree level")
    compile_vmfb(stablehlo, vmfb, flags)
    run_tool(
        "iree-compile",
        [
            *IREE_FLAGS,
            *flags,
            "--compile-to=executable-sources",
            "--mlir-print-debuginfo",
            str(stablehlo),
            "-o",
            str(sources),
        ],
        "iree level (executable sources)",
    )


def compile_vmfb(
    stablehlo: Path, vmfb: Path, flags: Sequence[str] = (), timeout_s: float | None = None
) -> None:
    """Only the runnable program (what a tuning candidate needs to be measured);
    `timeout_s` bounds a compile that may hang (IREE 3.13's iree-compile now and
    then deadlocks, waiting on a futex with no CPU, with a tuning spec; the same
    command then compiles), and a compile that times out is tried once more."""
    args = [*IREE_FLAGS, *flags, str(stablehlo), "-o", str(vmfb)]
    try:
        try:
            run_tool("iree-compile", args, "iree level", timeout_s)
        except ToolTimeout:  # the deadlock is intermittent: once more
            run_tool("iree-compile", args, "iree level", timeout_s)
    except UserError:
        vmfb.unlink(missing_ok=True)  # a killed compile may have begun it
        raise


def parse_sources(sources: Path) -> Any:
    """The executable sources as an MLIR module (IREE's Python bindings), parsed once
    for `dispatch_sources` and `write_dispatch_sources`."""
    from iree.compiler import ir

    return ir.Module.parse(sources.read_text(), ir.Context())


def dispatch_sources(module: Any) -> dict[str, tuple[tuple[str, ...], str]]:
    """Per executable export (the dispatch function's name): the tf node names its
    compute ops carry, in first-seen order, and where they were found: `compute`,
    or `bindings` when no compute op carries one (a copy or layout change IREE
    made: the names of the values it reads and writes), "" when none."""
    found: dict[str, tuple[tuple[str, ...], str]] = {}
    for executable in module.body.operations:
        if executable.operation.name != "hal.executable":
            continue
        compute: dict[str, None] = {}
        bindings: dict[str, None] = {}
        _walk(executable.operation, compute, bindings)
        names, where = (compute, "compute") if compute else (bindings, "bindings")
        for export, _ in executable_exports(executable.operation):
            found[export] = (tuple(names), where if names else "")
    return found


def _walk(op: Any, compute: dict[str, None], bindings: dict[str, None]) -> None:
    if op.name.startswith(_COMPUTE_DIALECTS) and op.name not in _NOT_COMPUTE:
        for name in _location_names(op.location):
            compute.setdefault(name, None)
    elif op.name.endswith((".load", ".store")):
        for name in _location_names(op.location):
            bindings.setdefault(name, None)
    for region in op.regions:
        for block in region.blocks:
            for inner in block.operations:
                _walk(inner.operation, compute, bindings)


DISPATCHES_MODULE = "model.dispatches.mlir"


def write_dispatch_sources(
    module: Any, profile: IreeProfile, fused_into: dict[str, str], path: Path
) -> None:
    """The executable sources (each dispatch's code, large constants elided) with
    the dispatch time on the ops that ran it. Each dispatch's part for a tf op
    (`Dispatch.parts`) is split over the linalg ops of its executable that name
    that op (or one TensorFlow ran inside its kernel, `fused_into`), those with a
    reduction loop first (`_busiest`), as `iree_self`; the tf op's TensorFlow self
    time the same way over all its linalg ops, as `self`. A part no linalg op
    names stays on the dispatch's `hal.executable.export` (`iree_self` there), so
    `iree_self` sums to the attributed dispatch time."""
    from iree.compiler import ir

    dispatches = {d.name: d for d in profile.dispatches}
    placed: list[tuple[Any, str, str, int]] = []  # (op, source, dispatch, iree ps)
    left_on: dict[str, tuple[Any, int]] = {}  # dispatch -> (export op, iree ps)
    for executable in module.body.operations:
        if executable.operation.name != "hal.executable":
            continue
        named: dict[str, list[Any]] = {}
        for op in _linalg_ops(executable.operation):
            for name in dict.fromkeys(fused_into.get(n, n) for n in _location_names(op.location)):
                named.setdefault(name, []).append(op)
        for export_name, export in executable_exports(executable.operation):
            dispatch = dispatches.get(export_name)
            if dispatch is None:
                continue
            left = 0
            for source, ps in dispatch.parts().items():
                ops = _busiest(named.get(source, []))
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
                op, {"source": source, "dispatch": export_name, "iree_self": 0, "self": 0}
            )
            record["iree_self"] += part
            record["self"] += next(tf_parts[source])
        for op, record in by_op.items():
            source = record["source"]
            op.attributes["profiler_data"] = ir.DictAttr.get(
                {
                    "source": ir.StringAttr.get(source),
                    "dispatch": ir.StringAttr.get(record["dispatch"]),
                    "self": ir.IntegerAttr.get(i64, record["self"]),
                    "iree_self": ir.IntegerAttr.get(i64, record["iree_self"]),
                    "source_self": ir.IntegerAttr.get(i64, profile.op_tf_ps.get(source, 0)),
                    "source_iree_self": ir.IntegerAttr.get(i64, profile.op_ps[source]),
                }
            )
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


def executable_exports(op: Any) -> list[tuple[str, Any]]:
    """The `hal.executable.export` ops under `op`, with their names."""
    found = []
    for region in op.regions:
        for block in region.blocks:
            for inner in block.operations:
                if inner.operation.name == "hal.executable.export":
                    name = str(inner.operation.attributes["sym_name"]).strip('"')
                    found.append((name, inner.operation))
                found.extend(executable_exports(inner.operation))
    return found


def _busiest(ops: list[Any]) -> list[Any]:
    """The ops a dispatch's time for one tf op goes to: those with a reduction loop
    (the convolution or matmul of a fused kernel, not its elementwise epilogue),
    else all; the rule of `tf-profile-materialize-annotations` (`KindOfWork`)."""
    reducing = [op for op in ops if _reduces(op)]
    return reducing or ops


def _reduces(op: Any) -> bool:
    if "iterator_types" in op.attributes:
        return "reduction" in str(op.attributes["iterator_types"])
    name = op.name.removeprefix("linalg.")
    return name.startswith(("conv", "depthwise_conv", "pooling", "matmul", "batch_matmul",
                            "matvec", "vecmat", "dot", "mmt4d", "contract", "reduce"))  # fmt: skip


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


def _linalg_ops(op: Any) -> Iterator[Any]:
    for region in op.regions:
        for block in region.blocks:
            for inner in block.operations:
                if inner.operation.name.startswith("linalg.") and inner.operation.name not in (
                    _NOT_COMPUTE
                ):
                    yield inner.operation
                yield from _linalg_ops(inner.operation)


def _location_names(location: Any) -> Iterable[str]:
    """The tf node names in a location (the importer's `"<OpType>:"` marks skipped)."""
    from iree.compiler import ir

    if isinstance(location, ir.NameLoc):
        if not location.name_str.endswith(":"):
            yield location.name_str
        yield from _location_names(location.child_loc)
    elif isinstance(location, ir.FusedLoc):
        for inner in location.locations:
            yield from _location_names(inner)
    elif isinstance(location, ir.CallSiteLoc):
        yield from _location_names(location.callee)


def run_and_compare(
    vmfb: Path, entry: str, inputs: Sequence[Path], expected: Sequence[Any], scratch: Path
) -> float:
    """Runs `entry` once on `inputs` (.npy files) and returns max |IREE - TF| over the
    outputs; a mismatch beyond RTOL/ATOL is one UserError line."""
    import numpy as np

    outputs = [scratch / f"iree_output_{i}.npy" for i in range(len(expected))]
    args = [f"--module={vmfb}", f"--device={DEVICE}", f"--function={entry}"]
    args += [f"--input=@{path}" for path in inputs] + [f"--output=@{path}" for path in outputs]
    run_tool("iree-run-module", args, "iree level (run)")
    worst = 0.0
    for index, (path, want) in enumerate(zip(outputs, expected, strict=True)):
        got = np.load(path)
        want = np.asarray(want)
        if got.shape != want.shape or not np.allclose(got, want, rtol=RTOL, atol=ATOL):
            difference = np.abs(got - want).max() if got.shape == want.shape else float("inf")
            raise UserError(
                f"iree level: output {index} of {entry} differs from TensorFlow's "
                f"(max |Δ| {difference:.3g}, shapes {got.shape} and {want.shape}, tolerance "
                f"{RTOL:g} relative + {ATOL:g}): IREE computes something else; report it "
                "with model.iree.vmfb"
            )
        worst = max(worst, float(np.abs(got - want).max()) if got.size else 0.0)
    return worst


def profile_dispatches(
    vmfb: Path, entry: str, inputs: Sequence[Path], runs: int, scratch: Path, warmup: int = 0
) -> dict[str, tuple[int, int]]:
    """Per dispatch function: (count, total ps) over `runs` runs of `entry`, after
    `warmup` runs that are profiled too and then dropped: each run is the same
    number of queue submissions, in time order (`submission_id`)."""
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
    measured = set(submissions[len(submissions) - per_run * runs :])
    found: dict[str, tuple[int, int]] = {}
    for event in events:
        if event["submission_id"] in measured:
            count, ps = found.get(event["key"], (0, 0))
            found[event["key"]] = (count + 1, ps + event["duration_ns"] * 1000)
    return found


def build_profile(
    source: str,
    entry: str,
    runs: int,
    warmup: int,
    max_abs: float,
    timings: dict[str, tuple[int, int]],
    sources: dict[str, tuple[tuple[str, ...], str]],
    tf_self_ps: dict[str, int],
    fused_into: dict[str, str],
) -> IreeProfile:
    """The dispatches, largest first, each with its tf ops and their TF self time;
    per tf op, its equal integer share of every dispatch that ran it. A name TF ran
    inside another op's kernel (`fused_into`, a remapper fusion) stands for that
    op; the measured ops are kept when a dispatch names any. A tf op several
    dispatches ran gives each an equal part of its TF time, so the TF column sums
    to the TF time of the ops covered. A dispatch with no tf op stays, unattributed."""
    ran_by: dict[str, tuple[str, ...]] = {}
    found: dict[str, str] = {}
    for name in timings:
        named, found[name] = sources.get(name, ((), ""))
        canonical = tuple(dict.fromkeys(fused_into.get(n, n) for n in named))
        ran_by[name] = tuple(n for n in canonical if n in tf_self_ps) or canonical
    dispatches_of: dict[str, int] = {}
    for ran in ran_by.values():
        for node in ran:
            dispatches_of[node] = dispatches_of.get(node, 0) + 1
    # A tf op several dispatches ran gives each an equal integer part of its TF time.
    tf_parts = {
        node: iter(split_equally(tf_self_ps.get(node, 0), count))
        for node, count in dispatches_of.items()
    }
    dispatches = []
    op_ps: dict[str, int] = {}
    for name, (count, total_ps) in timings.items():
        ran = ran_by[name]
        tf = sum(next(tf_parts[node]) for node in ran)
        dispatch = Dispatch(name, count, total_ps, ran, tf, found[name])
        for node, ps in dispatch.parts().items():  # none: unattributed, listed
            op_ps[node] = op_ps.get(node, 0) + ps
        dispatches.append(dispatch)
    dispatches.sort(key=lambda d: (-d.total_ps, d.name))
    op_tf = {node: tf_self_ps.get(node, 0) for node in op_ps}
    return IreeProfile(
        source, entry, runs, warmup, max_abs, RTOL, ATOL, tuple(dispatches), op_ps, op_tf
    )


class ToolTimeout(UserError):
    """An IREE tool that ran past its timeout and was killed."""


def run_tool(tool: str, args: list[str], what: str, timeout_s: float | None = None) -> str:
    """Runs one of IREE's tools; a failure, or a run past `timeout_s` (killed), is
    one UserError line."""
    from iree.compiler.tools.binaries import find_tool

    try:
        executable = find_tool(tool) if tool in _COMPILER_TOOLS else _runtime_tool(tool)
    except Exception:
        raise UserError(
            f"{what}: IREE's {tool} is not installed (pip install iree-base-compiler "
            "iree-base-runtime; see requirements.txt)"
        ) from None
    try:
        done = subprocess.run(
            [executable, *args], capture_output=True, text=True, check=False, timeout=timeout_s
        )
    except subprocess.TimeoutExpired:
        raise ToolTimeout(f"{what}: {tool} did not finish in {timeout_s:.0f} s; killed") from None
    if done.returncode != 0:
        lines = [line for line in done.stderr.splitlines() if "error" in line.lower()]
        detail = (lines or done.stderr.strip().splitlines() or ["no message"])[0].strip()
        raise UserError(f"{what}: {tool} failed: {detail}")
    return done.stdout


def _runtime_tool(tool: str) -> str:
    """A tool of the runtime wheel (iree-base-runtime ships them in its package)."""
    import iree.runtime

    path = Path(iree.runtime.__file__).resolve().parents[1] / "_runtime_libs" / tool
    if not path.is_file():
        raise FileNotFoundError(path)
    return str(path)
