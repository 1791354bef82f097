"""Device time on real NVIDIA H100 traces of XLA training steps (tests/data/gpu):
kernels, copies and memsets onto framework ops, with and without command buffers,
checked against xprof and against the run without command buffers."""

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest
from trace_fixtures import device_events, fused_op_names, host_events

from tfpgo.attribution.device_attribution import attribute_device
from tfpgo.attribution.hlo_profile import HloProfile, build_hlo_profile
from tfpgo.attribution.op_profile import OpProfile, build_op_profile
from tfpgo.attribution.xla_attribution import attribute
from tfpgo.errors import UserError
from tfpgo.trace.device import DeviceKind, device_kind, device_rows
from tfpgo.trace.events import NO_STEP
from tfpgo.trace.readers import read_trace

DATA = Path(__file__).resolve().parents[1] / "data" / "gpu"
GRAPH = {model: DATA / f"jax_gpu_{model}.xplane.pb" for model in ("mlp", "conv")}
NO_GRAPH = {model: DATA / f"jax_gpu_{model}_nograph.xplane.pb" for model in ("mlp", "conv")}
ALL = [*GRAPH.values(), *NO_GRAPH.values()]


@pytest.fixture(scope="module")
def profiles():
    """path -> (table, device attribution, op profile, hlo profile)."""
    found = {}
    for path in ALL:
        table = read_trace(path)
        device = attribute_device(table)
        found[path] = (
            table,
            device,
            build_op_profile(table, None, device),
            build_hlo_profile(table.source, attribute(table), device, table),
        )
    return found


def xprof_hlo_stats(path: Path) -> dict[str, float]:
    """{instruction: total µs} from xprof's hlo_stats (device time per instruction)."""
    from xprof.convert import raw_to_tool_data

    data, _ = raw_to_tool_data.xspace_to_tool_data([str(path)], "hlo_stats", {})
    table = json.loads(data)
    table = table[0] if isinstance(table, list) else table
    columns = [c["id"] for c in table["cols"]]
    rows = [dict(zip(columns, (v.get("v") for v in r["c"]), strict=True)) for r in table["rows"]]
    return {r["hlo_op_name"]: r["total_time"] for r in rows}


@pytest.mark.parametrize("model", ["mlp", "conv"])
def test_instruction_device_time_equals_xprof_hlo_stats(profiles, tmp_path, model):
    path = tmp_path / NO_GRAPH[model].name  # xprof caches beside its input
    shutil.copyfile(NO_GRAPH[model], path)
    theirs = xprof_hlo_stats(path)
    hlo = profiles[NO_GRAPH[model]][3]
    ours = {i.name: i.device_ps for m in hlo.modules for i in m.instructions if i.device_ps}
    assert set(ours) == set(theirs)
    for name, total_us in theirs.items():
        assert ours[name] / 1e6 == pytest.approx(total_us, rel=1e-3, abs=2e-3), name


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.stem)
def test_every_kernel_picosecond_lands_on_ops_and_copies_are_listed(profiles, path):
    _, device, profile, _ = profiles[path]
    totals = profile.totals
    # kernels and memsets all on ops; only the input copies nothing names stay apart
    kernels = [k for k in profile.device_kernels if k.kind == DeviceKind.KERNEL.value]
    assert sum(k.total_ps for k in kernels if k.ops) == totals.device_kernel_ps > 0
    unattributed = profile.device_kernels
    unattributed_ps = sum(k.total_ps for k in unattributed if not k.ops)
    assert totals.device_attributed_ps + unattributed_ps == totals.device_ps
    assert sum(op.device_self_ps for op in profile.ops) == totals.device_attributed_ps
    assert sum(c.total_ps for c in profile.device_copies) == totals.device_copy_ps
    assert totals.device_kernel_ps + totals.device_copy_ps == totals.device_ps
    assert all(k.reason == "no_framework_op" for k in unattributed if not k.ops)
    if "conv" in path.name:
        (h2d,) = [c for c in profile.device_copies if c.kind == "memcpy_h2d"]
        copies = device_events(path)["MemcpyH2D"]  # the trace's own copy events
        assert (h2d.count, h2d.total_ps, h2d.attributed_ps) == (len(copies), sum(copies), 0)
        (memset,) = [c for c in profile.device_copies if c.kind == "memset"]
        assert memset.attributed_ps == memset.total_ps > 0  # its hlo_op names a cuDNN call
    assert len(device) == totals.device_events


def test_command_buffer_kernels_resolve_to_the_instructions_that_ran_them(profiles):
    """Each execution's k-th kernel in the command-buffer run is resolved to the
    instruction the run without command buffers names for its k-th kernel."""
    resolved = {}
    for path in (GRAPH["mlp"], NO_GRAPH["mlp"]):
        table, device, _, _ = profiles[path]
        by_step: dict[int, list[tuple[int, str]]] = {}
        for row, found in zip(device.rows.tolist(), device.resolution.tolist(), strict=True):
            instruction = device.resolutions[found].instruction
            by_step.setdefault(int(table.step[row]), []).append(
                (int(table.start_ps[row]), instruction)
            )
        resolved[path] = {s: [i for _, i in sorted(k)] for s, k in by_step.items() if s != NO_STEP}
    graph, plain = resolved[GRAPH["mlp"]], resolved[NO_GRAPH["mlp"]]
    assert sorted(graph) == sorted(plain) == [0, 1, 2, 3, 4]
    # Oracle, the trace's own events: each kernel ran once per run of jit_step (the
    # host's `Execute (jit_step)` events; a step is one run), so a step launches
    # one kernel of each name.
    launched = device_events(GRAPH["mlp"])
    runs = host_events(GRAPH["mlp"])["CommonPjRtLoadedExecutable::Execute (jit_step)"]
    assert {len(durations) for durations in launched.values()} == {len(runs)}
    assert all(graph[step] == plain[step] and len(graph[step]) == len(launched) for step in graph)
    # Which rule resolved each kernel of the command-buffer run: the trace's own
    # events say the instruction (the run without command buffers, above); the
    # fusions must be found by their kernel's name and the cuBLAS call by the
    # command buffer's schedule, with no kernel left to a guess.
    device = profiles[GRAPH["mlp"]][1]
    rules = Counter(device.resolutions[r].rule for r in device.resolution.tolist())
    assert rules["command_buffer_kernel_name"] > 0 and rules["command_buffer_schedule"] > 0
    assert sum(rules.values()) == len(device.rows)
    hlo = profiles[GRAPH["mlp"]][3]
    by_name = {i.name: i for m in hlo.modules for i in m.instructions}
    assert by_name["custom-call.1"].resolved_by == ("command_buffer_schedule",)
    assert by_name["gemm_fusion_dot.2"].resolved_by == ("command_buffer_kernel_name",)


@pytest.mark.parametrize("model", ["mlp", "conv"])
def test_shares_with_and_without_command_buffers_differ_only_by_kernel_durations(profiles, model):
    """Per-instruction device shares of the two runs differ exactly as the shares of
    their kernels by name do: the attribution adds no difference of its own."""

    def shares(path, key):
        table, _, _, hlo = profiles[path]
        if key == "instruction":
            found = {i.name: i.device_ps for m in hlo.modules for i in m.instructions}
        else:
            found = Counter()
            for row in device_rows(table).tolist():
                found[table.names[table.name_id[row]]] += int(table.duration_ps[row])
        whole = sum(found.values())
        return {name: ps / whole for name, ps in found.items() if ps}

    def l1(key):
        a, b = shares(GRAPH[model], key), shares(NO_GRAPH[model], key)
        return sum(abs(a.get(k, 0) - b.get(k, 0)) for k in a.keys() | b.keys())

    if model == "conv":  # copies move the kernel-name shares; instructions exclude them
        assert l1("instruction") < 0.05
    else:
        assert l1("instruction") == pytest.approx(l1("kernel"), abs=1e-9)


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.stem)
def test_launches_link_to_their_kernels_and_give_them_their_step(profiles, path):
    table, device, profile, _ = profiles[path]
    launched = set(table.flows[:, 1].tolist())
    on_device = set(device.rows.tolist())
    assert on_device <= launched  # every device event here has its launch
    links = [(a, b) for a, b in table.flows.tolist() if b in on_device]
    assert all(table.step[a] == table.step[b] for a, b in links)
    # launches are host events (the CUPTI collector names a kernel launch after its
    # kernel, a graph launch `cuGraphLaunch (CudaGraph:N)`)
    assert all(table.tracks[table.track_id[a]].plane == "/host:CPU" for a, _ in links)
    steps = {s.step for s in profile.device_steps}
    assert steps == {0, 1, 2, 3, 4}
    assert all(0 < s.busy_ps <= s.window_ps for s in profile.device_steps)
    totals = profile.totals
    assert totals.device_busy_ps + totals.device_idle_ps == sum(
        s.window_ps for s in profile.device_steps
    )


def test_op_profile_v3_round_trip_and_older_versions(profiles, tmp_path):
    profile = profiles[GRAPH["conv"]][2]
    path = tmp_path / "op_profile.json"
    profile.write(path)
    assert OpProfile.read(path) == profile
    document = json.loads(path.read_text())
    assert document["version"] == 3
    top = document["ops"][0]
    assert top["device_self_ps"] > 0 and top["count"] == 0 and top["durations_ps"] == []
    # a version-2 document has no device fields: they read as none
    old = {k: v for k, v in document.items() if not k.startswith("device_")}
    old["ops"] = [{k: v for k, v in op.items() if not k.startswith("device")} for op in old["ops"]]
    old["totals"] = {k: v for k, v in old["totals"].items() if not k.startswith("device_")}
    path.write_text(json.dumps({**old, "version": 2}))
    read = OpProfile.read(path)
    assert not read.has_device and all(op.device_self_ps == 0 for op in read.ops)
    hlo = profiles[GRAPH["mlp"]][3]
    hlo_path = tmp_path / "hlo_profile.json"
    hlo.write(hlo_path)
    assert HloProfile.read(hlo_path) == hlo
    assert hlo.device_ps == hlo.device_attributed_ps == profiles[GRAPH["mlp"]][2].totals.device_ps


def test_a_damaged_hlo_proto_is_one_error_line(tmp_path):
    """A device trace whose metadata plane does not parse names the file."""
    from tfpgo.trace.readers.xplane_proto import xplane_pb2

    space = xplane_pb2().XSpace()
    space.ParseFromString(GRAPH["mlp"].read_bytes())
    for plane in space.planes:
        for metadata in plane.event_metadata.values():
            for stat in metadata.stats:
                if stat.bytes_value:
                    stat.bytes_value = b"\xff\xff\xff"
    damaged = tmp_path / "damaged.xplane.pb"
    damaged.write_bytes(space.SerializeToString())
    with pytest.raises(UserError, match=r"damaged\.xplane\.pb.*not an HloProto"):
        read_trace(damaged)


def test_device_kind_follows_the_cupti_collectors_names():
    assert device_kind("MemcpyH2D") is DeviceKind.MEMCPY_H2D
    assert device_kind("MemcpyD2H") is DeviceKind.MEMCPY_D2H
    assert device_kind("MemcpyD2D") is DeviceKind.MEMCPY_D2D
    assert device_kind("MemcpyP2P") is DeviceKind.MEMCPY_P2P
    assert device_kind("Memset") is DeviceKind.MEMSET
    assert device_kind("loop_add_fusion") is DeviceKind.KERNEL


def test_a_kernel_whose_nodes_the_module_has_in_part_goes_to_those_it_has(profiles):
    """`keep` (the names the annotated module has) without one node of a fusion: the
    fusion's kernels are split over its other nodes, in exact parts, and the missing
    one is listed as folded. Oracles: the kernel durations of the trace's own events,
    and the ops XLA fused, from the trace's HloProto."""
    table = profiles[GRAPH["mlp"]][0]
    full = profiles[GRAPH["mlp"]][1]
    (fusion,) = {r for r in full.resolutions if r.instruction == "loop_exponential_multiply_fusion"}
    fused = fused_op_names(GRAPH["mlp"], fusion.instruction)
    gone = "jit(step)/transpose(jvp())/broadcast_in_dim"
    assert gone in fused and sorted(node.name for node in fusion.nodes) == sorted(fused)
    keep = {node.name for r in full.resolutions for node in r.nodes} - {gone}
    device = attribute_device(table, keep)
    (folded,) = {r for r in device.resolutions if r.instruction == fusion.instruction}
    assert folded.folded == (gone,)
    assert sorted(node.name for node in folded.nodes) == sorted(fused - {gone})
    kernel_ps = sum(device_events(GRAPH["mlp"])["loop_exponential_multiply_fusion"])
    on_it = device.resolution[device.part_event] == device.resolutions.index(folded)
    assert int(device.part_ps[on_it].sum()) == kernel_ps > 0
    parts = {device.nodes[n].name for n in device.part_node[on_it].tolist()}
    assert parts == fused - {gone}
    # every other event splits as before, and nothing is lost
    assert int(device.part_ps.sum()) == int(full.part_ps.sum())
    profile = build_op_profile(table, None, device)
    assert gone not in {op.name for op in profile.ops}
    (kernel,) = [k for k in profile.device_kernels if k.instruction == fusion.instruction]
    assert kernel.folded == (gone,) and gone not in kernel.ops
