"""What became of a profiled op no op of a lower level carries: one of a closed set.

A tf op's record leaves a lowering for one of five reasons (`Loss`,
docs/attribution_rules.md "What became of an op"): a decomposition eliminated
it (a TensorList op becomes the buffer its loop carries), it was merged into an
equivalent op, it was a variable's read or write (a parameter or result of a
training step's program), it was folded (into a constant, or into its operand),
or it is unknown, with the pass after which it was gone.

That pass is found by running the lowering again with the module printed after
every pass: TensorFlow's pass routes one pass at a time (`gone_after_tf_passes`),
IREE's input conversion in one run with `--mlir-print-ir-after-all`
(`gone_after_iree_passes`), the first pass after which no op carries the record
naming it. The pass also says the reason where it can: a canonicalizer folds, CSE
merges.
"""

from __future__ import annotations

import enum
import re
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from tfpgo.iree.tools import run_tool


class Loss(enum.Enum):
    """The closed set of what became of a lost op."""

    DECOMPOSED = "eliminated by a decomposition"
    MERGED = "merged"
    VARIABLE = "a variable read or write"
    FOLDED = "folded"
    UNKNOWN = "unknown"


# Reads and writes of variables, by op type (a frozen read is an Identity that
# keeps the read's node name).
_VARIABLE_READ = "tf.ReadVariableOp"
_VARIABLE_WRITES = ("tf.AssignVariableOp", "tf.AssignAddVariableOp", "tf.AssignSubVariableOp")
# The list ops TensorFlow's decompositions turn into the buffers their loops carry,
# with the pass of the XLA bridge route that does it.
_DECOMPOSITIONS = (
    ("tf.TensorList", "tf-tensor-list-ops-decomposition"),
    ("tf.TensorArray", "tf-tensor-array-ops-decomposition"),
    ("tf.Stack", "tf-stack-ops-decomposition"),
)
# Ops that ask for a shape: with static shapes, every lowering folds them into
# constants.
_SHAPE_QUERIES = frozenset(
    f"tf.{name}"
    for name in (
        "Shape", "ShapeN", "Size", "Rank", "VariableShape", "TensorListElementShape",
        "TensorListLength", "BroadcastGradientArgs",
    )
)  # fmt: skip
# Passes whose name says what they do to an op they remove.
_FOLDING_PASS = re.compile(r"canonicalize|fold", re.IGNORECASE)
_MERGING_PASS = "cse"
# A record still in the linalg module's locations, on no op the level counts.
STILL_IN_IREE_INPUT = "IREE's input conversion (its location is left on no op)"
# Where no pass can be named: TensorFlow's XLA compiler is one step.
TF2XLA = "TensorFlow's XLA compiler (tf2xla), which runs no pass pipeline to bisect"


@dataclass(frozen=True)
class LostSource:
    """A tf op whose measurements no op of a lower level carries, and why."""

    name: str
    op: str  # its tf op type (`tf.ReadVariableOp`)
    self_ps: int
    kind: Loss = Loss.UNKNOWN
    detail: str = ""  # the decomposition, the op merged into, the pass

    @property
    def reason(self) -> str:
        if self.kind is Loss.VARIABLE:
            return f"a variable {self.detail}"
        if self.kind is Loss.DECOMPOSED:
            return f"eliminated by {self.detail}: the list is the buffer its loop carries"
        if self.kind is Loss.MERGED:
            return f"merged into {self.detail}"
        if self.kind is Loss.FOLDED:
            return f"folded by {self.detail}"
        return f"unknown: gone after {self.detail}"


def by_design(name: str, op: str, compiled: bool) -> tuple[Loss, str] | None:
    """The reason an op leaves the tf level by design, if it does: a variable's
    read or write, a list op (`compiled`: on TensorFlow's XLA compiler route), a
    shape query."""
    if op == _VARIABLE_READ or name.endswith("/ReadVariableOp"):
        return Loss.VARIABLE, "read: a constant once frozen, or a parameter of the step's program"
    if op in _VARIABLE_WRITES:
        return Loss.VARIABLE, "write: the value written is a result of the step's program"
    if op in _SHAPE_QUERIES:
        return Loss.FOLDED, "the lowering into a constant: the shape is known when compiling"
    for prefix, decomposition in _DECOMPOSITIONS:
        if op.startswith(prefix):
            if compiled:
                return Loss.DECOMPOSED, "tf2xla's list kernels (TensorFlow's XLA compiler)"
            return Loss.DECOMPOSED, f"TensorFlow's {decomposition} (the XLA bridge route)"
    return None


def from_pass(pass_name: str, merged_into: str = "") -> tuple[Loss, str]:
    """The reason an op gone after `pass_name` is lost; `merged_into` names the op
    it was found equivalent to (tfpgo.mlir.merged_work), if it was."""
    if merged_into:
        return Loss.MERGED, f"{merged_into} ({pass_name})"
    if pass_name == _MERGING_PASS:
        return Loss.MERGED, f"an equivalent op ({pass_name})"
    if _FOLDING_PASS.search(pass_name):
        return Loss.FOLDED, f"{pass_name}: into a constant, or into its operand"
    return Loss.UNKNOWN, pass_name


def explain(
    lost: Sequence[LostSource],
    level: str,
    above: Sequence[LostSource],
    compiled: bool,
    gone_after: Callable[[list[str]], tuple[Mapping[str, str], str]],
    merged_into: Mapping[str, str] | None = None,
) -> tuple[LostSource, ...]:
    """`lost`, a level's lost sources, each with what became of it, hottest
    first: as the level above (`above`, explained) lost it; by design where it
    leaves the tf level (at StableHLO: a list op that reached StableHLO is not
    lost to its decomposition below it); else by the pass after which it was
    gone, from `gone_after(names)`: the pass of each name, and what to say of a
    name it has none for. `merged_into` names the op each merged one went to."""
    known = {source.name: source for source in above}
    explained, pending = [], []
    for source in lost:
        design = by_design(source.name, source.op, compiled) if level == "stablehlo" else None
        if source.name in known:
            explained.append(
                replace(source, kind=known[source.name].kind, detail=known[source.name].detail)
            )
        elif design is not None:
            explained.append(replace(source, kind=design[0], detail=design[1]))
        else:
            pending.append(source)
    if pending:
        gone, still = gone_after([source.name for source in pending])
        for source in pending:
            kind, detail = from_pass(
                gone.get(source.name, still), (merged_into or {}).get(source.name, "")
            )
            explained.append(replace(source, kind=kind, detail=detail))
    return tuple(sorted(explained, key=lambda source: -source.self_ps))


def gone_after_tf_passes(
    module_text: str, steps: Iterable[str], names: Iterable[str]
) -> dict[str, str]:
    """Each of `names` (tf nodes whose records `module_text` carries) → the first
    of TensorFlow's pass `steps` after which no op carries it; a name still
    carried after the last step is absent."""
    import tensorflow as tf

    pending = {name for name in names if carried(module_text, name)}
    gone: dict[str, str] = {}
    for step in steps:
        if not pending:
            break
        module_text = tf.mlir.experimental.run_pass_pipeline(
            module_text, step, show_debug_info=True
        )
        for name in sorted(pending):
            if not carried(module_text, name):
                gone[name] = step
                pending.discard(name)
    return gone


def gone_after_iree_passes(stablehlo: Path, text: str, names: Iterable[str]) -> dict[str, str]:
    """Each of `names` → the first pass of IREE's input conversion
    (`--compile-to=input`, the linalg level) of `stablehlo` (printed: `text`)
    after which no op carries it; a name carried to the end, or never, is
    absent. Nothing is compiled when `text` carries none of them."""
    pending = {name for name in names if carried(text, name)}
    if not pending:
        return {}
    with tempfile.TemporaryDirectory(prefix="tfpgo-passes-") as scratch:
        dump = Path(scratch) / "after_all.mlir"
        run_tool(
            "iree-compile",
            [
                "--iree-input-type=stablehlo",
                "--compile-to=input",
                "--mlir-print-debuginfo",
                "--mlir-elide-elementsattrs-if-larger=16",
                "--mlir-print-ir-after-all",
                "--mlir-print-ir-module-scope",
                "--mlir-disable-threading",
                str(stablehlo),
                "-o",
                str(Path(scratch) / "linalg.mlir"),
            ],
            "finding the pass that lost a record",
            stderr_file=dump,
        )
        gone: dict[str, str] = {}
        for pass_name, text in _dumps(dump):
            for name in sorted(pending):
                if not carried(text, name):
                    gone[name] = pass_name
                    pending.discard(name)
            if not pending:
                break
        return gone


def stablehlo_text(path: Path) -> str:
    """A StableHLO file's text, MLIR bytecode (`model.stablehlo.mlirbc`) printed."""
    if path.read_bytes()[:4] != b"ML\xefR":
        return path.read_text()
    return run_tool(
        "iree-opt",
        ["--mlir-print-debuginfo", "--mlir-elide-elementsattrs-if-larger=16", str(path)],
        "reading the program's StableHLO",
    )


_DUMP_HEADER = re.compile(r"^// -----// IR Dump After \S+ \(?(?P<pass>[^ ){]+)")


def _dumps(path: Path) -> Iterator[tuple[str, str]]:
    """(pass, module text) of each dump of `--mlir-print-ir-after-all`."""
    name, lines = "", []
    with path.open(errors="replace") as stream:
        for line in stream:
            header = _DUMP_HEADER.match(line)
            if header is None:
                lines.append(line)
                continue
            if name:
                yield name, "".join(lines)
            name, lines = header["pass"].rstrip(":"), []
    if name:
        yield name, "".join(lines)


def carried(text: str, name: str) -> bool:
    """Whether a printed module holds `name` quoted: in its locations, a carried
    record's source or a name location (TensorFlow's XLA compiler's)."""
    return '"' + name.replace("\\", "\\\\").replace('"', '\\"') + '"' in text
