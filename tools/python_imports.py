"""The tfpgo imports of a Python file, read from its syntax tree: what
tools/check_py_deps.py (Bazel deps) and tools/check_imports.py (stage order)
both read, so the two agree on what a file imports."""

from __future__ import annotations

import ast
from pathlib import Path


def tfpgo_imports(path: Path, with_typing: bool) -> dict[str, int]:
    """Dotted names of the tfpgo modules (or their members) `path` imports, each
    with the line of its first import: at module level and inside functions, and
    with `with_typing` those under `if TYPE_CHECKING:` too."""
    tree = ast.parse(path.read_text())
    typing_only = set()
    if not with_typing:
        typing_only = {
            id(child)
            for node in ast.walk(tree)
            if isinstance(node, ast.If) and getattr(node.test, "id", "") == "TYPE_CHECKING"
            for child in ast.walk(node)
        }
    names: dict[str, int] = {}
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("tfpgo"):
                    names.setdefault(alias.name, node.lineno)
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("tfpgo"):
            for alias in node.names:
                names.setdefault(f"{node.module}.{alias.name}", node.lineno)
    return names
