"""Loop results forwarded out of the loop that never reads them.

Keras's RNN layer keeps the last step's output in a one-element list that the
loop overwrites every step and never reads; the XLA bridge route makes it a
carried value of a `stablehlo.while` whose block arguments have no use, yielded
as a reshape of the new state the loop also carries. IREE 3.13 drops such an
argument from its rotated `scf.while` and then crashes in `ScfWhileOpConversion`
(a segfault, or "LLVM ERROR: out of memory"). The value is the state's reshape
after the loop as well, so the loop's result is rewritten as that reshape of the
state's result, the loop result loses its uses, and IREE removes it.

The rewrite holds exactly when the shape ops applied to the state's initial
value give the carried value's initial value, which is checked on constants
(splats of one value: a loop that runs no step returns its initial values).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# Ops that only rearrange elements: a splat stays the same splat through them.
_SHAPE_OPS = ("stablehlo.reshape", "stablehlo.transpose", "stablehlo.broadcast_in_dim")


@dataclass(frozen=True)
class Forwarded:
    """The module text after the rewrite and how many loop results it forwarded."""

    text: str
    results: int


def forward_unread_loop_results(text: str) -> Forwarded:
    """`text` (StableHLO, printed with debug locations) with every loop result
    whose carried value the loop never reads, and yields as shape ops of another
    carried value, taken from that value's result instead (module docstring)."""
    if "stablehlo.while" not in text:
        return Forwarded(text, 0)
    from iree.compiler import ir

    with ir.Context() as context:
        context.allow_unregistered_dialects = True
        module = ir.Module.parse(text)
        loops: list[Any] = []

        def collect(op: Any) -> Any:
            if op.name == "stablehlo.while":
                loops.append(op)
            return ir.WalkResult.ADVANCE

        module.operation.walk(collect)
        forwarded = sum(_forward(loop) for loop in loops)
        if not forwarded:
            return Forwarded(text, 0)
        return Forwarded(module.operation.get_asm(enable_debug_info=True), forwarded)


def _forward(loop: Any) -> int:
    """Forwards the unread results of one `stablehlo.while`; how many."""
    from iree.compiler import ir

    condition = loop.regions[0].blocks[0]
    body = loop.regions[1].blocks[0]
    yielded = list(_terminator(body).operands)
    count = 0
    for index, result in enumerate(loop.results):
        if _used(condition.arguments[index]) or _used(body.arguments[index]):
            continue
        if not _used(result):
            continue
        chain, source = _shape_chain(yielded[index], body)
        state = next((i for i, value in enumerate(yielded) if i != index and value == source), None)
        if state is None or not _same_splat(loop.operands[index], loop.operands[state]):
            continue
        value = loop.results[state]
        point = ir.InsertionPoint.after(loop)
        for op in reversed(chain):  # the op nearest the state first
            clone = op.clone(ip=point).operation
            clone.replace_uses_of_with(op.operands[0], value)
            value = clone.results[0]
            point = ir.InsertionPoint.after(clone)
        result.replace_all_uses_with(value)
        count += 1
    return count


def _terminator(block: Any) -> Any:
    operations = list(block.operations)
    return operations[-1]


def _used(value: Any) -> bool:
    return any(True for _ in value.uses)


def _shape_chain(value: Any, body: Any) -> tuple[list[Any], Any]:
    """The shape ops of `body` that produce `value` from another value, outermost
    first, and that value."""
    from iree.compiler import ir

    chain = []
    while isinstance(value.owner, ir.Operation) or hasattr(value.owner, "operation"):
        op = value.owner.operation if hasattr(value.owner, "operation") else value.owner
        if op.name not in _SHAPE_OPS or len(op.operands) != 1 or op.block != body:
            break
        chain.append(op)
        value = op.operands[0]
    return chain, value


def _same_splat(carried: Any, state: Any) -> bool:
    """Whether two initial values are constants splatting the same value."""
    from iree.compiler import ir

    values = []
    for value in (carried, state):
        owner = value.owner
        op = getattr(owner, "operation", owner)
        if getattr(op, "name", None) != "stablehlo.constant":
            return False
        attribute = ir.DenseElementsAttr(op.attributes["value"])
        if not attribute.is_splat:
            return False
        values.append(str(attribute.get_splat_value()))
    return values[0] == values[1]
