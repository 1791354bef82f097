"""The report's "TensorFlow kernels vs IREE dispatches" section (`--lower iree`):
per dispatch of the IREE-compiled program, the TensorFlow self time of the tf ops
it runs and its own time, each per step, largest gap first."""

from __future__ import annotations

from tfpgo.iree.run import IreeProfile
from tfpgo.render.metrics import format_ps

SHOWN_OPS = 3


def iree_summary(profile: IreeProfile, tf_steps: int, tf_op_self_ps: int) -> str:
    """One paragraph: step times side by side, attribution, the output check."""
    iree_step = profile.dispatch_ps // max(profile.runs, 1)
    tf_step = tf_op_self_ps // max(tf_steps, 1)
    share = profile.attributed_ps / profile.dispatch_ps if profile.dispatch_ps else 1.0
    return (
        f"IREE ({profile.runs} runs, llvm-cpu for this host): {format_ps(iree_step)} of "
        f"dispatch time a step against {format_ps(tf_step)} of TensorFlow op time; "
        f"{len(profile.dispatches)} dispatches, {share:.2%} of their time on tf ops; outputs "
        f"within {profile.outputs_max_abs:.3g} of TensorFlow's (tolerance {profile.rtol:g} "
        f"relative + {profile.atol:g})."
    )


def iree_rows(profile: IreeProfile, tf_steps: int, top: int) -> list[list[str]]:
    """Per dispatch: TF time, IREE time (a step each), ratio, tf ops; largest gap first."""
    rows = []
    for dispatch in profile.dispatches:
        tf = dispatch.tf_self_ps // max(tf_steps, 1)
        iree = dispatch.total_ps // max(profile.runs, 1)
        ratio = f"{iree / tf:.2f}x" if tf else "–"
        ops = ", ".join(dispatch.sources[:SHOWN_OPS]) or "(no tf op: unattributed)"
        if len(dispatch.sources) > SHOWN_OPS:
            ops += f", +{len(dispatch.sources) - SHOWN_OPS} more"
        rows.append((abs(iree - tf), [dispatch.name, format_ps(tf), format_ps(iree), ratio, ops]))
    rows.sort(key=lambda row: -row[0])
    return [row for _, row in rows[:top]]


IREE_HEADER = ["dispatch", "TF a step", "IREE a step", "IREE / TF", "tf ops"]


def scope_rows(profile: IreeProfile, tf_steps: int, top: int) -> list[list[str]]:
    """Per layer scope (a tf op's name without its last component): TF self time and
    IREE dispatch time of its ops, a step each; largest gap first."""
    sums: dict[str, list[int]] = {}
    for name, iree_ps in profile.op_ps.items():
        scope = name.rsplit("/", 1)[0] if "/" in name else name
        row = sums.setdefault(scope, [0, 0])
        row[0] += profile.op_tf_ps.get(name, 0) // max(tf_steps, 1)
        row[1] += iree_ps // max(profile.runs, 1)
    rows = sorted(sums.items(), key=lambda item: -abs(item[1][1] - item[1][0]))
    return [
        [scope, format_ps(tf), format_ps(iree), f"{iree / tf:.2f}x" if tf else "–"]
        for scope, (tf, iree) in rows[:top]
    ]


SCOPE_HEADER = ["layer scope", "TF a step", "IREE a step", "IREE / TF"]
