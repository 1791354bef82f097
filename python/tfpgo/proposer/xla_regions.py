"""Rule `xla_regions`: XLA only where the profile says it pays.

`jit_compile` and `auto_clustering` switch XLA on for the whole step; on a CPU
that also hands the convolutions and matrix products to XLA, whose kernels can
be slower than oneDNN's. The pass `tf-profile-guided-xla-regions` reads the
annotated module and chooses regions of ops XLA fuses well that TensorFlow runs
as many small kernels (`tfpgo.mlir.xla_regions`, `xla_regions.json`). This rule
fires when the flow ran the pass and it chose at least one region
(`Analysis.xla_regions`), and proposes running the step with exactly those ops
compiled by XLA, every other op on TensorFlow's kernels.

How TensorFlow executes the decision (`with_xla_regions`): the step's Python
function is traced again, inside the graph's attribute scope, as
`tf.xla.experimental.jit_scope` does (tensorflow/python/compiler/xla/jit.py):
each op created while tracing, the gradient tape's and the optimizer's
included, gets `_XlaCompile` = whether its node name is in a region, and the
region's ops get `_XlaScope` = the region's name. TensorFlow's
`MarkForCompilationPass` compiles ops marked `_XlaCompile=true` on the CPU
whatever the device's autoclustering policy (`ShouldCompile`), never clusters an
op marked false, keeps ops of different `_XlaScope` apart, and honours
`_XlaScope` only with auto-jit off (`GetXlaScope`), so the worker turns auto-jit
off. Limits of that route: a region's ops that no data edge connects become
separate clusters (clustering follows edges); the ops tf.function adds after
the Python code returns (the outputs' `Identity`) are outside the scope and stay
with TensorFlow (the candidate's description names them); and an op created
inside a nested function body or control-flow branch is not in the traced
graph: a region naming one is refused, not compiled partly.

The candidate runs in a worker process (`--xla-regions`): there the marked
trace is the step's first, so its node names are the profiled ones (a Keras
optimizer's first trace builds its variables in its `sgd` scope and puts its
updates in `sgd_1`; a later trace in the same process names them `sgd/...`),
and auto-jit is off whatever the environment says. It is timed in the same run
against the baseline and against whole-program XLA (the rival `--jit-compile`,
its outputs checked against the baseline's too), and the rival against the
baseline: it is advised when it helps and the rival was not measured faster
(`tfpgo.proposer.trials.advised`: when their interval holds 1, the regions, fewer
ops under XLA, are the simpler change); whole-program XLA is advised in its place
when it helps and was measured faster, or when the regions do not help
(`advised_rival`). Numerics as the other XLA rules: 1e-3 relative, and XLA draws
other random numbers.

Iteration: a region set that is not advised is profiled in its worker, and
each region's time before and after is read from the two profiles
(`tfpgo.proposer.region_times`); if some regions ran faster under XLA and some
did not, the winners alone are proposed again (`xla_regions_kept`) and
measured the same three ways. A region is kept only if it won: a narrowed set
not advised is narrowed again the same way (`xla_regions_kept_2`, ...), up to
`ROUNDS` narrowings, until every region of a set wins (clusters left out
change what the others cost, so a region that won beside them can lose). The
sets are `TESTS` tests of one question: each is judged at Holm's level
(`tfpgo.proposer.blocks.holm_confidence`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from tfpgo.analysis import Analysis
from tfpgo.atomic import atomic_output_file
from tfpgo.attribution.op_profile import OpProfile
from tfpgo.documents import read_json
from tfpgo.errors import UserError
from tfpgo.mlir.xla_regions import XlaRegions, read_regions
from tfpgo.models import ModelCase
from tfpgo.proposer.jit_compile import RULE as JIT_RULE
from tfpgo.proposer.jit_compile import python_step
from tfpgo.proposer.proposal import Evidence, EvidenceKind, Proposal, Rival, narrowed
from tfpgo.proposer.region_times import region_times

RULE = "xla_regions"
# The iteration's proposal: only the regions that won when re-profiled.
RULE_KEPT = narrowed(RULE)
KEPT_DOCUMENT = "xla_regions.kept.json"  # in each round's own directory
# Narrowings at most: each costs a profile and three A/Bs.
ROUNDS = 3
# The region sets one run may measure, the first included: each is judged at
# Holm's level for this many tests (`Proposal.tests`).
TESTS = ROUNDS + 1
# Whole-program XLA, which every region set must beat: its numerics checked as
# `jit_compile`'s (1e-3 relative; XLA draws other random numbers).
JIT_RIVAL = Rival(JIT_RULE, ("--jit-compile",), other_random_numbers=True)
TOP_OPS = 3  # op types named per region in its evidence


def propose(analysis: Analysis) -> list[Proposal]:
    if analysis.xla_regions is None:
        return []
    regions = read_regions(analysis.xla_regions)
    if not regions.regions:
        return []
    ops = sum(len(region.ops) for region in regions.regions)
    share = sum(region.share for region in regions.regions)
    return [
        Proposal(
            rule=RULE,
            change=f"compile {len(regions.regions)} regions ({ops} ops) with XLA, "
            f"TensorFlow's kernels for the rest ({regions.path.name})",
            reason=f"the xla-regions pass chose ops XLA fuses well that take {share:.1%} of "
            f"op time and left {len(regions.declined)} ops to TensorFlow's kernels",
            evidence=tuple(_region_evidence(regions)),
            worker_flags=("--xla-regions", str(regions.path)),
            other_random_numbers=True,
            rivals=(JIT_RIVAL,),
            tests=TESTS,
            refine=KeepWinners(regions, RULE_KEPT, ROUNDS),
        )
    ]


@dataclass(frozen=True)
class KeepWinners:
    """`Proposal.refine` of a region set: `keep_winners` with its regions, the rule
    of the narrowed proposal and the narrowings left, this one included (a value, so
    that equal proposals compare equal)."""

    regions: XlaRegions
    rule: str
    rounds_left: int

    def __call__(self, before: OpProfile, after: OpProfile, directory: Path) -> Proposal | str:
        return keep_winners(self.regions, before, after, directory, self.rule, self.rounds_left)


def keep_winners(
    regions: XlaRegions,
    baseline: OpProfile,
    candidate: OpProfile,
    directory: Path,
    rule: str = RULE_KEPT,
    rounds_left: int = ROUNDS,
) -> Proposal | str:
    """The iteration after a region set that was not advised: each region's time
    before and after, re-profiled (`region_times`: TensorFlow's kernels in the
    baseline against its ops and launch ops under XLA in `candidate`, a step);
    the regions that ran faster under XLA become a new proposal named `rule`,
    written as `xla_regions.kept.json` in `directory`, narrowed again in turn
    while `rounds_left` (this one included) allows; or the reason there is none."""
    times = region_times(regions, baseline, candidate)
    measured = "; ".join(
        f"{t.name}: {t.before_ps / 1e6:.1f} -> {t.after_ps / 1e6:.1f} µs a step" for t in times
    )
    winners = {t.name for t in times if t.wins}
    if not winners:
        return f"no region ran faster under XLA than on TensorFlow's kernels ({measured})"
    if len(winners) == len(times):
        return f"every region ran faster under XLA, and the set as a whole lost ({measured})"
    document = read_json(regions.path)
    document["regions"] = [r for r in document["regions"] if r["name"] in winners]
    path = directory / KEPT_DOCUMENT
    with atomic_output_file(path) as handle:
        json.dump(document, handle, indent=1)
    kept = read_regions(path)
    evidence = tuple(
        Evidence(
            EvidenceKind.XLA_REGION,
            t.name,
            t.before_ps / max(sum(x.before_ps for x in times), 1),
            f"{'kept' if t.wins else 'dropped'}: {t.ops} ops, {t.before_ps / 1e6:.1f} µs a "
            f"step on TensorFlow's kernels, {t.after_ps / 1e6:.1f} µs under XLA (re-profiled)",
        )
        for t in times
    )
    ops = sum(len(region.ops) for region in kept.regions)
    return Proposal(
        rule=rule,
        change=f"compile the {len(kept.regions)} of {len(times)} regions ({ops} ops) that ran "
        f"faster under XLA, TensorFlow's kernels for the rest ({path.name})",
        reason="the set before was not advised; re-profiled, these regions ran faster under "
        "XLA than their ops on TensorFlow's kernels, the others did not",
        evidence=evidence,
        worker_flags=("--xla-regions", str(path)),
        other_random_numbers=True,
        rivals=(JIT_RIVAL,),
        tests=TESTS,
        refine=KeepWinners(kept, narrowed(rule), rounds_left - 1) if rounds_left > 1 else None,
    )


def _region_evidence(regions: XlaRegions) -> list[Evidence]:
    evidence = []
    for region in regions.regions:
        counts: dict[str, int] = {}
        for op in region.ops:
            counts[op.op] = counts.get(op.op, 0) + 1
        top = sorted(counts.items(), key=lambda item: -item[1])[:TOP_OPS]
        named = ", ".join(f"{count} {op}" for op, count in top)
        detail = f"{len(region.ops)} ops ({named}), {region.self_ps / 1e6:.1f} µs: {region.reason}"
        evidence.append(Evidence(EvidenceKind.XLA_REGION, region.name, region.share, detail))
    return evidence


def with_xla_regions(case: ModelCase, regions: XlaRegions) -> ModelCase:
    """The same Python step traced again with the regions' ops marked for XLA
    (module docstring); the model's variables are shared with the baseline.
    Every op a region names must be created by the trace."""
    import tensorflow as tf

    python_function = python_step(case)
    scope_of = regions.scope_of()
    marked: set[str] = set()
    marks = _xla_marks(scope_of, marked)

    def marked_step(*args: Any) -> Any:
        # The attribute scope jit.py's jit_scope uses: applied to every op the
        # trace creates in this graph, including those of tape.gradient.
        with tf.compat.v1.get_default_graph()._attr_scope(marks):
            return python_function(*args)

    candidate = replace(case, name=f"{case.name} (xla regions)", function=tf.function(marked_step))
    # Traced now: the marks are made while tracing.
    traced = {op.name for op in candidate.concrete_function().graph.get_operations()}
    absent = sorted(set(scope_of) - traced)
    if absent:
        shown = ", ".join(absent[:3]) + (", ..." if len(absent) > 3 else "")
        raise UserError(
            f"{regions.path}: {len(absent)} ops of its regions are not in the traced step "
            f"({shown}): it was made for another step, or names ops of nested function "
            "bodies; run the pass on this step's annotated module"
        )
    # In the graph but created after the Python code returned (tf.function's output
    # Identity ops): the attribute scope cannot reach them, TensorFlow runs them.
    unmarked = sorted(set(scope_of) - marked)
    return replace(candidate, description=_marked_text(len(marked), unmarked))


def _marked_text(marked: int, unmarked: list[str]) -> str:
    text = f"{marked} ops marked for XLA"
    if unmarked:
        text += f"; left to TensorFlow, created after the step's Python code: {', '.join(unmarked)}"
    return text


def _xla_marks(scope_of: dict[str, str], marked: set[str]) -> dict[str, Callable[[Any], Any]]:
    """The `_XlaCompile`/`_XlaScope` attributes per created node (a NodeDef); the
    names of the region ops seen are added to `marked`."""
    from tensorflow.core.framework import attr_value_pb2

    def compile_attr(node_def: Any) -> Any:
        chosen = node_def.name in scope_of
        if chosen:
            marked.add(node_def.name)
        return attr_value_pb2.AttrValue(b=chosen)

    def scope_attr(node_def: Any) -> Any:
        region = scope_of.get(node_def.name)
        return None if region is None else attr_value_pb2.AttrValue(s=region.encode())

    return {"_XlaCompile": compile_attr, "_XlaScope": scope_attr}
