"""Kernels of an XLA command buffer (a CUDA graph) back to their HLO instructions.

With command buffers (XLA GPU's default) a run of thunks is recorded once into a
CUDA graph and replayed by one `cuGraphLaunch`: every kernel of it carries the
command buffer's name as `hlo_op` (`command_buffer_1`), not its instruction's
(xprof stops there: openxla/xprof#3070, #2544). The trace's `HloProto` holds the
module as scheduled, so one execution's kernels (one launch: the same
`correlation_id`), in the order they ran, are the launches of a stretch of the
module's schedule. Which instruction launches what follows XLA's GPU emitter,
`ThunkEmitter::EmitHloInstruction` (xla/service/gpu/thunk_emitter.cc; formerly
`IrEmitterUnnested`, xla/service/gpu/ir_emitter_unnested.cc):

  * **nothing**: parameter, constant, get-tuple-element, tuple, bitcast, after-all,
    add-dependency (no thunk: "their semantics are encoded by buffers"); the
    `*-done` halves of asynchronous pairs (copy-done, all-reduce-done,
    all-gather-done, collective-permute-done, send-done, recv-done, async-done,
    async-update), which only wait; copy-start, a copy on another stream and never
    a command (below);
  * **what they call**: a `while` (its condition, then its body, each iteration),
    a `conditional` (one branch), a `call` (a command buffer's computation) and an
    `async-start` (its wrapped computation: a fusion there launches the fusion's
    kernel) launch nothing of their own;
  * **XLA's kernels**: a fusion launches the kernel named after it
    (`HloInstruction.kernel_name`), or the kernel of the first fusion emitted with
    the same fused computation: XLA's kernel reuse cache
    (xla/service/gpu/kernel_reuse_cache.h/.cc, `KernelReuseCache::GetWithStatus`)
    keys kernels by `GetComputationFingerprint` of the fused computation and hands
    a later fusion with an equal fingerprint the first one's kernel. A kernel name
    seen again therefore goes only to a later fusion with that fingerprint
    (`HloInstruction.fingerprint`), never to any fusion that happens to be next;
  * **library calls**, told apart by `custom_call_target` (xla/service/gpu/
    cublas_cudnn.h/.cc): `__cublas$gemm` (cuBLAS), `__cublas$lt$matmul[$f8]`
    (cuBLASLt), `__cudnn$...` and fusions of kind `__cudnn$fusion` (cuDNN),
    collectives (NCCL), other custom calls; and XLA's other thunks (sort, copy,
    replica/partition id). They launch vendor kernels whose names are not the
    instruction's.

Only commands go into a command buffer (`CommandBufferScheduling`,
xla/service/gpu/transforms/command_buffer_scheduling.cc, `IsCommand`,
`IsAsyncStartCommand`): fusions, sort, copy, replica/partition id, cuBLAS, cuBLASLt,
cuDNN and FFI custom calls, while and conditional whose computations are commands,
all-reduce/all-gather starts, reduce-scatter, all-to-all and async starts of those.
So the vendor kernels between two matched kernels belong to the library calls that
are commands scheduled between the two instructions.

Matching, kernel by kernel in the order they ran:

  * **kernel name** (`RULE_KERNEL_NAME`): the first fusion at or after the previous
    match whose own kernel it is; **kernel reuse** (`RULE_KERNEL_REUSE`): else the
    first such fusion with the fingerprint of the fusion the kernel is named after.
    Inside a while's body or condition the search wraps to the start of the loop
    (its next iteration);
  * **schedule** (`RULE_SCHEDULE`): the kernels between two matches are split over
    the library calls scheduled between the two instructions, each call a
    contiguous non-empty run, in order; a kernel whose name tells its library
    (`cublas`, `cudnn`, `nccl` in it) only to a call of that library. The split is
    taken when it is the only one possible (one call: all of them; as many kernels
    as calls: one each); before the first (after the last) match, the calls
    scheduled right before (after) it, up to the nearest XLA kernel or non-command;
  * anything else stays unattributed with the reason (`command_buffer_ambiguous:`).

Kernels in the execution whose `hlo_op` already names an instruction (XLA
annotates some) are matches as they are.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tfpgo.trace.readers.hlo_metadata import HloInstruction, HloModule

RULE_KERNEL_NAME = "command_buffer_kernel_name"
RULE_KERNEL_REUSE = "command_buffer_kernel_reuse"
RULE_SCHEDULE = "command_buffer_schedule"
AMBIGUOUS = "command_buffer_ambiguous"

# ThunkEmitter::EmitHloInstruction emits no thunk for these.
_NO_THUNK = frozenset(
    {
        "parameter",
        "constant",
        "get-tuple-element",
        "tuple",
        "bitcast",
        "after-all",
        "add-dependency",
        "opt-barrier",
        "domain",
    }
)
# The `*-done` (and update) halves of asynchronous pairs: they wait for the start.
_WAIT_ONLY = frozenset(
    {
        "copy-done",
        "all-reduce-done",
        "all-gather-done",
        "collective-permute-done",
        "send-done",
        "recv-done",
        "async-done",
        "async-update",
    }
)
# Launch only through the computations they call.
_REGIONS = frozenset({"while", "conditional", "call", "async-start"})
# Collectives: NCCL's kernels (`ncclDevKernel_...`).
_COLLECTIVES = frozenset(
    {
        "all-reduce",
        "all-reduce-start",
        "all-gather",
        "all-gather-start",
        "all-to-all",
        "ragged-all-to-all",
        "reduce-scatter",
        "collective-broadcast",
        "collective-permute",
        "collective-permute-start",
        "send",
        "recv",
    }
)
# Collectives that may be commands (IsAsyncStartCommand); the others end a command buffer.
_COLLECTIVE_COMMANDS = frozenset(
    {"all-reduce-start", "all-gather-start", "reduce-scatter", "all-to-all"}
)
# XLA's thunks that are commands but launch no kernel named after the instruction.
_OTHER_COMMANDS = frozenset({"sort", "copy", "partition-id", "replica-id"})

# Library families (`Launch.library`); "" is one of XLA's own kernels.
CUBLAS, CUBLASLT, CUDNN, NCCL, CUSTOM, OTHER = (
    "cublas",
    "cublaslt",
    "cudnn",
    "nccl",
    "custom",
    "other",
)
# custom_call_target -> library (xla/service/gpu/cublas_cudnn.cc: kGemmCallTarget,
# kCublasLtMatmulCallTarget, kCublasLtMatmulF8CallTarget; every cuDNN target starts
# with `__cudnn$`: the kCudnnConv*CallTarget, kCudnnNormCallTarget, the fMHA targets).
# Fusion kinds: xla/service/gpu/ir_emission_utils.h (kCuDnnFusionKind, kCustomFusionKind).
_CUBLAS_TARGETS = {
    "__cublas$gemm": CUBLAS,
    "__cublas$lt$matmul": CUBLASLT,
    "__cublas$lt$matmul$f8": CUBLASLT,
}
_CUDNN_PREFIX = "__cudnn$"
# A vendor kernel's name that tells its library -> the libraries that launch it.
_KERNEL_FAMILIES = (("cublas", {CUBLAS, CUBLASLT}), ("cudnn", {CUDNN}), ("nccl", {NCCL}))


@dataclass(frozen=True)
class KernelMatch:
    """The instruction one kernel of an execution ran, or why none was found."""

    instruction: HloInstruction | None
    rule: str  # RULE_KERNEL_NAME, RULE_KERNEL_REUSE, RULE_SCHEDULE, "hlo_op", "" if none
    reason: str = ""


@dataclass(frozen=True)
class Launch:
    """An instruction that launches device work, where the emitter puts it.

    `library`: "" for a fusion emitted as XLA's own kernel, else the library or
    thunk kind (`CUBLAS`, `CUBLASLT`, `CUDNN`, `NCCL`, `CUSTOM`, `OTHER`);
    `command`: whether it may be in a command buffer; `loop`: the innermost while
    (index into `Schedule.loops`) whose condition or body holds it, -1 if none.
    """

    instruction: HloInstruction
    library: str
    command: bool
    loop: int = -1

    @property
    def is_xla_kernel(self) -> bool:
        return not self.library


@dataclass(frozen=True)
class Schedule:
    """A module's launches in emission order (the entry computation's schedule, each
    while, conditional, call and async start replaced by what it runs); `loops`:
    each while's [first, end) span of launches; `kernels`: kernel name -> positions
    of the fusions that may launch it (their own, or reused), in order."""

    launches: tuple[Launch, ...]
    loops: tuple[tuple[int, int], ...]
    kernels: dict[str, tuple[tuple[int, str], ...]]  # name -> ((position, rule), ...)

    def enclosing_loops(self, position: int) -> list[tuple[int, int]]:
        """The loops holding `position`, innermost first."""
        found = [(first, end) for first, end in self.loops if first <= position < end]
        return sorted(found, key=lambda span: span[1] - span[0])


def library_of(instruction: HloInstruction) -> str | None:
    """What `instruction` launches by XLA's GPU emitter (see the module doc): "" for
    XLA's own kernel, a library family, or None when it launches nothing itself."""
    opcode = instruction.opcode
    if opcode in _NO_THUNK or opcode in _WAIT_ONLY or opcode in _REGIONS or opcode == "copy-start":
        return None
    if opcode == "fusion":
        if instruction.backend_kind == "__cudnn$fusion":
            return CUDNN
        if instruction.backend_kind == "__custom_fusion":
            return CUSTOM  # a custom kernel (cutlass) or address computation
        return ""
    if opcode == "custom-call":
        target = instruction.custom_call_target
        if target in _CUBLAS_TARGETS:
            return _CUBLAS_TARGETS[target]
        return CUDNN if target.startswith(_CUDNN_PREFIX) else CUSTOM
    return NCCL if opcode in _COLLECTIVES else OTHER


def _is_command(instruction: HloInstruction, library: str) -> bool:
    """Whether CommandBufferScheduling can put it in a command buffer (`IsCommand`)."""
    if library in ("", CUBLAS, CUBLASLT, CUDNN, CUSTOM):
        return True
    if library == NCCL:
        return instruction.opcode in _COLLECTIVE_COMMANDS
    return instruction.opcode in _OTHER_COMMANDS


def module_schedule(module: HloModule) -> Schedule:
    """The module's launches in the order XLA emits them (module doc)."""
    launches: list[Launch] = []
    loops: list[tuple[int, int]] = []

    def emit(names: Sequence[str], loop: int, seen: frozenset[str]) -> None:
        for name in names:
            instruction = module.instructions.get(name)
            if instruction is None:
                continue
            if instruction.opcode in _REGIONS:
                called = [c for c in instruction.called if c not in seen]
                if instruction.opcode == "while":
                    loops.append((len(launches), -1))
                    index = len(loops) - 1
                    # the condition first, then the body (the proto lists body, condition)
                    for computation in reversed(called):
                        emit(module.sequences.get(computation, ()), index, seen | {computation})
                    loops[index] = (loops[index][0], len(launches))
                else:
                    for computation in called:
                        emit(module.sequences.get(computation, ()), loop, seen | {computation})
                continue
            library = library_of(instruction)
            if library is not None:
                launches.append(
                    Launch(instruction, library, _is_command(instruction, library), loop)
                )

    emit(module.schedule, -1, frozenset())
    return Schedule(tuple(launches), tuple(loops), _kernels(launches))


def _kernels(launches: list[Launch]) -> dict[str, tuple[tuple[int, str], ...]]:
    """Kernel name -> (position, rule) of each fusion that may launch it: its own
    name, and the name of the first fusion emitted with its fingerprint (XLA's
    kernel reuse cache; a fusion may still get its own kernel when XLA's argument
    fingerprint, which the proto does not hold, differs)."""
    owner: dict[str, str] = {}  # fingerprint -> kernel name of the first fusion with it
    found: dict[str, list[tuple[int, str]]] = {}
    for at, launch in enumerate(launches):
        if not launch.is_xla_kernel:
            continue
        own = launch.instruction.kernel_name
        found.setdefault(own, []).append((at, RULE_KERNEL_NAME))
        fingerprint = launch.instruction.fingerprint
        if not fingerprint:
            continue
        first = owner.setdefault(fingerprint, own)
        if first != own:
            found.setdefault(first, []).append((at, RULE_KERNEL_REUSE))
    return {name: tuple(sorted(positions)) for name, positions in found.items()}


def resolve_execution(
    module: HloModule,
    kernels: Sequence[str],
    annotated: Sequence[str | None],
    schedule: Schedule | None = None,
) -> list[KernelMatch]:
    """Matches one execution's kernels (names in the order they ran; `annotated`:
    the instruction an `hlo_op` stat already names, else None) to instructions.
    `schedule`: `module_schedule(module)`, when the caller keeps it."""
    plan = schedule or module_schedule(module)
    launches = plan.launches
    slots = {id(launch.instruction): at for at, launch in enumerate(launches)}
    matched: list[int | None] = [None] * len(kernels)
    result = [KernelMatch(None, "")] * len(kernels)
    previous: int | None = None
    for k, (name, known) in enumerate(zip(kernels, annotated, strict=True)):
        named = module.instructions.get(known) if known else None
        if named is not None and id(named) in slots:
            at, rule = slots[id(named)], "hlo_op"
        elif name in plan.kernels:
            found = _next_launch_of(plan, plan.kernels[name], previous)
            if found is None:
                result[k] = KernelMatch(None, "", _reused_too_often(name, plan))
                continue
            at, rule = found
        else:
            continue
        matched[k], previous = at, at
        result[k] = KernelMatch(launches[at].instruction, rule)
    settled = [m is not None or bool(r.reason) for m, r in zip(matched, result, strict=True)]
    for first, last in _unmatched_runs(settled):
        before = next(
            (matched[k] for k in range(first - 1, -1, -1) if matched[k] is not None), None
        )
        after = next(
            (matched[k] for k in range(last, len(kernels)) if matched[k] is not None), None
        )
        calls = _library_calls(plan, before, after)
        result[first:last] = _assign(calls, kernels[first:last])
    return result


def _next_launch_of(
    plan: Schedule, candidates: tuple[tuple[int, str], ...], previous: int | None
) -> tuple[int, str] | None:
    """The first candidate after the previous match; else, inside the loops holding
    the previous match, the first candidate of the loop (its next iteration)."""
    start = -1 if previous is None else previous
    later = next((c for c in candidates if c[0] > start), None)
    if later is not None or previous is None:
        return later
    for first, end in plan.enclosing_loops(previous):
        again = next((c for c in candidates if first <= c[0] < end), None)
        if again is not None:
            return again
    return None


def _reused_too_often(name: str, plan: Schedule) -> str:
    owner = plan.launches[plan.kernels[name][0][0]].instruction.name
    return (
        f"{AMBIGUOUS}: kernel {name!r} of {owner!r} ran again with no later fusion of the "
        "same fused computation (XLA's kernel reuse cache shares a kernel only between those)"
    )


def _unmatched_runs(settled: list[bool]) -> list[tuple[int, int]]:
    """[first, last) ranges of consecutive kernels neither matched nor refused."""
    runs, start = [], None
    for k, done in enumerate([*settled, True]):
        if not done and start is None:
            start = k
        elif done and start is not None:
            runs.append((start, k))
            start = None
    return runs


def _library_calls(plan: Schedule, before: int | None, after: int | None) -> list[Launch]:
    """The library calls (commands, not XLA kernels) between the matches at schedule
    positions `before` and `after` (None: an open end; then only the calls next to
    the other match, up to the nearest XLA kernel or non-command). When `after` is
    not past `before` the execution went round a loop: the rest of the loop, then
    its start."""
    launches = plan.launches
    if before is None:
        return [] if after is None else _adjacent(launches, range(after - 1, -1, -1))[::-1]
    if after is None:
        return _adjacent(launches, range(before + 1, len(launches)))
    if after > before:
        positions = list(range(before + 1, after))
    else:
        loop = next((span for span in plan.enclosing_loops(before) if span[0] <= after), None)
        if loop is None:
            return []
        positions = [*range(before + 1, loop[1]), *range(loop[0], after)]
    return [
        launches[at] for at in positions if not launches[at].is_xla_kernel and launches[at].command
    ]


def _adjacent(launches: tuple[Launch, ...], span: range) -> list[Launch]:
    """The library calls along `span` up to the first XLA kernel or non-command."""
    found = []
    for at in span:
        if launches[at].is_xla_kernel or not launches[at].command:
            break
        found.append(launches[at])
    return found


def kernel_libraries(name: str) -> set[str] | None:
    """The libraries a vendor kernel's name says it belongs to (cuBLAS and cuBLASLt
    kernels end in `_cublas`, cuDNN's carry `cudnn`, NCCL's `nccl`), None if it
    says none."""
    lowered = name.lower()
    return next((set(found) for mark, found in _KERNEL_FAMILIES if mark in lowered), None)


def _assign(calls: list[Launch], kernels: Sequence[str]) -> list[KernelMatch]:
    """The kernels split over the calls in order, each call a contiguous non-empty
    run, each kernel that names its library on a call of it, when exactly one
    such split exists; else all unattributed with the reason."""
    count = len(kernels)
    fits = [[_fits(kernel, call) for call in calls] for kernel in kernels]
    split = _only_split(fits, len(calls))
    if split is None:
        libraries = ", ".join(sorted({call.library for call in calls})) or "none"
        reason = (
            f"{AMBIGUOUS}: {count} kernel(s) without an instruction's name, "
            f"{len(calls)} library call(s) scheduled there ({libraries})"
        )
        return [KernelMatch(None, "", reason)] * count
    return [KernelMatch(calls[c].instruction, RULE_SCHEDULE) for c in split]


def _fits(kernel: str, call: Launch) -> bool:
    """Whether `call` may have launched `kernel`: a kernel that names no library fits
    any call; one that does, a call of that library or a custom call (an FFI
    handler may call any library)."""
    named = kernel_libraries(kernel)
    return named is None or call.library in named or call.library == CUSTOM


def _only_split(fits: list[list[bool]], calls: int) -> list[int] | None:
    """The call index of each kernel in the one monotone split where every call gets
    a contiguous non-empty run of kernels that fit it; None if there is none or
    more than one. ways[i][j]: the splits (capped at 2) of the first i kernels over
    the first j calls."""
    kernels = len(fits)
    if not calls or kernels < calls:
        return None
    ways = [[0] * (calls + 1) for _ in range(kernels + 1)]
    ways[0][0] = 1
    for i in range(1, kernels + 1):
        for j in range(1, calls + 1):
            if not fits[i - 1][j - 1]:
                continue
            # kernel i-1 ends call j-1's run: it either starts it or extends it
            ways[i][j] = min(2, ways[i - 1][j - 1] + ways[i - 1][j])
    if ways[kernels][calls] != 1:
        return None
    split, j = [], calls
    for i in range(kernels, 0, -1):
        split.append(j - 1)  # on the one split, exactly one of the two ways below is 1
        if ways[i - 1][j - 1]:
            j -= 1
    return split[::-1]
