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
