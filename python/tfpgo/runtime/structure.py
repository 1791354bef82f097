"""The nested structure of a step's arguments and outputs, as JSON.

A compiled program takes and returns flat lists of tensors; the step takes
`(x, {"ids": ids})` and returns `{"loss": loss, "logits": logits}`. The manifest
keeps the structure as a tree whose leaves are the flat positions: an integer,
`{"tuple": [...]}`, `{"list": [...]}`, `{"dict": {key: ...}}` (string keys, in
`tf.nest`'s order: sorted), or `null` for a `None` the step passes through.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from tfpgo.errors import UserError

Tree = Any  # int | None | {"tuple"|"list": [Tree]} | {"dict": {str: Tree}}


def tree_of(value: Any, leaves: Iterator[int]) -> Tree:
    """The tree of `value`, a nest of tensors (tuples, lists, dicts with string
    keys, namedtuples as tuples), numbering its leaves from `leaves`."""
    if value is None:
        return None
    if isinstance(value, Mapping):
        return {"dict": {str(key): tree_of(value[key], leaves) for key in sorted(value)}}
    if isinstance(value, list):
        return {"list": [tree_of(item, leaves) for item in value]}
    if isinstance(value, tuple):
        return {"tuple": [tree_of(item, leaves) for item in value]}
    return next(leaves)


def leaf_paths(tree: Tree, prefix: str) -> dict[int, str]:
    """Each leaf's path from `prefix`, in Python's syntax (`x`, `x[0]`,
    `inputs["ids"]`)."""
    if isinstance(tree, int):
        return {tree: prefix}
    paths: dict[int, str] = {}
    for key, child in _children(tree):
        step = f'["{key}"]' if isinstance(key, str) else f"[{key}]"
        paths.update(leaf_paths(child, prefix + step))
    return paths


def flatten(tree: Tree, value: Any, path: str, into: dict[int, Any]) -> None:
    """Puts each leaf of `value` at its position in `into`; a value whose structure
    is not `tree`'s is one UserError line naming `path` and what was expected."""
    if tree is None:
        if value is not None:
            raise UserError(f"argument {path}: expected None, got {_kind(value)}")
        return
    if isinstance(tree, int):
        if isinstance(value, (Mapping, list, tuple)) or value is None:
            raise UserError(f"argument {path}: expected a tensor, got {_kind(value)}")
        into[tree] = value
        return
    if "dict" in tree:
        keys = sorted(tree["dict"])
        if not isinstance(value, Mapping) or sorted(map(str, value)) != keys:
            got = sorted(map(str, value)) if isinstance(value, Mapping) else _kind(value)
            raise UserError(f"argument {path}: expected a dict with keys {keys}, got {got}")
        for key in keys:
            flatten(tree["dict"][key], value[key], f'{path}["{key}"]', into)
        return
    items = tree.get("tuple", tree.get("list"))
    if not isinstance(value, (list, tuple)) or len(value) != len(items):
        raise UserError(
            f"argument {path}: expected a sequence of {len(items)} items, got {_kind(value)}"
        )
    for index, (child, item) in enumerate(zip(items, value, strict=True)):
        flatten(child, item, f"{path}[{index}]", into)


def unflatten(tree: Tree, leaf: Callable[[int], Any]) -> Any:
    """The nest `tree` describes, each leaf `leaf(position)`."""
    if tree is None or isinstance(tree, int):
        return None if tree is None else leaf(tree)
    if "dict" in tree:
        return {key: unflatten(child, leaf) for key, child in tree["dict"].items()}
    items = [unflatten(child, leaf) for child in tree.get("tuple", tree.get("list"))]
    return items if "list" in tree else tuple(items)


def check_tree(tree: Tree, what: str) -> None:
    """Refuses a tree that is none of the forms above (a corrupt manifest)."""
    if tree is None or (isinstance(tree, int) and not isinstance(tree, bool)):
        return
    if not isinstance(tree, dict) or len(tree) != 1 or next(iter(tree)) not in _NODES:
        raise UserError(f"{what}: not a structure tree (docs/formats.md)")
    node, body = next(iter(tree.items()))
    if not isinstance(body, dict if node == "dict" else list):
        raise UserError(f"{what}: a {node} node without its {node} (docs/formats.md)")
    for _, child in _children(tree):
        check_tree(child, what)


_NODES = ("tuple", "list", "dict")


def _children(tree: dict[str, Any]) -> Sequence[tuple[int | str, Tree]]:
    if "dict" in tree:
        return list(tree["dict"].items())
    return list(enumerate(tree["tuple"] if "tuple" in tree else tree["list"]))


def _kind(value: Any) -> str:
    if isinstance(value, Mapping):
        return f"a dict with keys {sorted(map(str, value))}"
    if isinstance(value, (list, tuple)):
        return f"a {type(value).__name__} of {len(value)} items"
    return "None" if value is None else f"a {type(value).__name__}"
