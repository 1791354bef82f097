"""tfpgo.mlir.compiled_step: a training step as TensorFlow's XLA compiler's
StableHLO, and what IREE must reproduce of it (real TensorFlow)."""

import numpy as np
import pytest
from sgd_step import sgd_step

from tfpgo.errors import UserError
from tfpgo.mlir import compiled_step
from tfpgo.mlir.profile_names import by_node_names, with_profile_names


def test_the_program_reads_every_variable_and_writes_the_updated_ones_back():
    function, inputs, (weights, steps, scale) = sgd_step()
    before = weights.numpy().copy()
    step = compiled_step.compile_step(function, inputs)
    assert "stablehlo.dot" in step.stablehlo or "stablehlo.dot_general" in step.stablehlo
    assert "mhlo.copy" not in step.stablehlo  # XLA's copies became identities
    # Parameters: the input, then each captured variable's value before the step.
    captured = {float(np.asarray(value).sum()) for value in step.inputs[1:]}
    assert len(step.inputs) == 4 and captured == {before.sum(), 1.0, 2.0}
    # Results: the loss, then each written variable after one more step, by name.
    assert sorted(step.written) == ["steps:0", "weights:0"]
    after = dict(zip(step.written, step.expected[1:], strict=True))
    np.testing.assert_allclose(after["weights:0"], before - 0.5 * 2.0)
    assert after["steps:0"] == 2
    np.testing.assert_allclose(step.expected[0], before.sum() * 2.0)
    # jit_compile's own run from the same values, per result: how far another
    # compiler's sums land (here exactly: small integers), the model set back after.
    assert len(step.reassociation) == len(step.expected)
    assert all(0 <= difference < 1e-5 for difference in step.reassociation)
    # The model is left as it was before that step.
    np.testing.assert_array_equal(weights.numpy(), before)
    assert steps.numpy() == 1 and scale.numpy() == 2.0


def test_a_program_whose_signature_is_not_the_steps_is_one_line():
    text = (
        'module @m attributes {mhlo.input_output_alias = [{alias = {kind = "may_alias", '
        "parameter_index = array<i64>, parameter_number = 1 : i64}, output_index = "
        "array<i64: 1>}]} {\n  func.func @main(%arg0: tensor<f32>, %arg1: tensor<f32>) -> "
        "(tensor<f32>, tensor<f32>) {\n"
    )
    assert compiled_step._aliased_results(text, 1, 1, 1) == [1]
    with pytest.raises(UserError) as failure:
        compiled_step._aliased_results(text, 1, 2, 1)
    assert str(failure.value) == (
        "cannot lower the step: XLA's program has 2 parameters and 2 results, the "
        "step 1 inputs, 2 captured values and 1 outputs, and 1 results update a parameter"
    )


def test_profile_entries_take_the_name_of_the_one_node_they_landed_on_even_together():
    from tfpgo.attribution.op_profile import Durations, OpProfile, OpStats, Totals

    names = ["w/body/_1/w/add", "w/body/_1/w/mul", "w/body/_2/w/mul", "x"]
    ops = tuple(
        OpStats(name, ("Add",), 1, ps, ps, ps, ps, ps, ps, ps, 0, Durations([ps]))
        for name, ps in zip(names, (5, 7, 11, 13), strict=True)
    )
    profile = OpProfile("t", (), (0,), Totals(36, 36, 36, 0, 4, 4), ops)
    landed_on = {
        "w/body/_1/w/add": ("w/add",),
        # Two entries on one node both take its name: the materialize pass sums
        # them into its record, as the tf level did (lit: TWICE).
        "w/body/_1/w/mul": ("w/mul",),
        "w/body/_2/w/mul": ("w/mul",),
        "x": ("x/a", "x/b"),  # split over two ops: keeps its name
    }
    renamed = by_node_names(profile, landed_on)
    assert [op.name for op in renamed.ops] == ["w/add", "w/mul", "w/mul", "x"]
    assert [op.self_ps for op in renamed.ops] == [op.self_ps for op in profile.ops]


def test_a_second_traces_locations_take_the_profiles_names_up_to_scope_suffixes():
    module = (
        'a = loc("sgd/Mul_3")\nb = loc("sgd/Mul")\nc = loc("net/dense/MatMul")\n'
        'd = loc("opt/Add")\ne = loc("opt_2/Add")\n'
    )
    names = {"sgd_1/Mul_3", "sgd_1/Mul", "net/dense/MatMul", "opt_1/Add"}
    renamed = with_profile_names(module, names)
    # Scopes renamed; a leaf's own `_3` stays; a name two locations would take
    # (opt/Add and opt_2/Add both mean opt_1/Add) goes to neither.
    assert renamed == (
        'a = loc("sgd_1/Mul_3")\nb = loc("sgd_1/Mul")\nc = loc("net/dense/MatMul")\n'
        'd = loc("opt/Add")\ne = loc("opt_2/Add")\n'
    )
    # A scope uniquified twice in the profile (a third optimizer of the process):
    # compared without both suffixes.
    assert with_profile_names('a = loc("sgd_2/Mul")\n', {"sgd_2_1/Mul"}) == (
        'a = loc("sgd_2_1/Mul")\n'
    )
