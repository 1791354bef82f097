"""The report's "TensorFlow kernels vs IREE dispatches" section (`--lower iree`):
per dispatch site of the IREE-compiled program (one executable may run at many
places of the program: `tfpgo.iree.sites`), the TensorFlow self time of that
site's tf ops and the site's own time, each per step, largest gap first."""

from __future__ import annotations

from tfpgo.iree.profile_document import BY_PROGRAM, IreeProfile
from tfpgo.render.metrics import format_ps

SHOWN_OPS = 3


def iree_summary(profile: IreeProfile, tf_steps: int, tf_op_self_ps: int) -> str:
    """One paragraph: step times side by side, attribution, the output check."""
    iree_step = profile.dispatch_ps // max(profile.runs, 1)
    tf_step = tf_op_self_ps // max(tf_steps, 1)
    share = profile.attributed_ps / profile.dispatch_ps if profile.dispatch_ps else 1.0
    sites = sum(len(d.sites) for d in profile.dispatches)
    whole = [d for d in profile.dispatches if d.sites_from != BY_PROGRAM and d.sources]
    caveat = (
        f" ({len(whole)} charged as a whole to the ops their code names: their "
        "invocations did not match their sites)"
        if whole
        else ""
    )
    return (
        f"IREE ({profile.runs} runs, llvm-cpu for this host): {format_ps(iree_step)} of "
        f"dispatch time a step against {format_ps(tf_step)} of TensorFlow op time; "
        f"{len(profile.dispatches)} dispatches at {sites} sites{caveat}, {share:.2%} of their "
        f"time on tf ops; {profile.outputs_text()} (tolerance {profile.rtol:g} "
        f"relative + {profile.atol:g})."
    )


def iree_rows(profile: IreeProfile, tf_steps: int, top: int) -> list[list[str]]:
    """Per dispatch site: TF time of its own tf ops, its IREE time (a step each),
    ratio, tf ops; largest gap first."""
    rows = []
    for dispatch in profile.dispatches:
        for index, site in enumerate(dispatch.sites, start=1):
            tf = site.tf_self_ps // max(tf_steps, 1)
            iree = site.total_ps // max(profile.runs, 1)
            ratio = f"{iree / tf:.2f}x" if tf else "–"
            ops = ", ".join(site.sources[:SHOWN_OPS]) or "(no tf op: unattributed)"
            if len(site.sources) > SHOWN_OPS:
                ops += f", +{len(site.sources) - SHOWN_OPS} more"
            where = f"{index} of {len(dispatch.sites)}"
            if dispatch.sites_from != BY_PROGRAM:
                where = "all (as a whole)" if site.sources else "all"
            row = [dispatch.name, where, format_ps(tf), format_ps(iree), ratio, ops]
            rows.append((abs(iree - tf), row))
    rows.sort(key=lambda row: -row[0])
    return [row for _, row in rows[:top]]


IREE_HEADER = ["dispatch", "site", "TF a step", "IREE a step", "IREE / TF", "tf ops"]


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
