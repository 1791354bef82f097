"""Breakdown by layer scope: a tree of the `/`-separated node-name scopes.

Keras and TensorFlow name ops after the layers that create them
(`model/block_1_expand/convolution`), so the scope tree is the layer tree.
Every op is a node at its own path, under its scopes; gradient ops are folded
onto the forward scope they differentiate (`gradient_tape/model/dense/MatMul/
MatMul` lands under `model/dense/MatMul`), so a layer's node holds its
forward and backward time, split by phase in `phase_self_ps`. The optimizer's
update ops keep their own top-level scope (`sgd/...`).

A node's times are the sums over every op at or below it: the root's equal the
op profile's totals, and each node's equal its children's plus `own_self_ps`
(ops named exactly like the node).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from tfpgo.analysis.phase import Phase, PhaseClassifier, fold_gradient_scope, is_optimizer_scope
from tfpgo.attribution.op_profile import OpProfile


@dataclass(frozen=True)
class ScopeNode:
    name: str  # last path component ("" for the root)
    path: str  # folded scope path ("" for the root)
    self_ps: int  # self time of every op at or below this node
    total_ps: int
    count: int  # executions
    ops: int  # distinct runtime names
    own_self_ps: int  # self time of ops named exactly `path`
    phase_self_ps: dict[Phase, int]  # self_ps split by phase (every Phase present)
    children: tuple[ScopeNode, ...]  # by self time, descending


@dataclass
class _Builder:
    name: str
    path: str
    self_ps: int = 0
    total_ps: int = 0
    count: int = 0
    ops: int = 0
    own_self_ps: int = 0
    phase_self_ps: dict[Phase, int] = field(default_factory=lambda: dict.fromkeys(Phase, 0))
    children: dict[str, _Builder] = field(default_factory=dict)

    def freeze(self) -> ScopeNode:
        children = sorted(
            (child.freeze() for child in self.children.values()),
            key=lambda node: (-node.self_ps, node.name),
        )
        return ScopeNode(
            self.name,
            self.path,
            self.self_ps,
            self.total_ps,
            self.count,
            self.ops,
            self.own_self_ps,
            dict(self.phase_self_ps),
            tuple(children),
        )


def scope_tree(profile: OpProfile, structural: Mapping[str, Phase] | None = None) -> ScopeNode:
    """The scope tree of the profile's ops (see the module doc); `structural`: the
    ops' phases from the op graph (`tfpgo.analysis.structure`) where known."""
    classifier = PhaseClassifier([op.name for op in profile.ops], structural)
    root = _Builder("", "")
    for op in profile.ops:
        phase = classifier.phase(op.name)
        node = root
        _add(node, op.self_ps, op.total_ps, op.count, phase)
        parts = fold_gradient_scope(op.name).split("/")
        for depth, part in enumerate(parts):
            if part not in node.children:
                node.children[part] = _Builder(part, "/".join(parts[: depth + 1]))
            node = node.children[part]
            _add(node, op.self_ps, op.total_ps, op.count, phase)
        node.own_self_ps += op.self_ps
    return root.freeze()


def _add(node: _Builder, self_ps: int, total_ps: int, count: int, phase: Phase) -> None:
    node.self_ps += self_ps
    node.total_ps += total_ps
    node.count += count
    node.ops += 1
    node.phase_self_ps[phase] += self_ps


def layers(root: ScopeNode) -> tuple[ScopeNode, ...]:
    """The layer level of the tree, by self time: the children of every top-level
    scope that is a pure scope (the model: no op of its own) other than the
    optimizer's, and every other top-level node as it is. The rows partition the
    ops, so their self times sum to the root's."""
    rows: list[ScopeNode] = []
    for top in root.children:
        if top.children and top.own_self_ps == 0 and not is_optimizer_scope(top.name):
            rows.extend(top.children)
        else:
            rows.append(top)
    return tuple(sorted(rows, key=lambda node: (-node.self_ps, node.path)))


def walk(node: ScopeNode):
    """Every node of the tree, parents before children."""
    yield node
    for child in node.children:
        yield from walk(child)
