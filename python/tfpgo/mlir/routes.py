"""The routes from a tf module to StableHLO, and how the run names the one taken.

TensorFlow's direct legalization (`tf-shape-inference,tf-stablehlo`) first: its
module is closest to the tf ops. Where it leaves a tf op (the list ops of loops
over TensorLists), the passes of TensorFlow's XLA bridge. Where neither lowers a
step, or for a training step, TensorFlow's XLA compiler's own StableHLO
(tfpgo.mlir.compiled_step), taken by the lower stage (tfpgo.flow.lower_stage).
docs/lowering.md has the three routes.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from tfpgo.errors import UserError
from tfpgo.mlir.conv_gradients import CONVOLUTION, GradientForm, rewritten_count
from tfpgo.mlir.diagnostics import error_message
from tfpgo.mlir.iree_loops import LoopDecision, unrolled_loops

TF_TO_STABLEHLO = "tf-shape-inference,tf-stablehlo"
# TensorFlow's XLA bridge route, in the order of tf2xla's
# CreateConvertMlirToXlaHloPipeline: functional control flow into regions and
# functions inlined, so that shape inference reaches loop bodies; shapes inferred
# twice around a canonicalize, which removes the variant casts the region
# conversion puts before each loop (they would hide a list's element shape); then
# TensorList, TensorArray and Stack ops decomposed into tensors, before the same
# legalization. The decompositions act on the function named `main` only.
BRIDGE_TO_STABLEHLO = (
    "tf-functional-control-flow-to-regions,inline,tf-shape-inference,func.func(canonicalize),"
    "tf-shape-inference,tf-tensor-list-ops-decomposition,tf-tensor-array-ops-decomposition,"
    "tf-stack-ops-decomposition,tf-stablehlo"
)
# The routes to StableHLO: TensorFlow's direct legalization first (its module is
# closer to the tf ops), then the XLA bridge's (loops over TensorLists).
DIRECT_ROUTE, BRIDGE_ROUTE = "tf-stablehlo", "XLA bridge"
# A training step, or a step neither pass route lowers: TensorFlow's XLA
# compiler's own StableHLO (tfpgo.mlir.compiled_step).
COMPILED_ROUTE = "XLA compiler"

# The module attributes XLA's compiler gives the StableHLO it makes
# (`mhlo.input_output_alias`, `mhlo.cross_program_prefetches`, ...); TensorFlow's
# pass routes keep the tf module's (`tf.versions`).
_XLA_MODULE = re.compile(r"^module\b[^\n{]*\battributes \{[^\n]*\bmhlo\.", re.MULTILINE)

# The public function of a lowered module: the one the runtime calls.
ENTRY_FUNCTION = re.compile(r"func\.func @([\w.$-]+)\(")


@dataclass(frozen=True)
class Route:
    """How the step became StableHLO: `DIRECT_ROUTE`; `BRIDGE_ROUTE` and why the
    direct one could not (`why`: the op it could not lower); or `COMPILED_ROUTE`
    and why (a training step's variables, or the op no pass route lowers)."""

    name: str
    why: str = ""
    # Loop results taken from the state they reshape, and loop-invariant carried
    # values put behind a barrier (tfpgo.mlir.iree_loops).
    forwarded_results: int = 0
    barriers: int = 0
    counted_loops: int = 0  # conditions of several counters made one counted bound
    tied_variables: int = 0  # written variables updated in their own buffers
    gradient_forms: tuple[GradientForm, ...] = ()  # the form each filter gradient took
    loops: tuple[LoopDecision, ...] = ()  # each loop and what the rewrite did with it

    @property
    def unrolled_loops(self) -> int:
        """Loops of known trips unrolled whole."""
        return unrolled_loops(self.loops)

    @property
    def rewritten_gradients(self) -> int:
        """Convolution gradients rewritten: filter gradients as matmuls, strided
        input gradients as one convolution of their phases."""
        return rewritten_count(self.gradient_forms)

    def _gradients_by_form(self) -> dict[str, int]:
        """How many filter gradients took each form other than a convolution."""
        return dict(Counter(f.form for f in self.gradient_forms if f.form != CONVOLUTION))

    def text(self) -> str:
        if not self.why:
            how = f"TensorFlow's {self.name}"
        elif self.name == COMPILED_ROUTE:
            how = f"TensorFlow's {self.name} (jit_compile's StableHLO), since {self.why}"
        else:
            how = f"TensorFlow's {self.name} passes, since {self.why} in tf-stablehlo alone"
        if self.forwarded_results:
            how += (
                f"; {_count(self.forwarded_results, 'loop result')} the loop never reads "
                "taken from the state reshaped"
            )
        if self.tied_variables:
            how += (
                f"; {_count(self.tied_variables, 'written variable')} updated in place "
                "(iree.abi.output: no new buffer a call)"
            )
        if self.rewritten_gradients:
            how += f"; {_count(self.rewritten_gradients, 'convolution gradient')} as " + (
                ", ".join(f"{n} {form}" for form, n in self._gradients_by_form().items())
            )
        if self.unrolled_loops:
            how += (
                f"; {_count(self.unrolled_loops, 'loop')} of known trips unrolled (no trip "
                "waits on the host)"
            )
        if self.counted_loops:
            how += (
                f"; {_count(self.counted_loops, 'loop condition')} of several counters made one "
                "counted bound (IREE runs it as an scf.for, reading nothing back a trip)"
            )
        if self.barriers:
            how += (
                f"; {_count(self.barriers, 'loop-invariant carried value')} kept through an "
                "optimization barrier"
            )
        return how


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"


def tf_to_stablehlo(carried: Path) -> tuple[str, Route]:
    """StableHLO from the carried tf module, and the route that made it: the
    direct legalization, else the XLA bridge's (`BRIDGE_TO_STABLEHLO`); one
    UserError line naming what neither could lower."""
    text = carried.read_text()
    try:
        return _run_tf_passes(text, TF_TO_STABLEHLO), Route(DIRECT_ROUTE)
    except _NotLowered as direct:
        entry = ENTRY_FUNCTION.search(text)
        try:
            if entry is None:
                raise _NotLowered("the module has no function to lower") from None
            # The decompositions look for `main`; the name goes back afterwards.
            lowered = _run_tf_passes(_entry_as_main(text, entry[1]), BRIDGE_TO_STABLEHLO)
        except _NotLowered as bridge:
            raise NoStableHlo(str(direct), str(bridge)) from None
        return re.sub(r"@main\b", f"@{entry[1]}", lowered), Route(BRIDGE_ROUTE, str(direct))


def replay(carried_text: str, route: Route) -> tuple[str, tuple[str, ...]]:
    """What `tf_to_stablehlo` ran on the carried module for `route` (a pass
    route), as the module given and the pipeline's top-level passes one by one:
    to find the pass after which a record was gone (tfpgo.mlir.lost_ops)."""
    if route.name == DIRECT_ROUTE:
        return carried_text, _top_level(TF_TO_STABLEHLO)
    entry = ENTRY_FUNCTION.search(carried_text)
    named = carried_text if entry is None else _entry_as_main(carried_text, entry[1])
    return named, _top_level(BRIDGE_TO_STABLEHLO)


def _entry_as_main(text: str, entry: str) -> str:
    return re.sub(rf"@{re.escape(entry)}\b", "@main", text)


def _top_level(pipeline: str) -> tuple[str, ...]:
    """A pipeline's passes split at its top-level commas."""
    steps, depth, start = [], 0, 0
    for index, char in enumerate(pipeline):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "," and depth == 0:
            steps.append(pipeline[start:index])
            start = index + 1
    return (*steps, pipeline[start:])


class NoStableHlo(UserError):
    """Neither TensorFlow route lowers the module: why each stopped, as clauses."""

    def __init__(self, direct: str, bridge: str) -> None:
        self.direct, self.bridge = direct, bridge
        self.clause = (
            f"cannot lower to StableHLO: {direct} in TensorFlow's tf-stablehlo, and its XLA "
            f"bridge passes stopped too ({bridge})"
        )
        self.consequence = "so the profile stops at the tf level (run without --lower)"
        super().__init__(f"{self.clause}, {self.consequence}")


class _NotLowered(Exception):
    """A pass pipeline could not lower the module: why, as a clause."""


def _run_tf_passes(text: str, pipeline: str) -> str:
    """`text` through TensorFlow's `pipeline`, with every tf op lowered."""
    import tensorflow as tf

    try:
        lowered = tf.mlir.experimental.run_pass_pipeline(text, pipeline, show_debug_info=True)
    except Exception as error:  # TensorFlow raises bare Exceptions with MLIR diagnostics
        raise _NotLowered(error_message(str(error), "unknown error")) from None
    # tf-stablehlo converts partially: an op without a lowering stays a tf op.
    left = _tf_ops_left(lowered)
    if left:
        # A constant left over (a variant-typed one) is a consequence; name a cause.
        op, node = next(((op, node) for op, node in left if op != "tf.Const"), left[0])
        more = f" (and {len(left) - 1} more)" if len(left) > 1 else ""
        raise _NotLowered(f"{op} (node '{node}'){more} has no StableHLO lowering")
    return lowered


_TF_OP = re.compile(r'"(tf\.\w+)"\(.*loc\((#loc\d+)\)\s*$', re.MULTILINE)
_LOC_ALIAS = re.compile(r"^(#loc\d+) = (.*)$", re.MULTILINE)
# A quoted name right after `(` or `[`: `callsite("n"(...`, `loc("n"`, `["n"`.
_NODE_NAME = re.compile(r'(?<=[(\[])"([^"]*[^":])"')


def _tf_ops_left(module: str) -> list[tuple[str, str]]:
    """(op, node name) of every tf op in a printed module with debug locations."""
    aliases = dict(_LOC_ALIAS.findall(module))
    left = []
    for op, alias in _TF_OP.findall(module):
        location = aliases.get(alias, "")
        # Follow aliases until a quoted name shows (callee first, as TF prints).
        for _ in range(8):
            name = _NODE_NAME.search(location)
            if name or "#loc" not in location:
                break
            location = re.sub(r"#loc\d+", lambda m: aliases.get(m[0], ""), location)
        left.append((op, name[1] if name else "?"))
    return left


def made_by_xla_compiler(stablehlo_text: str) -> bool:
    """Whether a StableHLO module (custom form) came by `COMPILED_ROUTE`, read off
    the module attributes XLA's compiler sets."""
    return _XLA_MODULE.search(stablehlo_text) is not None
