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

TensorFlow's loops test two counters, `i < max_iterations && t < T` (the
loop's own and the sequence's); IREE turns a `stablehlo.while` into an
`scf.for`, whose trips need no value read back from the device, only when its
condition is one `compare LT` of a carried counter against a bound defined
outside it. Else every trip waits on the host for the condition's scalar (on a
32-trip matmul loop, 1.5-2x the time of the counted form). Where every counter
starts at a constant, steps by a positive constant and is compared with a
constant, the trips are `T = max(0, min over counters of ceil((bound - start) /
step))`, and the condition is rewritten as the first counter's `i < start + T *
step`, exactly; the new compare's location fuses the old ones' (their records
ride on).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from tfpgo.mlir.ir_edit import remap_operands

# A counted loop is unrolled whole where its trips times the ops of one trip are
# at most this many: no trip then waits on the host, and IREE updates the values
# the loop carried (a training step's saved activations) in place.
UNROLL_OPS = 16384
# Ops that only rearrange elements: a splat stays the same splat through them.
_SHAPE_OPS = ("stablehlo.reshape", "stablehlo.transpose", "stablehlo.broadcast_in_dim")


# What the rewrite did with a loop (`LoopDecision.action`).
UNROLLED, COUNTED, LEFT = "unrolled", "counted", "left"


@dataclass(frozen=True)
class LoopDecision:
    """One `stablehlo.while` of the step and what the rewrite did with it: its tf
    node, its trips where the module fixes them, the ops of one trip, the action
    and why; `names`, the tf nodes its ops carry (its control and its body: what
    its time is found under at every level)."""

    name: str  # the tf node of the loop's own location
    trips: int | None  # None: a start, step or bound is no constant
    ops_a_trip: int  # nested regions' ops included
    action: str  # UNROLLED, COUNTED or LEFT
    why: str  # the budget's arithmetic, or what is not constant
    names: tuple[str, ...]  # every tf node its ops carry, the loop's first


@dataclass(frozen=True)
class LoopRewrites:
    """The module text after the rewrites, how many loop results they forwarded,
    and how many loop-invariant carried values they put behind a barrier."""

    text: str
    forwarded: int
    barriers: int = 0
    counted: int = 0  # loop conditions made one counted bound
    loops: tuple[LoopDecision, ...] = ()  # in the module's order, a loop after those in it

    @property
    def unrolled(self) -> int:
        return unrolled_loops(self.loops)


def unrolled_loops(loops: tuple[LoopDecision, ...]) -> int:
    """How many of `loops` the rewrite unrolled whole."""
    return sum(loop.action == UNROLLED for loop in loops)


def rewrite_loops(text: str, unroll_ops: int = UNROLL_OPS) -> LoopRewrites:
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
        counted = 0
        decisions = []
        for loop in loops:  # inner loops first (a post-order walk)
            found = _counted(loop)
            decision = _decision(loop, found, unroll_ops)
            if found is not None and decision.action == UNROLLED:
                _unroll(found)
            elif found is not None:
                counted += _count(found)
            decisions.append(decision)
        rewrites = LoopRewrites(text, forwarded, barriers, counted, tuple(decisions))
        if not forwarded and not barriers and not counted and not rewrites.unrolled:
            return rewrites  # nothing rewritten: the text as given
        return replace(rewrites, text=module.operation.get_asm(enable_debug_info=True))


def _decision(loop: Any, found: _Counted | None, unroll_ops: int) -> LoopDecision:
    """What to do with `loop` (read before any rewrite of it): unroll a counted
    loop within `unroll_ops`, else count it; leave a loop of unknown trips."""
    from iree.compiler import ir

    from tfpgo.iree.sites import location_names

    names: list[str] = list(location_names(loop.location))
    name = names[0] if names else str(loop.location)

    def collect(op: Any) -> Any:
        names.extend(location_names(op.location))
        return ir.WalkResult.ADVANCE

    loop.walk(collect)
    ops = _size(loop)
    distinct = tuple(dict.fromkeys(names))
    if found is None:
        why = "its trips are not fixed by the module (a start, step or bound is no constant)"
        return LoopDecision(name, None, ops, LEFT, why, distinct)
    work = found.trips * ops
    if unroll_ops > 0 and work <= unroll_ops:
        why = f"{found.trips} trips x {ops} ops = {work} <= --unroll-ops {unroll_ops}"
        return LoopDecision(name, found.trips, ops, UNROLLED, why, distinct)
    beyond = f"> --unroll-ops {unroll_ops}" if unroll_ops > 0 else "(--unroll-ops 0: none)"
    why = f"{found.trips} trips x {ops} ops = {work} {beyond}: one counted bound, an scf.for"
    return LoopDecision(name, found.trips, ops, COUNTED, why, distinct)


def _size(loop: Any) -> int:
    """How many ops one trip of `loop` runs (nested regions' ops included)."""
    from iree.compiler import ir

    ops = []

    def count(op: Any) -> Any:
        ops.append(op.name)
        return ir.WalkResult.ADVANCE

    for op in loop.regions[1].blocks[0].operations:
        op.walk(count)
    return len(ops)


@dataclass(frozen=True)
class _Counter:
    """A carried counter a loop's condition tests: `argument < bound`, starting
    at `start` and stepping by `step` each trip."""

    index: int  # of the carried value
    start: int
    step: int
    bound: int
    stepped: Any  # the body's `argument + step`

    def trips(self) -> int:
        return max(0, -(-(self.bound - self.start) // self.step))


@dataclass(frozen=True)
class _Counted:
    """A loop whose condition tests only counters: they, and its exact trips."""

    loop: Any
    counters: tuple[_Counter, ...]
    trips: int


def _counted(loop: Any) -> _Counted | None:
    """`loop` as a counted loop (module docstring), if its trips are known."""
    condition = loop.regions[0].blocks[0]
    body = loop.regions[1].blocks[0]
    tested = list(condition.operations)[:-1]
    compares = [op for op in tested if op.name == "stablehlo.compare"]
    if not compares or any(op.name not in _CONDITION_OPS for op in tested):
        return None
    if any(not _used(op.results[0]) for op in tested):
        return None  # a compare nothing reads does not bound the trips
    counters = [_counter(compare, loop, condition, body) for compare in compares]
    found = tuple(counter for counter in counters if counter is not None)
    if len(found) != len(counters):
        return None
    trips = min(counter.trips() for counter in found)
    if any(not _fits(counter.start + trips * counter.step, loop, counter) for counter in found):
        return None
    return _Counted(loop, found, trips)


def _count(counted: _Counted) -> bool:
    """Rewrites a counted loop's condition into IREE's counted form: one compare
    of its first counter against the bound it ends at (module docstring), and its
    counters' results into the constants they end at; False if it is in that
    form already."""
    from iree.compiler import ir

    loop, trips, first = counted.loop, counted.trips, counted.counters[0]
    condition = loop.regions[0].blocks[0]
    operations = list(condition.operations)
    terminator, tested = operations[-1], operations[:-1]
    compares = [op for op in tested if op.name == "stablehlo.compare"]
    if len(tested) == 1 and _scalar(tested[0].operands[1], loop) is not None:
        return False  # one compare against a bound outside the loop
    compare = ir.Operation.create(
        "stablehlo.compare",
        results=[terminator.operands[0].type],
        operands=[
            condition.arguments[first.index],
            _constant(first.start + trips * first.step, loop, first, loop.location),
        ],
        attributes={name: compares[0].attributes[name] for name in compares[0].attributes},
        ip=ir.InsertionPoint(terminator),
        loc=ir.Location.fused([op.location for op in tested]),
    )
    terminator.operands[0] = compare.results[0]
    for op in reversed(tested):
        op.erase()
    yielded = _terminator(loop.regions[1].blocks[0])
    for counter in counted.counters:
        # IREE's pattern reads the step as the value yielded: no identity reshape between.
        yielded.operands[counter.index] = counter.stepped
        add = _defining_op(counter.stepped)
        if _scalar(add.operands[1], loop) is None:  # the step, defined in the body
            add.operands[1] = _constant(counter.step, loop, counter, add.location)
        result = loop.results[counter.index]
        if _used(result):
            end = counter.start + trips * counter.step
            point = ir.InsertionPoint.after(loop)
            result.replace_all_uses_with(_constant(end, loop, counter, loop.location, point))
    return True


# What a condition of counters is made of (XLA adds reshapes of a value to its own
# type, and may define its bounds inside it).
_CONDITION_OPS = ("stablehlo.compare", "stablehlo.and", "stablehlo.reshape", "stablehlo.constant")


def _unroll(counted: _Counted) -> None:
    """Replaces a counted loop by `trips` copies of its body in a row, each reading
    the values the one before yields; its counters end at constants. Every copied
    op keeps its location and takes those of the loop's control (their records
    ride on: the lower levels split each tf op's time over the ops carrying it)."""
    from iree.compiler import ir

    loop, trips = counted.loop, counted.trips
    body = loop.regions[1].blocks[0]
    operations = list(body.operations)
    condition = list(loop.regions[0].blocks[0].operations)[:-1]
    steps = _counter_steps(body)
    control = [loop.location, *(op.location for op in (*condition, *steps))]
    values = list(loop.operands)
    point = ir.InsertionPoint(loop)
    for _ in range(trips):
        mapping = dict(zip(body.arguments, values, strict=True))
        for op in operations[:-1]:
            clone = op.clone(ip=point).operation
            remap_operands(clone, mapping)
            # The loop's control (the loop, its condition, its counters' steps,
            # which the compiler folds into constants once unrolled) is the
            # sequence of copies now: its records ride on every copied op.
            clone.location = ir.Location.fused([op.location, *control])
            for original, copied in zip(op.results, clone.results, strict=True):
                mapping[original] = copied
        values = [mapping.get(value, value) for value in operations[-1].operands]
    for counter in counted.counters:  # known: a later loop may be bounded by it
        end = counter.start + trips * counter.step
        values[counter.index] = _constant(end, loop, counter, loop.location)
    for result, value in zip(loop.results, values, strict=True):
        result.replace_all_uses_with(value)
    loop.erase()


def _counter_steps(body: Any) -> list[Any]:
    """The ops of a loop body that step a carried integer scalar by a constant
    (`argument + constant`, yielded as that argument's next value)."""
    stepping = []
    for index, value in enumerate(_terminator(body).operands):
        op = _defining_op(_identity(value))
        if op is None or op.name != "stablehlo.add" or op.block != body:
            continue
        if (
            _argument_index(op.operands[0], body) == index
            and _scalar(op.operands[1], None) is not None
        ):
            stepping.append(op)
    return stepping


def _fits(value: int, loop: Any, counter: _Counter) -> bool:
    """Whether `value` is in the range of the counter's signed integer type."""
    from iree.compiler import ir

    element = ir.RankedTensorType(loop.operands[counter.index].type).element_type
    return value < 2 ** (ir.IntegerType(element).width - 1)


def _constant(value: int, loop: Any, counter: _Counter, location: Any, point: Any = None) -> Any:
    """A `stablehlo.constant` of the counter's type holding `value`, before the loop
    (or at `point`)."""
    from iree.compiler import ir

    tensor = loop.operands[counter.index].type
    element = ir.RankedTensorType(tensor).element_type
    splat = ir.DenseElementsAttr.get_splat(tensor, ir.IntegerAttr.get(element, value))
    constant = ir.Operation.create(
        "stablehlo.constant",
        results=[tensor],
        attributes={"value": splat},
        ip=point or ir.InsertionPoint(loop),
        loc=location,
    )
    return constant.results[0]


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


def _counter(compare: Any, loop: Any, condition: Any, body: Any) -> _Counter | None:
    """The counter `compare` tests, if it is `argument < bound` of a carried signed
    integer scalar that starts at a constant and that the body steps by a
    positive constant, the bound a constant outside the loop or a carried value
    that starts at a constant and that the body passes on unchanged; else None."""
    from iree.compiler import ir

    direction = str(compare.attributes["comparison_direction"])
    kind = str(compare.attributes["compare_type"]) if "compare_type" in compare.attributes else ""
    signed = not kind or kind.split()[-1].rstrip(">") == "SIGNED"
    argument, limit = compare.operands
    index = _argument_index(argument, condition)
    if "LT" not in direction or not signed or index is None:
        return None
    element = ir.ShapedType(argument.type).element_type
    if not isinstance(element, ir.IntegerType) or ir.IntegerType(element).is_unsigned:
        return None
    yielded = list(_terminator(body).operands)
    bound = _scalar(limit, None)  # a constant wherever it is defined
    carried = _argument_index(limit, condition)
    if bound is None and carried is not None:
        passed_on = _argument_index(_identity(yielded[carried]), body) == carried
        bound = _scalar(loop.operands[carried], loop) if passed_on else None
    start = _scalar(loop.operands[index], loop)
    stepped = _identity(yielded[index])
    step_op = _defining_op(stepped)
    if bound is None or start is None or step_op is None or step_op.name != "stablehlo.add":
        return None
    if _argument_index(step_op.operands[0], body) != index:
        return None
    step = _scalar(step_op.operands[1], None)
    if step is None or step <= 0:
        return None
    return _Counter(index, start, step, bound, stepped)


def _argument_index(value: Any, block: Any) -> int | None:
    """Which argument of `block` `value` is (identity reshapes looked through), if any."""
    from iree.compiler import ir

    value = _identity(value)
    if not isinstance(value.owner, ir.Block) or value.owner != block:
        return None
    return int(ir.BlockArgument(value).arg_number)


def _scalar(value: Any, outside: Any) -> int | None:
    """The integer a rank-0 `stablehlo.constant` holds; None for any other value,
    or (with `outside`, a loop) for one defined inside that loop."""
    from iree.compiler import ir

    op = _defining_op(value)
    if op is None or op.name != "stablehlo.constant":
        return None
    if outside is not None and _inside(op, outside):
        return None
    attribute = ir.DenseElementsAttr(op.attributes["value"])
    if not attribute.is_splat or ir.ShapedType(attribute.type).rank != 0:
        return None
    return int(ir.IntegerAttr(attribute.get_splat_value()).value)


def _inside(op: Any, loop: Any) -> bool:
    """Whether `op` is nested in `loop`."""
    parent = op.parent
    while parent is not None:
        if parent == loop:
            return True
        parent = getattr(parent, "parent", None)
    return False


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
