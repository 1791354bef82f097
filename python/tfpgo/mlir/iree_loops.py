"""StableHLO loops rewritten, exactly, into forms IREE 3.13 compiles.

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

TensorFlow's XLA compiler (a training step's route) writes the same loop with
its condition in a function it calls, and the overwrite as a
`dynamic_update_slice` of the whole value. Functions are inlined first, and a
`dynamic_update_slice` whose update is as large as its operand becomes the
update (its start indices are clamped to zero: it reads nothing of the
operand).

The gradient of such a loop (a training step's backward loop) carries the
gradient of that list: read in the first step, zeros from then on, a value the
loop computes from no carried value. IREE folds that value into its rotated
loop, drops the loop result nobody reads, and leaves the loop with more
carried values than results, which its stream conversion rejects ("region
branch point has 28 operands, but region successor needs 30 inputs"). Such a
value is passed through `stablehlo.optimization_barrier` where the loop yields
it: it stays a value of the loop, and IREE keeps the loop whole.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# Ops that only rearrange elements: a splat stays the same splat through them.
_SHAPE_OPS = ("stablehlo.reshape", "stablehlo.transpose", "stablehlo.broadcast_in_dim")


@dataclass(frozen=True)
class LoopRewrites:
    """The module text after the rewrites, how many loop results they forwarded,
    and how many loop-invariant carried values they put behind a barrier."""

    text: str
    forwarded: int
    barriers: int = 0


def rewrite_loops(text: str) -> LoopRewrites:
    """`text` (StableHLO, printed with debug locations) with every loop result
    whose carried value the loop never reads, and yields as shape ops of another
    carried value, taken from that value's result instead, and every value a loop
    yields from no carried value behind an optimization barrier (module
    docstring)."""
    if "stablehlo.while" not in text:
        return LoopRewrites(text, 0)
    from iree.compiler import ir

    with ir.Context() as context:
        context.allow_unregistered_dialects = True
        module = ir.Module.parse(text)
        if "func.call" in text:
            from iree.compiler.passmanager import PassManager

            PassManager.parse("builtin.module(inline)").run(module.operation)
        loops: list[Any] = []
        overwrites: list[Any] = []

        def collect(op: Any) -> Any:
            if op.name == "stablehlo.while":
                loops.append(op)
            elif op.name == "stablehlo.dynamic_update_slice" and (
                op.operands[1].type == op.results[0].type
            ):
                overwrites.append(op)
            return ir.WalkResult.ADVANCE

        module.operation.walk(collect)
        for overwrite in overwrites:
            overwrite.results[0].replace_all_uses_with(overwrite.operands[1])
            overwrite.erase()
        forwarded = sum(_forward(loop) for loop in loops)
        barriers = sum(_keep_invariant_values(loop) for loop in loops)
        if not forwarded and not barriers:
            return LoopRewrites(text, 0)
        return LoopRewrites(module.operation.get_asm(enable_debug_info=True), forwarded, barriers)


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
        state = next(
            (i for i, value in enumerate(yielded) if i != index and _identity(value) == source),
            None,
        )
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


def _keep_invariant_values(loop: Any) -> int:
    """Puts each value the loop yields that depends on no carried value behind an
    optimization barrier (module docstring); how many."""
    from iree.compiler import ir

    body = loop.regions[1].blocks[0]
    terminator = _terminator(body)
    count = 0
    for index, value in enumerate(list(terminator.operands)):
        if _defining_op(value) is None or not _invariant(value, body):
            continue  # a carried value passed through, or one the step computes
        barrier = ir.Operation.create(
            "stablehlo.optimization_barrier",
            results=[value.type],
            operands=[value],
            ip=ir.InsertionPoint(terminator),
            loc=terminator.location,
        )
        terminator.operands[index] = barrier.results[0]
        count += 1
    return count


def _invariant(value: Any, body: Any) -> bool:
    """Whether `value`, in or above `body`, depends on no argument of `body`
    (walked with a stack: a loop body can be thousands of ops deep)."""
    pending, seen = [value], {}  # id → op, held so that no id is reused
    while pending:
        current = pending.pop()
        op = _defining_op(current)
        if op is None:
            if current.owner == body:
                return False
            continue
        if op.block != body or id(op) in seen:
            continue
        if len(op.regions):
            return False
        seen[id(op)] = op
        pending.extend(op.operands)
    return True


def _terminator(block: Any) -> Any:
    operations = list(block.operations)
    return operations[-1]


def _used(value: Any) -> bool:
    return any(True for _ in value.uses)


def _shape_chain(value: Any, body: Any) -> tuple[list[Any], Any]:
    """The shape ops of `body` that produce `value` from another value, outermost
    first, and that value."""
    chain = []
    op = _defining_op(value)
    while op is not None and op.name in _SHAPE_OPS and len(op.operands) == 1 and op.block == body:
        chain.append(op)
        value = op.operands[0]
        op = _defining_op(value)
    return chain, value


def _identity(value: Any) -> Any:
    """`value` with reshapes to its own type (XLA writes them) looked through."""
    op = _defining_op(value)
    while op is not None and op.name == "stablehlo.reshape" and op.operands[0].type == value.type:
        value = op.operands[0]
        op = _defining_op(value)
    return value


def _same_splat(carried: Any, state: Any) -> bool:
    """Whether two initial values splat the same value."""
    first, second = _splat(carried), _splat(state)
    return first is not None and first == second


def _splat(value: Any) -> str | None:
    """The one element value of a constant splat, through shape ops; else None."""
    from iree.compiler import ir

    op = _defining_op(value)
    while op is not None and op.name in _SHAPE_OPS:
        op = _defining_op(op.operands[0])
    if op is None or op.name != "stablehlo.constant":
        return None
    attribute = ir.DenseElementsAttr(op.attributes["value"])
    return str(attribute.get_splat_value()) if attribute.is_splat else None


def _defining_op(value: Any) -> Any:
    """The op that produces `value`; None for a block argument."""
    from iree.compiler import ir

    owner = value.owner
    if isinstance(owner, ir.Block):
        return None
    return getattr(owner, "operation", owner)
