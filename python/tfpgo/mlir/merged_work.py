"""Work a lowering merges, named as merged: the op that stays carries every record.

IREE's input conversion runs MLIR's CSE, which keeps the first of equivalent ops
and erases the others with their locations. XLA's gradient of a GELU computes
`exp(-x²)` again (its `Exp`, `Square`, `Neg`), as the forward `Erfc`'s expansion
did: after CSE one op does both ops' work and the gradient's records are gone.

So before the StableHLO goes to IREE, the ops CSE would merge are found as it
finds them: same op name, operands, attributes and result types, an op without
regions whose name says it has no effect, in the scope of the first (ops of
nested regions see the enclosing blocks' ops, as CSE's scoped table does). The
first op's location gets the others' fused in, so the op that stays carries
every record, and the level's rule for fused ops splits its time
(docs/attribution_rules.md, "Below StableHLO"). A reshape chain the
canonicalizer folds away (back to its start's shape: the one-element list a
Keras RNN overwrites each step, read back out) is fused into the ops that read
it, as a fused kernel's movement is; one it composes into a single reshape,
into that reshape. An op the canonicalizer folds into its operand, an identity
(`x + 0` of a zero splat, a `pad` by nothing: the first trip of an unrolled
gradient loop adds to zeros), is fused with the zeros' ops into the op that
made that operand. The StableHLO level
itself is written from the module before this: there the ops are still apart
(`fuse_equivalent_locations`).

After the lowering (`relocate_after_lowering`): ops that compute nothing (a
`zeros_like`, a list's zero buffer: a broadcast of a splat constant) IREE folds
into constants its folder makes without a location; each such constant takes
the locations of the StableHLO ops that held its value. And a loop IREE makes
an `scf.for` of loses its cond's compare and its counter's increment into the
loop's bounds and step: the `scf.for` takes their records.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from tfpgo.mlir.lost_ops import carried

# Dialects whose ops without regions are pure, but for these.
_PURE_DIALECTS = ("stablehlo.", "chlo.")
_EFFECTS = frozenset(
    f"stablehlo.{name}"
    for name in (
        "custom_call", "rng", "rng_bit_generator", "optimization_barrier", "infeed",
        "outfeed", "send", "recv", "after_all", "create_token", "all_gather", "all_reduce",
        "all_to_all", "collective_permute", "collective_broadcast", "reduce_scatter",
        "partition_id", "replica_id", "composite",
    )
)  # fmt: skip
_SOURCE = re.compile(r'source = "((?:[^"\\]|\\.)*)"')
_NAME = re.compile(r'"((?:[^"\\]|\\.)*)"(?!:\d)')
# Constants with more elements are left apart: comparing weights costs their
# size, and distinct weights are what such constants are.
_COMPARED_ELEMENTS = 64


@dataclass(frozen=True)
class Merge:
    """One op CSE will erase, by the name of its location, and the op it keeps."""

    merged: str
    into: str


# Where a value leaves a region: no op to carry a folded reshape's record.
_TERMINATORS = frozenset({"stablehlo.return", "func.return", "return"})
# Ops whose result holds its operand's elements, rearranged: of a splat, a splat.
_SHAPE_ONLY = frozenset(
    f"stablehlo.{name}" for name in ("broadcast_in_dim", "broadcast", "reshape", "transpose")
)


@dataclass(frozen=True)
class MergedWork:
    """The module with merged ops' locations fused onto the ops that stay."""

    text: str
    merges: tuple[Merge, ...]
    folded_reshapes: int  # chains of reshapes fused into their last op or its readers
    folded_identities: int = 0  # `x + 0`, pads by nothing: fused into what made `x`


def fuse_equivalent_locations(text: str) -> MergedWork:
    """`text` (StableHLO, any form) with every op CSE would erase fused into the
    location of the op it keeps, and every reshape the canonicalizer folds away
    into the ops that read it; unchanged when there is neither."""
    from iree.compiler import ir

    with ir.Context() as context:
        context.allow_unregistered_dialects = True
        module = ir.Module.parse(text)
        merges: list[Merge] = []
        for function in module.body.operations:
            for region in function.regions:
                _merge_region(region, {}, merges, {}, set(), ir)
        readers = _fold_reshapes_into_readers(module, ir)
        identities = _fold_identities(module, ir)
        if not merges and not readers and not identities:
            return MergedWork(text, (), 0)
        text = module.operation.get_asm(enable_debug_info=True)
        return MergedWork(text, tuple(merges), readers, identities)


def _fold_reshapes_into_readers(module: Any, ir: Any) -> int:
    """Fuses the locations of each chain of reshapes (and identity slices,
    transposes, converts) IREE's canonicalizer folds: one back to the shape it
    started from into the ops that read its end (they then read the start
    itself, the movement fused into them); any other into its last op, which
    the folder keeps as the one reshape the chain composes into. Returns how
    many chains were."""
    ends: list[Any] = []

    def collect(op: Any) -> Any:
        if _keeps_elements(op, ir):
            ends.append(op)
        return ir.WalkResult.ADVANCE

    module.operation.walk(collect)
    folded = 0
    for end in ends:
        result = end.results[0]
        readers = [use.owner for use in result.uses]
        if any(_keeps_elements(reader, ir) for reader in readers):
            continue  # not the chain's end
        chain, start = [end], end.operands[0]
        while (
            isinstance(start.owner, ir.Operation | ir.OpView)
            and _keeps_elements(start.owner, ir)
            and len(list(start.uses)) == 1
        ):
            chain.insert(0, start.owner)
            start = start.owner.operands[0]
        if start.type != result.type:
            # Composed into the chain's last op, which the folder keeps.
            if len(chain) > 1:
                end.location = ir.Location.fused([op.location for op in chain])
                folded += 1
            continue
        readers = [reader for reader in readers if reader.name not in _TERMINATORS]
        for reader in readers:
            reader.location = ir.Location.fused([reader.location, *(op.location for op in chain)])
        folded += bool(readers)
    return folded


def _fold_identities(module: Any, ir: Any) -> int:
    """Fuses the location of each op the canonicalizer folds into its operand (an
    `add` of a zero splat, a `pad` by nothing), and of the zeros' ops, into the
    op that made that operand (reshapes it folds too looked through), or where an
    argument is the operand, into the ops that read it. Returns how many."""
    identities: list[tuple[Any, Any, list[Any]]] = []

    def collect(op: Any) -> Any:
        found = _identity_of(op, ir)
        if found is not None:
            identities.append((op, *found))
        return ir.WalkResult.ADVANCE

    module.operation.walk(collect)
    folded = 0
    for op, operand, zeros in identities:
        folded_ops = [op.location, *(zero.location for zero in zeros)]
        maker = _maker(operand, ir)
        if maker is not None:
            maker.location = ir.Location.fused([maker.location, *folded_ops])
            folded += 1
            continue
        readers = [use.owner for use in op.results[0].uses]
        readers = [reader for reader in readers if reader.name not in _TERMINATORS]
        for reader in readers:
            reader.location = ir.Location.fused([reader.location, *folded_ops])
        folded += bool(readers)
    return folded


def _maker(value: Any, ir: Any) -> Any:
    """The op that computes `value`, through ops that only move or keep its
    elements (reshapes, identities), which lowerings fold or turn into views;
    None for an argument."""
    owner = value.owner
    while isinstance(owner, ir.Operation | ir.OpView):
        found = _identity_of(owner, ir)
        if found is not None:
            owner = found[0].owner
        elif _keeps_elements(owner, ir):
            owner = owner.operands[0].owner
        else:
            return owner
    return None


def _identity_of(op: Any, ir: Any) -> tuple[Any, list[Any]] | None:
    """For an op that returns its operand unchanged, that operand and the ops that
    make the zeros it adds ([] for a pad by nothing); else None."""
    if op.name == "stablehlo.pad":
        widths = ("edge_padding_low", "edge_padding_high", "interior_padding")
        if op.operands[0].type == op.results[0].type and all(
            not any(ir.DenseI64ArrayAttr(op.attributes[name])) for name in widths
        ):
            return op.operands[0], []
        return None
    if op.name != "stablehlo.add" or op.operands[0].type != op.results[0].type:
        return None
    for index, operand in enumerate(op.operands):
        other = op.operands[1 - index]
        zeros = _zero_splat(operand, ir)
        if zeros is not None and other.type == op.results[0].type:
            return other, zeros
    return None


def _zero_splat(value: Any, ir: Any) -> list[Any] | None:
    """The ops that make `value` a splat of zero (a constant, through shape-only
    ops), else None."""
    ops = []
    owner = value.owner
    while isinstance(owner, ir.Operation | ir.OpView) and owner.name in _SHAPE_ONLY:
        ops.append(owner)
        owner = owner.operands[0].owner
    if not isinstance(owner, ir.Operation | ir.OpView) or owner.name != "stablehlo.constant":
        return None
    try:
        dense = ir.DenseElementsAttr(owner.attributes["value"])
    except ValueError:
        return None  # not dense elements (a resource blob)
    value = str(dense.get_splat_value()).split(":")[0].strip() if dense.is_splat else ""
    if value not in ("0.000000e+00", "-0.000000e+00", "0"):
        return None
    return [owner.operation, *ops]


def _keeps_elements(op: Any, ir: Any) -> bool:
    """A reshape, or a slice, transpose or convert that changes nothing."""
    if op.name == "stablehlo.reshape":
        return True
    if op.name not in ("stablehlo.slice", "stablehlo.transpose", "stablehlo.convert"):
        return False
    if op.operands[0].type != op.results[0].type:
        return False
    if op.name != "stablehlo.transpose":
        return True
    order = list(ir.DenseI64ArrayAttr(op.attributes["permutation"]))
    return order == sorted(order)


def _merge_region(
    region: Any,
    outer: dict[Any, Any],
    merges: list[Merge],
    canonical: dict[Any, Any],
    inert: set[Any],
    ir: Any,
) -> None:
    """Finds, block by block, each op equivalent to one before it in scope; the
    program is not changed, only locations (`canonical` maps a merged op's
    results to the kept op's, so that their users compare equal too). Ops that
    compute nothing (constants, and ops of constants only: `inert` holds their
    results) are compared but keep their locations: their records carry no
    time there, as the materialize pass charges such ops nothing."""
    for block in region.blocks:
        known = dict(outer)
        for op in block.operations:
            if len(op.regions):
                for nested in op.regions:
                    _merge_region(nested, known, merges, canonical, inert, ir)
                continue
            key = _equivalence_key(op, canonical, ir)
            if key is None:
                continue
            first = known.setdefault(key, op)
            if first == op:
                continue
            canonical.update(zip(op.results, first.results, strict=True))
            if _computes_nothing(first, canonical, inert):
                inert.update(first.results)
                continue
            merges.append(Merge(_location_name(op.location), _location_name(first.location)))
            first.location = ir.Location.fused([first.location, op.location])


def _equivalence_key(op: Any, canonical: dict[Any, Any], ir: Any) -> tuple[Any, ...] | None:
    """What CSE compares of `op`, or None for an op it would not merge (or that
    this pass does not compare)."""
    name = op.name
    if not name.startswith(_PURE_DIALECTS) or name in _EFFECTS or not len(op.results):
        return None
    if name == "stablehlo.constant":
        shaped = ir.ShapedType(op.results[0].type)
        if not shaped.has_static_shape or _elements(shaped.shape) > _COMPARED_ELEMENTS:
            return None
    attributes = tuple(sorted((key, str(op.attributes[key])) for key in op.attributes))
    return (
        name,
        tuple(canonical.get(operand, operand) for operand in op.operands),
        attributes,
        tuple(str(result.type) for result in op.results),
    )


def _computes_nothing(op: Any, canonical: dict[Any, Any], inert: set[Any]) -> bool:
    if op.name == "stablehlo.constant":
        return True
    operands = [canonical.get(operand, operand) for operand in op.operands]
    return bool(operands) and all(operand in inert for operand in operands)


def _elements(shape: list[int]) -> int:
    count = 1
    for size in shape:
        count *= size
    return count


def _location_name(location: Any) -> str:
    """The tf node a location names: its carried record's `source`, else its
    first name (a file location's path aside), else its text."""
    text = str(location)
    found = _SOURCE.search(text) or _NAME.search(text)
    return found[1] if found else text


@dataclass(frozen=True)
class Relocated:
    """The lowered module with the records its lowering dropped put back: on
    folded constants, and on the `scf.for` loops that absorbed a counter and
    its compare; how many of each."""

    text: str
    constants: int
    loops: int


def relocate_after_lowering(stablehlo_text: str, lowered_text: str) -> Relocated:
    """`lowered_text` (generic form, IREE's linalg level of `stablehlo_text`)
    with each constant that has no location given those of the StableHLO ops
    that compute nothing and hold its value, a splat (the first such constant of
    each value: IREE's folder deduplicates them); and each `scf.for` IREE made of
    a `stablehlo.while` given the records of the loop's control no op kept (its
    cond's compare, its counter's increment): the loop's bounds and step are
    what is left of them."""
    from iree.compiler import ir

    with ir.Context() as context, ir.Location.unknown():
        context.allow_unregistered_dialects = True
        stablehlo = ir.Module.parse(stablehlo_text)
        splats = _splat_locations(stablehlo, ir)
        controls = _loop_controls(stablehlo, ir)
        if not splats and not controls:
            return Relocated(lowered_text, 0, 0)
        lowered = ir.Module.parse(lowered_text)
        constants: list[Any] = []
        loops: list[Any] = []

        def collect(op: Any) -> Any:
            if op.name == "arith.constant" and str(op.location) == "loc(unknown)":
                constants.append(op)
            elif op.name == "scf.for":
                loops.append(op)
            return ir.WalkResult.ADVANCE

        lowered.operation.walk(collect)
        located = 0
        for constant in constants:
            held = splats.pop(str(constant.attributes["value"]), None)
            if held:
                constant.location = ir.Location.fused(held)
                located += 1
        absorbed = 0
        for loop in loops:
            control = controls.pop(str(loop.location), ())
            lost = [where for where in control if not carried(lowered_text, _location_name(where))]
            if lost:
                loop.location = ir.Location.fused([loop.location, *lost])
                absorbed += 1
        if not located and not absorbed:
            return Relocated(lowered_text, 0, 0)
        text = lowered.operation.get_asm(
            enable_debug_info=True, print_generic_op_form=True, large_elements_limit=64
        )
        return Relocated(text, located, absorbed)


def _loop_controls(module: Any, ir: Any) -> dict[str, list[Any]]:
    """Per `stablehlo.while` (by its printed location, which IREE's loops keep),
    the locations of its control: the ops of its cond region, and the body ops
    that make the carried values the cond reads."""
    loops: list[Any] = []

    def collect(op: Any) -> Any:
        if op.name == "stablehlo.while":
            loops.append(op)
        return ir.WalkResult.ADVANCE

    module.operation.walk(collect)
    controls: dict[str, list[Any]] = {}
    for loop in loops:
        cond, body = (region.blocks[0] for region in loop.regions)
        read = {
            operand.arg_number
            for op in cond.operations
            for operand in op.operands
            if isinstance(operand.owner, ir.Block)
        }
        made = list(body.operations)[-1].operands  # what the body yields
        found = [op.location for op in cond.operations if op.name not in _TERMINATORS]
        found += [
            made[index].owner.location
            for index in sorted(read)
            if isinstance(made[index].owner, ir.Operation | ir.OpView)
        ]
        controls[str(loop.location)] = found
    return controls


def _splat_locations(module: Any, ir: Any) -> dict[str, list[Any]]:
    """The printed splat value (`dense<0.0> : tensor<40x8xf32>`; of a rank-0
    tensor, also the scalar IREE makes of it: `64 : i32`) of every StableHLO
    constant, or rearrangement of one, → the locations of its ops."""
    splats: dict[Any, Any] = {}  # value -> its splat element
    located: dict[str, list[Any]] = {}

    def visit(op: Any) -> Any:
        element = None
        if op.name == "stablehlo.constant":
            value = ir.DenseElementsAttr(op.attributes["value"])
            element = value.get_splat_value() if value.is_splat else None
        elif op.name in _SHAPE_ONLY:
            element = splats.get(op.operands[0])
        result_type = op.results[0].type if element is not None else None
        if result_type is None or not ir.RankedTensorType(result_type).has_static_shape:
            return ir.WalkResult.ADVANCE
        splats[op.results[0]] = element
        key = str(ir.DenseElementsAttr.get_splat(result_type, element))
        located.setdefault(key, []).append(op.location)
        if ir.RankedTensorType(result_type).rank == 0:  # IREE makes it a scalar
            located.setdefault(str(element), []).append(op.location)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return located
