"""Graph reductions for pictures people can read: hot marking, scope collapse, top-N.

Each function takes a RenderGraph and returns a new one, so the CLI composes
them in a fixed order: mark hot ops on the full graph (ranks then refer to real
ops, like `tf-profile-mark-hotspots`), collapse name scopes, cut to the top N.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict, deque

from tfpgo import HOT_OPS
from tfpgo.render.metrics import Metric, metric_value
from tfpgo.render.model import (
    NodeState,
    NodeTiming,
    RenderEdge,
    RenderEdgeKind,
    RenderGraph,
    RenderNode,
)

# A `--nodes` view links two kept nodes when a path of at most this many dropped
# nodes joins them; longer detours would draw edges nobody can trace anyway.
ELIDED_PATH_LIMIT = 8
# A dropped op with at least this many inputs and outputs (the optimizer's
# IdentityN in a training step has one per trainable variable) stays in a `--nodes`
# view as a junction. The ResNet50 training step's IdentityN has 214; its other
# ops have at most 3 data edges each way, its event DAG's events at most 28.
JUNCTION_DEGREE = 32
JUNCTION_DETAIL = ("drawn as", "junction of paths between the hottest ops")


def mark_hot(
    graph: RenderGraph, metric: Metric, hot_k: int | None, hot_share: float | None
) -> RenderGraph:
    """Marks the `hot_k` hottest nodes and, besides them, those with share ≥
    `hot_share` (either rule marks: unlike the hotspot pass's `top-k` and
    `min-share`, which must both hold).

    With neither given, a document that already carries `hot` flags (the op
    graph after tf-profile-mark-hotspots) keeps them, so the picture agrees with
    the MLIR; otherwise the `HOT_OPS` hottest nodes are marked.
    """
    if hot_k is None and hot_share is None:
        if any(node.hot for node in graph.nodes):
            return graph
        hot_k = HOT_OPS
    ranked = sorted(
        (node for node in graph.nodes if metric_value(node, metric) is not None),
        key=lambda node: (-(metric_value(node, metric) or 0.0), node.id),
    )
    ranks: dict[int, int] = {}
    for rank, node in enumerate(ranked, start=1):
        timing = node.timing
        by_rank = hot_k is not None and rank <= hot_k
        by_share = hot_share is not None and timing is not None and timing.share >= hot_share
        if (by_rank or by_share) and (metric_value(node, metric) or 0.0) > 0:
            ranks[node.id] = rank
    nodes = tuple(
        dataclasses.replace(node, hot=node.id in ranks, hot_rank=ranks.get(node.id))
        for node in graph.nodes
    )
    return dataclasses.replace(graph, nodes=nodes)


def _merge_edges(edges: list[RenderEdge], rename: dict[int, int]) -> tuple[RenderEdge, ...]:
    """Re-targets edges onto representatives, dropping self-loops and merging duplicates."""
    merged: dict[tuple[int, int, RenderEdgeKind], int] = {}
    for edge in edges:
        source, target = rename.get(edge.source, edge.source), rename.get(edge.target, edge.target)
        if source == target:
            continue
        key = (source, target, edge.kind)
        merged[key] = merged.get(key, 0) + edge.count
    return tuple(RenderEdge(s, t, kind, count) for (s, t, kind), count in merged.items())


def _summary_timing(members: list[RenderNode]) -> NodeTiming | None:
    timed = [member.timing for member in members if member.timing is not None]
    if not timed:
        return None
    count = sum(timing.count for timing in timed)
    total = sum(timing.total_ps for timing in timed)
    starts = [t.first_start_ps for t in timed if t.first_start_ps is not None]
    return NodeTiming(
        self_ps=sum(timing.self_ps for timing in timed),
        total_ps=total,
        mean_ps=total // max(count, 1),
        count=count,
        share=sum(timing.share for timing in timed),
        min_ps=min((t.min_ps for t in timed if t.min_ps is not None), default=None),
        max_ps=max((t.max_ps for t in timed if t.max_ps is not None), default=None),
        first_start_ps=min(starts, default=None),
    )


def summarize(node_id: int, scope: str, members: list[RenderNode]) -> RenderNode:
    timing = _summary_timing(members)
    states = {member.state for member in members}
    state = (
        NodeState.EXECUTED
        if timing
        else NodeState.FUSED
        if states == {NodeState.FUSED}
        else NodeState.NEVER_EXECUTED
    )
    ranks = [member.hot_rank for member in members if member.hot_rank is not None]
    hottest = max(members, key=lambda m: m.timing.self_ps if m.timing else -1)
    return RenderNode(
        id=node_id,
        name=scope,
        op_type="scope",
        group=members[0].group,
        state=state,
        timing=timing,
        critical=any(member.critical for member in members),
        hot=any(member.hot for member in members),
        hot_rank=min(ranks, default=None),
        members=sum(member.members for member in members),
        details=(("collapsed ops", str(len(members))), ("hottest op", hottest.name)),
    )


def collapse_scopes(graph: RenderGraph, depth: int) -> RenderGraph:
    """Replaces ops below name-scope depth `depth` by one summary node per scope.

    `a/b/c` and `a/b/d` with depth 2 become the summary `a/b` (sum of times,
    count of ops); scopes with a single op keep the op itself. Scopes never mix
    clusters (functions, trace lines).
    """
    if depth < 1:
        raise ValueError("depth must be at least 1")
    scopes: dict[tuple[str | None, str], list[RenderNode]] = defaultdict(list)
    for node in graph.nodes:
        parts = node.name.split("/")
        if len(parts) > depth:
            scopes[(node.group, "/".join(parts[:depth]))].append(node)
    next_id = max((node.id for node in graph.nodes), default=-1) + 1
    rename: dict[int, int] = {}
    summaries: list[RenderNode] = []
    for (_, scope), members in scopes.items():
        if len(members) < 2:
            continue
        summaries.append(summarize(next_id, scope, members))
        rename.update((member.id, next_id) for member in members)
        next_id += 1
    kept = [node for node in graph.nodes if node.id not in rename]
    path = tuple(dict.fromkeys(rename.get(node_id, node_id) for node_id in graph.critical_path))
    return dataclasses.replace(
        graph,
        nodes=(*kept, *summaries),
        edges=_merge_edges(list(graph.edges), rename),
        critical_path=path,
    )


def merge_by_name(graph: RenderGraph) -> RenderGraph:
    """One node per distinct name: the events of a TF node over all steps and lines."""
    by_name: dict[str, list[RenderNode]] = defaultdict(list)
    for node in graph.nodes:
        by_name[node.name].append(node)
    nodes = tuple(
        dataclasses.replace(members[0], id=index, group=None)
        if len(members) == 1
        else dataclasses.replace(
            summarize(index, name, members), op_type=members[0].op_type, group=None
        )
        for index, (name, members) in enumerate(by_name.items())
    )
    return dataclasses.replace(graph, nodes=nodes, edges=(), critical_path=())


def top_subgraph(graph: RenderGraph, count: int, metric: Metric) -> RenderGraph:
    """Keeps the `count` hottest nodes (plus ops fused into them) and their links.

    Two kept nodes joined through dropped ones get an ELIDED edge, so the view
    still shows which hot op feeds which. Elided edges that another path of the
    view already implies are left out, and a dropped hub (`_junctions`) stays as
    a node: otherwise a training step's optimizer, whose IdentityN passes every
    gradient to every update, links each kept backward op to each kept update
    (1.2k edges among 190 ResNet50 nodes, which Graphviz `dot` lays out in
    minutes rather than seconds).
    """
    timed = [node for node in graph.nodes if metric_value(node, metric) is not None]
    timed.sort(key=lambda node: (-(metric_value(node, metric) or 0.0), node.id))
    keep = {node.id for node in timed[:count]}
    kept_names = {node.name for node in graph.nodes if node.id in keep}
    keep |= {node.id for node in graph.nodes if node.fused_into in kept_names}
    junctions = _junctions(graph, keep)
    keep |= junctions
    successors: dict[int, list[int]] = defaultdict(list)
    edges: list[RenderEdge] = []
    for edge in graph.edges:
        successors[edge.source].append(edge.target)
        if edge.source in keep and edge.target in keep:
            edges.append(edge)
    direct = {(edge.source, edge.target) for edge in edges}
    for start in keep:
        for end in _kept_beyond(start, keep, successors):
            if (start, end) not in direct:
                edges.append(RenderEdge(start, end, RenderEdgeKind.ELIDED))
    keep, edges = _drop_dead_end_junctions(keep, junctions, edges)
    edges = _drop_implied_elided(keep, edges)
    nodes = tuple(
        dataclasses.replace(node, details=(*node.details, JUNCTION_DETAIL))
        if node.id in junctions
        else node
        for node in graph.nodes
        if node.id in keep
    )
    path = tuple(node_id for node_id in graph.critical_path if node_id in keep)
    return dataclasses.replace(graph, nodes=nodes, edges=tuple(edges), critical_path=path)


def _junctions(graph: RenderGraph, keep: set[int]) -> set[int]:
    """Dropped nodes with at least JUNCTION_DEGREE inputs and as many outputs.

    Drawn, such a hub costs in + out edges; elided, up to in × out.
    """
    inputs: dict[int, int] = defaultdict(int)
    outputs: dict[int, int] = defaultdict(int)
    for edge in graph.edges:
        outputs[edge.source] += 1
        inputs[edge.target] += 1
    return {
        node_id
        for node_id, fan_in in inputs.items()
        if node_id not in keep and min(fan_in, outputs[node_id]) >= JUNCTION_DEGREE
    }


def _drop_dead_end_junctions(
    keep: set[int], junctions: set[int], edges: list[RenderEdge]
) -> tuple[set[int], list[RenderEdge]]:
    """Removes junctions that no longer join two drawn nodes (nothing kept on one side)."""
    while True:
        sources = {edge.source for edge in edges}
        targets = {edge.target for edge in edges}
        dead = {node for node in junctions & keep if node not in sources or node not in targets}
        if not dead:
            return keep, edges
        keep = keep - dead
        edges = [edge for edge in edges if edge.source not in dead and edge.target not in dead]


def _drop_implied_elided(node_ids: set[int], edges: list[RenderEdge]) -> list[RenderEdge]:
    """Leaves out each ELIDED edge u → v when v is reachable from u another way.

    A transitive reduction restricted to the synthetic edges (real edges all
    stay); reachability is kept. Reachable sets are bitsets over a topological
    order; a view with a cycle is left as is.
    """
    order = topological_order(node_ids, edges)
    if order is None:
        return edges
    index = {node_id: position for position, node_id in enumerate(order)}
    successors: dict[int, set[int]] = defaultdict(set)
    for edge in edges:
        successors[index[edge.source]].add(index[edge.target])
    reach = [0] * len(order)  # bit v of reach[u]: v is reachable from u
    indirect = [0] * len(order)  # bit v of indirect[u]: reachable from u through a successor
    for position in reversed(range(len(order))):
        for successor in successors[position]:
            reach[position] |= (1 << successor) | reach[successor]
            indirect[position] |= reach[successor]
    return [
        edge
        for edge in edges
        if edge.kind is not RenderEdgeKind.ELIDED
        or not indirect[index[edge.source]] >> index[edge.target] & 1
    ]


def topological_order(node_ids: set[int], edges: list[RenderEdge]) -> list[int] | None:
    """Kahn's order of the nodes, None on a cycle; `edges` join nodes of `node_ids`."""
    successors: dict[int, list[int]] = defaultdict(list)
    pending = dict.fromkeys(node_ids, 0)
    for edge in edges:
        successors[edge.source].append(edge.target)
        pending[edge.target] += 1
    ready = [node_id for node_id, count in pending.items() if count == 0]
    order: list[int] = []
    while ready:
        node_id = ready.pop()
        order.append(node_id)
        for successor in successors[node_id]:
            pending[successor] -= 1
            if pending[successor] == 0:
                ready.append(successor)
    return order if len(order) == len(pending) else None


def _kept_beyond(start: int, keep: set[int], successors: dict[int, list[int]]) -> set[int]:
    """Kept nodes reachable from `start` through at most ELIDED_PATH_LIMIT dropped nodes."""
    found: set[int] = set()
    queue = deque((successor, 1) for successor in successors[start] if successor not in keep)
    seen = {item for item, _ in queue}
    while queue:
        node_id, hops = queue.popleft()
        for successor in successors[node_id]:
            if successor in keep:
                if successor != start:
                    found.add(successor)
            elif successor not in seen and hops < ELIDED_PATH_LIMIT:
                seen.add(successor)
                queue.append((successor, hops + 1))
    return found
