"""tfpgo.mlir.tied_state: a training step's written variables updated in their
own buffers, on a real TensorFlow step compiled and run by IREE."""

import numpy as np
import pytest
from iree_main import compiled_main
from sgd_step import sgd_step

from tfpgo.errors import UserError
from tfpgo.mlir import compiled_step, tied_state

ATTRIBUTED = """func.func @main(%x: tensor<2xf32> {test.kept = 7 : i64} loc("x"), %w: tensor<2xf32>)
    -> (tensor<f32>, tensor<2xf32>) {
  %0 = stablehlo.constant dense<0.0> : tensor<f32>
  %1 = stablehlo.add %x, %w : tensor<2xf32> loc("add")
  return %0, %1 : tensor<f32>, tensor<2xf32>
}
"""


def test_a_tie_keeps_the_arguments_attributes_and_the_locations():
    tied = tied_state.tie_updates(ATTRIBUTED, (1,), 1)
    assert "{test.kept = 7 : i64}" in tied  # the other argument's attribute
    assert "%arg1: tensor<2xf32> {iree.abi.output = 1 : index}" in tied
    assert 'loc("add")' in tied and 'loc("x")' in tied
    assert tied_state.tie_updates(ATTRIBUTED, (), 1) == ATTRIBUTED  # nothing written


def _run(step: compiled_step.CompiledStep, text: str, tmp_path, name: str):
    """The program run once from IREE device buffers: its results, and each
    parameter buffer's value after the call."""
    import iree.runtime as rt

    device, main = compiled_main(text, tmp_path, name)
    buffers = [rt.asdevicearray(device, np.asarray(value)) for value in step.inputs]
    results = main(*buffers)
    return [r.to_host() for r in results], [b.to_host() for b in buffers]


def test_the_written_variables_are_updated_in_their_own_buffers(tmp_path):
    function, inputs, _ = sgd_step()
    step = compiled_step.compile_step(function, inputs)
    first = len(step.expected) - len(step.updates)
    tied = tied_state.tie_updates(step.stablehlo, step.updates, first)
    assert tied.count(tied_state.ATTRIBUTE) == len(step.updates) == 2
    for text, name in ((step.stablehlo, "untied"), (tied, "tied")):
        results, after = _run(step, text, tmp_path, name)
        for got, want in zip(results, step.expected, strict=True):
            np.testing.assert_allclose(got, want, rtol=1e-6)
        for parameter, before in enumerate(step.inputs):
            written = step.updates.index(parameter) if parameter in step.updates else None
            if name == "tied" and written is not None:  # the result's storage
                np.testing.assert_allclose(after[parameter], step.expected[first + written])
                assert not np.array_equal(after[parameter], before)
            else:  # read only, or a new buffer for the result
                np.testing.assert_array_equal(after[parameter], before)


def test_a_module_without_main_is_one_line():
    with pytest.raises(UserError, match="no main function"):
        tied_state.tie_updates("func.func @other() { return }", (0,), 0)
