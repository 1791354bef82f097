"""Typed records of a graph to draw, independent of which document it came from.

Both inputs (the event DAG and the op graph) load into one `RenderGraph`, so the
reducers, the DOT writer and the exporters never look at raw JSON.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from pathlib import Path


class GraphKind(enum.Enum):
    """Which interchange document a graph was loaded from (the `format` field)."""

    EVENT_DAG = "tfpgo.event_dag"
    OP_GRAPH = "tfpgo.op_graph"


class NodeState(enum.Enum):
    """Whether a node has its own measured time."""

    EXECUTED = "executed"
    FUSED = "fused"  # swallowed by a runtime kernel; its time is the kernel's
    NEVER_EXECUTED = "never_executed"


class RenderEdgeKind(enum.Enum):
    """The kinds of a drawn graph's edges: those of both documents (the event DAG's
    are `tfpgo.trace.dag.EdgeKind`'s labels) plus the ones the reducers create."""

    TIME = "time"
    FLOW = "flow"
    DATA = "data"
    CALL = "call"
    CONTROL = "control"
    ELIDED = "elided"  # stands for a path through nodes a `--nodes` view dropped


@dataclass(frozen=True)
class NodeTiming:
    """Measured time of one node, in picoseconds (share is a fraction of 1)."""

    self_ps: int
    total_ps: int
    mean_ps: int
    count: int
    share: float
    min_ps: int | None = None
    max_ps: int | None = None
    p50_ps: int | None = None
    p95_ps: int | None = None
    first_start_ps: int | None = None


@dataclass(frozen=True)
class RenderNode:
    """One vertex: an event (DAG), an op (op graph) or a name-scope summary."""

    id: int
    name: str  # full name: TF node name, event name, or the scope of a summary
    op_type: str  # "MatMul", "tf.MatMul", or "scope" for summaries
    group: str | None  # function (op graph) or plane/line (event DAG): one cluster each
    state: NodeState
    timing: NodeTiming | None
    critical: bool = False
    fused_into: str | None = None
    xla_fusion: str | None = None  # the XLA fusion that ran most of this op (op graph)
    parent: int | None = None  # region-holding op (op graph)
    trip_count: float | None = None  # a loop's measured mean iterations (op graph)
    hot: bool = False  # marked by the document (tf-profile-mark-hotspots)
    hot_rank: int | None = None
    members: int = 1  # how many original nodes a summary stands for
    details: tuple[tuple[str, str], ...] = field(default=())  # extra tooltip lines

    @property
    def short_name(self) -> str:
        """The last name-scope component, what a label has room for."""
        return self.name.rsplit("/", 1)[-1] or self.name


@dataclass(frozen=True)
class RenderEdge:
    """A directed edge; `count` > 1 when a reducer merged parallel edges."""

    source: int
    target: int
    kind: RenderEdgeKind
    count: int = 1


@dataclass(frozen=True)
class RenderGraph:
    """A whole graph plus what the document says about it."""

    kind: GraphKind
    source: Path
    nodes: tuple[RenderNode, ...]
    edges: tuple[RenderEdge, ...]
    critical_path: tuple[int, ...] = ()
    critical_path_ps: int | None = None
    groups: tuple[str, ...] = ()  # cluster names in document order
    # The timings are device (GPU) time: some op of the graph ran on a device, so every
    # op is timed by its `device_self` (0 for host-only ops), the time that matters there.
    device: bool = False

    def node_by_id(self) -> dict[int, RenderNode]:
        return {node.id: node for node in self.nodes}
