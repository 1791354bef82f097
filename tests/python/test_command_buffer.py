"""Command-buffer kernels to instructions by XLA's GPU rules (tfpgo.attribution.
command_buffer): what each instruction launches (xla/service/gpu/thunk_emitter.cc),
library calls by custom_call_target (xla/service/gpu/cublas_cudnn.h), kernels XLA's
kernel reuse cache shares (xla/service/gpu/kernel_reuse_cache.h), on hand-built
schedules and on the HloProto of the real H100 MLP trace (tests/data/gpu)."""

from pathlib import Path

import pytest
from trace_fixtures import device_events, hlo_proto

from tfpgo.attribution import command_buffer
from tfpgo.attribution.command_buffer import (
    RULE_KERNEL_NAME,
    RULE_KERNEL_REUSE,
    RULE_SCHEDULE,
    library_of,
    module_schedule,
    resolve_execution,
)
from tfpgo.trace.device import device_rows
from tfpgo.trace.readers import read_trace
from tfpgo.trace.readers.hlo_metadata import HloInstruction, HloModule, TfNode, parse_hlo_proto

DATA = Path(__file__).resolve().parents[1] / "data" / "gpu"
GEMM = "sm90_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize128x128x32_execute_kernel__5x_cublas"
CONV = "sm90_xmma_fprop_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc_kernel__5x_cudnn"


def _instruction(name: str, opcode: str, **fields) -> HloInstruction:
    return HloInstruction(name, opcode, (TfNode(f"op/{name}", "X"),), **fields)


def _module(entry: list[HloInstruction], **computations: list[HloInstruction]) -> HloModule:
    every = [*entry, *(i for body in computations.values() for i in body)]
    sequences = {"main": tuple(i.name for i in entry)}
    sequences |= {name: tuple(i.name for i in body) for name, body in computations.items()}
    return HloModule("m", 1, {i.name: i for i in every}, sequences["main"], sequences)


def _names(matches: list[command_buffer.KernelMatch]) -> list[str | None]:
    return [m.instruction.name if m.instruction else None for m in matches]


@pytest.mark.parametrize(
    ("opcode", "target", "backend_kind", "expected"),
    [
        # ThunkEmitter::EmitHloInstruction: no thunk, a wait, or only what they call
        ("parameter", "", "", None),
        ("get-tuple-element", "", "", None),
        ("while", "", "", None),
        ("conditional", "", "", None),
        ("call", "", "", None),
        ("copy-start", "", "", None),
        ("copy-done", "", "", None),
        ("async-start", "", "", None),
        ("async-done", "", "", None),
        ("all-reduce-done", "", "", None),
        ("collective-permute-done", "", "", None),
        ("send-done", "", "", None),
        ("recv-done", "", "", None),
        # XLA's own kernel, and the libraries by custom_call_target (cublas_cudnn.cc)
        ("fusion", "", "", ""),
        ("fusion", "", "__triton", ""),
        ("fusion", "", "__cudnn$fusion", "cudnn"),
        ("custom-call", "__cublas$gemm", "", "cublas"),
        ("custom-call", "__cublas$lt$matmul", "", "cublaslt"),
        ("custom-call", "__cublas$lt$matmul$f8", "", "cublaslt"),
        ("custom-call", "__cudnn$convForward", "", "cudnn"),
        ("custom-call", "__cudnn$convBackwardFilter", "", "cudnn"),
        ("custom-call", "__cudnn$fmhaSoftmax", "", "cudnn"),
        ("custom-call", "my_ffi_handler", "", "custom"),
        ("all-reduce-start", "", "", "nccl"),
        ("collective-permute-start", "", "", "nccl"),
        ("sort", "", "", "other"),
    ],
)
def test_what_an_instruction_launches_follows_xlas_gpu_emitter(
    opcode, target, backend_kind, expected
):
    instruction = HloInstruction("i", opcode, (), target, backend_kind=backend_kind)
    assert library_of(instruction) == expected


def test_regions_launch_what_they_call_and_a_while_repeats():
    """A while runs its condition then its body each iteration (EmitWhile), a
    command buffer's `call` its computation, an async start its wrapped fusion,
    whose kernel is named after the wrapped fusion; waits launch nothing."""
    body = [
        _instruction("p.1", "parameter"),
        _instruction("body_fusion", "fusion"),
        _instruction("gemm.1", "custom-call", custom_call_target="__cublas$lt$matmul"),
    ]
    condition = [_instruction("compare_fusion", "fusion")]
    buffer = [_instruction("inner_fusion.3", "fusion")]
    wrapped = [_instruction("side_fusion", "fusion")]
    entry = [
        _instruction("first_fusion", "fusion"),
        _instruction("loop", "while", called=("body", "condition")),
        _instruction("call.1", "call", called=("command_buffer",)),
        _instruction("start", "async-start", called=("wrapped",)),
        _instruction("done", "async-done"),
        _instruction("copy-start.1", "copy-start"),
        _instruction("copy-done.1", "copy-done"),
    ]
    module = _module(entry, body=body, condition=condition, command_buffer=buffer, wrapped=wrapped)
    plan = module_schedule(module)
    assert [launch.instruction.name for launch in plan.launches] == [
        "first_fusion",
        "compare_fusion",
        "body_fusion",
        "gemm.1",
        "inner_fusion.3",
        "side_fusion",
    ]
    assert plan.loops == ((1, 4),)
    kernels = ["first_fusion", "compare_fusion", "body_fusion", GEMM]
    kernels += ["compare_fusion", "body_fusion", GEMM, "compare_fusion"]
    kernels += ["inner_fusion_3", "side_fusion"]
    matches = resolve_execution(module, kernels, [None] * len(kernels))
    assert _names(matches) == [
        "first_fusion",
        "compare_fusion",
        "body_fusion",
        "gemm.1",
        "compare_fusion",
        "body_fusion",
        "gemm.1",
        "compare_fusion",
        "inner_fusion.3",
        "side_fusion",
    ]
    assert matches[3].rule == matches[6].rule == RULE_SCHEDULE


def test_schedule_rule_gives_a_library_calls_kernels_to_it():
    """The kernels between two named ones go to the library calls scheduled there:
    all to the only one (a cuDNN call launching two), one each when the counts agree."""
    entry = [
        _instruction("p", "parameter"),
        _instruction("fusion.1", "fusion"),
        _instruction("cudnn-conv.1", "custom-call", custom_call_target="__cudnn$convForward"),
        _instruction("fusion.2", "fusion"),
        _instruction("cublas.1", "custom-call", custom_call_target="__cublas$gemm"),
        _instruction("cublas.2", "custom-call", custom_call_target="__cublas$gemm"),
        _instruction("fusion.3", "fusion"),
    ]
    kernels = ["fusion_1", "cudnn_a", "cudnn_b", "fusion_2", "gemm_x", "gemm_y", "fusion_3"]
    matches = resolve_execution(_module(entry), kernels, [None] * 7)
    assert _names(matches) == [
        "fusion.1",
        "cudnn-conv.1",
        "cudnn-conv.1",
        "fusion.2",
        "cublas.1",
        "cublas.2",
        "fusion.3",
    ]
    assert [m.rule for m in matches][:2] == [RULE_KERNEL_NAME, RULE_SCHEDULE]


def test_library_calls_take_the_kernels_their_library_names():
    """Three vendor kernels between two fusions, a cuDNN convolution and a cuBLAS
    gemm scheduled there: by count alone ambiguous (3 kernels, 2 calls); the kernel
    names say cuDNN, cuDNN, cuBLAS, so there is one split."""
    entry = [
        _instruction("fusion.1", "fusion"),
        _instruction("cudnn-conv.1", "custom-call", custom_call_target="__cudnn$convForward"),
        _instruction("cublas-gemm.1", "custom-call", custom_call_target="__cublas$gemm"),
        _instruction("fusion.2", "fusion"),
    ]
    module = _module(entry)
    kernels = ["fusion_1", CONV, CONV.replace("fprop", "wgrad"), GEMM, "fusion_2"]
    matches = resolve_execution(module, kernels, [None] * 5)
    expected = ["fusion.1", "cudnn-conv.1", "cudnn-conv.1", "cublas-gemm.1", "fusion.2"]
    assert _names(matches) == expected
    # kernels that name no library leave the split open: unattributed, with the reason
    unnamed = resolve_execution(module, ["fusion_1", "k1", "k2", "k3", "fusion_2"], [None] * 5)
    assert _names(unnamed)[1:4] == [None] * 3
    assert unnamed[1].reason == (
        "command_buffer_ambiguous: 3 kernel(s) without an instruction's name, "
        "2 library call(s) scheduled there (cublas, cudnn)"
    )
    # a cuBLAS kernel never goes to a cuDNN call, even the only one
    wrong = resolve_execution(
        _module([entry[0], entry[1], entry[3]]), ["fusion_1", GEMM, "fusion_2"], [None] * 3
    )
    assert wrong[1].instruction is None and "(cudnn)" in wrong[1].reason


def test_a_command_buffer_ends_at_an_instruction_that_is_no_command():
    """Before the first named kernel: the library calls right before it, up to one
    that cannot be in a command buffer (copy-start, a host transfer: not IsCommand)."""
    entry = [
        _instruction("gemm.0", "custom-call", custom_call_target="__cublas$gemm"),
        _instruction("recv.1", "recv"),
        _instruction("gemm.1", "custom-call", custom_call_target="__cublas$gemm"),
        _instruction("fusion.1", "fusion"),
    ]
    matches = resolve_execution(_module(entry), [GEMM, "fusion_1"], [None] * 2)
    assert _names(matches) == ["gemm.1", "fusion.1"]


@pytest.mark.parametrize("same_computation", [True, False])
def test_a_kernel_ran_again_goes_only_to_a_fusion_with_the_same_fused_computation(
    same_computation,
):
    """XLA's kernel reuse cache hands `fusion.7` the kernel of `fusion` only when
    their fused computations have one fingerprint; otherwise the second `fusion`
    kernel has no instruction and says why (it is not given to the next fusion)."""
    entry = [
        _instruction("fusion", "fusion", fingerprint="A"),
        _instruction("gemm.1", "custom-call", custom_call_target="__cublas$gemm"),
        _instruction("fusion.7", "fusion", fingerprint="A" if same_computation else "B"),
    ]
    matches = resolve_execution(_module(entry), ["fusion", GEMM, "fusion"], [None] * 3)
    if same_computation:
        assert _names(matches) == ["fusion", "gemm.1", "fusion.7"]
        assert [m.rule for m in matches] == [RULE_KERNEL_NAME, RULE_SCHEDULE, RULE_KERNEL_REUSE]
    else:
        assert _names(matches) == ["fusion", "gemm.1", None]
        assert matches[2].reason.startswith(
            "command_buffer_ambiguous: kernel 'fusion' of 'fusion' ran again"
        )


def _clone_fusion(proto, name: str, clone: str) -> None:
    """Adds `clone` to the entry computation, scheduled last: a fusion of a copy of
    `name`'s fused computation with every instruction renamed, new ids and other
    op_names (what XLA's fingerprint leaves out)."""
    module = proto.hlo_module
    computations = {c.id: c for c in module.computations}
    entry = computations[module.entry_computation_id]
    original = next(i for i in entry.instructions if i.name == name)
    fused = computations[original.called_computation_ids[0]]
    next_id = max(i.id for c in module.computations for i in c.instructions) + 1
    copy = module.computations.add()
    copy.CopyFrom(fused)
    copy.name, copy.id = f"{fused.name}.clone", max(computations) + 1
    renumber = {}
    for instruction in copy.instructions:
        renumber[instruction.id] = next_id
        instruction.id, next_id = next_id, next_id + 1
        instruction.name = f"{instruction.name}.clone"
        instruction.metadata.op_name = "jit(step)/elsewhere"
    for instruction in copy.instructions:
        instruction.operand_ids[:] = [renumber[i] for i in instruction.operand_ids]
    copy.root_id = renumber[fused.root_id]
    fusion = entry.instructions.add()
    fusion.CopyFrom(original)
    fusion.name, fusion.id = clone, next_id
    fusion.called_computation_ids[:] = [copy.id]
    module.schedule.sequences[entry.id].instruction_ids.append(fusion.id)


@pytest.fixture(scope="module")
def mlp_execution() -> list[str]:
    """The kernel names of the MLP trace's first command-buffer step, as they ran."""
    table = read_trace(DATA / "jax_gpu_mlp.xplane.pb")
    rows = [r for r in device_rows(table).tolist() if table.step[r] == 0]
    rows.sort(key=lambda r: int(table.start_ps[r]))
    return [table.names[table.name_id[r]] for r in rows]


def test_fingerprints_of_the_real_module_tell_its_fusions_apart_and_ignore_names(mlp_execution):
    """Oracle: in the run without command buffers every fusion launched the kernel of
    its own name (no reuse), so no two fusions of the module may share a fingerprint,
    not even the four Adam updates (`loop_add_fusion`, `.1`, `.3`, `.4`: the same
    op_names, other shapes). A copy of a fused computation with other names, ids
    and metadata has its fingerprint (XLA's canonicalizes or omits them)."""
    proto = hlo_proto(DATA / "jax_gpu_mlp.xplane.pb")
    module = parse_hlo_proto(proto.SerializeToString(), "mlp")
    fusions = [i for i in module.instructions.values() if i.is_fusion and i.name in module.schedule]
    # The fusions are the kernels of that run named after an instruction (XLA writes
    # `.N` as `_N` in a kernel's name); the rest are cuBLAS's.
    launched = set(device_events(DATA / "jax_gpu_mlp_nograph.xplane.pb"))
    own = {i.name.replace(".", "_") for i in fusions}
    assert own <= launched and all(name.endswith("_cublas") for name in launched - own)
    assert len({i.fingerprint for i in fusions}) == len(fusions) == len(own)
    _clone_fusion(proto, "loop_add_fusion", "loop_add_fusion.99")
    cloned = parse_hlo_proto(proto.SerializeToString(), "mlp+clone")
    assert cloned.instructions["loop_add_fusion.99"].fingerprint == (
        cloned.instructions["loop_add_fusion"].fingerprint
    )
    assert cloned.instructions["loop_add_fusion.99"].nodes == (
        (TfNode("jit(step)/elsewhere", "elsewhere"),)
    )
    # The clone, scheduled last, launches `loop_add_fusion` again: the reuse rule.
    kernels = [*mlp_execution, "loop_add_fusion"]
    matches = resolve_execution(cloned, kernels, [None] * len(kernels))
    assert matches[-1].instruction is cloned.instructions["loop_add_fusion.99"]
    assert matches[-1].rule == RULE_KERNEL_REUSE
    plain = resolve_execution(module, mlp_execution, [None] * len(mlp_execution))
    assert _names(matches[:-1]) == _names(plain)
    assert None not in _names(plain)
