"""--lower: the profile at StableHLO and linalg, on real small models, and the
records carried in locations through TensorFlow's own passes."""

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tfpgo.attribution.op_profile import OpProfile
from tfpgo.errors import UserError
from tfpgo.flow.conservation import check_output
from tfpgo.flow.lost_levels import lost_by_level
from tfpgo.flow.stages import FlowOptions, run_flow
from tfpgo.iree.profile_document import IreeProfile
from tfpgo.mlir import annotate, conv_gradient_forms, lowering, routes
from tfpgo.mlir.iree_loops import COUNTED
from tfpgo.mlir.lost_ops import Loss
from tfpgo.render.metrics import format_ps
from tfpgo.report.rewrite_tables import loop_rows

MODELS = Path(__file__).resolve().parents[1] / "data" / "models"
# What a lowering loses by design (tfpgo.mlir.lost_ops): variables become the
# program's parameters and results, lists the loop's buffers.
BY_DESIGN = (Loss.VARIABLE, Loss.DECOMPOSED)


def _folded(level: lowering.LevelCoverage) -> set[str]:
    """The op types a level lost for no reason of design (folded, merged, unknown).

    What a lowering reaches is what it decided, whatever the profiled run's times:
    the tests assert these sets, not a share of measured time (a slow variable read
    once moved 40% of a profile out of reach)."""
    return {source.op for source in level.lost if source.kind not in BY_DESIGN}


def _lowered_flow(tmp_path: Path, model: str, mode: str = "infer", **options: Any):
    return run_flow(
        FlowOptions(
            model=str(MODELS / model) if model.endswith(".py") else model,
            mode=mode,
            steps=3,
            warmup=1,
            batch_size=4,
            output_dir=tmp_path / "out",
            formats=("svg",),
            lower=lowering.LEVELS,
            **options,
        )
    )


def test_the_profile_reaches_stablehlo_and_linalg(tmp_path):
    result = _lowered_flow(tmp_path, "small_convnet.py")
    assert [level.level for level in result.levels] == ["stablehlo", "linalg"]
    for level in result.levels:
        assert level.lost == (), (level.level, level.lost)  # every measured op reached
        assert level.annotated_ops > level.sources > 0
        # Summed once per source, never once per op: no level exceeds the profile.
        assert level.source_self_ps <= level.profile_self_ps
    out = result.output_dir
    linalg = (out / "model.linalg.mlir").read_text()
    assert '"linalg.generic"' in linalg and "fanout = " in linalg
    assert 'source = "convnet_1/conv_1/Relu"' in linalg
    for name in ("model.stablehlo.mlir", "op_graph.stablehlo.svg", "op_graph.linalg.json"):
        assert (out / name).is_file(), name
    report = (out / "report.md").read_text()
    assert "## The profile at lower levels" in report


def test_a_model_that_cannot_be_lowered_is_one_line_and_leaves_nothing(tmp_path):
    with pytest.raises(UserError) as failure:
        _lowered_flow(tmp_path, "no_stablehlo.py")
    assert str(failure.value) == (
        "cannot lower to StableHLO: tf.AsString (node 'AsString') (and 1 more) has no StableHLO "
        "lowering in TensorFlow's tf-stablehlo, and its XLA bridge passes stopped too "
        "(tf.AsString (node 'AsString') (and 1 more) has no StableHLO lowering), and "
        "TensorFlow's XLA compiler refuses it (it has no XLA kernel for AsString), so the "
        "profile stops at the tf level (run without --lower)"
    )
    assert "\n" not in str(failure.value)
    assert not (tmp_path / "out").exists()
    assert list(tmp_path.iterdir()) == []


def test_a_loop_over_tensor_lists_is_lowered_by_the_xla_bridge_route(tmp_path, capsys):
    """tf-stablehlo alone cannot lower a TensorArray loop; TensorFlow's XLA bridge
    passes can: the run, the report and each level say which route and why, IREE
    runs the program with TensorFlow's outputs, and the loop's profile reaches
    every level."""
    result = _lowered_flow(tmp_path, "tensor_array_loop.py", unroll_ops=0)  # kept a loop
    taken = {level.level: level.route for level in result.levels}
    assert set(taken) == {"stablehlo", "linalg"}
    for route in taken.values():
        assert route.name == routes.BRIDGE_ROUTE
        assert route.why.startswith("tf.TensorList") and "has no StableHLO lowering" in route.why
    # Every tf op reaches StableHLO but the stack of the list's states, which the
    # decomposition made the loop's buffer itself: listed, with that reason.
    stablehlo_level, linalg_level = result.levels
    (stack,) = stablehlo_level.lost
    assert stack.op == "tf.TensorListStack" and stack.kind is Loss.DECOMPOSED
    assert stack.reason == (
        "eliminated by TensorFlow's tf-tensor-list-ops-decomposition (the XLA bridge route): "
        "the list is the buffer its loop carries"
    )
    assert stablehlo_level.source_self_ps + stack.self_ps == stablehlo_level.profile_self_ps
    # IREE turns the loop into an scf.for: its counter's increment and its compare
    # become the loop's step and bound, and the scf.for carries their records;
    # the body's ops keep their own. Linalg reaches what StableHLO reaches.
    assert [s.name for s in linalg_level.lost] == [stack.name]
    assert linalg_level.source_self_ps == stablehlo_level.source_self_ps
    graph = json.loads((result.output_dir / "op_graph.linalg.json").read_text())
    (loop,) = [node for node in graph["nodes"] if node["op"] == "scf.for"]
    record = loop["profiler_data"]
    assert {record["source"], *record["fused_sources"]} == {"while/Less", "while/add_1"}
    matmul = next(node for node in graph["nodes"] if node["op"] == "linalg.matmul")
    assert matmul["profiler_data"]["source"] == "while/MatMul" and matmul["parent"] == loop["id"]
    # //tools:lost_ops reads the same rows from the output's own files.
    rows = lost_by_level(result.output_dir)
    assert [(level, s.name, s.kind, s.reason) for level, s in rows] == [
        ("stablehlo", stack.name, stack.kind, stack.reason),
        ("linalg", stack.name, stack.kind, stack.reason),
    ]
    out = result.output_dir
    stablehlo = (out / "model.stablehlo.mlir").read_text()
    assert '"stablehlo.while"' in stablehlo and "tf." not in stablehlo.split("loc(")[0]
    err = capsys.readouterr().err
    assert "stablehlo: lowered by TensorFlow's XLA bridge passes, since tf.TensorList" in err
    assert "outputs within" in err
    report = (out / "report.md").read_text()
    assert "| TensorFlow's XLA bridge passes, since tf.TensorList" in report
    assert all(level_sum.holds for level_sum in check_output(out))


def test_a_loop_of_known_trips_is_unrolled_and_its_profile_split_over_the_copies(tmp_path, capsys):
    """Issue 60: the same loop, unrolled by default (6 trips of a small body): no
    loop reaches IREE, each body op's record is carried by its 6 copies and its
    time split over them, the loop's condition rides on the copies, and every
    level still sums to the profile."""
    result = _lowered_flow(tmp_path, "tensor_array_loop.py")
    stablehlo_level, linalg_level = result.levels
    assert stablehlo_level.route.unrolled_loops == 1
    assert [s.name for s in linalg_level.lost] == [s.name for s in stablehlo_level.lost]
    assert linalg_level.source_self_ps == stablehlo_level.source_self_ps
    out = result.output_dir
    assert '"stablehlo.while"' not in (out / "model.stablehlo.mlir").read_text()
    graph = json.loads((out / "op_graph.stablehlo.json").read_text())
    matmuls = [
        node["profiler_data"]
        for node in graph["nodes"]
        if node["op"] == "stablehlo.dot_general" or node["op"] == "stablehlo.dot"
    ]
    assert len(matmuls) == 6 and {m["source"] for m in matmuls} == {"while/MatMul"}
    assert {m["fanout"] for m in matmuls} == {6}
    assert (
        sum(m["self"] - sum(m.get("fused_parts", ())) for m in matmuls) == matmuls[0]["source_self"]
    )
    fused = {name for m in matmuls for name in m.get("fused_sources", ())}
    assert {"while/Less"} <= fused, fused
    assert all(level_sum.holds for level_sum in check_output(out))
    err = capsys.readouterr().err
    assert "1 loop of known trips unrolled (no trip waits on the host)" in err
    assert "100.00% of their time on tf ops" in err


def test_a_keras_rnn_runs_under_iree_with_its_unread_loop_result_forwarded(tmp_path, capsys):
    """The built-in rnn (a GRU) lowers by the bridge route; its loop carries the
    last output, which it never reads and IREE 3.13 crashes on
    (tfpgo.mlir.iree_loops): taken from the state, IREE runs it with TensorFlow's
    outputs and every dispatch's time lands on tf ops."""
    result = run_flow(
        FlowOptions(
            model="rnn", steps=2, warmup=1, batch_size=4, output_dir=tmp_path / "out",
            formats=("svg",), lower=lowering.LEVELS, unroll_ops=0,  # the loop kept a loop
        )
    )  # fmt: skip
    assert {level.route.forwarded_results for level in result.levels} == {1}
    # The GRU runs 32 time steps: the trip count measured from TensorFlow's counts
    # at StableHLO, and from IREE's own invocations of the body's dispatches. Its
    # condition made one counted bound, IREE runs it as an scf.for, whose trips are
    # in its bounds (tfpgo.mlir.iree_loops).
    loops = [(loop.op, loop.name, loop.trip_count) for lvl in result.levels for loop in lvl.loops]
    assert loops == [("stablehlo.while", "rnn_1/gru_1/while", 32.0)]
    assert {level.route.counted_loops for level in result.levels} == {1}
    linalg = json.loads((result.output_dir / "op_graph.linalg.json").read_text())
    (counted,) = [node for node in linalg["nodes"] if node["op"] == "scf.for"]
    record = counted["profiler_data"]
    control = {record["source"], *record.get("fused_sources", ())}
    assert {"rnn_1/gru_1/while/Less", "rnn_1/gru_1/while/Less_1"} <= control, control
    profile = IreeProfile.read(result.output_dir / "iree_profile.json")
    cell = "rnn_1/gru_1/while/gru_cell_1/"  # the loop body's GRU cell
    body = [s for d in profile.dispatches for s in d.sites if s.sources[0].startswith(cell)]
    assert body and {site.invocations for site in body} == {32}
    assert all(site.tf_self_ps > 0 for site in body)  # the body's own TensorFlow time
    err = capsys.readouterr().err
    assert "; 1 loop result the loop never reads taken from the state reshaped" in err
    assert "stablehlo.while 'rnn_1/gru_1/while' 32 trips" in err
    assert "100.00% of their time on tf ops, outputs within" in err
    assert "sites in loops, invoked 32 times a run" in err
    report = (result.output_dir / "report.md").read_text()
    assert "| stablehlo | rnn_1/gru_1/while | stablehlo.while | 32 |" in report
    # The loop table: what the lowering did, and the loop's time a trip, which is
    # the time of every tf node under the loop's scope over its 32 trips.
    (decision,) = {loop for level in result.levels for loop in level.route.loops}
    assert (decision.name, decision.trips, decision.action) == ("rnn_1/gru_1/while", 32, COUNTED)
    assert "| rnn_1/gru_1/while | 32 | " in report and "| counted: 32 trips x " in report
    scoped = sum(ps for name, ps in profile.op_ps.items() if name.startswith("rnn_1/gru_1/while"))
    assert scoped > 0 and {"rnn_1/gru_1/while/Less", f"{cell}MatMul"} <= set(decision.names)
    ((*_, iree_a_trip, _, _),) = loop_rows((decision,), (), OpProfile.read(
        result.output_dir / "op_profile.json"), 2, profile)  # fmt: skip
    assert iree_a_trip == format_ps(round(scoped / profile.runs / 32))
    picture = (result.output_dir / "op_graph.stablehlo.svg").read_text()
    assert "stablehlo.while rnn_1/gru_1/while, 32 trips" in picture
    # Each loop-body op charged once at every level (its inlined location kept a
    # copy of the record on the ops of a linalg.generic's body: 1.35x at linalg).
    assert all(level_sum.holds for level_sum in check_output(result.output_dir))
    assert (result.output_dir / "model.iree.vmfb").is_file()


def test_a_step_neither_pass_pipeline_lowers_is_taken_as_xla_compiles_it(tmp_path, capsys):
    """tf.ResizeBilinear has no StableHLO lowering on either of TensorFlow's pass
    routes; XLA compiles it: the step lowers as jit_compile compiles it, named so,
    with every op's time reachable and IREE's outputs TensorFlow's."""
    result = _lowered_flow(tmp_path, "resize_step.py")
    for level in result.levels:
        assert level.route.name == routes.COMPILED_ROUTE
        assert level.route.why == (
            "tf.ResizeBilinear (node 'resize/ResizeBilinear') has no StableHLO lowering on "
            "either route before it"
        )
        assert level.lost == (), (level.level, level.lost)  # every measured op reached
    err = capsys.readouterr().err
    assert "100.00% of their time on tf ops, outputs within" in err


def test_the_issues_two_layer_lstm_lowers_by_the_bridge_route_and_runs_under_iree(tmp_path, capsys):
    """Embedding -> LSTM(sequences) -> LSTM -> Dense: both loops lower by the XLA
    bridge route, the last layer's unread output is forwarded, IREE matches
    TensorFlow, and each loop's 8 steps are measured at StableHLO and linalg."""
    result = _lowered_flow(tmp_path, "lstm_text.py", unroll_ops=0)  # the loops kept loops
    for level in result.levels:
        assert level.route.name == routes.BRIDGE_ROUTE and level.route.forwarded_results == 1
        assert level.route.counted_loops == 2
    # Measured at StableHLO; at linalg each is an scf.for, its trips in its bounds.
    assert [loop.trip_count for loop in result.levels[0].loops] == [8.0, 8.0]
    err = capsys.readouterr().err
    assert "100.00% of their time on tf ops, outputs within" in err
    assert "invoked 8 times a run" in err
    assert all(level_sum.holds for level_sum in check_output(result.output_dir))


def test_a_training_step_runs_under_iree_with_its_variables_as_parameters(tmp_path, capsys):
    """A training step lowers as TensorFlow's XLA compiler lowers it: IREE runs it
    from the variables' values and matches TensorFlow's loss and every updated
    variable (tfpgo.mlir.compiled_step); the profile reaches every level by the
    node names in XLA's locations."""
    result = _lowered_flow(tmp_path, "small_convnet.py", mode="train")
    for level in result.levels:
        assert level.route.name == routes.COMPILED_ROUTE
        # Only the variables' reads and writes are lost (they are the program's
        # parameters and results), each with that reason; every other op is reached.
        assert {source.op for source in level.lost} == {"tf.ReadVariableOp", "tf.AssignVariableOp"}
        assert {source.kind for source in level.lost} == {Loss.VARIABLE}
        assert all(source.reason.startswith("a variable ") for source in level.lost)
        lost_ps = sum(source.self_ps for source in level.lost)
        assert level.source_self_ps + lost_ps == level.profile_self_ps
    err = capsys.readouterr().err
    assert "stablehlo: lowered by TensorFlow's XLA compiler (jit_compile's StableHLO)" in err
    assert "100.00% of their time on tf ops, outputs within" in err
    linalg = (result.output_dir / "model.linalg.mlir").read_text()
    assert 'source = "gradient_tape/convnet_1/conv_1/convolution/Conv2DBackpropFilter"' in linalg
    # Its filter gradient took the form timed fastest alone; the route line and
    # the report say which, the report with each form's time.
    took = re.search(r"; 1 convolution gradient as 1 (.+?)(;|\n)", err)
    assert took is not None and took[1] in conv_gradient_forms.FORMS, err
    report = (result.output_dir / "report.md").read_text()
    row = "| gradient_tape/convnet_1/conv_1/convolution/Conv2DBackpropFilter | <4x16x16x3xf32> x "
    assert row in report and f"| {took[1]}; alone batched matmul of patches " in report


def test_tune_gets_a_compiled_steps_program_with_each_ops_records(tmp_path, monkeypatch):
    """A step XLA's compiler made names its ops only; the program --tune starts
    from carries each op's records as profiler_data, attached by name as the
    levels are, so its profile-guided rewrites can decide (the convolution's
    filter gradient among them). Its weights are kept: --tune compiles it."""
    from tfpgo.tune import loop

    handed: list[str] = []

    def capture(stablehlo: Path, *args, **kwargs) -> None:
        handed.append(stablehlo.read_text())

    monkeypatch.setattr(loop, "tune", capture)
    _lowered_flow(tmp_path, "small_convnet.py", mode="train", tune_budget_s=1.0)
    (text,) = handed
    # The filter gradient is a batched matmul now (tfpgo.mlir.conv_gradients),
    # carrying the gradient's records.
    gradient = re.search(r'"stablehlo.dot_general".*Conv2DBackpropFilter.*', text)
    assert gradient is not None and "profiler_data = {" in gradient[0]
    assert "dense_resource" in text or "dense<" in text  # weights, not elided
    assert "__elided__" not in text


def test_a_recurrent_training_step_runs_under_iree(tmp_path, capsys):
    """The built-in rnn's training step: a GRU loop and its gradient loop, which
    carries a value IREE 3.13 folds out of its results (tfpgo.mlir.iree_loops);
    the loop bodies' records found through the tf level's names for them."""
    result = _lowered_flow(tmp_path, "rnn", mode="train")
    for level in result.levels:
        assert level.route.forwarded_results == 1 and level.route.barriers == 1
        # Besides variables and lists, the gradient loop's variable shapes are folded
        # into constants: every op that computes is reached. (The last output's
        # list write and read, reshapes IREE folds away, are fused into the
        # matmul that reads the state: tfpgo.mlir.merged_work.)
        assert _folded(level) == {"tf.VariableShape"}, (level.level, level.lost)
        assert {s.kind for s in level.lost if s.op == "tf.VariableShape"} == {Loss.FOLDED}
    err = capsys.readouterr().err
    assert "; 1 loop-invariant carried value kept through an optimization barrier" in err
    assert "100.00% of their time on tf ops, outputs within" in err


def test_a_gelu_gradients_recomputed_exp_is_merged_into_the_forward_op_not_lost(tmp_path, capsys):
    """A GELU + LayerNorm + AdamW training step: IREE's CSE merges the
    gradient's exp(-x²) into the forward Erfc's. The op that stays carries both
    records, so linalg reaches what StableHLO reaches, IREE's op graph holds all
    its dispatch time, and every file conserves time."""
    result = _lowered_flow(tmp_path, "gelu_adamw_step.py", mode="train")
    stablehlo_level, linalg_level = result.levels
    assert linalg_level.source_self_ps == stablehlo_level.source_self_ps
    assert {s.name for s in linalg_level.lost} == {s.name for s in stablehlo_level.lost}
    assert {s.kind for s in linalg_level.lost} <= {Loss.VARIABLE, Loss.FOLDED}
    graph = json.loads((result.output_dir / "op_graph.linalg.json").read_text())
    merged = [
        node["profiler_data"]
        for node in graph["nodes"]
        if "Gelu/Exp" in str((node["profiler_data"] or {}).get("fused_sources"))
    ]
    assert merged and all("Gelu/Erfc" in record["source"] for record in merged)
    iree_graph = json.loads((result.output_dir / "op_graph.iree.json").read_text())
    assert iree_graph.get("unplaced", []) == []
    assert all(level_sum.holds for level_sum in check_output(result.output_dir))
    assert "ops CSE merged" in capsys.readouterr().err


def test_a_training_step_xla_refuses_as_traced_is_traced_again_under_jit_compile(tmp_path, capsys):
    """A Keras GRU's training step: XLA refuses the profiled trace (its loop
    gradient sizes TensorLists at run time), so the step is traced again under
    jit_compile; the profile's names match up to uniquified scopes, both loops
    (forward and gradient: 10 trips each, known when compiling) are unrolled,
    and IREE matches TensorFlow."""
    result = _lowered_flow(tmp_path, "gru_text.py", mode="train")
    stablehlo = result.levels[0]
    assert "traced again under jit_compile" in stablehlo.route.why
    assert stablehlo.route.unrolled_loops == 2 and stablehlo.loops == ()
    # Lost: variables, lists, and the shapes the gradient loop asks of variables
    # and lists (folded: known when compiling); every op that computes is reached,
    # however the profiled run's time fell.
    shapes = {"tf.VariableShape", "tf.TensorListLength", "tf.TensorListElementShape"}
    assert _folded(stablehlo) <= shapes and "tf.VariableShape" in _folded(stablehlo)
    assert all(s.kind is Loss.FOLDED for s in stablehlo.lost if s.op in shapes)
    # The optimizer's scope is `sgd_1` in the profile and `sgd` in the new trace
    # (`sgd_2_1` in the profile after this file's other training steps): its
    # updates, scattered into the embedding or not, are reached.
    optimizer = [s for s in stablehlo.lost if re.match(r"sgd(_\d+)*/", s.name)]
    assert {s.op for s in optimizer} <= {"tf.ReadVariableOp"}, optimizer
    assert all(level_sum.holds for level_sum in check_output(result.output_dir))
    err = capsys.readouterr().err
    assert "100.00% of their time on tf ops, outputs within" in err


def test_a_step_that_draws_random_numbers_is_profiled_and_not_held_to_tensorflows_outputs(
    tmp_path, capsys
):
    """A random op inside the step lowers to stablehlo.rng_bit_generator, which draws
    other bits than TensorFlow's kernel: as the Proposer's numerics check does, the
    outputs are not held to TensorFlow's, the run and the profile say why, and the
    dispatches are profiled all the same."""
    result = _lowered_flow(tmp_path, "random_in_step.py")
    profile = IreeProfile.read(result.output_dir / "iree_profile.json")
    assert profile.outputs_unchecked == lowering.RANDOM_DRAWS
    assert profile.outputs_max_abs > 1e-3  # they do differ: it is not a lost check
    err = capsys.readouterr().err
    assert "outputs not held to TensorFlow's (max |Δ| " in err
    assert "): the step draws random numbers (stablehlo.rng_bit_generator)" in err
    report = (result.output_dir / "report.md").read_text()
    assert "outputs not held to TensorFlow's" in report


def test_lowering_an_unfrozen_mlir_file_is_refused_with_what_to_do(tmp_path):
    data = Path(__file__).resolve().parents[1] / "data" / "tf2_21" / "dense"
    with pytest.raises(UserError) as failure:
        run_flow(
            FlowOptions(
                from_trace=data / "trace.xplane.pb",
                mlir=data / "module.mlir",
                output_dir=tmp_path / "out",
                lower=("stablehlo",),
            )
        )
    assert str(failure.value) == (
        f"{data / 'module.mlir'}: reads resource variables, which TensorFlow cannot lower; "
        "with --lower, --mlir must be a frozen export (convert_variables_to_constants_v2), "
        "or let pgo profile the model, which freezes it"
    )
    assert not (tmp_path / "out").exists()


def test_lost_ops_refuses_an_output_without_a_compiled_program_in_one_line(tmp_path):
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "lost_ops_tool", Path(__file__).resolve().parents[2] / "tools" / "lost_ops.py"
    )
    assert spec is not None and spec.loader is not None
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    with pytest.raises(UserError) as missing:
        tool.main(["--output-dir", str(tmp_path / "absent")])
    assert str(missing.value) == (
        f"{tmp_path / 'absent'}: no such directory; pass a pgo --lower iree output directory"
    )
    for name in ("op_graph.json", "op_graph.stablehlo.json", "op_graph.linalg.json"):
        (tmp_path / name).write_text("{}")
    with pytest.raises(UserError) as partial:
        tool.main(["--output-dir", str(tmp_path)])
    assert str(partial.value) == (
        f"{tmp_path}: no model.stablehlo.mlirbc; pass the output directory of a pgo run with "
        "--lower iree"
    )


def test_util_functions_become_func_functions():
    generic = (
        '"util.func"() <{function_type = () -> (), sym_name = "main"}> ({\n'
        '  "util.return"() : () -> ()\n}) : () -> ()\n'
        '"util.func"() <{function_type = () -> (), sym_name = "t", tied_operands = [0]}> ({'
    )
    converted = lowering.util_functions_to_func(generic)
    assert converted.startswith('"func.func"() <{function_type = () -> (), sym_name = "main"}>')
    assert '"func.return"() : () -> ()' in converted
    # A property func.func lacks: left alone rather than made invalid.
    assert '"util.func"() <{function_type = () -> (), sym_name = "t", tied_operands' in converted


def test_location_records_survive_tensorflows_passes(tmp_path):
    """Annotated with carry-in-location, a real frozen export keeps its records
    through TensorFlow's tf-standard-pipeline and tf-stablehlo, with the node
    names still where TF's name extraction (and ours) finds them."""
    import tensorflow as tf

    from tfpgo.flow import trace_reader
    from tfpgo.models import load_model, profiling

    case = load_model(str(MODELS / "small_convnet.py"), "infer", 4)
    run = profiling.profile(case, tmp_path / "profile", steps=2, warmup=1)
    trace_reader.run(run.logdir, op_profile_out=tmp_path / "op_profile.json", build_graph=False)
    frozen = tmp_path / "frozen.mlir"
    frozen.write_text(lowering.freeze_and_export(case.concrete_function()))
    carried = tmp_path / "carried.mlir"
    annotate.annotate_module(
        frozen,
        tmp_path / "op_profile.json",
        carried,
        tmp_path / "g.json",
        tmp_path / "a.json",
        carry_in_location=True,
    )
    text = carried.read_text()
    sources = {}
    for pipeline in ("tf-standard-pipeline", routes.TF_TO_STABLEHLO):
        output = tf.mlir.experimental.run_pass_pipeline(text, pipeline, show_debug_info=True)
        assert "fused<{profiler_data = {" in output, pipeline
        assert '"convnet_1/conv_1/Relu"' in output, pipeline
        passed = tmp_path / "passed.mlir"
        if pipeline == routes.TF_TO_STABLEHLO:  # tfpgo-opt reads StableHLO generic
            lowering.write_generic_stablehlo(output, passed)
        else:
            passed.write_text(output)
        summary = tmp_path / "summary.json"
        annotate.run_tfpgo_opt(
            passed,
            tmp_path / "materialized.mlir",
            [f"--tf-profile-materialize-annotations=summary-output={summary}"],
        )
        level = lowering.read_level_coverage(summary, pipeline, passed.name, {}, 1)
        sources[pipeline] = level.sources
    assert sources["tf-standard-pipeline"] > 0 and sources[routes.TF_TO_STABLEHLO] > 0
