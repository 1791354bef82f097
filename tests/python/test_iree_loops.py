"""tfpgo.mlir.iree_loops: a loop result the loop never reads, taken from the
state it reshapes, only where that is the same value (real IREE parser,
compiler and runtime)."""

import re

import numpy as np

from tfpgo.iree.run import DEVICE, IREE_FLAGS
from tfpgo.iree.tools import run_tool
from tfpgo.mlir.iree_loops import rewrite_loops

# Keras's last RNN layer as the XLA bridge route lowers it: `%out` is a
# one-element list the loop overwrites with the new state and never reads.
_RNN = """
func.func @main(%x: tensor<6x2x3xf32>, %w: tensor<3x4xf32>) -> tensor<2x4xf32> {
  %c0 = stablehlo.constant dense<0> : tensor<i32>
  %c1 = stablehlo.constant dense<1> : tensor<i32>
  %n = stablehlo.constant dense<6> : tensor<i32>
  %out0 = stablehlo.constant dense<OUT_INIT> : tensor<1x2x4xf32>
  %h0 = stablehlo.constant dense<0.0> : tensor<2x4xf32>
  %r:3 = stablehlo.while(%i = %c0, %out = %out0, %h = %h0)
      : tensor<i32>, tensor<1x2x4xf32>, tensor<2x4xf32>
   cond {
    %p = stablehlo.compare LT, %i, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %p : tensor<i1>
  } do {
    %xi = "stablehlo.torch_index_select"(%x, %i) <{batch_dims = 0 : i64, dim = 0 : i64}>
        : (tensor<6x2x3xf32>, tensor<i32>) -> tensor<2x3xf32>
    %d = stablehlo.dot %xi, %w : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
    %s = stablehlo.add %d, %h : tensor<2x4xf32>
    %t = stablehlo.tanh %s : tensor<2x4xf32> loc("rnn/while/Tanh")
    %o = stablehlo.reshape %t : (tensor<2x4xf32>) -> tensor<1x2x4xf32> loc("rnn/while/SetItem")
    %i1 = stablehlo.add %i, %c1 : tensor<i32>
    stablehlo.return %i1, OUT_NEXT, %t : tensor<i32>, tensor<1x2x4xf32>, tensor<2x4xf32>
  }
  %y = stablehlo.reshape %r#1 : (tensor<1x2x4xf32>) -> tensor<2x4xf32>
  return %y : tensor<2x4xf32>
}
"""


def _rnn(out_init: str = "0.0", out_next: str = "%o") -> str:
    return _RNN.replace("OUT_INIT", out_init).replace("OUT_NEXT", out_next)


def _run(module: str, tmp_path, x, w):
    source = tmp_path / "loop.mlir"
    source.write_text(module)
    vmfb = tmp_path / "loop.vmfb"
    run_tool("iree-compile", [*IREE_FLAGS, str(source), "-o", str(vmfb)], "compile", 300)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "w.npy", w)
    output = tmp_path / "y.npy"
    run = [
        f"--module={vmfb}", f"--device={DEVICE}", "--function=main",
        f"--input=@{tmp_path / 'x.npy'}", f"--input=@{tmp_path / 'w.npy'}", f"--output=@{output}",
    ]  # fmt: skip
    run_tool("iree-run-module", run, "run", 300)
    return np.load(output)


def test_the_unread_result_is_the_states_reshape_and_iree_compiles_it(tmp_path):
    forwarded = rewrite_loops(_rnn())
    assert forwarded.forwarded == 1
    # The result's reshape now reads the state's result, after the loop, and keeps
    # its location (the profile's record rides in it); nothing reads the result.
    (loop,) = re.findall(r"(%\w+):3 = stablehlo.while", forwarded.text)
    (line,) = [line for line in forwarded.text.splitlines() if f"reshape {loop}#2" in line]
    assert f"{loop}#1" not in forwarded.text
    (alias,) = re.findall(r"loc\((#loc\d*)\)$", line)
    assert f'{alias} = loc("rnn/while/SetItem")' in forwarded.text
    rng = np.random.default_rng(0)
    x = rng.standard_normal((6, 2, 3)).astype(np.float32)
    w = rng.standard_normal((3, 4)).astype(np.float32)
    h = np.zeros((2, 4), np.float32)
    for step in x:
        h = np.tanh(step @ w + h)
    np.testing.assert_allclose(_run(forwarded.text, tmp_path, x, w), h, rtol=1e-5, atol=1e-6)


def test_a_result_is_kept_where_forwarding_would_change_it():
    # Another initial value: a loop that runs no step returns 1.0, not the state's 0.0.
    assert rewrite_loops(_rnn(out_init="1.0")).forwarded == 0
    # A value the body reads (an accumulation) is the loop's own.
    accumulated = _rnn(out_next="%acc").replace(
        "%i1 = stablehlo.add %i, %c1",
        "%acc = stablehlo.add %o, %out : tensor<1x2x4xf32>\n    %i1 = stablehlo.add %i, %c1",
    )
    assert rewrite_loops(accumulated).forwarded == 0
    # No loop, no parse: the text comes back as it is.
    assert rewrite_loops("func.func @f() { return }").text == ("func.func @f() { return }")
