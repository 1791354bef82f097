"""Deep drawings are folded into columns and come out about square (fold.py)."""

from __future__ import annotations

import dataclasses
import itertools
import re
from pathlib import Path

import pytest

from tfpgo.errors import UserError
from tfpgo.render import Metric, NodeState, RenderOptions, fold, to_dot, write_pictures
from tfpgo.render.fold import plan_fold, rankings
from tfpgo.render.layout import run_graphviz
from tfpgo.render.model import (
    GraphKind,
    NodeTiming,
    RenderEdge,
    RenderEdgeKind,
    RenderGraph,
    RenderNode,
)


def _graph(count: int, links: list[tuple[int, int]]) -> RenderGraph:
    nodes = tuple(
        RenderNode(
            i,
            f"model/block_{i}/conv/Conv2D",
            "tf.Conv2D",
            "main",
            NodeState.EXECUTED,
            NodeTiming(1_000 * (i + 1), 1_000 * (i + 1), 1_000 * (i + 1), 1, 0.0),
        )
        for i in range(count)
    )
    edges = tuple(RenderEdge(s, t, RenderEdgeKind.DATA) for s, t in links)
    return RenderGraph(GraphKind.OP_GRAPH, Path("deep.json"), nodes, edges)


def _chain(count: int) -> RenderGraph:
    return _graph(count, list(itertools.pairwise(range(count))))


def _svg_size(path: Path) -> tuple[float, float]:
    match = re.search(r'<svg width="([0-9.]+)pt" height="([0-9.]+)pt"', path.read_text())
    assert match, "no size in the SVG"
    return float(match[1]), float(match[2])


def _folded_and_strip(graph: RenderGraph, tmp_path: Path, monkeypatch) -> tuple[tuple, tuple]:
    """SVG sizes (width, height) of the graph drawn as planned and by dot alone."""
    folded = tmp_path / "folded.svg"
    write_pictures(graph, RenderOptions(), [folded])
    monkeypatch.setattr(fold, "MIN_RANKS", 10**9)
    strip = tmp_path / "strip.svg"
    write_pictures(graph, RenderOptions(), [strip])
    return _svg_size(folded), _svg_size(strip)


def test_a_deep_chain_is_drawn_in_columns_about_square(tmp_path, monkeypatch):
    graph = _chain(160)
    plan = plan_fold(graph, flows_down=True)
    assert plan is not None and plan.columns >= 3
    assert plan.rows * plan.columns >= 160 > plan.rows * (plan.columns - 1)
    source = to_dot(graph, Metric.SELF, "dot")
    assert "newrank=true" in source
    assert source.count("rank=same") == plan.rows
    crossing = [line for line in source.splitlines() if "constraint=false" in line]
    assert len(crossing) == plan.columns - 1  # one chain edge leaves each column
    (width, height), (strip_width, strip_height) = _folded_and_strip(graph, tmp_path, monkeypatch)
    assert strip_height / strip_width > 10  # what dot draws on its own
    # The size estimate is calibrated on real op graphs, whose long scoped
    # names and kernel clusters make wider columns than these short labels.
    assert 0.25 < height / width < 4
    assert max(width, height) < strip_height / 3


def test_columns_run_left_to_right_in_rank_order(tmp_path):
    graph = _chain(120)
    plan = plan_fold(graph, flows_down=True)
    assert plan is not None
    layout = tmp_path / "chain.svg"
    write_pictures(graph, RenderOptions(), [layout])
    text = layout.read_text()
    # Each node's box: <g id="op<N>" ...><title>..</title><path ... d="M<x>,<y>..
    x_of = {
        int(m[1]): float(m[2])
        for m in re.finditer(r'<g id="op(\d+)".*?d="M(-?[0-9.]+),', text, re.S)
    }
    heads = [x_of[column * plan.rows] for column in range(plan.columns)]
    assert heads == sorted(heads) and len(set(heads)) == plan.columns


def test_shallow_and_cyclic_drawings_are_left_to_dot():
    assert plan_fold(_chain(fold.MIN_RANKS - 1), flows_down=True) is None
    assert "rank=same" not in to_dot(_chain(20), Metric.SELF, "dot")
    cyclic = _graph(80, [*itertools.pairwise(range(80)), (79, 0)])
    assert rankings(cyclic) == [] and plan_fold(cyclic, flows_down=True) is None
    assert plan_fold(_chain(200), flows_down=True) is not None and "rank=same" not in to_dot(
        _chain(200), Metric.SELF, "sfdp"
    )


def test_sources_sit_just_above_their_consumer():
    # A variable read (60) feeds op 50 of a chain: dot draws it above op 50,
    # not on the top rank, and so does the plan's first ranking.
    graph = _graph(61, [*itertools.pairwise(range(60)), (60, 50)])
    dot_like, longest = rankings(graph)
    assert dot_like[60] == 49 and longest[60] == 0
    assert dot_like[59] == 59  # the chain's end stays below its producer


def test_a_crowded_rank_is_spread_by_the_longest_path_ranking():
    # A training step in miniature: 60 backward ops in a chain, each also
    # feeding a gradient op that ends there (a sink), and one junction
    # every gradient passes. dot's ranking puts all 60 gradients on one rank
    # above the junction: 60 boxes wide. Longest-path ranks spread them.
    chain = list(range(60))
    gradients = [60 + i for i in chain]
    junction = 120
    links = [*itertools.pairwise(chain), *zip(chain, gradients, strict=True)]
    links += [(g, junction) for g in gradients]
    graph = _graph(121, links)
    dot_like, longest = rankings(graph)
    assert len({dot_like[g] for g in gradients}) == 1
    assert len({longest[g] for g in gradients}) == 60
    plan = plan_fold(graph, flows_down=True)
    assert plan is not None
    assert {plan.column[g] * plan.rows + plan.row[g] for g in gradients} == {
        longest[g] for g in gradients
    }


def test_folded_picture_keeps_every_node_and_edge():
    graph = _chain(100)
    source = to_dot(graph, Metric.SELF, "dot")
    assert all(f"n{i} [id=" in source for i in range(100))
    assert sum(" -> " in line and "style=invis" not in line for line in source.splitlines()) == 99


def test_a_deep_event_dag_is_folded_into_bands(tmp_path, monkeypatch):
    # Event DAGs run left to right: the columns become bands one under another.
    graph = dataclasses.replace(_chain(160), kind=GraphKind.EVENT_DAG)
    assert plan_fold(graph, flows_down=False) is not None
    (width, height), (strip_width, strip_height) = _folded_and_strip(graph, tmp_path, monkeypatch)
    assert strip_width / strip_height > 20
    assert width / height < 4 and width < strip_width / 3


def test_a_graph_dot_cannot_rank_is_drawn_by_sfdp_and_a_graph_none_draws_is_one_line(tmp_path):
    # Graphviz's own failure: dot cannot rank a node that is both min and max
    # ("trouble in init_rank"), as it now and then loses an edge of a folded DAG.
    unrankable = "digraph { {rank=min; a} {rank=max; a} a -> b }"
    picture = tmp_path / "g.svg"
    assert run_graphviz(unrankable, "dot", {"svg": picture}) == "sfdp"
    assert "<svg" in picture.read_text()
    with pytest.raises(UserError) as error:  # another engine's failure stays its own
        run_graphviz("digraph { a -> }", "sfdp", {"svg": tmp_path / "h.svg"})
    assert str(error.value).startswith("graphviz sfdp failed: ")
    with pytest.raises(UserError) as error:  # both fail: dot's reason, nothing written
        run_graphviz("digraph { a -> }", "dot", {"svg": tmp_path / "i.svg"})
    assert str(error.value).startswith("graphviz dot failed: ")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.svg"]
