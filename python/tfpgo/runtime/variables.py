"""Which of the user's variables each variable the program carries is.

A source of variables is the `tf.function` itself (the variables it captures,
optimizer slots included), a Keras model (its variables, and its optimizer's if
it has one), or a list of variables (`tf.Variable` or Keras). They are matched
to the manifest by name: a Keras variable's `path`, a `tf.Variable`'s name
without its `:0` (the name the manifest records: `sequential/dense/kernel`),
with the same shape and dtype. Names that two carried variables share are
matched by the order the `tf.function` captures them, which only the function
itself can give.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from tfpgo.errors import UserError
from tfpgo.models.case import uniquifier_numbers, unscoped
from tfpgo.runtime.manifest import ProgramManifest, Role
from tfpgo.runtime.structure import unflatten


def variable_name(variable: Any) -> str:
    """The name the manifest records for a variable."""
    path = getattr(variable, "path", None)
    return bare_name(path if isinstance(path, str) else str(variable.name))


def bare_name(name: str) -> str:
    """A `tf.Variable`'s name as `model.variables` spells it (no `:0`)."""
    return name[:-2] if name.endswith(":0") else name


def match(manifest: ProgramManifest, source: Any) -> dict[int, Any]:
    """Per carried parameter's position, the variable of `source` it is; one
    UserError line where `source` is none of the three kinds, a variable of a
    list is none the step carries, or one differs in shape or dtype."""
    if hasattr(source, "get_concrete_function"):
        captured = _captured(manifest, source)
        try:
            return _by_capture(manifest, captured)
        except UserError:  # traced again in another order (jit_compile's retrace)
            matched = _by_structure(manifest, [v for v in captured if v is not None])
            if matched is not None:
                return matched
            raise
    if hasattr(source, "variables") and not isinstance(source, (list, tuple)):
        found = list(source.variables)
        optimizer = getattr(source, "optimizer", None)
        found += list(getattr(optimizer, "variables", None) or [])
        return _by_name(manifest, found, every_one=False)
    if isinstance(source, (list, tuple)) and all(hasattr(v, "assign") for v in source):
        return _by_name(manifest, list(source), every_one=True)
    raise UserError(
        f"variables: a {type(source).__name__} is none of a tf.function, a Keras model or a "
        "list of variables"
    )


def _by_name(manifest: ProgramManifest, found: list[Any], every_one: bool) -> dict[int, Any]:
    carried = {p.name: p for p in manifest.variables()}
    shared = _shared_names(manifest)
    # A second model built in one process renames what Keras names for it
    # (`adam` is `adam_1`): such a name is matched where only one fits.
    loose = Counter(unscoped(name) for name in carried)
    by_loose = {unscoped(name): p for name, p in carried.items() if loose[unscoped(name)] == 1}
    given = Counter(unscoped(variable_name(v)) for v in found)
    matched: dict[int, Any] = {}
    for variable in found:
        name = variable_name(variable)
        if name not in carried and given[unscoped(name)] == 1:
            name = getattr(by_loose.get(unscoped(name)), "name", name)
        if name in shared:
            raise UserError(
                f"variables: {name} names {shared[name]} variables of the step; pass the "
                "tf.function itself, which tells them apart"
            )
        parameter = carried.get(name)
        if parameter is None:
            if every_one:
                raise UserError(
                    f"variables: {name} is no variable the step carries "
                    f"({len(carried)} variables, program.json lists them)"
                )
            continue
        _check(parameter, variable)
        matched[parameter.index] = variable
    if not matched and carried:
        raise UserError(
            f"variables: none of the {len(found)} given variables is one the step carries "
            f"(it carries {', '.join(list(carried)[:3])}, ...)"
        )
    return matched


def _shared_names(manifest: ProgramManifest) -> dict[str, int]:
    """The names more than one carried variable has, with how many have each."""
    counts = Counter(p.name for p in manifest.variables())
    return {name: n for name, n in counts.items() if n > 1}


def _captured(manifest: ProgramManifest, function: Any) -> list[Any]:
    """What the `tf.function` captures, traced for the manifest's argument
    specs (the trace that was profiled, from TensorFlow's cache)."""
    import tensorflow as tf

    inputs = {p.index: p for p in manifest.parameters if p.role is Role.INPUT}

    def spec(index: int) -> Any:
        return tf.TensorSpec(inputs[index].shape, inputs[index].dtype)

    trees = manifest.signature.trees
    args = [unflatten(trees[name], spec) for name in manifest.signature.positional]
    kwargs = {name: unflatten(trees[name], spec) for name in manifest.signature.keywords}
    try:
        concrete = function.get_concrete_function(*args, **kwargs)
    except (TypeError, ValueError) as error:
        raise UserError(
            f"variables: this tf.function does not take the step's arguments ({error})"
        ) from None
    by_handle = {id(variable.handle): variable for variable in concrete.variables}
    return [by_handle.get(id(handle)) for handle in concrete.captured_inputs]


def _by_capture(manifest: ProgramManifest, captured: list[Any]) -> dict[int, Any]:
    """The function's captured values in the program's order (its parameters
    after the inputs); names checked, so that another function is refused."""
    carried = [p for p in manifest.parameters if p.role is not Role.INPUT]
    if len(carried) != len(captured):
        raise UserError(
            f"variables: this tf.function captures {len(captured)} values, the step "
            f"{len(carried)}; pass the function that was profiled"
        )
    matched = {}
    for parameter, variable in zip(carried, captured, strict=True):
        if parameter.role is not Role.VARIABLE:
            continue
        if variable is None or unscoped(variable_name(variable)) != unscoped(parameter.name):
            got = "a constant" if variable is None else variable_name(variable)
            raise UserError(
                f"variables: the function captures {got} where the step carries "
                f"{parameter.name}; pass the function that was profiled"
            )
        _check(parameter, variable)
        matched[parameter.index] = variable
    return matched


def _by_structure(manifest: ProgramManifest, found: list[Any]) -> dict[int, Any] | None:
    """The carried variables matched to `found` by what no process renumbers:
    the name with every scope as first given (`dense_3/kernel` is
    `dense/kernel`), the shape and the dtype. Variables alike in all three are
    taken in the order the numbers in their names give (Keras numbers what it
    builds in order, in every process); None where the two sets differ."""
    carried: dict[tuple[str, tuple[int, ...], str], list[Any]] = {}
    for parameter in manifest.variables():
        key = (unscoped(parameter.name), parameter.shape, parameter.dtype)
        carried.setdefault(key, []).append(parameter)
    given: dict[tuple[str, tuple[int, ...], str], list[Any]] = {}
    for variable in found:
        dtype = str(getattr(variable.dtype, "name", variable.dtype))
        shape = tuple(int(size) for size in variable.shape)
        given.setdefault((unscoped(variable_name(variable)), shape, dtype), []).append(variable)
    if {key: len(group) for key, group in carried.items()} != {
        key: len(group) for key, group in given.items()
    }:
        return None
    matched = {}
    for key, parameters in carried.items():
        in_order = sorted(parameters, key=lambda parameter: uniquifier_numbers(parameter.name))
        made = sorted(given[key], key=lambda variable: uniquifier_numbers(variable_name(variable)))
        for parameter, variable in zip(in_order, made, strict=True):
            matched[parameter.index] = variable
    return matched


def _check(parameter: Any, variable: Any) -> None:
    dtype = getattr(variable.dtype, "name", variable.dtype)
    shape = tuple(int(size) for size in variable.shape)
    if str(dtype) != parameter.dtype or shape != parameter.shape:
        raise UserError(
            f"variables: {parameter.name} is {dtype} of shape {list(shape)}, the step's "
            f"{parameter.dtype} of shape {list(parameter.shape)}"
        )
