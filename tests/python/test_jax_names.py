"""JAX's nested-jit names composed as XLA composes them (tfpgo.mlir.jax_names)."""

from pathlib import Path

from tfpgo.mlir.jax_names import qualify_call_names

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "gpu" / "jax_gpu_mlp.stablehlo.mlir"

MODULE = """\
#loc1 = loc("x")
module @jit_step {
  func.func public @main(%arg0: tensor<4xf32> loc("x")) -> tensor<4xf32> {
    %0 = call @relu(%arg0) : (tensor<4xf32>) -> tensor<4xf32> loc(#loc3)
    %1 = call @twice(%0) : (tensor<4xf32>) -> tensor<4xf32> loc(#loc4)
    %2 = call @twice(%1) : (tensor<4xf32>) -> tensor<4xf32> loc(#loc4)
    return %2 : tensor<4xf32> loc(#loc)
  } loc(#loc)
  func.func private @relu(%arg0: tensor<4xf32> loc(unknown)) -> tensor<4xf32> {
    %0 = call @inner(%arg0) : (tensor<4xf32>) -> tensor<4xf32> loc(#loc5)
    %1 = stablehlo.maximum %arg0, %0 : tensor<4xf32> loc(#loc2)
    return %1 : tensor<4xf32> loc(#loc)
  } loc(#loc)
  func.func private @inner(%arg0: tensor<4xf32> loc(unknown)) -> tensor<4xf32> {
    %0 = stablehlo.negate %arg0 : tensor<4xf32> loc(#loc6)
    return %0 : tensor<4xf32> loc(#loc)
  } loc(#loc)
  func.func private @twice(%arg0: tensor<4xf32> loc(unknown)) -> tensor<4xf32> {
    %0 = stablehlo.add %arg0, %arg0 : tensor<4xf32> loc(#loc7)
    return %0 : tensor<4xf32> loc(#loc)
  } loc(#loc)
} loc(#loc)
#loc = loc(unknown)
#loc2 = loc("max"(#loc1))
#loc3 = loc("jit(step)/jvp(dense)/jit(relu)"(#loc1))
#loc4 = loc("jit(step)/jit(twice)")
#loc5 = loc("jit(inner)")
#loc6 = loc("neg")
#loc7 = loc("add")
"""


def test_a_singly_called_function_gets_its_call_path_nested_calls_compose():
    result = qualify_call_names(MODULE)
    assert result.qualified == ("inner", "relu")
    assert result.ambiguous == ("twice",)  # two call sites: no single path
    text = result.text
    assert 'loc("jit(step)/jvp(dense)/jit(relu)/max"(#loc1))' in text  # the child kept
    assert 'loc("jit(step)/jvp(dense)/jit(relu)/jit(inner)/neg")' in text
    assert "stablehlo.maximum %arg0, %0 : tensor<4xf32> loc(#tfpgo_qualified" in text
    assert "stablehlo.add %arg0, %arg0 : tensor<4xf32> loc(#loc7)" in text  # untouched


def test_the_real_modules_nested_jits_take_the_names_xla_profiles():
    result = qualify_call_names(FIXTURE.read_text())
    assert "relu" in result.qualified and not result.ambiguous
    assert 'loc("jit(step)/jvp(dense_1)/jit(relu)/max")' in result.text
