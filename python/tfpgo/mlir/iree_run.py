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

from tfpgo.atomic import atomic_output_file
from tfpgo.documents import expect_format, new_header, read_json, write_compact_json
from tfpgo.errors import UserError
from tfpgo.trace.xla_attribution import split_equally

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
        document = read_json(path)
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
    """The linalg op graph (`tfpgo.op_graph`) with every record timed by IREE: an op
    whose record's `source` tf op ran in dispatches shows that op's share of the
    dispatch time (`IreeProfile.op_ps`, a run's worth in `dur`), as it shows the
    source's TensorFlow time in the linalg graph; ops of other sources lose their
    record. The picture of the compiled program's cost, op by op."""
    document = read_json(linalg_graph)
    runs = max(profile.runs, 1)
    whole = max(profile.dispatch_ps, 1)
    for node in document["nodes"]:
        node["hot"], node["hot_rank"] = False, None  # TensorFlow's ranking, not IREE's
        record = node.get("profiler_data")
        if not record:
            continue
        ps = profile.op_ps.get(record.get("source", node.get("name")))
        if ps is None:
            node["profiler_data"] = None
            continue
        mean = ps // runs
        node["profiler_data"] = {
            **record,
            "count": runs,
            "total": ps,
            "self": ps,
            "dur": mean,
            "min": mean,
            "max": mean,
            "p50": mean,
            "p95": mean,
            "share": ps / whole,
        }
    write_compact_json(path, document)


def compile_module(stablehlo: Path, vmfb: Path, sources: Path, bytecode: Path) -> None:
    """The vmfb for the host CPU, the executable sources with locations, and the
    whole StableHLO program (weights included) as MLIR bytecode."""
    _run("iree-opt", [str(stablehlo), "--emit-bytecode", "-o", str(bytecode)], "iree level")
    _run("iree-compile", [*IREE_FLAGS, str(stablehlo), "-o", str(vmfb)], "iree level")
    _run(
        "iree-compile",
        [
            *IREE_FLAGS,
            "--compile-to=executable-sources",
            "--mlir-print-debuginfo",
            str(stablehlo),
            "-o",
            str(sources),
        ],
        "iree level (executable sources)",
    )


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
        exports: list[str] = []
        _walk(executable.operation, compute, bindings, exports)
        names, where = (compute, "compute") if compute else (bindings, "bindings")
        for export in exports:
            found[export] = (tuple(names), where if names else "")
    return found


def _walk(op: Any, compute: dict[str, None], bindings: dict[str, None], exports: list[str]) -> None:
    if op.name == "hal.executable.export":
        exports.append(str(op.attributes["sym_name"]).strip('"'))
    elif op.name.startswith(_COMPUTE_DIALECTS) and op.name not in _NOT_COMPUTE:
        for name in _location_names(op.location):
            compute.setdefault(name, None)
    elif op.name.endswith((".load", ".store")):
        for name in _location_names(op.location):
            bindings.setdefault(name, None)
    for region in op.regions:
        for block in region.blocks:
            for inner in block.operations:
                _walk(inner.operation, compute, bindings, exports)


DISPATCHES_MODULE = "model.dispatches.mlir"


def write_dispatch_sources(
    module: Any, profile: IreeProfile, fused_into: dict[str, str], path: Path
) -> None:
    """The executable sources (each dispatch's code, large constants elided) with a
    `profiler_data` record on every linalg op that names a tf op of the profile
    (or one TensorFlow ran inside its kernel, `fused_into`): `source` (that tf op),
    `self` (its TensorFlow self time, the profiled steps), `iree_self` (its share
    of the dispatches that ran it), `dispatch`."""
    from iree.compiler import ir

    with module.context:
        i64 = ir.IntegerType.get_signless(64)
        for executable in module.body.operations:
            if executable.operation.name != "hal.executable":
                continue
            exports: list[str] = []
            _walk(executable.operation, {}, {}, exports)
            for op in _linalg_ops(executable.operation):
                named = (fused_into.get(n, n) for n in _location_names(op.location))
                source = next((n for n in named if n in profile.op_ps), None)
                if source is None:
                    continue
                op.attributes["profiler_data"] = ir.DictAttr.get(
                    {
                        "source": ir.StringAttr.get(source),
                        "self": ir.IntegerAttr.get(i64, profile.op_tf_ps.get(source, 0)),
                        "iree_self": ir.IntegerAttr.get(i64, profile.op_ps[source]),
                        "dispatch": ir.StringAttr.get(exports[0] if exports else ""),
                    }
                )
    text = module.operation.get_asm(large_elements_limit=ELIDE_ELEMENTS)
    with atomic_output_file(path) as handle:
        handle.write(text)


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
    _run("iree-run-module", args, "iree level (run)")
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
    _run("iree-benchmark-module", args, "iree level (profile)")
    listing = _run(
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
    dispatches = []
    op_ps: dict[str, int] = {}
    for name, (count, total_ps) in timings.items():
        ran = ran_by[name]
        if ran:  # else unattributed: listed with its time
            for node, ps in zip(ran, split_equally(total_ps, len(ran)), strict=True):
                op_ps[node] = op_ps.get(node, 0) + ps
        tf = sum(tf_self_ps.get(node, 0) // dispatches_of[node] for node in ran)
        dispatches.append(Dispatch(name, count, total_ps, ran, tf, found[name]))
    dispatches.sort(key=lambda d: (-d.total_ps, d.name))
    op_tf = {node: tf_self_ps.get(node, 0) for node in op_ps}
    return IreeProfile(
        source, entry, runs, warmup, max_abs, RTOL, ATOL, tuple(dispatches), op_ps, op_tf
    )


def _run(tool: str, args: list[str], what: str) -> str:
    from iree.compiler.tools.binaries import find_tool

    try:
        executable = find_tool(tool) if tool in _COMPILER_TOOLS else _runtime_tool(tool)
    except Exception:
        raise UserError(
            f"{what}: IREE's {tool} is not installed (pip install iree-base-compiler "
            "iree-base-runtime; see requirements.txt)"
        ) from None
    done = subprocess.run([executable, *args], capture_output=True, text=True, check=False)
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
