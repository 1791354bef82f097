"""tools/check_imports.py: the stage order of tfpgo.STAGES holds on the real
tree, and a copy of the tree with one import up the flow, a cycle or an
undeclared package is refused with a line naming the file and why."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

TOOLS = Path(__file__).resolve().parents[2] / "tools"
sys.path.insert(0, str(TOOLS))

import check_imports  # noqa: E402

REAL = Path(__file__).resolve().parents[2] / "python" / "tfpgo"


@pytest.fixture
def tree(tmp_path):
    copy = tmp_path / "tfpgo"
    shutil.copytree(REAL, copy, ignore=shutil.ignore_patterns("__pycache__"))
    return copy


def test_the_real_tree_imports_only_down_the_flow():
    assert check_imports.check(REAL) == []


def _append(path: Path, text: str) -> None:
    path.write_text(path.read_text() + text)


def test_a_lazy_import_of_a_later_stage_is_one_line(tree):
    _append(tree / "trace" / "dag.py", "\n\ndef _late():\n    from tfpgo.report import compose\n")
    (problem,) = check_imports.check(tree)
    assert problem.startswith("tfpgo/trace/dag.py:")
    assert "imports tfpgo.report.compose: stage 'report' comes after 'trace'" in problem


def test_an_import_for_types_counts(tree):
    _append(
        tree / "models" / "case.py",
        "\nfrom typing import TYPE_CHECKING\n\n"
        "if TYPE_CHECKING:\n    from tfpgo.render import tables\n",
    )
    (problem,) = check_imports.check(tree)
    assert "models/case.py" in problem and "stage 'render' comes after 'models'" in problem


def test_an_import_between_stages_apart_is_refused_either_way(tree):
    """Issue 63: the tuner and the Proposer share only the measurement layer, and
    the Proposer never imports IREE's stage, though the order would let them."""
    _append(tree / "tune" / "document.py", "\nfrom tfpgo.proposer import blocks\n")
    (problem,) = check_imports.check(tree)
    assert problem.startswith("tfpgo/tune/document.py:")
    assert "stages 'tune' and 'proposer' are APART" in problem
    _append(tree / "proposer" / "budget.py", "\n\ndef _timed():\n    from tfpgo.iree import run\n")
    assert any("stages 'proposer' and 'iree' are APART" in p for p in check_imports.check(tree))


def test_a_shared_module_importing_a_stage_is_refused(tree):
    _append(tree / "errors.py", "\nfrom tfpgo.trace import dag\n")
    problems = check_imports.check(tree)
    assert any("errors.py" in p and "shared module imports stage 'trace'" in p for p in problems)


def test_a_cycle_within_a_stage_is_refused(tree):
    _append(tree / "render" / "colormap.py", "\nfrom tfpgo.render import tables\n")
    _append(tree / "render" / "tables.py", "\nfrom tfpgo.render import colormap\n")
    assert check_imports.check(tree) == [
        "import cycle: tfpgo.render.colormap -> tfpgo.render.tables -> tfpgo.render.colormap"
    ]


def test_an_undeclared_package_is_refused(tree):
    (tree / "newstage").mkdir()
    (tree / "newstage" / "__init__.py").write_text('"""A stage nobody placed."""\n')
    assert check_imports.check(tree) == [
        "tfpgo/newstage/__init__.py: stage 'newstage' is in neither STAGES nor SHARED"
    ]
