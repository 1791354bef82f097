"""`analysis.json` (format `tfpgo.analysis` v1, docs/formats.md): the three
breakdowns of one op profile in one document, and for a trace with device time
the same three over device time (`device`, `tfpgo.analysis.device`)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tfpgo.analysis.device import device_view
from tfpgo.analysis.op_type import OpTypeRow, op_type_breakdown
from tfpgo.analysis.phase import Phase, PhaseBreakdown, phase_breakdown
from tfpgo.analysis.scope import ScopeNode, scope_tree
from tfpgo.atomic import atomic_output_file
from tfpgo.attribution.op_profile import OpProfile, Totals
from tfpgo.documents import new_header

FORMAT = "tfpgo.analysis"
VERSION = 1


@dataclass(frozen=True)
class Analysis:
    source: str  # the op profile's source trace
    totals: Totals  # the op profile's totals, which every breakdown sums to
    phases: PhaseBreakdown
    op_types: tuple[OpTypeRow, ...]
    scopes: ScopeNode
    # The same breakdowns over device time (None: the trace has no device planes).
    device: Analysis | None = None
    # The regions tf-profile-guided-xla-regions chose from this profile (its
    # xla_regions.json), for the proposer's `xla_regions` rule: a file beside the
    # analysis, set by the flow when it ran the pass; not part of analysis.json.
    xla_regions: Path | None = None

    def to_json(self) -> dict[str, Any]:
        document = {**new_header(FORMAT, VERSION, self.source), **self._breakdowns()}
        if self.device is not None:
            document["device"] = self.device._breakdowns()
        return document

    def _breakdowns(self) -> dict[str, Any]:
        totals = self.totals
        return {
            "totals": {
                "op_self_ps": totals.op_self_ps,
                "op_total_ps": totals.op_total_ps,
                "op_events": totals.op_events,
                "non_op_ps": totals.non_op_ps,
            },
            "phases": [
                {
                    "phase": row.phase.value,
                    "self_ps": row.self_ps,
                    "total_ps": row.total_ps,
                    "count": row.count,
                    "ops": row.ops,
                }
                for row in self.phases.rows
            ],
            "non_op_ps": self.phases.non_op_ps,
            "op_types": [
                {
                    "op_type": row.op_type,
                    **_sums(row),
                    "kernels": [{"kernel": k.kernel, **_sums(k)} for k in row.kernels],
                }
                for row in self.op_types
            ],
            "scopes": _scope_json(self.scopes),
        }

    def write(self, path: Path) -> None:
        with atomic_output_file(path) as handle:
            handle.write(json.dumps(self.to_json(), separators=(",", ":")) + "\n")


def _sums(row: Any) -> dict[str, int]:
    return {"self_ps": row.self_ps, "total_ps": row.total_ps, "count": row.count, "ops": row.ops}


def _scope_json(node: ScopeNode) -> dict[str, Any]:
    return {
        "name": node.name,
        "path": node.path,
        **_sums(node),
        "own_self_ps": node.own_self_ps,
        "phase_self_ps": {phase.value: ps for phase, ps in node.phase_self_ps.items()},
        "children": [_scope_json(child) for child in node.children],
    }


def analyse(profile: OpProfile, structural: Mapping[str, Phase] | None = None) -> Analysis:
    """The breakdowns of `profile`, and of its device view when it has device time;
    `structural`: phases per runtime name from the op graph (tfpgo.analysis.structure),
    the name rules elsewhere."""
    device = _breakdowns(device_view(profile), structural) if profile.has_device else None
    return dataclasses.replace(_breakdowns(profile, structural), device=device)


def _breakdowns(profile: OpProfile, structural: Mapping[str, Phase] | None) -> Analysis:
    return Analysis(
        profile.source,
        profile.totals,
        phase_breakdown(profile, structural),
        op_type_breakdown(profile),
        scope_tree(profile, structural),
    )
