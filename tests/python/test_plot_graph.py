"""plot_graph CLI in-process: formats, -s, reductions, exports, one-line errors."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import networkx as nx
import pytest
from render_fixtures import (
    GRU_OP_GRAPH,
    MLP_EVENT_DAG,
    MLP_OP_GRAPH,
    MLP_OP_PROFILE,
    document_op,
    in_us,
    load,
)

from tfpgo.cli import run_main
from tfpgo.render.plot_graph import main

SVG = "{http://www.w3.org/2000/svg}"
XLINK_TITLE = "{http://www.w3.org/1999/xlink}title"


def run(argv):
    return run_main(main, argv, prog="plot_graph")


def test_save_all_writes_every_format(tmp_path, capsys):
    out = tmp_path / "pics" / "dag.svg"
    assert run(["--path-to-mlir-graph", str(MLP_EVENT_DAG), "-o", str(out), "-s"]) == 0
    names = sorted(path.name for path in out.parent.iterdir())
    assert names == ["dag.dot", "dag.graphml", "dag.png", "dag.svg"]
    assert out.with_suffix(".png").read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    assert out.with_suffix(".dot").read_text().startswith("digraph tfpgo {")
    events = len(load(MLP_EVENT_DAG)["nodes"])
    assert nx.read_graphml(out.with_suffix(".graphml")).number_of_nodes() == events
    assert capsys.readouterr().out.splitlines()[0] == str(out)
    assert oct(out.stat().st_mode & 0o077) != "0o0"  # readable by others, not mkstemp's 0600


def test_svg_has_tooltips_labels_and_legend(tmp_path):
    out = tmp_path / "mlp.svg"
    assert run(["--path-to-mlir-graph", str(MLP_OP_GRAPH), "-o", str(out)]) == 0
    root = ET.parse(out).getroot()
    texts = " ".join(t.text or "" for t in root.iter(f"{SVG}text"))
    assert "color: self time" in texts and "not executed" in texts and "µs" in texts
    # The hottest op of the document, its self time and p95 as the document has them.
    name = "sequential_1/dense_1/Relu"
    measured = document_op(MLP_OP_GRAPH, name)
    hottest = max((n for n in load(MLP_OP_GRAPH)["nodes"] if n["profiler_data"]),
                  key=lambda n: n["profiler_data"]["self"])  # fmt: skip
    assert hottest["name"] == name and hottest["op"] == "tf.Relu"
    assert "tf.Relu" in texts and f"#1 {in_us(measured['self'])}" in texts  # type, rank, time
    tooltips = [a.get(XLINK_TITLE, "") for a in root.iter(f"{SVG}a") if a.get(XLINK_TITLE)]
    relu = next(t for t in tooltips if t.startswith(name))
    for line in (f"self: {in_us(measured['self'])}", f"count: {measured['count']}",
                 f"p95: {in_us(measured['p95'])}", "hot: rank 1"):  # fmt: skip
        assert line in relu
    assert any(t.startswith("sequential_1/dense_1/MatMul") and "fused into" in t for t in tooltips)


@pytest.mark.parametrize(
    "flags",
    [
        ["--metric", "mean"],
        ["--metric", "share", "--hot-share", "0.3"],
        ["--depth", "2"],
        ["--nodes", "4"],
        ["--engine", "sfdp"],
        ["--hot-k", "1", "--metric", "total"],
    ],
)
def test_options_render(tmp_path, flags):
    out = tmp_path / "gru.svg"
    assert run(["--path-to-mlir-graph", str(GRU_OP_GRAPH), "-o", str(out), *flags]) == 0
    assert ET.parse(out).getroot().tag == f"{SVG}svg"


def test_relative_paths_follow_build_working_directory(tmp_path, monkeypatch):
    monkeypatch.setenv("BUILD_WORKING_DIRECTORY", str(tmp_path))
    assert run(["--path-to-mlir-graph", str(MLP_OP_GRAPH), "-o", "rel.graphml"]) == 0
    assert (tmp_path / "rel.graphml").exists()


def test_exports(tmp_path):
    trace, csv_path, me = tmp_path / "t.json", tmp_path / "p.csv", tmp_path / "me.json"
    argv = [
        "--path-to-mlir-graph",
        str(MLP_EVENT_DAG),
        "--export-trace",
        str(trace),
        "--export-csv",
        str(csv_path),
        "--op-profile",
        str(MLP_OP_PROFILE),
        "--export-model-explorer",
        str(me),
    ]
    assert run(argv) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["me.json", "p.csv", "t.json"]
    assert json.loads(trace.read_text())["displayTimeUnit"] == "ns"
    assert csv_path.read_text().splitlines()[1].startswith("sequential/dense/MatMul,MatMul,2,")
    assert "sequential/dense/MatMul" in json.loads(me.read_text())["results"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["-o", "{tmp}/x.pdf"], "x.pdf: cannot tell the format from the extension"),
        (["-s", "--export-csv", "{tmp}/p.csv"], "-s needs -o"),
        (
            ["--export-trace", "{tmp}/t.json", "--path-to-mlir-graph", str(MLP_OP_GRAPH)],
            "a trace export needs the event DAG",
        ),
        (["--path-to-mlir-graph", "{tmp}/absent.json", "-o", "{tmp}/x.svg"], "no such file"),
        (["--op-profile", str(MLP_OP_PROFILE), "-o", "{tmp}/x.svg"], "only read for --export-csv"),
    ],
)
def test_errors_are_one_line_and_leave_no_output(tmp_path, capsys, argv, message):
    argv = [part.replace("{tmp}", str(tmp_path)) for part in argv]
    if "--path-to-mlir-graph" not in argv:
        argv = ["--path-to-mlir-graph", str(MLP_EVENT_DAG), *argv]
    assert run(argv) == 1
    err = capsys.readouterr().err
    assert err.startswith("plot_graph: error: ") and message in err
    assert err.count("\n") == 1
    assert list(tmp_path.iterdir()) == []
