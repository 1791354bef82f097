"""Grappler's renaming rules of docs/attribution_rules.md on real TensorFlow 2.21
traces where Grappler fires them: a dense step under bfloat16 auto mixed
precision, an NCHW convolution block under the layout optimizer's CPU conversion
and a training step under the memory optimizer's recomputation
(tests/data/tf2_21, `GRAPPLER_REWRITES` in make_fixtures.py).

The flow's trace reader and annotate pass attribute each trace. The oracle is the
trace's own events, read here with the raw XSpace proto: each renamed kernel's
node is taken from the name format of the Grappler source that builds it, and the
time every op is charged is the sum of the durations of the events that stand for
it (the events here are leaves: nothing nests in a Cast, Transpose or Sub)."""

from __future__ import annotations

import json
import re
from collections import defaultdict
from pathlib import Path

import pytest

from tfpgo.flow import trace_reader
from tfpgo.mlir import annotate
from tfpgo.trace.readers.xplane_proto import xplane_pb2

ROOT = Path(__file__).resolve().parents[2]
TF2_21 = ROOT / "tests" / "data" / "tf2_21"
RULES_DOC = ROOT / "docs" / "attribution_rules.md"
CALLS = 3  # make_fixtures.py profiles three calls of each step

# scenario -> (rule, the name Grappler gives the node it creates for `node`).
RENAMES = {
    # auto_mixed_precision.cc: StrCat(src.node->name(), "-", src.port_id, "-",
    # cast_string, "-", id, "-", kSuffix)
    "amp_bf16": (
        "grappler_auto_mixed_precision",
        re.compile(r"(?P<node>.+?)-\d+-CastTo(?:Bf16|Fp16|Fp32)-\d+-AutoMixedPrecision"),
    ),
    # generic_layout_optimizer_transposer.cc: GetFaninNameFormat (node, port) and
    # GetFanoutNameFormat (node, port, index), each "-$0<F>To<F>-LayoutOptimizer"
    # with $0 the op, Transpose here.
    "layout_nchw": (
        "grappler_layout_optimizer",
        re.compile(
            r"(?P<node>.+?)-\d+-(?:\d+-)?Transpose(?:NCHW|NHWC)To(?:NCHW|NHWC)-LayoutOptimizer"
        ),
    ),
    # memory_optimizer.cc: AddPrefixToNodeName(original_node->name(), "Recomputed").
    "recompute": ("grappler_memory_recompute", re.compile(r"Recomputed/(?P<node>.+)")),
}
# An argument's cast lands on the ops that read the argument: the model's input
# feeds only the first Dense layer's MatMul (make_fixtures.py, `dense`).
ARGUMENT_READERS = {("amp_bf16", "x"): ("sequential_1/dense_1/MatMul",)}


def op_events(trace: Path) -> dict[str, list[int]]:
    """Runtime node name -> durations (ps) of its TF op events (`name:Type`)."""
    space = xplane_pb2().XSpace()
    space.ParseFromString(trace.read_bytes())
    durations: dict[str, list[int]] = defaultdict(list)
    for plane in space.planes:
        for line in plane.lines:
            for event in line.events:
                name, _, kernel = plane.event_metadata[event.metadata_id].name.rpartition(":")
                if name and re.fullmatch(r"_?[A-Za-z]\w*", kernel):
                    durations[name].append(event.duration_ps)
    return durations


def entry_arguments(module: str) -> set[str]:
    """The node names of the entry function's arguments (`tf.entry_function`)."""
    found = re.search(r'tf\.entry_function = \{[^}]*inputs = "([^"]*)"', module)
    assert found, "no tf.entry_function inputs"
    return set(found[1].split(","))


@pytest.fixture(scope="module", params=sorted(RENAMES))
def attributed(request, tmp_path_factory):
    """scenario, its trace's op events, the attribution document and op graph."""
    scenario = request.param
    data = TF2_21 / scenario
    out = tmp_path_factory.mktemp(scenario)
    profile = out / "op_profile.json"
    trace_reader.run(data / "trace.xplane.pb", op_profile_out=profile, build_graph=False)
    annotate.annotate_module(
        data / "module.mlir",
        profile,
        out / "a.mlir",
        out / "op_graph.json",
        out / "attribution.json",
    )
    document = json.loads((out / "attribution.json").read_text())
    graph = json.loads((out / "op_graph.json").read_text())
    return scenario, op_events(data / "trace.xplane.pb"), document, graph


def renamed(scenario: str, events: dict[str, list[int]]) -> dict[str, str]:
    """Runtime name -> node, for the trace's kernels the scenario's rule names."""
    _rule, name_format = RENAMES[scenario]
    matches = {name: name_format.fullmatch(name) for name in events}
    return {name: match["node"] for name, match in matches.items() if match}


def test_grappler_really_renamed_kernels_that_ran(attributed):
    scenario, events, _document, _graph = attributed
    kernels = renamed(scenario, events)
    assert len(kernels) >= 2, sorted(events)
    for name in kernels:
        assert len(events[name]) == CALLS, (name, events[name])
    module = (TF2_21 / scenario / "module.mlir").read_text()
    for name, node in kernels.items():
        # Grappler made them: the exported module has no op of that name.
        assert f'loc("{name}"' not in module
        assert f'loc("{node}"' in module or node in entry_arguments(module), (name, node)


def test_each_renamed_kernel_lands_on_its_node_with_all_its_time(attributed):
    scenario, events, document, _graph = attributed
    rule, _name_format = RENAMES[scenario]
    entries = {entry["name"]: entry for entry in document["entries"]}
    for name, node in renamed(scenario, events).items():
        entry = entries[name]
        assert entry["match"] == "resolved", entry
        assert entry["self_ps"] == sum(events[name]), entry
        if (scenario, node) in ARGUMENT_READERS:
            assert entry["rule"] == f"{rule}+function_argument", entry
            assert tuple(entry["ops"]) == ARGUMENT_READERS[scenario, node], entry
        else:
            assert entry["rule"] == rule, entry
            assert entry["ops"] == [node], entry


def test_ops_are_charged_their_own_and_their_renamed_kernels_time(attributed):
    """The op graph charges each node the renamed kernels are named after
    exactly the events that stand for it: its own and theirs. Nothing is left
    unresolved."""
    scenario, events, document, graph = attributed
    expected: dict[str, int] = defaultdict(int)
    for name, node in renamed(scenario, events).items():
        for op in ARGUMENT_READERS.get((scenario, node), (node,)):
            expected[op] += sum(events[name])
    for op in list(expected):
        expected[op] += sum(events.get(op, []))
    charged = {
        node["name"]: node["profiler_data"]["self"]
        for node in graph["nodes"]
        if node["name"] in expected and node["profiler_data"]
    }
    assert charged == expected
    assert not [entry for entry in document["entries"] if entry["match"] == "unresolved"]
    assert document["attributed_self_ps"] == document["profile_self_ps"]


def test_the_doc_names_these_traces_for_the_rules_they_test():
    """docs/attribution_rules.md names this test for exactly its rules."""
    rows = [line for line in RULES_DOC.read_text().splitlines() if "test_grappler_rules" in line]
    documented = set(re.findall(r"^\| `([a-z_]+)`", "\n".join(rows), re.MULTILINE))
    assert documented == {rule for rule, _name_format in RENAMES.values()}
