"""tfpgo.mlir.iree_loops: a loop result the loop never reads, taken from the
state it reshapes, only where that is the same value (real IREE parser,
compiler and runtime)."""

import re

import numpy as np

from tfpgo.iree.run import DEVICE, IREE_FLAGS
from tfpgo.iree.tools import run_tool
from tfpgo.mlir.iree_loops import COUNTED, LEFT, UNROLLED, rewrite_loops

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
    forwarded = rewrite_loops(_rnn(), unroll_ops=0)  # the loop kept as a loop
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
    assert rewrite_loops(_rnn(out_init="1.0"), unroll_ops=0).forwarded == 0
    # A value the body reads (an accumulation) is the loop's own.
    accumulated = _rnn(out_next="%acc").replace(
        "%i1 = stablehlo.add %i, %c1",
        "%acc = stablehlo.add %o, %out : tensor<1x2x4xf32>\n    %i1 = stablehlo.add %i, %c1",
    )
    assert rewrite_loops(accumulated, unroll_ops=0).forwarded == 0
    # No loop, no parse: the text comes back as it is.
    assert rewrite_loops("func.func @f() { return }").text == ("func.func @f() { return }")


# TensorFlow's loop: its own counter and the sequence's, both tested.
_COUNTED = """
func.func @main(%x: tensor<6x2x3xf32>, %w: tensor<3x4xf32>) -> tensor<2x4xf32> {
  %a = stablehlo.constant dense<A> : tensor<i32>
  %b = stablehlo.constant dense<B> : tensor<i32>
  %sa = stablehlo.constant dense<SA> : tensor<i32>
  %sb = stablehlo.constant dense<SB> : tensor<i32>
  %na = stablehlo.constant dense<NA> : tensor<i32>
  %nb = BOUND_B
  %h0 = stablehlo.constant dense<0.0> : tensor<2x4xf32>
  %r:3 = stablehlo.while(%i = %a, %t = %b, %h = %h0) : tensor<i32>, tensor<i32>, tensor<2x4xf32>
   cond {
    %p = stablehlo.compare LT, %i, %na : (tensor<i32>, tensor<i32>) -> tensor<i1> loc("while/Less")
    %q = stablehlo.compare LT, %t, %nb : (tensor<i32>, tensor<i32>) -> tensor<i1>
        loc("while/Less_1")
    %both = stablehlo.and %p, %q : tensor<i1> loc("while/LogicalAnd")
    stablehlo.return %both : tensor<i1>
  } do {
    %d = stablehlo.dot %h, %w2 : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
    %s = stablehlo.add %d, %ones : tensor<2x4xf32>
    %y = stablehlo.tanh %s : tensor<2x4xf32>
    %i1 = stablehlo.add %i, %sa : tensor<i32>
    %t1 = stablehlo.add %t, %sb : tensor<i32>
    stablehlo.return %i1, %t1, %y : tensor<i32>, tensor<i32>, tensor<2x4xf32>
  }
  return %r#2 : tensor<2x4xf32>
}
"""


def _counted(a: int, sa: int, na: int, b: int, sb: int, nb: str) -> str:
    # One operand per test program: the loop reads x's first row times w as its
    # fixed input through a 4x4 weight (w2) and a ones bias, made from the arguments.
    prologue = (
        "%w2 = stablehlo.dot_general %w, %w, contracting_dims = [0] x [0] : "
        "(tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<4x4xf32>\n"
        "  %ones = stablehlo.constant dense<1.0> : tensor<2x4xf32>\n  %a ="
    )
    bound = nb if nb.startswith("%") else f"stablehlo.constant dense<{nb}> : tensor<i32>"
    text = _COUNTED.replace("%a =", prologue, 1).replace("BOUND_B", bound)
    for name, value in (("SA", sa), ("SB", sb), ("NA", na), ("A", a), ("B", b)):
        text = text.replace(f"dense<{name}>", f"dense<{value}>")
    return text


def _reference(trips: int, w: np.ndarray) -> np.ndarray:
    h = np.zeros((2, 4), np.float32)
    for _ in range(trips):
        h = np.tanh(h @ (w.T @ w) + 1.0)
    return h


def test_two_counters_become_one_counted_bound_that_iree_runs_without_readback(tmp_path):
    """Issue 60: TensorFlow's `i < max && t < T` as one `compare LT` against the
    trips both allow; the same outputs, an scf.for in IREE's flow form, no scalar
    read back a trip, and the new compare carries the old ops' names."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((6, 2, 3)).astype(np.float32)
    w = (0.3 * rng.standard_normal((3, 4))).astype(np.float32)
    # (start, step, bound) of each counter, and the trips they allow together.
    cases = [
        ((0, 1, 32), (0, 1, 32), 32),
        ((0, 1, 7), (0, 1, 5), 5),
        ((3, 2, 10), (0, 1, 6), 4),
        ((-2, 3, 9), (1, 1, 40), 4),
        ((5, 1, 5), (0, 1, 3), 0),
    ]
    for index, ((a, sa, na), (b, sb, nb), trips) in enumerate(cases):
        original = _counted(a, sa, na, b, sb, str(nb))
        counted = rewrite_loops(original, unroll_ops=0)
        assert (counted.counted, counted.unrolled) == (1, 0), (a, sa, na, b, sb, nb)
        directory = tmp_path / str(index)
        directory.mkdir()
        got = _run(counted.text, directory, x, w)
        np.testing.assert_allclose(got, _reference(trips, w), rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(got, _run(original, directory, x, w))
    flow = tmp_path / "flow.mlir"
    source = tmp_path / "counted.mlir"
    source.write_text(rewrite_loops(_counted(0, 1, 32, 0, 1, "32"), unroll_ops=0).text)
    run_tool("iree-compile", [*IREE_FLAGS, "--compile-to=flow", "--mlir-print-debuginfo",
                              str(source), "-o", str(flow)], "compile", 300)  # fmt: skip
    text = flow.read_text()
    assert "scf.for" in text and "scf.while" not in text and "flow.tensor.load" not in text
    compare = next(line for line in counted.text.splitlines() if "stablehlo.compare" in line)
    (alias,) = re.findall(r"loc\((#loc\d*)\)$", compare)
    fused = re.search(rf"^{alias} = loc\((.*)\)$", counted.text, re.MULTILINE)
    assert fused is not None and fused[1].startswith("fused[")


def test_a_loop_whose_bound_is_not_a_constant_is_left_alone():
    """A bound the step is given (an argument), or a counter stepped down, is not
    rewritten: the trips are not known when compiling."""
    by_argument = (
        _counted(0, 1, 6, 0, 1, "%b")
        .replace("%x: tensor<6x2x3xf32>", "%x: tensor<6x2x3xf32>, %n: tensor<i32>")
        .replace("%nb = %b", "%nb = stablehlo.add %n, %b : tensor<i32>")
    )
    for loop in (by_argument, _counted(6, -1, 10, 0, 1, "6")):
        rewritten = rewrite_loops(loop)
        assert (rewritten.counted, rewritten.unrolled) == (0, 0)
        assert "stablehlo.while" in rewritten.text
        (decision,) = rewritten.loops  # the report's loop table says why
        assert (decision.action, decision.trips) == (LEFT, None)
        assert "no constant" in decision.why and "while/LogicalAnd" in decision.names


def test_a_loop_of_known_trips_is_unrolled_exactly_within_its_budget(tmp_path):
    """Issue 60: a counted loop whose trips times its body's ops fit the budget
    becomes that many copies of its body: the same outputs (none for no trip),
    no loop left, and every copied op carries its own name and the loop
    control's (the condition's records ride on the copies)."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((6, 2, 3)).astype(np.float32)
    w = (0.3 * rng.standard_normal((3, 4))).astype(np.float32)
    for index, (counters, trips) in enumerate(
        [(((0, 1, 5), (0, 1, 7)), 5), (((3, 2, 10), (0, 1, 6)), 4), (((5, 1, 5), (0, 1, 3)), 0)]
    ):
        (a, sa, na), (b, sb, nb) = counters
        original = _counted(a, sa, na, b, sb, str(nb))
        unrolled = rewrite_loops(original)
        assert (unrolled.counted, unrolled.unrolled) == (0, 1)
        (decision,) = unrolled.loops
        assert (decision.action, decision.trips, decision.ops_a_trip) == (UNROLLED, trips, 6)
        assert "stablehlo.while" not in unrolled.text
        assert unrolled.text.count("stablehlo.tanh") == trips
        directory = tmp_path / str(index)
        directory.mkdir()
        got = _run(unrolled.text, directory, x, w)
        np.testing.assert_allclose(got, _reference(trips, w), rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(got, _run(original, directory, x, w))
    text = rewrite_loops(_counted(0, 1, 2, 0, 1, "9")).text
    for line in (line for line in text.splitlines() if "stablehlo.dot " in line):
        (alias,) = re.findall(r"loc\((#loc\d*)\)$", line)
        names = _names(text, alias)
        assert {"while/Less", "while/Less_1", "while/LogicalAnd"} <= names, names
    # A bound XLA defines inside the condition is a constant all the same.
    inside = _counted(0, 1, 5, 0, 1, "7").replace(
        "    %p = stablehlo.compare LT, %i, %na",
        "    %five = stablehlo.constant dense<5> : tensor<i32>\n"
        "    %p = stablehlo.compare LT, %i, %five",
    )
    rewritten = rewrite_loops(inside)
    assert (rewritten.unrolled, rewritten.text.count("stablehlo.tanh")) == (1, 5)
    counted = rewrite_loops(inside, unroll_ops=0)
    assert counted.counted == 1 and "stablehlo.while" in counted.text
    (tmp_path / "inside").mkdir()
    got = _run(counted.text, tmp_path / "inside", x, w)
    np.testing.assert_array_equal(got, _run(inside, tmp_path / "inside", x, w))
    np.testing.assert_allclose(got, _reference(5, w), rtol=1e-5, atol=1e-6)
    # Over the budget (trips times the body's ops), the loop stays a counted loop.
    kept = rewrite_loops(_counted(0, 1, 32, 0, 1, "32"), unroll_ops=32 * 6 - 1)
    assert (kept.counted, kept.unrolled) == (1, 0)
    (decision,) = kept.loops
    assert decision.action == COUNTED and "192 > --unroll-ops 191" in decision.why


def _names(text: str, alias: str) -> set[str]:
    """The quoted names a location alias of a printed module holds, nested aliases included."""
    definitions = dict(re.findall(r"^(#loc\d*) = loc\((.*)\)$", text, re.MULTILINE))
    pending, names = [alias], set()
    while pending:
        body = definitions.get(pending.pop(), "")
        names.update(re.findall(r'"([^"]+)"', body))
        pending.extend(re.findall(r"#loc\d*", body))
    return names
