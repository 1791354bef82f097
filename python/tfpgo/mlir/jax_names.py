"""JAX's StableHLO names, made the names XLA profiles under.

JAX lowers each nested `jit` (`jax.nn.relu`, `take_along_axis`, ...) to a private
function called from the step, and the ops inside carry names relative to that
call (`max`), while the call carries the full path (`jit(step)/jvp(dense_1)/
jit(relu)`). XLA inlines the call and composes the two into the instruction's
`op_name` (`jit(step)/jvp(dense_1)/jit(relu)/max`), which is what the profile's
device time is keyed by. `qualify_call_names` writes that composition into the
module's locations (a name location `call/inner` around each inner one), so the
name-matching annotation finds those ops. A function called from more than one
place has no single path and is left as it is (listed, for the report).

The input is the text `lowered.as_text(debug_info=True)` prints: location aliases
`#locN = loc(...)`, one op per line ending in `loc(#locN)`, functions closed by
`} loc(...)` at their own indentation.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_ALIAS = re.compile(r'^#(\w+) = loc\("((?:[^"\\]|\\.)*)"(?:\((.*)\))?\)$')
_FUNC = re.compile(r"^(\s*)func\.func private @([\w.$-]+)\(")
_CALL = re.compile(r"\bcall @([\w.$-]+)\(.*loc\(#(\w+)\)\s*$")
_USE = re.compile(r"loc\(#(\w+)\)")


@dataclass(frozen=True)
class QualifiedModule:
    text: str
    qualified: tuple[str, ...]  # private functions whose ops now carry full names
    ambiguous: tuple[str, ...]  # called from several places (or none): left as they were


def qualify_call_names(text: str) -> QualifiedModule:
    """The module with each singly-called private function's op names prefixed by its
    call's name path (see the module doc)."""
    lines = text.splitlines()
    names = {m[1]: (m[2], m[3]) for m in map(_ALIAS.match, lines) if m}
    bodies = _function_bodies(lines)
    calls: dict[str, list[tuple[str, str]]] = {}  # callee -> [(caller or "", call name)]
    for caller, (first, last) in [("", (0, len(lines))), *bodies.items()]:
        for at in range(first, last):
            if caller == "" and any(b[0] <= at < b[1] for b in bodies.values()):
                continue
            found = _CALL.search(lines[at])
            if found and found[2] in names:
                calls.setdefault(found[1], []).append((caller, names[found[2]][0]))
    prefixes: dict[str, str] = {}

    def prefix(function: str, seen: frozenset[str] = frozenset()) -> str | None:
        sites = calls.get(function, [])
        if len(sites) != 1 or function in seen:
            return None
        caller, name = sites[0]
        if caller == "":
            return name
        outer = prefix(caller, seen | {function})
        return None if outer is None else f"{outer}/{name}"

    for function in bodies:
        path = prefix(function)
        if path is not None:
            prefixes[function] = path
    added: list[str] = []
    made: dict[tuple[str, str], str] = {}
    for function, path in prefixes.items():
        first, last = bodies[function]

        def qualify(use: re.Match[str], path: str = path) -> str:
            return _qualified(use, path, names, made, added)

        for at in range(first + 1, last):
            lines[at] = _USE.sub(qualify, lines[at])
    qualified = sorted(prefixes)
    return QualifiedModule(
        "\n".join([*lines, *added]) + "\n",
        tuple(qualified),
        tuple(sorted(set(bodies) - set(prefixes))),
    )


def _function_bodies(lines: list[str]) -> dict[str, tuple[int, int]]:
    """Private function name -> [its header line, one past its closing line)."""
    bodies = {}
    for at, line in enumerate(lines):
        found = _FUNC.match(line)
        if not found:
            continue
        closing = f"{found[1]}}} loc("
        end = next((k for k in range(at + 1, len(lines)) if lines[k].startswith(closing)), None)
        if end is not None:
            bodies[found[2]] = (at, end + 1)
    return bodies


def _qualified(
    use: re.Match[str],
    path: str,
    names: dict[str, tuple[str, str | None]],
    made: dict[tuple[str, str], str],
    added: list[str],
) -> str:
    """`loc(#alias)` of a name location, as a new alias named `path/name`."""
    alias = use[1]
    if alias not in names:
        return use[0]
    key = (path, alias)
    if key not in made:
        name, child = names[alias]
        made[key] = f"tfpgo_qualified{len(made)}"
        inner = f"({child})" if child else ""
        added.append(f'#{made[key]} = loc("{path}/{name}"{inner})')
    return f"loc(#{made[key]})"
