"""Each XLA region's time before and after, from two op profiles: the baseline
step's and the candidate's with every region compiled by XLA.

Before: the region's ops' self time in the baseline, a step. After: the same
ops' self time in the candidate (the trace reader puts each HLO instruction's
time on the tf ops its `op_name` metadata names) plus the self time of the
launch ops (`_XlaCompile`, `_XlaRun`, `_XlaMerge`) of the clusters that ran
them, a step: what the region costs as XLA runs it, overhead included. Both
profiles' self times partition their op time, so no picosecond is counted twice.

A launch op's node is named after its cluster (`cluster_3_1/xla_run`), the
cluster's HLO module after the cluster's function (`cluster_3__XlaCompiled...`):
the cluster name joins them. A cluster whose HLO ran ops of several regions
cannot happen (the pass's regions get `_XlaScope`s of their own), but its
launch time would then be split equally between them.
"""

from __future__ import annotations

from dataclasses import dataclass

from tfpgo.attribution.op_profile import OpProfile
from tfpgo.attribution.parts import split_equally
from tfpgo.mlir.annotate import XLA_LAUNCH_OP_TYPES
from tfpgo.mlir.xla_regions import XlaRegions


@dataclass(frozen=True)
class RegionTime:
    name: str
    ops: int
    before_ps: int  # a step, TensorFlow's kernels
    after_ps: int  # a step, under XLA with its launch ops

    @property
    def wins(self) -> bool:
        return self.after_ps < self.before_ps


def region_times(
    regions: XlaRegions, baseline: OpProfile, candidate: OpProfile
) -> tuple[RegionTime, ...]:
    before_ops, after_ops = baseline.by_name(), candidate.by_name()
    steps_before, steps_after = max(len(baseline.steps), 1), max(len(candidate.steps), 1)
    launch = _launch_ps(candidate)
    clusters_of: dict[str, set[str]] = {}  # cluster -> regions whose ops it ran
    for region in regions.regions:
        for op in region.ops:
            for origin in after_ops[op.node].xla if op.node in after_ops else ():
                clusters_of.setdefault(_cluster(origin.module), set()).add(region.name)
    launch_of: dict[str, int] = {}
    for cluster, names in clusters_of.items():
        ordered = sorted(names)
        parts = split_equally(launch.get(cluster, 0), len(ordered))
        for name, part in zip(ordered, parts, strict=True):
            launch_of[name] = launch_of.get(name, 0) + part
    found = []
    for region in regions.regions:
        nodes = [op.node for op in region.ops]
        before = sum(before_ops[n].self_ps for n in nodes if n in before_ops)
        after = sum(after_ops[n].self_ps for n in nodes if n in after_ops)
        after += launch_of.get(region.name, 0)
        found.append(
            RegionTime(region.name, len(nodes), before // steps_before, after // steps_after)
        )
    return tuple(found)


def _launch_ps(profile: OpProfile) -> dict[str, int]:
    """Per cluster (`cluster_3`): the self time of its launch ops."""
    found: dict[str, int] = {}
    for op in profile.ops:
        if op.op_types and set(op.op_types) <= XLA_LAUNCH_OP_TYPES:
            node = op.name.split("/", 1)[0]  # `cluster_3_1`: TF made the name unique
            cluster = node.rsplit("_", 1)[0] if node.count("_") >= 2 else node
            found[cluster] = found.get(cluster, 0) + op.self_ps
    return found


def _cluster(module: str) -> str:
    """`cluster_3__XlaCompiledKernel_true__...` -> `cluster_3`."""
    return module.split("__", 1)[0]
