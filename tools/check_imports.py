"""Checks the direction of tfpgo's imports against its declared stage order.

    python3 tools/check_imports.py [ROOT]      (ROOT: python/tfpgo by default)

The order is `STAGES` in `tfpgo/__init__.py` (its docstring says what each
stage does), the modules serving every stage `SHARED`. A module may import its
own stage, an earlier stage or a shared module, but never a stage `APART`
from its own (pairs of stages, either way round); a shared module only shared
ones. Imports inside functions and under `if TYPE_CHECKING:` count: a lazy
import up the flow is still a dependency up the flow. Every top-level package
and module must be declared, and no two modules may import each other, through
any chain. Each violation is one line: the file, the line, what it imports, why.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

from python_imports import tfpgo_imports

DEFAULT_ROOT = Path(__file__).absolute().parents[1] / "python" / "tfpgo"


def declared(root: Path) -> tuple[tuple[str, ...], tuple[str, ...], frozenset[frozenset[str]]]:
    """`STAGES`, `SHARED` and `APART` (each pair as a set) of the package's `__init__.py`."""
    found: dict[str, tuple] = {}
    for node in ast.parse((root / "__init__.py").read_text()).body:
        if not isinstance(node, ast.Assign):
            continue
        target = node.targets[0]
        if isinstance(target, ast.Name) and target.id in ("STAGES", "SHARED", "APART"):
            found[target.id] = tuple(ast.literal_eval(node.value))
    apart = frozenset(frozenset(pair) for pair in found.get("APART", ()))
    return found.get("STAGES", ()), found.get("SHARED", ()), apart


def modules(root: Path) -> dict[str, Path]:
    """Dotted name -> file of every module under `root` (a package is its
    `__init__.py`)."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        parts = (root.name, *path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def _module_of(name: str, known: dict[str, Path]) -> str | None:
    """The module a dotted import names (`tfpgo.a.b.member` -> `tfpgo.a.b`)."""
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def check(root: Path = DEFAULT_ROOT) -> list[str]:
    stages, shared, apart = declared(root)
    rank = {name: index for index, name in enumerate(stages)}
    known = modules(root)
    problems = []
    graph: dict[str, set[str]] = {name: set() for name in known}
    for name, path in known.items():
        top = name.split(".")[1] if "." in name else ""
        where = path.relative_to(root.parent)
        if top and top not in rank and top not in shared:
            problems.append(f"{where}: stage '{top}' is in neither STAGES nor SHARED")
            continue
        seen: set[str] = set()
        for imported, line in tfpgo_imports(path, with_typing=True).items():
            target = _module_of(imported, known)
            if target is None or target == name or target in seen:
                continue
            seen.add(target)
            if not target.startswith(name + "."):  # a package's own submodules
                graph[name].add(target)
            other = target.split(".")[1] if "." in target else ""
            if not top or not other or other == top or other in shared:
                continue
            if top in shared:
                problems.append(f"{where}:{line}: shared module imports stage '{other}'")
            elif other in rank and rank[other] > rank[top]:
                problems.append(
                    f"{where}:{line}: imports {target}: stage '{other}' comes after '{top}' "
                    "in STAGES (hand a document down, or move the code to the stage it serves)"
                )
            elif frozenset((top, other)) in apart:
                problems.append(
                    f"{where}:{line}: imports {target}: stages '{top}' and '{other}' are APART "
                    "(what both need belongs to a stage below both)"
                )
    problems += [f"import cycle: {' -> '.join(cycle)}" for cycle in cycles(graph)]
    return problems


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Each set of modules that import each other (Tarjan's strongly connected
    components of more than one module), as a chain closing on its first."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append([*sorted(component), min(component)])

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def main(argv: list[str]) -> int:
    root = Path(argv[0]) if argv else DEFAULT_ROOT
    problems = check(root)
    for problem in problems:
        print(problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.setrecursionlimit(10_000)
    sys.exit(main(sys.argv[1:]))
