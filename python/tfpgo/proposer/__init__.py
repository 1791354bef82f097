"""The proposer: advice read from the analysis, and the A/B measurement that
decides whether to take it.

Layering (after MindSpore's profiler): the analysers (`tfpgo.analysis`) turn
the op profile into breakdowns; each rule here is one small module that reads
the `Analysis` record and emits `Proposal`s citing their evidence (op types,
scopes, shares). `optimize` applies each proposal to the loaded step, measures
candidate against baseline with interleaved repetitions (`ab`), and writes the
samples and verdicts to `optimize.json`; a verdict is recomputed from the
stored samples by `blocks.judge`, a pure function.
"""

from __future__ import annotations

from tfpgo.analysis import Analysis
from tfpgo.proposer import (
    auto_clustering,
    intra_threads,
    jit_compile,
    layout_optimizer,
    mixed_precision,
    onednn,
    remapper,
    threads,
    xla_regions,
)
from tfpgo.proposer.proposal import Evidence, EvidenceKind, NotApplicable, Proposal

# Every rule: a module with `RULE` (its name) and `propose(analysis) -> list[Proposal]`.
RULES = (
    jit_compile,
    auto_clustering,
    onednn,
    threads,
    intra_threads,
    mixed_precision,
    layout_optimizer,
    remapper,
    xla_regions,
)

__all__ = ["RULES", "Evidence", "EvidenceKind", "NotApplicable", "Proposal", "propose"]


def propose(analysis: Analysis) -> list[Proposal]:
    """Every rule's proposals for one analysed step, in rule order."""
    return [proposal for rule in RULES for proposal in rule.propose(analysis)]
