"""Edits of a parsed module (IREE's MLIR Python bindings) that the StableHLO
rewrites share: copies of ops read the values a mapping gives, and carry the
location of what they replace."""

from __future__ import annotations

from typing import Any


def remap_operands(op: Any, mapping: dict[Any, Any]) -> None:
    """Points the operands of `op` and of every op nested in it at their values in
    `mapping` (a copy reads the copies' values, not the originals')."""
    from iree.compiler import ir

    def remap(inner: Any) -> Any:
        operands = inner.operands
        for index in range(len(operands)):
            found = mapping.get(operands[index])
            if found is not None:
                operands[index] = found
        return ir.WalkResult.ADVANCE

    op.walk(remap)


def relocate(op: Any, location: Any) -> None:
    """Gives `op` and every op nested in it `location`."""
    from iree.compiler import ir

    def locate(inner: Any) -> Any:
        inner.location = location
        return ir.WalkResult.ADVANCE

    op.walk(locate)


def replace_with_function(op: Any, function_text: str) -> None:
    """Replaces `op` by the body of the one function `function_text` holds (its
    arguments `op`'s operands, its returned value `op`'s result), each copied op
    carrying `op`'s location."""
    from iree.compiler import ir

    replacement = ir.Module.parse(function_text)
    function = replacement.body.operations[0]
    block = function.regions[0].blocks[0]
    mapping = dict(zip(block.arguments, op.operands, strict=True))
    point = ir.InsertionPoint(op)
    operations = list(block.operations)
    for inner in operations[:-1]:
        clone = inner.clone(ip=point).operation
        remap_operands(clone, mapping)
        relocate(clone, op.location)
        for original, copied in zip(inner.results, clone.results, strict=True):
            mapping[original] = copied
    op.results[0].replace_all_uses_with(mapping[operations[-1].operands[0]])
    op.erase()
