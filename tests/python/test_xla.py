"""XLA-compiled steps: HLO events, their split onto TF nodes, op_profile v2,
hlo_profile.json and the annotation of the tf ops (tests/data/xla fixtures: real
jit-compiled Keras steps profiled with TensorFlow 2.21, see make_fixtures.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tfpgo.attribution.hlo_profile import HloProfile, build_hlo_profile
from tfpgo.attribution.op_profile import OpProfile, build_op_profile
from tfpgo.attribution.parts import split_equally
from tfpgo.attribution.xla_attribution import attribute, hlo_events
from tfpgo.errors import UserError
from tfpgo.flow import stages
from tfpgo.mlir import annotate
from tfpgo.trace.readers import read_trace
from tfpgo.trace.readers.hlo_metadata import parse_hlo_proto
from tfpgo.trace.readers.xplane_proto import xplane_pb2

DATA = Path(__file__).resolve().parents[1] / "data" / "xla"
SCENARIOS = ("train_adam", "infer", "mixed")


@pytest.fixture(scope="module")
def tables():
    return {name: read_trace(DATA / name / "trace.xplane.pb") for name in SCENARIOS}


def test_split_equally_sums_exactly():
    assert split_equally(10, 3) == [4, 3, 3]
    assert split_equally(2, 5) == [1, 1, 0, 0, 0]
    assert sum(split_equally(1_234_567, 7)) == 1_234_567


def test_metadata_plane_gives_modules_with_tf_nodes(tables):
    modules = tables["train_adam"].hlo_modules
    assert len(modules) == 1
    [module] = modules.values()
    fusions = [i for i in module.instructions.values() if i.is_fusion]
    assert sum(1 for i in fusions if len(i.nodes) > 1) > len(fusions) / 2
    copies = [i for i in module.instructions.values() if i.opcode == "copy"]
    # XLA's copies have no op_name: they take their nearest named user's nodes
    assert copies and all(i.inferred_by == "nearest_user" and i.nodes for i in copies)
    assert all(module.instructions[i.inferred_from[-1]].nodes == i.nodes for i in copies)
    dots = [i for i in module.instructions.values() if i.opcode == "dot"]
    assert dots and all(len(i.nodes) == 1 and i.nodes[0].op_type == "MatMul" for i in dots)


def test_hlo_events_are_typed(tables):
    table = tables["train_adam"]
    events = hlo_events(table)
    with_stat = [i for i, stats in table.stats.items() if "hlo_op" in stats]
    assert len(events) == len(with_stat) > 0
    [module] = table.hlo_modules
    assert {e.module for e in events} == {module}
    assert {e.program_id for e in events} == {table.hlo_modules[module].program_id}
    assert any(e.is_fusion for e in events) and not all(e.is_fusion for e in events)
    assert all(table.stats[e.index]["hlo_op"] == e.instruction for e in events)


@pytest.mark.parametrize("name", SCENARIOS)
def test_every_hlo_picosecond_is_attributed_or_listed(tables, name):
    xla = attribute(tables[name])
    assert xla.events
    assert xla.attributed_ps + xla.inserted_ps == xla.hlo_ps
    assert xla.attributed_ps >= 0.99 * xla.hlo_ps
    parts_of: dict[int, list[int]] = {}
    for part in xla.parts:
        parts_of.setdefault(part.event.index, []).append(part.ps)
    inserted = {event.index for event in xla.inserted}
    for event in xla.events:
        assert (event.index in inserted) != (event.index in parts_of)
        if event.index in parts_of:
            shares = parts_of[event.index]
            assert sum(shares) == event.duration_ps  # fusion splits sum exactly
            assert max(shares) - min(shares) <= 1  # in equal parts
    assert any(len(p) > 1 for p in parts_of.values())  # fusions covering several nodes


def test_instructions_without_op_name_inherit_their_neighbours_nodes(tables):
    """train_adam: XLA's copies and the CPU tree-reduction rewrite's reduce-window
    fusion (no op_name inside) were 0.48% of HLO time "XLA-inserted"; they now take
    the nodes of their nearest named user, the chain recorded in the origin."""
    profile = build_op_profile(tables["train_adam"])
    assert profile.xla_inserted == () and profile.totals.xla_inserted_ps == 0
    inferred = {
        origin.instruction: origin for op in profile.ops for origin in op.xla if origin.inferred_by
    }
    assert {"copy.2", "copy.3", "copy.4", "wrapped_reduce-window"} <= inferred.keys()
    assert {o.inferred_by for o in inferred.values()} == {"nearest_user"}
    by_name = profile.by_name()
    origins = {o.instruction for o in by_name["sequential_1/logits_1/MatMul"].xla}
    assert "copy.2" in origins  # copy.2 feeds MatMul.10, lowered from that MatMul


def _proto(*instructions: tuple[int, str, str, tuple[int, ...]]) -> bytes:
    """An HloProto of one entry computation: (id, name, op_name, operand ids)."""
    from tfpgo.trace.readers.xplane_proto import hlo_pb2

    proto = hlo_pb2().HloProto()
    module = proto.hlo_module
    module.name, module.id, module.entry_computation_id = "m", 1, 7
    computation = module.computations.add(id=7, name="main")
    for ident, name, op_name, operands in instructions:
        opcode = "parameter" if name.startswith("p") else name.split(".")[0]
        added = computation.instructions.add(id=ident, name=name, opcode=opcode)
        added.operand_ids.extend(operands)
        added.metadata.op_name = op_name
        added.metadata.op_type = "Op" if op_name else ""
    return proto.SerializeToString()


def test_inference_prefers_users_then_operands_and_leaves_the_unnamed_alone():
    module = parse_hlo_proto(
        _proto(
            (1, "p0", "", ()),
            (2, "add.1", "dense/add", (1,)),
            (3, "copy.1", "", (2,)),  # no user: its operand add.1
            (4, "copy.2", "", (1,)),
            (5, "copy.3", "", (4,)),
            (6, "multiply.1", "dense/mul", (5, 2)),  # copy.2 -> copy.3 -> multiply.1
            (8, "p1", "", ()),
            (9, "negate.1", "", (8,)),  # nothing named around it
        ),
        "test",
    )
    found = module.instructions
    assert (found["copy.1"].inferred_by, found["copy.1"].inferred_from) == (
        "nearest_operand",
        ("copy.1", "add.1"),
    )
    assert found["copy.2"].inferred_from == ("copy.2", "copy.3", "multiply.1")
    assert [n.name for n in found["copy.2"].nodes] == ["dense/mul"]
    assert found["negate.1"].nodes == () and not found["negate.1"].inferred_by
    assert found["p0"].nodes == () and not found["p0"].inferred_by  # parameters: never
    assert found["add.1"].inferred_by == ""  # named: its own node


def _raw_trace(path: Path) -> tuple[dict[str, int], dict[str, list]]:
    """Straight from the XSpace, no tfpgo reader: the summed duration of each
    HLO instruction's events (stat `hlo_op`), and each computation's
    instructions of the metadata plane's HloProtos."""
    from tfpgo.trace.readers.xplane_proto import hlo_pb2

    space = xplane_pb2().XSpace()
    space.ParseFromString(path.read_bytes())
    durations: dict[str, int] = {}
    computations: dict[str, list] = {}
    for plane in space.planes:
        stat_names = {key: meta.name for key, meta in plane.stat_metadata.items()}
        for metadata in plane.event_metadata.values():
            for stat in metadata.stats:
                if stat_names[stat.metadata_id] == "Hlo Proto":
                    proto = hlo_pb2().HloProto()
                    proto.ParseFromString(stat.bytes_value)
                    for computation in proto.hlo_module.computations:
                        computations[computation.name] = list(computation.instructions)
        for line in plane.lines:
            for event in line.events:
                for stat in event.stats:
                    if stat_names.get(stat.metadata_id) == "hlo_op":
                        op = stat_names[stat.ref_value]
                        durations[op] = durations.get(op, 0) + event.duration_ps
    return durations, computations


def _unnamed_islands(computations: dict[str, list]) -> set[str]:
    """Instructions that do work (not parameters, constants) with no op_name,
    all of whose transitive users and all of whose transitive operands have none
    either: nothing in their computation's dataflow names a TF node for them."""
    found = set()
    for instructions in computations.values():
        by_id = {i.id: i for i in instructions}
        users: dict[int, list[int]] = {i.id: [] for i in instructions}
        for i in instructions:
            for operand in i.operand_ids:
                users[operand].append(i.id)
        operands = {i.id: list(i.operand_ids) for i in instructions}

        def closure(start: int, edges: dict[int, list[int]]) -> set[int]:
            seen, pending = set(), [start]
            while pending:
                for other in edges[pending.pop()]:
                    if other not in seen:
                        seen.add(other)
                        pending.append(other)
            return seen

        for i in instructions:
            if i.metadata.op_name or i.opcode in ("parameter", "constant"):
                continue
            around = closure(i.id, users) | closure(i.id, operands)
            if not any(by_id[other].metadata.op_name for other in around):
                found.add(i.name)
    return found


def test_xla_inserted_bucket_of_a_real_trace_holds_the_unnamed_copies():
    """while_swap: XLA's copy insertion puts four copies into the loop body
    between the body's parameter and its root tuple; nothing around them has
    an op_name. The oracle is the trace itself: those instructions from its
    HloProto, their time from its raw events."""
    path = DATA / "while_swap" / "trace.xplane.pb"
    durations, computations = _raw_trace(path)
    islands = _unnamed_islands(computations) & durations.keys()  # those that ran
    assert len(islands) == 4 and all(name.startswith("copy.") for name in islands), islands
    profile = build_op_profile(read_trace(path))
    inserted = {entry.instruction: entry for entry in profile.xla_inserted}
    assert inserted.keys() == islands
    assert all(entry.reason == "no_op_name" for entry in inserted.values())
    assert {name: entry.total_ps for name, entry in inserted.items()} == {
        name: durations[name] for name in islands
    }
    totals = profile.totals
    assert totals.xla_inserted_ps == sum(durations[name] for name in islands) > 0
    assert totals.hlo_ps == sum(durations.values())
    assert totals.hlo_attributed_ps + totals.xla_inserted_ps == totals.hlo_ps


def test_while_loop_ops_resolve_in_their_body_functions(tmp_path):
    """while_swap, the whole flow after the trace: XLA names the loop's
    instructions after the body's and cond's own nodes (`while/add`,
    `while/Less`, no call prefix); rule xla_function_body finds them in
    @while_body_280 and @while_cond_270, and every picosecond lands on an op."""
    profile = build_op_profile(read_trace(DATA / "while_swap" / "trace.xplane.pb"))
    profile.write(tmp_path / "op_profile.json")
    attribution = annotate.annotate_module(
        DATA / "while_swap" / "module.mlir",
        tmp_path / "op_profile.json",
        tmp_path / "annotated.mlir",
        tmp_path / "op_graph.json",
        tmp_path / "attribution.json",
    ).with_xla_launch(profile)
    assert not attribution.unresolved and not attribution.removed
    assert attribution.attributed_self_ps == attribution.profile_self_ps > 0
    assert attribution.coverage == 1.0
    by_rule = {entry.name: (entry.rule, entry.ops) for entry in attribution.resolved}
    assert by_rule == {
        "while/Less": ("xla_function_body", ("while/Less",)),
        "while/add": ("xla_function_body", ("while/add",)),
    }
    text = (tmp_path / "annotated.mlir").read_text()
    body, cond = text.split("@while_body_280(")[1].split("@while_cond_270(")
    annotated = [line.split("(")[0].split()[-1] for line in (body + cond).splitlines()
                 if "profiler_data" in line]  # fmt: skip
    assert annotated == ['"tf.AddV2"', '"tf.Less"']


def test_mixed_step_attributes_kernels_jit_function_and_auto_clusters(tables):
    table = tables["mixed"]
    events = hlo_events(table)
    calls = {e.module: e.call for e in events}
    jit = {c for m, c in calls.items() if m.startswith("a_inference_compiled_head_")}
    assert jit == {"StatefulPartitionedCall"}  # the call node that ran the jit function
    assert {c for m, c in calls.items() if m.startswith("cluster_")} == {""}
    profile = build_op_profile(table)
    by_name = profile.by_name()
    assert "Unique" in by_name and not by_name["Unique"].xla  # a TF kernel
    head = by_name["StatefulPartitionedCall/head_1/hidden_1/MatMul"]
    assert head.op_types == ("MatMul",) and not head.xla[0].fusion
    clustered = [op for op in profile.ops if op.xla and op.xla[0].module.startswith("cluster_")]
    assert clustered
    # The _XlaRun kernels ran the clusters' HLO events: their self time excludes them.
    runs = [op for op in profile.ops if op.op_types == ("_XlaRun",)]
    assert runs and all(op.self_ps < op.total_ps for op in runs)


def test_op_profile_round_trip_names_module_and_fusion(tables, tmp_path):
    profile = build_op_profile(tables["train_adam"])
    path = tmp_path / "op_profile.json"
    profile.write(path)
    assert OpProfile.read(path) == profile
    document = json.loads(path.read_text())
    assert document["version"] == 3
    fused = [op for op in document["ops"] if op.get("xla_fusion")]
    assert fused and all(op["xla_module"] == op["xla"][0]["module"] for op in fused)
    assert all(op["count"] == len(op["durations_ps"]) for op in document["ops"])


@pytest.mark.parametrize("name", SCENARIOS)
def test_hlo_profile_per_module_instruction_and_fusion(tables, tmp_path, name):
    table = tables[name]
    hlo = build_hlo_profile(table.source, attribute(table))
    path = tmp_path / "hlo_profile.json"
    hlo.write(path)
    assert HloProfile.read(path) == hlo
    assert sum(m.total_ps for m in hlo.modules) == hlo.hlo_ps
    for module in hlo.modules:
        for instruction in module.instructions:
            if instruction.nodes:
                assert sum(n.ps for n in instruction.nodes) == instruction.total_ps
    fusions = hlo.fusions()
    assert all(f.fusion for _, f in fusions) and any(len(f.nodes) > 1 for _, f in fusions)
    times = [f.total_ps for _, f in fusions]
    assert times == sorted(times, reverse=True)


@pytest.mark.parametrize("name", SCENARIOS)
def test_annotate_pass_puts_hlo_time_on_tf_ops(tmp_path, name):
    profile = build_op_profile(read_trace(DATA / name / "trace.xplane.pb"))
    profile.write(tmp_path / "op_profile.json")
    attribution = annotate.annotate_module(
        DATA / name / "module.mlir",
        tmp_path / "op_profile.json",
        tmp_path / "annotated.mlir",
        tmp_path / "op_graph.json",
        tmp_path / "attribution.json",
    ).with_xla_launch(profile)
    annotated_ps = annotate.xla_annotated_ps(profile, attribution)
    assert annotated_ps >= 0.99 * profile.totals.hlo_ps
    assert profile.totals.xla_inserted_ps == 0  # copies and reduce-windows: by neighbour
    assert attribution.coverage >= 0.99
    text = (tmp_path / "annotated.mlir").read_text()
    assert "xla_module = " in text and "xla_fusion = " in text
    graph = json.loads((tmp_path / "op_graph.json").read_text())
    assert any((n["profiler_data"] or {}).get("xla_fusion") for n in graph["nodes"])


def test_report_names_each_instruction_named_by_its_neighbour(tmp_path):
    out = tmp_path / "out"
    options = stages.FlowOptions(
        from_trace=DATA / "train_adam" / "trace.xplane.pb",
        mlir=DATA / "train_adam" / "module.mlir",
        output_dir=out,
        formats=("svg",),
    )
    stages.run_flow(options)
    report = (out / "report.md").read_text()
    assert "### XLA instructions named by their neighbours" in report
    # Oracle, the trace's HloProto: copy.2 (no op_name, it ran) has named users, and
    # the first of them in its computation's order names it.
    durations, computations = _raw_trace(DATA / "train_adam" / "trace.xplane.pb")
    (instructions,) = [c for c in computations.values() if any(i.name == "copy.2" for i in c)]
    (copy,) = [i for i in instructions if i.name == "copy.2"]
    assert not copy.metadata.op_name and durations[copy.name] > 0
    user = next(i for i in instructions if copy.id in i.operand_ids and i.metadata.op_name)
    assert f"| {copy.name} | {copy.opcode} |" in report
    assert f"| nearest user | {copy.name} → {user.name} | {user.metadata.op_name} |" in report
    hlo = HloProfile.read(out / "hlo_profile.json")
    (inferred,) = [i for m in hlo.modules for i in m.instructions if i.name == copy.name]
    assert inferred.inferred_from == (copy.name, user.name)
    assert [n.name for n in inferred.nodes] == [user.metadata.op_name]


def _without_hlo(source: Path, target: Path, keep_metadata: bool) -> None:
    """`source` with every HLO instruction event removed (and the metadata plane)."""
    space = xplane_pb2().XSpace()
    space.ParseFromString(source.read_bytes())
    for plane in space.planes:
        stat = {v.name: k for k, v in plane.stat_metadata.items()}.get("hlo_op")
        for line in plane.lines:
            kept = [e for e in line.events if all(s.metadata_id != stat for s in e.stats)]
            del line.events[:]
            line.events.extend(kept)
    if not keep_metadata:
        kept_planes = [p for p in space.planes if p.name != "/host:metadata"]
        del space.planes[:]
        space.planes.extend(kept_planes)
    target.write_bytes(space.SerializeToString())


@pytest.mark.parametrize("keep_metadata", [True, False])
def test_trace_without_op_events_says_why(tmp_path, keep_metadata):
    trace = tmp_path / "trace.xplane.pb"
    _without_hlo(DATA / "infer" / "trace.xplane.pb", trace, keep_metadata)
    options = stages.FlowOptions(
        output_dir=tmp_path / "out", from_trace=trace, mlir=DATA / "infer" / "module.mlir"
    )
    with pytest.raises(UserError) as raised:
        stages.run_flow(options)
    message = str(raised.value)
    assert "dropped every annotation" not in message
    assert message.startswith(f"{trace}: the trace holds no TensorFlow op events")
    if keep_metadata:
        assert "the step ran under XLA but the profiler recorded none" in message
    else:
        for reason in ("ran under XLA", "host tracer level", "another model"):
            assert reason in message


def test_unannotated_module_is_not_called_dropped(tmp_path):
    """TensorFlow can only drop annotations a module had: none, no complaint. The
    same module with one annotation that TensorFlow's pipeline erases (on a dead
    constant) is called dropped: the check tells the two apart."""
    text = (DATA / "infer" / "module.mlir").read_text()
    assert "profiler_data" not in text
    plain = tmp_path / "plain.mlir"
    plain.write_text(text)
    stages._verify_in_tensorflow(plain)  # no complaint: it raises on one
    first = '    %cst = "tf.Const"()'
    dead = (
        '    %dead = "tf.Const"() <{value = dense<1.0> : tensor<f32>}> '
        "{profiler_data = {self = 1 : i64}} : () -> tensor<f32> loc(#loc)\n"
    )
    annotated = tmp_path / "annotated.mlir"
    annotated.write_text(text.replace(first, dead + first, 1))
    with pytest.raises(UserError) as dropped:
        stages._verify_in_tensorflow(annotated)
    assert str(dropped.value) == f"{annotated}: TensorFlow's pipeline dropped every annotation"


def test_trace_reader_cli_writes_hlo_profile_only_for_xla_traces(tmp_path, capsys):
    from tfpgo.flow import trace_reader

    hlo_out = tmp_path / "hlo_profile.json"
    trace = DATA / "mixed" / "trace.xplane.pb"
    assert trace_reader.main(["--path-to-trace", str(trace), "--hlo-profile", str(hlo_out)]) == 0
    assert HloProfile.read(hlo_out).modules
    assert "XLA: 3 modules" in capsys.readouterr().out
    no_xla = tmp_path / "no_xla.json"
    plain = DATA.parent / "trace_reader" / "mlp_infer.xplane.pb"
    assert trace_reader.main(["--path-to-trace", str(plain), "--hlo-profile", str(no_xla)]) == 0
    assert not no_xla.exists()


def test_a_damaged_hlo_proto_is_one_line_naming_the_trace():
    with pytest.raises(UserError) as failure:
        parse_hlo_proto(b"\xff\xff\xff not a protobuf", "t.xplane.pb")
    message = str(failure.value)
    assert message.startswith(
        "t.xplane.pb: an 'Hlo Proto' stat of the metadata plane is not an HloProto ("
    )
    assert message.endswith("); the trace is damaged, profile again")
    assert "\n" not in message
