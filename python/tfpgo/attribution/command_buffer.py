"""Kernels of an XLA command buffer (a CUDA graph) back to their HLO instructions.

With command buffers (XLA GPU's default) a run of thunks is recorded once into a
CUDA graph and replayed by one `cuGraphLaunch`: every kernel of it carries the
command buffer's name as `hlo_op` (`command_buffer_1`), not its instruction's
(xprof stops there: openxla/xprof#3070, #2544). The trace's `HloProto` is the
module as scheduled, before thunks became command buffers, so one execution's
kernels (one launch: the same `correlation_id`), in the order they ran, are the
kernel-launching instructions of a stretch of the entry computation's schedule:

  * **kernel name**: XLA names a fusion's kernel after the instruction
    (`HloInstruction.kernel_name`: `loop_add_fusion.2` -> `loop_add_fusion_2`).
    A kernel whose name is an instruction's kernel name is that instruction, the
    first such one at or after the previous match in the schedule. XLA launches one
    kernel for identical fusions: a name seen again with no such instruction left
    is the next fusion whose own kernel name runs nowhere later;
  * **schedule**: library calls (cuBLAS, cuDNN custom calls) launch vendor kernels
    (`sm90_xmma_gemm_...`). The kernels between two matched ones belong to the
    non-fusion instructions scheduled between those two: all of them to the one
    such instruction (a cuDNN call may launch several kernels), or one each, in
    order, when the counts agree. Before the first (after the last) match, the
    non-fusion instructions right before (after) it in the schedule;
  * anything else is ambiguous and stays unattributed, with the reason.

Kernels in the execution whose `hlo_op` already names an instruction (XLA
annotates some) are matches as they are.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tfpgo.trace.readers.hlo_metadata import HloInstruction, HloModule

RULE_KERNEL_NAME = "command_buffer_kernel_name"
RULE_SCHEDULE = "command_buffer_schedule"
# Entry instructions that launch nothing: they only name or regroup buffers.
_NO_KERNEL = frozenset(
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


@dataclass(frozen=True)
class KernelMatch:
    """The instruction one kernel of an execution ran, or why none was found."""

    instruction: HloInstruction | None
    rule: str  # RULE_KERNEL_NAME, RULE_SCHEDULE, "hlo_op" (annotated), "" if none
    reason: str = ""


def launching_instructions(module: HloModule) -> list[HloInstruction]:
    """The entry computation's instructions that launch work, in schedule order."""
    found = (module.instructions.get(name) for name in module.schedule)
    return [i for i in found if i is not None and i.opcode not in _NO_KERNEL]


def resolve_execution(
    module: HloModule, kernels: Sequence[str], annotated: Sequence[str | None]
) -> list[KernelMatch]:
    """Matches one execution's kernels (names in the order they ran; `annotated`:
    the instruction an `hlo_op` stat already names, else None) to instructions."""
    schedule = launching_instructions(module)
    slots = {id(instruction): at for at, instruction in enumerate(schedule)}
    by_kernel: dict[str, list[int]] = {}
    for at, instruction in enumerate(schedule):
        by_kernel.setdefault(instruction.kernel_name, []).append(at)
    matched: list[int | None] = [None] * len(kernels)
    rules = [""] * len(kernels)
    position = 0
    for k, (name, known) in enumerate(zip(kernels, annotated, strict=True)):
        named = module.instructions.get(known) if known else None
        if named is not None and id(named) in slots:
            matched[k], rules[k] = slots[id(named)], "hlo_op"
        elif name in by_kernel:
            later = [at for at in by_kernel[name] if at >= position]
            if later:
                matched[k], rules[k] = later[0], RULE_KERNEL_NAME
            elif (reused := _next_unnamed_fusion(schedule, position, kernels[k + 1 :])) is not None:
                matched[k], rules[k] = reused, RULE_SCHEDULE
        if matched[k] is not None:
            position = int(matched[k] or 0) + 1
    taken = {at for at in matched if at is not None}
    result = [
        KernelMatch(schedule[at], rules[k]) if at is not None else KernelMatch(None, "")
        for k, at in enumerate(matched)
    ]
    for first, last in _unmatched_runs(matched):
        before = next(
            (matched[k] for k in range(first - 1, -1, -1) if matched[k] is not None), None
        )
        after = next(
            (matched[k] for k in range(last, len(kernels)) if matched[k] is not None), None
        )
        candidates = _library_calls(schedule, before, after, taken)
        for k, match in zip(range(first, last), _assign(candidates, last - first), strict=True):
            result[k] = match
    return result


def _next_unnamed_fusion(
    schedule: list[HloInstruction], position: int, later_kernels: Sequence[str]
) -> int | None:
    """The next fusion from `position` whose own kernel name no later kernel has: the
    instruction that reused an earlier fusion's kernel."""
    names = set(later_kernels)
    return next(
        (
            at
            for at in range(position, len(schedule))
            if schedule[at].is_fusion and schedule[at].kernel_name not in names
        ),
        None,
    )


def _unmatched_runs(matched: list[int | None]) -> list[tuple[int, int]]:
    """[first, last) ranges of consecutive kernels without a match."""
    runs, start = [], None
    for k, at in enumerate([*matched, 0]):
        if at is None and start is None:
            start = k
        elif at is not None and start is not None:
            runs.append((start, k))
            start = None
    return runs


def _library_calls(
    schedule: list[HloInstruction], before: int | None, after: int | None, taken: set[int]
) -> list[HloInstruction]:
    """Unmatched non-fusion instructions between the matches `before` and `after`
    (schedule positions; None: open end, then only the block next to the other)."""
    if before is None and after is None:
        return []
    if before is not None and after is not None:
        span = range(before + 1, after)
    elif after is not None:  # the block right before the first match
        span = range(after - 1, -1, -1)
    else:
        span = range(int(before or 0) + 1, len(schedule))
    found = []
    for at in span:
        if at in taken:
            break
        if schedule[at].is_fusion:
            if before is None or after is None:
                break
            continue
        found.append(schedule[at])
    return found[::-1] if before is None else found


def _assign(candidates: list[HloInstruction], kernels: int) -> list[KernelMatch]:
    if len(candidates) == 1:
        return [KernelMatch(candidates[0], RULE_SCHEDULE)] * kernels
    if len(candidates) == kernels:
        return [KernelMatch(c, RULE_SCHEDULE) for c in candidates]
    reason = (
        f"command_buffer_ambiguous: {kernels} kernel(s) without an instruction's name, "
        f"{len(candidates)} library call(s) scheduled there"
    )
    return [KernelMatch(None, "", reason)] * kernels
