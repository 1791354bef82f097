"""`program.json` and `program/` for the program `--lower iree` made.

Written after the lower stage (and `--tune`), from what the flow knows and the
program cannot say: which of the entry's flat parameters are the step's
arguments (and where in them), the variables it carries, the constants it
captured; which results are its outputs (and how they nest) and which update a
variable. The parameters' values in the profiled step go beside it, so that
the step can start from them and `iree-run-module` can run it
(tfpgo.runtime.manifest).
"""

from __future__ import annotations

import inspect
import itertools
import re
from pathlib import Path
from typing import Any

from tfpgo.iree.executable_sources import DISPATCHES_MODULE
from tfpgo.iree.output_check import ATOL, RTOL
from tfpgo.iree.program import PROGRAM_VMFB
from tfpgo.iree.run import DEVICE
from tfpgo.iree.target import read_target
from tfpgo.mlir.compiled_step import CompiledStep
from tfpgo.mlir.lowering import IreeRun
from tfpgo.models import ModelCase
from tfpgo.runtime.manifest import (
    DEFAULT,
    TUNED,
    VALUES,
    ProgramManifest,
    Role,
    Signature,
    Tensor,
    values_path,
)
from tfpgo.runtime.structure import leaf_paths, tree_of
from tfpgo.runtime.variables import bare_name
from tfpgo.tune.document import TUNE_DOCUMENT, TuneDocument
from tfpgo.tune.tuned_output import TUNED_VMFB

_VARARG_ITEM = re.compile(r"(?P<name>\w+)_(?P<index>\d+)$")


def write_program_manifest(
    out: Path, case: ModelCase, step: CompiledStep | None, run: IreeRun, entry: str
) -> ProgramManifest:
    """Writes `out/program.json` and `out/program/parameter_<i>.npy` for the
    program in `out` (`model.iree.vmfb`, `model.tuned.vmfb` if kept), whose
    function `entry` ran on `run`'s values and was checked against its expected
    ones: `step` where XLA's compiler made its StableHLO (parameters: the
    inputs, then the captured values; results: the outputs, then each written
    variable), else the frozen step (parameters: the inputs)."""
    import numpy as np

    concrete = case.concrete_function()
    args, kwargs = concrete.structured_input_signature
    leaves = itertools.count()
    positional = _argument_names(case.function, concrete, len(args))
    trees = {name: tree_of(spec, leaves) for name, spec in zip(positional, args, strict=True)}
    trees.update({name: tree_of(kwargs[name], leaves) for name in sorted(kwargs)})
    values, expected = [np.asarray(value) for value in run.inputs], run.expected
    paths = {i: path for name, tree in trees.items() for i, path in leaf_paths(tree, name).items()}
    parameters = [_tensor(i, Role.INPUT, paths[i], values[i]) for i in range(len(paths))]
    output_tree = tree_of(concrete.structured_outputs, itertools.count())
    outputs = leaf_paths(output_tree, "output")
    results = [_tensor(i, Role.OUTPUT, outputs[i], expected[i]) for i in range(len(outputs))]
    if step is not None:
        updated_by = {parameter: len(outputs) + j for j, parameter in enumerate(step.updates)}
        for j, name in enumerate(step.carried):
            index = len(paths) + j  # the captured values follow the inputs
            role = Role.CAPTURED if name is None else Role.VARIABLE
            label = f"captured {j}" if name is None else bare_name(name)
            parameters.append(_tensor(index, role, label, values[index], updated_by.get(index)))
        for j, parameter in enumerate(step.updates):
            index = len(outputs) + j
            variable = parameters[parameter].name
            results.append(_tensor(index, Role.VARIABLE, variable, expected[index], parameter))
    programs, drivers = {DEFAULT: PROGRAM_VMFB}, {DEFAULT: DEVICE}
    if (out / TUNED_VMFB).is_file():
        tuned = TuneDocument.read(out / TUNE_DOCUMENT).tuned
        programs[TUNED] = TUNED_VMFB
        drivers[TUNED] = DEVICE if tuned is None else tuned.driver
    manifest = ProgramManifest(
        case.mode.value,
        entry,
        Signature(tuple(positional), tuple(sorted(kwargs)), trees),
        output_tree,
        tuple(parameters),
        tuple(results),
        RTOL,
        ATOL,
        read_target(out / DISPATCHES_MODULE),
        programs,
        drivers,
    )
    (out / VALUES).mkdir(exist_ok=True)
    for tensor, value in zip(manifest.parameters, values, strict=True):
        np.save(values_path(out, tensor), value, allow_pickle=False)
    manifest.write(out)
    return manifest


def _tensor(index: int, role: Role, name: str, value: Any, alias: int | None = None) -> Tensor:
    import numpy as np

    array = np.asarray(value)
    return Tensor(index, role, name, tuple(array.shape), array.dtype.name, alias)


def _argument_names(function: Any, concrete: Any, count: int) -> list[str]:
    """The names the step's positional arguments bind to: the Python
    function's own (`x`), a `*args` item as `args[0]`."""
    names = list(concrete.function_type.parameters)[:count]
    python_function = getattr(function, "python_function", None)
    if python_function is None:
        return names
    varargs = [
        p.name
        for p in inspect.signature(python_function).parameters.values()
        if p.kind is inspect.Parameter.VAR_POSITIONAL
    ]
    spelled = []
    for name in names:
        item = _VARARG_ITEM.match(name)
        is_item = item is not None and varargs and item["name"] == varargs[0]
        spelled.append(f"{item['name']}[{item['index']}]" if item and is_item else name)
    return spelled
