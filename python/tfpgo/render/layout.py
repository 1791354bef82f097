"""Runs Graphviz: picks the layout engine by size and writes every format in one run.

Engine thresholds, measured on 2 shared cores (bench/bench_plot_graph.py and
its synthetic ResNet-shaped graphs): `dot` (layered, clusters, the most
readable) takes 0.5 s at 1.2k nodes and 5.5 s at 3k, and did not finish a
10k-node graph in 200 s, so it draws up to DOT_MAX_NODES nodes. Above that,
`sfdp` (multiscale force-directed, no clusters) with prism overlap removal
lays out 10k nodes in ~30 s when they are drawn compactly (see dot.py).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from tfpgo.atomic import current_umask
from tfpgo.errors import UserError

ENGINES = ("dot", "sfdp", "neato", "fdp")
DOT_MAX_NODES = 1500


def choose_engine(node_count: int, requested: str | None = None) -> str:
    """The engine the user asked for, else dot for small graphs and sfdp for big ones."""
    if requested and requested != "auto":
        if requested not in ENGINES:
            raise UserError(
                f"unknown layout engine '{requested}'; choose one of auto, {', '.join(ENGINES)}"
            )
        return requested
    return "dot" if node_count <= DOT_MAX_NODES else "sfdp"


def _graphviz_binary() -> str:
    binary = shutil.which("dot")
    if binary is None:
        raise UserError(
            "Graphviz is not installed ('dot' not on PATH); "
            "install it with: apt-get install graphviz"
        )
    return binary


def run_graphviz(source: str, engine: str, outputs: dict[str, Path]) -> str:
    """Lays `source` out once with `engine` and writes each format to its path;
    returns the engine that drew it.

    `outputs` maps a Graphviz output format ("svg", "png") to a
    path. Files appear atomically: all or none. `dot`'s ranking now and then
    fails on a graph it should draw ("lost n33 n100 edge", "trouble in
    init_rank": Graphviz bugs with clusters and rank constraints, hit by some
    event DAGs depending on which events are hottest); the picture is then laid
    out by `sfdp`, which has no ranks, rather than the run failing.
    """
    try:
        _run_engine(source, engine, outputs)
        return engine
    except UserError as failed:
        if engine != "dot":
            raise
        dot_error = failed
    try:
        _run_engine(source, "sfdp", outputs)
    except UserError:
        raise dot_error from None
    return "sfdp"


def _run_engine(source: str, engine: str, outputs: dict[str, Path]) -> None:
    staged: dict[Path, Path] = {}
    command = [_graphviz_binary(), f"-K{engine}"]
    try:
        for fmt, path in outputs.items():
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
            os.close(fd)
            os.chmod(tmp_name, 0o666 & ~current_umask())  # mkstemp makes 0600; outputs are shared
            staged[path] = Path(tmp_name)
            command += [f"-T{fmt}", f"-o{tmp_name}"]
        result = subprocess.run(
            command, input=source.encode("utf-8"), capture_output=True, check=False
        )
        if result.returncode != 0:
            message = result.stderr.decode("utf-8", "replace").strip().splitlines()
            raise UserError(f"graphviz {engine} failed: {message[-1] if message else 'no output'}")
        for path, tmp in staged.items():
            os.replace(tmp, path)
    finally:
        for tmp in staged.values():
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()
