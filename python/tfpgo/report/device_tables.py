"""The device part of the op profile as report tables: the top kernels with the ops
they ran for and the rule that found them, copies by direction, device time no
op could take (with the reason) and busy/idle time per step. Presentation only."""

from __future__ import annotations

from tfpgo.attribution.op_profile import OpProfile
from tfpgo.render.metrics import format_ps
from tfpgo.report.analysis_tables import Table

# A kernel row names this many of the ops it ran for, then "+k more".
_OPS_SHOWN = 4
_KERNEL_NAME_CHARS = 60


def _share(part: int, whole: int) -> str:
    return f"{part / whole:.1%}" if whole else "–"


def device_summary(profile: OpProfile) -> str:
    """One line: device time, kernels vs copies, the part on ops, idle in the steps."""
    totals = profile.totals
    window = totals.device_busy_ps + totals.device_idle_ps
    on_ops = _share(totals.device_attributed_ps, totals.device_ps)
    return (
        f"{format_ps(totals.device_ps)} in {totals.device_events:,} device events "
        f"(kernels {format_ps(totals.device_kernel_ps)}, copies and memsets "
        f"{format_ps(totals.device_copy_ps)}); {on_ops} on framework ops; "
        f"idle {_share(totals.device_idle_ps, window)} of the steps' "
        f"device time ({format_ps(totals.device_idle_ps)} of {format_ps(window)})"
    )


def _ops_cell(ops: tuple[str, ...], folded: tuple[str, ...] = ()) -> str:
    """The first ops, and the kernel's ops the module lacks (their part is on `ops`)."""
    shown = ", ".join(ops[:_OPS_SHOWN])
    shown += f", +{len(ops) - _OPS_SHOWN} more" if len(ops) > _OPS_SHOWN else ""
    return shown + (f" (folded into them: {', '.join(folded)})" if folded else "")


def _kernel_name(name: str) -> str:
    return name if len(name) <= _KERNEL_NAME_CHARS else name[: _KERNEL_NAME_CHARS - 1] + "…"


def device_tables(profile: OpProfile, top_n: int) -> list[Table]:
    """(title, header, rows) of the device section; tables without rows left out."""
    totals = profile.totals
    kernels = [
        [
            _kernel_name(k.name),
            k.kind,
            k.instruction or "–",
            k.rule,
            format_ps(k.total_ps),
            _share(k.total_ps, totals.device_ps),
            str(k.count),
            _ops_cell(k.ops, k.folded),
        ]
        for k in profile.device_kernels
        if k.ops
    ][:top_n]
    copies = [
        [c.kind, str(c.count), format_ps(c.total_ps), format_ps(c.attributed_ps)]
        for c in profile.device_copies
    ]
    unattributed = [
        [_kernel_name(k.name), k.kind, k.device, k.reason, format_ps(k.total_ps), str(k.count)]
        for k in profile.device_kernels
        if not k.ops
    ][:top_n]
    steps = [
        [
            s.device,
            str(s.step) if s.step >= 0 else "(no step markers)",
            format_ps(s.window_ps),
            format_ps(s.busy_ps),
            _share(s.window_ps - s.busy_ps, s.window_ps),
        ]
        for s in profile.device_steps
    ]
    tables: list[Table] = [
        (
            "Top kernels and the ops they ran for",
            ["kernel", "kind", "instruction", "found by", "time", "share", "count", "ops"],
            kernels,
        ),
        (
            "Copies and memsets",
            ["kind", "count", "time", "on ops"],
            copies,
        ),
        (
            "Device time on no op (listed, never dropped)",
            ["event", "kind", "device", "why", "time", "count"],
            unattributed,
        ),
        (
            "Device busy and idle per step",
            ["device", "step", "window", "busy", "idle"],
            steps,
        ),
    ]
    return [table for table in tables if table[2]]
