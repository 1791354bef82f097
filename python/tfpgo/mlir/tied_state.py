"""A training step's variables updated in place: each parameter the step writes
is the storage of the result that writes it.

TensorFlow's XLA compiler says which result updates which parameter
(`mhlo.input_output_alias`, read by tfpgo.mlir.compiled_step), but IREE's
StableHLO input ignores that attribute: every call then allocates a new buffer
for each written variable and its optimizer slots (17 MB for the mlp's
1024x4096 kernel) and the old one is freed. IREE's own tie is the argument
attribute `iree.abi.output = <result index>`: the program writes that result
into the argument's buffer, ordering the reads of the old value before the
write, and returns a view of the same buffer. A caller that passes the result
back as the next call's argument (`tfpgo.runtime.Step`) then keeps one buffer
per variable for the step's life.

IREE copies a host array into a buffer of its own before a call, so a numpy
array given as a tied argument is never written.
"""

from __future__ import annotations

from typing import Any

from tfpgo.errors import UserError

ATTRIBUTE = "iree.abi.output"


def tie_updates(stablehlo: str, updates: tuple[int, ...], first_update: int) -> str:
    """`stablehlo` (a module with a `main`) with each parameter `updates[i]` tied
    to result `first_update + i`, the result that writes it; printed with its
    locations."""
    if not updates:
        return stablehlo
    from iree.compiler import ir

    with ir.Context() as context:
        context.allow_unregistered_dialects = True
        module = ir.Module.parse(stablehlo)
        main = _main(module)
        arguments = len(main.regions[0].blocks[0].arguments)
        old = main.attributes.get("arg_attrs", None)
        tied = {parameter: first_update + i for i, parameter in enumerate(updates)}
        attributes = []
        for index in range(arguments):
            entries = {} if old is None else _entries(ir.DictAttr(old[index]))
            if index in tied:
                entries[ATTRIBUTE] = ir.IntegerAttr.get(ir.IndexType.get(), tied[index])
            attributes.append(ir.DictAttr.get(entries))
        main.attributes["arg_attrs"] = ir.ArrayAttr.get(attributes)
        return str(module.operation.get_asm(enable_debug_info=True))


def _main(module: Any) -> Any:
    from iree.compiler import ir

    for op in module.body.operations:
        if op.operation.name == "func.func" and ir.StringAttr(op.attributes["sym_name"]).value == (
            "main"
        ):
            return op
    raise UserError("cannot lower the step: XLA's StableHLO has no main function")


def _entries(attributes: Any) -> dict[str, Any]:
    """A DictAttr's entries by name."""
    return {named.name: named.attr for named in attributes}
