"""Two op profiles compared: per-op and per-scope deltas, added and removed
ops, the overlap score, and the step-time change.

Ops are matched by runtime node name. Scopes are the layer scopes of
`tfpgo.analysis.scope` (gradients folded onto their forward scope), matched by
path. Profiles that both hold device time are also compared on it (`device`: the
same comparison of their device views, `tfpgo.analysis.device`). The overlap
score is `llvm-profdata overlap`'s: each profile's self times
normalized to shares of its op self time, and the overlap Σ over ops of the
smaller of the two shares; 1 for identical distributions, 0 for disjoint ones.
It is computed in exact rational arithmetic, so a profile compared with itself
scores exactly 1.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from tfpgo.analysis.device import device_view
from tfpgo.analysis.scope import ScopeNode, scope_tree, walk
from tfpgo.attribution.op_profile import OpProfile
from tfpgo.diff.step_time import StepTimeChange, step_time_change


@dataclass(frozen=True)
class Measure:
    """One op's (or scope's) figures in one profile; zeros where it is absent."""

    self_ps: int = 0
    total_ps: int = 0
    count: int = 0


@dataclass(frozen=True)
class Delta:
    name: str  # runtime node name, or scope path
    a: Measure
    b: Measure
    in_a: bool
    in_b: bool

    @property
    def self_ps(self) -> int:
        return self.b.self_ps - self.a.self_ps

    @property
    def total_ps(self) -> int:
        return self.b.total_ps - self.a.total_ps

    @property
    def count(self) -> int:
        return self.b.count - self.a.count

    @property
    def changed(self) -> bool:
        return self.in_a != self.in_b or self.a != self.b


@dataclass(frozen=True)
class ProfileDiff:
    name_a: str  # how the inputs were named on the command line
    name_b: str
    op_self_a_ps: int
    op_self_b_ps: int
    ops: tuple[Delta, ...]  # every op of either profile, by |self delta| descending
    scopes: tuple[Delta, ...]  # every scope path of either tree, same order
    overlap: Fraction
    step_time: StepTimeChange | None
    tree_b: ScopeNode  # B's scope tree, the picture's layout
    device: ProfileDiff | None = None  # the same over device time, when both have it

    @property
    def added(self) -> tuple[Delta, ...]:
        return tuple(delta for delta in self.ops if not delta.in_a)

    @property
    def removed(self) -> tuple[Delta, ...]:
        return tuple(delta for delta in self.ops if not delta.in_b)

    @property
    def changed_ops(self) -> tuple[Delta, ...]:
        return tuple(delta for delta in self.ops if delta.changed)


def compare(profile_a: OpProfile, profile_b: OpProfile, name_a: str, name_b: str) -> ProfileDiff:
    device = None
    if profile_a.has_device and profile_b.has_device:
        device = compare(device_view(profile_a), device_view(profile_b), name_a, name_b)
    ops_a = {op.name: Measure(op.self_ps, op.total_ps, op.count) for op in profile_a.ops}
    ops_b = {op.name: Measure(op.self_ps, op.total_ps, op.count) for op in profile_b.ops}
    tree_a, tree_b = scope_tree(profile_a), scope_tree(profile_b)
    scopes_a = _scope_measures(tree_a)
    scopes_b = _scope_measures(tree_b)
    return ProfileDiff(
        name_a,
        name_b,
        profile_a.totals.op_self_ps,
        profile_b.totals.op_self_ps,
        _deltas(ops_a, ops_b),
        _deltas(scopes_a, scopes_b),
        overlap(ops_a, ops_b),
        step_time_change(profile_a.step_wall_ps, profile_b.step_wall_ps),
        tree_b,
        device,
    )


def _scope_measures(tree: ScopeNode) -> dict[str, Measure]:
    """Every scope of the tree but the root (the op totals)."""
    return {
        node.path: Measure(node.self_ps, node.total_ps, node.count)
        for node in walk(tree)
        if node.path
    }


def _deltas(a: dict[str, Measure], b: dict[str, Measure]) -> tuple[Delta, ...]:
    deltas = [
        Delta(name, a.get(name, Measure()), b.get(name, Measure()), name in a, name in b)
        for name in a.keys() | b.keys()
    ]
    return tuple(sorted(deltas, key=lambda d: (-abs(d.self_ps), d.name)))


def overlap(a: dict[str, Measure], b: dict[str, Measure]) -> Fraction:
    """Σ over ops of min(share in A, share in B), shares of op self time."""
    total_a = sum(m.self_ps for m in a.values())
    total_b = sum(m.self_ps for m in b.values())
    if total_a == 0 or total_b == 0:
        return Fraction(int(total_a == total_b == 0 and a.keys() == b.keys()))
    # min(x/A, y/B) = min(x·B, y·A) / (A·B): one exact integer sum
    shared = sum(
        min(a[name].self_ps * total_b, b[name].self_ps * total_a) for name in a.keys() & b.keys()
    )
    return Fraction(shared, total_a * total_b)
