"""Checks that Bazel's Python deps match the imports, so that an edit reruns
exactly the tests that import what changed.

    python3 tools/check_py_deps.py [--fix]      (from the repository root)

* python/BUILD: each py_library's `:` deps are exactly the libraries holding
  the tfpgo modules its sources import (imports under `if TYPE_CHECKING:` do
  not count) plus those holding the `__init__.py` of their packages;
* tests/python/BUILD: each test depends on every library whose modules it
  imports (more is allowed: some tests run modules by name).

`--fix` rewrites the deps lists in place. BUILD files are Starlark; the
subset they use here is evaluated with stand-ins for the rules.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from python_imports import tfpgo_imports

ROOT = Path(__file__).absolute().parents[1]
LIBRARIES = ROOT / "python" / "BUILD"
TESTS = ROOT / "tests" / "python" / "BUILD"


def _rules(build: Path, kinds: tuple[str, ...]) -> dict[str, dict[str, Any]]:
    """name -> keyword arguments of every rule of `kinds` in `build`."""
    found: dict[str, dict[str, Any]] = {}

    def record(**kwargs: Any) -> None:
        found[kwargs["name"]] = kwargs

    def ignore(*_args: Any, **_kwargs: Any) -> list[str]:
        return []

    names = ("py_library", "tfpgo_pytest", "filegroup", "exports_files", "package", "load")
    scope: dict[str, Any] = {name: ignore for name in names}
    scope.update({kind: record for kind in kinds}, glob=ignore, tfpgo_check_py_libraries=ignore)
    exec(compile(build.read_text(), str(build), "exec"), scope)  # our own BUILD files
    return found


def _module(source: str) -> str:
    name = source.removesuffix(".py").replace("/", ".")
    return name.removesuffix(".__init__")


class Libraries:
    def __init__(self) -> None:
        self.rules = _rules(LIBRARIES, ("py_library",))
        self.owner = {
            _module(src): name for name, rule in self.rules.items() for src in rule.get("srcs", [])
        }

    def holding(self, dotted: str) -> str | None:
        """The library holding the module `dotted` names (or the module holding it)."""
        while dotted and dotted not in self.owner:
            dotted = dotted.rpartition(".")[0]
        return self.owner.get(dotted)

    def needed(self, paths: list[Path], own_modules: list[str], packages: bool) -> set[str]:
        """Libraries holding what `paths` import, and with `packages` the
        `__init__.py` of every package on the way (theirs and their own)."""
        modules: set[str] = set()
        for path in paths:
            modules |= set(tfpgo_imports(path, with_typing=False))
        if packages:
            modules |= set(own_modules)
            modules |= {m.rsplit(".", i)[0] for m in modules for i in range(1, m.count(".") + 1)}
        return {lib for m in modules if (lib := self.holding(m))}


def _rewrite(build: Path, name: str, deps: list[str]) -> None:
    """Replaces the `deps` list of rule `name` (one item a line, or `deps = [],`)."""
    text = build.read_text()
    start = text.index(f'    name = "{name}",')
    begin = text.index("    deps = [", start)
    listed = "".join(f'        "{dep}",\n' for dep in deps)
    if text.startswith("    deps = [],", begin):
        end = begin + len("    deps = []")
    else:
        end = text.index("    ],", begin) + len("    ]")
    build.write_text(text[:begin] + "    deps = [\n" + listed + "    ]" + text[end:])


def check(fix: bool) -> list[str]:
    libraries = Libraries()
    problems = []
    for name, rule in libraries.rules.items():
        srcs = rule.get("srcs", [])
        if not srcs:
            continue  # an umbrella of other libraries
        paths = [ROOT / "python" / src for src in srcs]
        own = [_module(src) for src in srcs]
        need = {":" + lib for lib in libraries.needed(paths, own, packages=True)}
        need.discard(":" + name)
        deps = rule.get("deps", [])
        have = {dep for dep in deps if dep.startswith(":")}
        if need != have:
            problems.append(
                f"python/BUILD {name}: missing {sorted(need - have)}, not imported "
                f"{sorted(have - need)}"
            )
            if fix:
                _rewrite(LIBRARIES, name, sorted(need) + [d for d in deps if d not in have])
    for name, rule in _rules(TESTS, ("tfpgo_pytest",)).items():
        paths = [TESTS.parent / src for src in rule["srcs"]]
        need = {"//python:" + lib for lib in libraries.needed(paths, [], packages=False)}
        deps = rule.get("deps", [])
        if not need <= set(deps):
            problems.append(f"tests/python/BUILD {name}: missing {sorted(need - set(deps))}")
            if fix:
                _rewrite(TESTS, name, sorted(need | set(deps)))
    return problems


def main(argv: list[str]) -> int:
    problems = check(fix="--fix" in argv)
    for problem in problems:
        print(problem)
    if problems and "--fix" not in argv:
        print("fix: python3 tools/check_py_deps.py --fix")
    return 1 if problems and "--fix" not in argv else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
