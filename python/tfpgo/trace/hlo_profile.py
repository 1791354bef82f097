"""Per-module, per-instruction and per-fusion HLO times (`hlo_profile.json`).

The document (format `tfpgo.hlo_profile`, version 1, docs/formats.md) is the
XLA view of a profile: every compiled module, each instruction that ran with
its count, time and the TF nodes it covers (a fusion's nodes with their equal
parts, see `tfpgo.trace.xla_attribution`), and the XLA-inserted instructions (no
nodes). The report's XLA section and the op graph's fusion clusters read it.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tfpgo.documents import expect_format, new_header, read_json, write_compact_json
from tfpgo.errors import UserError
from tfpgo.trace.xla_attribution import SPLIT_RULE, HloAttribution

FORMAT = "tfpgo.hlo_profile"
VERSION = 1


@dataclass(frozen=True)
class NodeTime:
    """A TF node's time from one instruction (runtime node name)."""

    name: str
    ps: int


@dataclass(frozen=True)
class InstructionTime:
    """Every execution of one HLO instruction; `nodes` empty: XLA-inserted."""

    name: str
    opcode: str
    fusion: bool
    count: int
    total_ps: int
    nodes: tuple[NodeTime, ...]


@dataclass(frozen=True)
class ModuleTime:
    """One compiled module; `calls`: the call nodes it ran under ("" = the step itself)."""

    name: str
    program_id: int
    calls: tuple[str, ...]
    events: int
    total_ps: int
    instructions: tuple[InstructionTime, ...]


@dataclass(frozen=True)
class HloProfile:
    source: str
    hlo_ps: int
    attributed_ps: int
    xla_inserted_ps: int
    modules: tuple[ModuleTime, ...]

    def fusions(self) -> list[tuple[str, InstructionTime]]:
        """(module, fusion) pairs over all modules, largest first."""
        found = [(m.name, i) for m in self.modules for i in m.instructions if i.fusion]
        return sorted(found, key=lambda pair: (-pair[1].total_ps, pair[0], pair[1].name))

    def to_json(self) -> dict[str, Any]:
        return {
            **new_header(FORMAT, VERSION, self.source),
            "split_rule": SPLIT_RULE,
            "totals": {
                "hlo_ps": self.hlo_ps,
                "attributed_ps": self.attributed_ps,
                "xla_inserted_ps": self.xla_inserted_ps,
                "modules": len(self.modules),
                "fusions": len(self.fusions()),
            },
            "modules": [_module_json(module) for module in self.modules],
        }

    def write(self, path: Path) -> None:
        """Writes the document atomically (no half-written file on failure)."""
        write_compact_json(path, self.to_json())

    @staticmethod
    def read(path: Path) -> HloProfile:
        document = read_json(path)
        expect_format(path, document, FORMAT)
        try:
            totals = document["totals"]
            return HloProfile(
                document["source"],
                totals["hlo_ps"],
                totals["attributed_ps"],
                totals["xla_inserted_ps"],
                tuple(_module_from_json(module) for module in document["modules"]),
            )
        except (KeyError, TypeError) as error:
            raise UserError(f"{path}: malformed {FORMAT} document ({error})") from None


def build_hlo_profile(source: str, xla: HloAttribution) -> HloProfile:
    """Sums `xla`'s events and parts per module and instruction."""
    counts: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    calls: dict[str, set[str]] = defaultdict(set)
    for event in xla.events:
        count_ps = counts[(event.module, event.instruction)]
        count_ps[0] += 1
        count_ps[1] += event.duration_ps
        calls[event.module].add(event.call)
    node_ps: dict[tuple[str, str], dict[str, int]] = defaultdict(dict)
    for part in xla.parts:
        by_node = node_ps[(part.event.module, part.event.instruction)]
        by_node[part.node] = by_node.get(part.node, 0) + part.ps
    modules = []
    for module_name in sorted(calls):
        known = xla.modules.get(module_name)
        instructions = []
        for (owner, name), (count, total) in counts.items():
            if owner != module_name:
                continue
            info = known.instructions.get(name) if known else None
            nodes = tuple(NodeTime(n, ps) for n, ps in node_ps[(owner, name)].items())
            instructions.append(
                InstructionTime(
                    name,
                    info.opcode if info else "",
                    bool(info and info.is_fusion),
                    count,
                    total,
                    nodes,
                )
            )
        instructions.sort(key=lambda i: (-i.total_ps, i.name))
        modules.append(
            ModuleTime(
                module_name,
                known.program_id if known else -1,
                tuple(sorted(calls[module_name])),
                sum(i.count for i in instructions),
                sum(i.total_ps for i in instructions),
                tuple(instructions),
            )
        )
    modules.sort(key=lambda m: (-m.total_ps, m.name))
    return HloProfile(source, xla.hlo_ps, xla.attributed_ps, xla.inserted_ps, tuple(modules))


def _module_json(module: ModuleTime) -> dict[str, Any]:
    return {
        "name": module.name,
        "program_id": module.program_id,
        "calls": list(module.calls),
        "events": module.events,
        "total_ps": module.total_ps,
        "instructions": [
            {
                "name": i.name,
                "opcode": i.opcode,
                "fusion": i.fusion,
                "count": i.count,
                "total_ps": i.total_ps,
                "tf_nodes": [{"name": n.name, "ps": n.ps} for n in i.nodes],
            }
            for i in module.instructions
        ],
    }


def _module_from_json(module: dict[str, Any]) -> ModuleTime:
    return ModuleTime(
        module["name"],
        module["program_id"],
        tuple(module["calls"]),
        module["events"],
        module["total_ps"],
        tuple(
            InstructionTime(
                i["name"],
                i["opcode"],
                i["fusion"],
                i["count"],
                i["total_ps"],
                tuple(NodeTime(n["name"], n["ps"]) for n in i["tf_nodes"]),
            )
            for i in module["instructions"]
        ),
    )
