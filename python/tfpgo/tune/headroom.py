"""What holds back each hot dispatch --tune leaves below 85% of its bound.

For every dispatch of the program the loop leaves (the tuned one, or the
original) that has at least `MIN_SHARE` of the dispatch time and runs below
`AT_LIMIT` of its roofline bound: the fraction it reached, whether memory or
compute sets the bound, and what was tried on it with each try's measured
ratio: the tile searches' variants (tiles.json, on its benchmark and in the
program), the decisions made on it, and the whole-program options. A dispatch
is matched across the programs by what IREE names it after its number (its
root op, loop ranges and type: `matmul_8x1000x1280_f32`), since a rebuilt
program numbers its dispatches anew.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from tfpgo.iree.profile_document import IreeProfile
from tfpgo.tune.dispatch_tiles import MIN_SHARE, SEARCH
from tfpgo.tune.document import CandidateTrial, Decision, HeldBack
from tfpgo.tune.roofline import (
    AT_LIMIT,
    MachineLimit,
    achieved_fraction,
    bound_by,
    dispatch_bound,
    dispatch_work,
)


def dispatch_key(name: str) -> str:
    """`matmul_8x1000x1280_f32` of `main_dispatch_12_matmul_8x1000x1280_f32`."""
    _, _, rest = name.partition("_dispatch_")
    return rest.partition("_")[2] or name


def held_back(
    profile: IreeProfile,
    limit: MachineLimit,
    decisions: Sequence[Decision],
    trials: Sequence[CandidateTrial],
    out: Path,
) -> tuple[HeldBack, ...]:
    """The module docstring's rows for `profile`, hottest first; the tile
    searches' documents are read from `out` (tiles.json, tiles.2.json, ...)."""
    total = max(profile.dispatch_ps, 1)
    tried = dispatch_tries(out, decisions)
    whole = whole_program_tries(decisions, trials)
    found = []
    for dispatch in sorted(profile.dispatches, key=lambda d: -d.total_ps):
        work = dispatch_work(dispatch.name)
        if work is None or dispatch.total_ps < MIN_SHARE * total or not dispatch.count:
            continue
        bound_s = dispatch_bound(work, limit) * dispatch.count
        fraction = achieved_fraction(bound_s, dispatch.total_ps / 1e12)
        if fraction >= AT_LIMIT:
            continue
        tries = list(tried.get(dispatch_key(dispatch.name), ()))
        if whole:
            tries.append("whole program: " + ", ".join(whole))
        found.append(HeldBack(dispatch.name, fraction, bound_by(work, limit), tuple(tries)))
    return tuple(found)


def dispatch_tries(out: Path, decisions: Sequence[Decision]) -> dict[str, list[str]]:
    """Per dispatch key, what was tried on that dispatch alone, one line each
    with its measured ratio: the tile searches (read from `out`), then the
    decisions made on it."""
    tried = _searched(out)
    for d in decisions:
        if d.dispatch and d.after_ps and d.before_ps:
            tried.setdefault(dispatch_key(d.dispatch), []).append(
                f"{d.candidate}: {d.change}, {d.after_ps / d.before_ps:.2f} "
                f"({'kept' if d.kept else 'not kept'})"
            )
    return tried


def whole_program_tries(
    decisions: Sequence[Decision], trials: Sequence[CandidateTrial]
) -> list[str]:
    """The candidates measured on the whole program, not on one dispatch: each
    with its A/B ratio and verdict."""
    return [
        f"{t.name} {t.result.ratio:.3f} ({t.result.verdict.value})"
        for t in trials
        if t.result is not None and not any(d.candidate == t.name and d.dispatch for d in decisions)
    ]


def _searched(out: Path) -> dict[str, list[str]]:
    """Per dispatch key, one line per tile search of it: how many variants, the
    best ratio on its benchmark and in the program."""
    lines: dict[str, list[str]] = {}
    for path in sorted(out.glob(f"{Path(SEARCH).stem}*.json")):
        for name, entry in json.loads(path.read_text())["dispatches"].items():
            alone = [t["ps"] / t["iree_ps"] for t in entry["tried"] if t["iree_ps"] > 0]
            placed = [t["ps"] / t["iree_ps"] for t in entry["in_place"] if t["iree_ps"] > 0]
            if not alone and not placed:
                continue
            line = (
                f"{path.name}: {len(alone)} tile variants, best {min(alone, default=1):.2f} alone"
            )
            if placed:
                line += f", {min(placed):.2f} in the program"
            lines.setdefault(dispatch_key(name), []).append(line)
    return lines
