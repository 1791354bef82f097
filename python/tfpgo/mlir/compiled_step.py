"""A training step as TensorFlow's XLA compiler lowers it: the StableHLO that
`jit_compile=True` runs, with the variables as the program's parameters.

A training step reads and writes resource variables, which neither TensorFlow
lowering of a frozen module can express: freezing turns reads into constants
and leaves the writes with nothing to write to. TensorFlow's XLA compiler makes
each captured variable a parameter of the program and each value the step
writes a result aliased to that parameter (`mhlo.input_output_alias`). Its
StableHLO (`get_compiler_ir(..., stage="stablehlo")`, what
`experimental_get_compiler_ir` returns for a `jit_compile` function) is taken
from the very function that was profiled, so its locations name the same tf
nodes the profile does (a retrace would rename scopes: `sgd_1` → `sgd`).

The step is run once more in TensorFlow to know what IREE must reproduce: the
outputs, and each variable the step writes, from the same values. The variables
are then set back to their values before that step.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from tfpgo.errors import UserError
from tfpgo.iree.output_check import largest_difference
from tfpgo.mlir.diagnostics import error_message

# One aliased result of the program: the parameter it updates, the result index.
_ALIAS = re.compile(r"parameter_number = (\d+) : i64\}, output_index = array<i64: (\d+)>")
# TensorFlow's word for ops without an XLA kernel: "... on XLA_CPU_JIT: AsString
# (No registered 'AsString' OpKernel ...), Foo (...)".
_UNSUPPORTED = re.compile(
    r"Detected unsupported operations when trying to compile graph \S+ on \S+: (\w+)"
)
# XLA's `copy` of a value, which StableHLO has no op for: an identity.
_HLO_COPY = re.compile(r"(%[\w#]+) = mhlo\.copy (%[\w#]+) : (tensor<[^>]*>)")
# Any other op of XLA's own dialect (attributes such as `mhlo.sharding` aside).
_HLO_OP = re.compile(r"= (mhlo\.\w+)\b")
_MAIN = re.compile(r"func\.func @main\((?P<args>.*?)\) -> (?P<results>\(.*?\)|tensor<[^>]*>)")


class XlaRefused(UserError):
    """TensorFlow's XLA compiler cannot compile the step (`reason`: its first line)."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"cannot lower the step: TensorFlow's XLA compiler refuses it ({reason})")
        self.reason = reason


@dataclass(frozen=True)
class CompiledStep:
    """The step's StableHLO (locations naming tf nodes) and what to run it on:
    the step's inputs then every captured value before the step (the program's
    parameters), and TensorFlow's outputs then each written variable's value
    after the step (its results)."""

    stablehlo: str
    inputs: tuple[Any, ...]
    expected: tuple[Any, ...]
    written: tuple[str, ...]  # the variables the step writes, in result order
    # Per captured value (the parameters after the inputs): the variable's name,
    # None for a captured constant; per written variable, the parameter it updates.
    carried: tuple[str | None, ...] = ()
    updates: tuple[int, ...] = ()
    # Traced again under jit_compile (XLA refused the profiled trace): its node
    # names may differ from the profile's in uniquified scopes (`sgd_1` → `sgd`).
    retraced: bool = False
    # Per result, max |jit_compile's - TensorFlow's| from the same values: what
    # reordering the float sums does to this step; () where not measured (a step
    # that draws random numbers, which XLA draws with other bits).
    reassociation: tuple[float, ...] = ()


def compile_step(function: Any, inputs: tuple[Any, ...]) -> CompiledStep:
    """`function(*inputs)` (a step that was run, so that TensorFlow knows it: a
    `tf.function` or a ConcreteFunction) as XLA's StableHLO, and the values to
    check IREE's run against. Where XLA refuses the profiled trace (a loop's
    gradient traced outside XLA sizes its TensorLists at run time), the step is
    traced again under `jit_compile`, as XLA would run it (`retraced`)."""
    import numpy as np
    import tensorflow as tf

    concrete = _concrete(function, inputs)
    retraced = False
    try:
        stablehlo = _stablehlo(concrete, inputs)
    except XlaRefused as refused:
        python_function = getattr(function, "python_function", None)
        if python_function is None:
            raise
        concrete = tf.function(python_function, jit_compile=True).get_concrete_function(*inputs)
        try:
            stablehlo = _stablehlo(concrete, inputs)
        except XlaRefused:
            raise refused from None
        retraced = True
    captured = list(concrete.captured_inputs)
    by_handle = {id(variable.handle): variable for variable in concrete.variables}
    variables = [by_handle.get(id(handle)) for handle in captured]
    before = [
        np.asarray(handle) if variable is None else variable.numpy()
        for handle, variable in zip(captured, variables, strict=True)
    ]
    # TensorFlow's own kernels, the profiled step's: what IREE must reproduce.
    outputs = [np.asarray(value) for value in tf.nest.flatten(function(*inputs))]
    results = _aliased_results(stablehlo, len(inputs), len(captured), len(outputs))
    expected = list(outputs)
    written = []
    for parameter in results:
        variable = variables[parameter - len(inputs)]
        if variable is None:
            raise UserError(
                f"cannot lower the step: XLA's program writes its parameter "
                f"{parameter}, which is no variable of the step"
            )
        expected.append(variable.numpy())
        written.append(variable.name)
    _restore(variables, before)  # the model as it was before this step
    reassociation: tuple[float, ...] = ()
    if not draws_random_numbers(stablehlo):
        reassociation = _reassociation(function, inputs, variables, before, results, expected)
    return CompiledStep(
        stablehlo,
        tuple(np.asarray(value) for value in inputs) + tuple(before),
        tuple(expected),
        tuple(written),
        tuple(None if variable is None else variable.name for variable in variables),
        tuple(results),
        retraced,
        reassociation,
    )


def draws_random_numbers(stablehlo: str) -> bool:
    """Whether a StableHLO module draws random numbers (`stablehlo.rng`,
    `rng_bit_generator`), which another compiler draws with other bits."""
    return "stablehlo.rng" in stablehlo


def _restore(variables: list[Any], values: list[Any]) -> None:
    for variable, value in zip(variables, values, strict=True):
        if variable is not None:
            variable.assign(value)


def _reassociation(
    function: Any,
    inputs: tuple[Any, ...],
    variables: list[Any],
    before: list[Any],
    results: list[int],
    expected: list[Any],
) -> tuple[float, ...]:
    """Per result, max |jit_compile's - TensorFlow's| from the same variables (then
    set back); () where the step has no Python function to compile or XLA's run
    fails."""
    import numpy as np
    import tensorflow as tf

    python_function = getattr(function, "python_function", None)
    if python_function is None:
        return ()
    try:
        outputs = tf.nest.flatten(tf.function(python_function, jit_compile=True)(*inputs))
        xla = [np.asarray(value) for value in outputs]
        xla += [variables[parameter - len(inputs)].numpy() for parameter in results]
    except Exception:  # TensorFlow raises assorted errors; the plain tolerance stands
        return ()
    finally:
        _restore(variables, before)
    return tuple(
        largest_difference((got,), (want,)) for got, want in zip(xla, expected, strict=True)
    )


def _concrete(function: Any, inputs: tuple[Any, ...]) -> Any:
    if hasattr(function, "get_concrete_function"):
        return function.get_concrete_function(*inputs)
    return function


def _stablehlo(concrete_function: Any, inputs: tuple[Any, ...]) -> str:
    from tensorflow.python.eager import context
    from tensorflow.python.eager.polymorphic_function import compiler_ir

    try:
        text = str(
            context.context()
            .get_compiler_ir(
                device_name=compiler_ir.maybe_get_device_name(None),
                platform_name=None,
                function_name=concrete_function.name,
                flat_args=list(inputs),
                captured_inputs=list(concrete_function.captured_inputs),
                stage="stablehlo",
            )
            .decode()
        )
    except Exception as error:  # TensorFlow raises assorted errors for what XLA refuses
        raise XlaRefused(xla_refusal(str(error))) from None
    # A copy stays a value of the same type: a reshape to it, which IREE folds away.
    text = _HLO_COPY.sub(r"\1 = stablehlo.reshape \2 : (\3) -> \3", text)
    other = _HLO_OP.search(text)
    if other is not None:
        raise UserError(
            f"cannot lower the step: XLA's StableHLO holds {other[1]}, an op of XLA's "
            "own dialect that IREE does not read"
        )
    return text


def xla_refusal(message: str) -> str:
    """Why TensorFlow's XLA compiler refused a step, from its error text: the op it
    has no kernel for, else the message's first line."""
    unsupported = _UNSUPPORTED.search(message)
    if unsupported is not None:
        return f"it has no XLA kernel for {unsupported[1]}"
    return error_message(message, "unknown error")


def _aliased_results(stablehlo: str, inputs: int, captured: int, outputs: int) -> list[int]:
    """The parameter each result after the step's outputs writes, in result order;
    one UserError line where the program's signature is not the step's."""
    main = _MAIN.search(stablehlo)
    aliases = sorted((int(index), int(parameter)) for parameter, index in _ALIAS.findall(stablehlo))
    if main is None:
        raise UserError("cannot lower the step: XLA's StableHLO has no main function")
    parameters = len(re.findall(r"%arg\d+:", main["args"]))
    results = main["results"].count("tensor<")
    if parameters != inputs + captured or [i for i, _ in aliases] != list(range(outputs, results)):
        raise UserError(
            f"cannot lower the step: XLA's program has {parameters} parameters and "
            f"{results} results, the step {inputs} inputs, {captured} captured values and "
            f"{outputs} outputs, and {len(aliases)} results update a parameter"
        )
    return [parameter for _, parameter in aliases]
