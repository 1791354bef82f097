"""Per-module, per-instruction and per-fusion HLO times (`hlo_profile.json`).

The document (format `tfpgo.hlo_profile`, version 2, docs/formats.md) is the
XLA view of a profile: every compiled module, each instruction that ran with
its count, time and the TF nodes it covers (a fusion's nodes with their equal
parts, see `tfpgo.attribution.xla_attribution`), and the XLA-inserted instructions (no
nodes). On a GPU the instruction's kernels add `device_ps`/`device_count` beside
the host time (a command buffer's kernels under the instruction they were
resolved to, `resolved_by` naming how: `tfpgo.attribution.device_attribution`).
The report's XLA section and the op graph's fusion clusters read it.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from tfpgo.attribution.device_attribution import DeviceAttribution
from tfpgo.attribution.xla_attribution import SPLIT_RULE, HloAttribution
from tfpgo.documents import malformed_as_error, new_header, read_document, write_compact_json
from tfpgo.trace.events import EventTable

FORMAT = "tfpgo.hlo_profile"
VERSION = 2


@dataclass(frozen=True)
class NodeTime:
    """A TF node's time from one instruction (runtime node name)."""

    name: str
    ps: int
    device_ps: int = 0


@dataclass(frozen=True)
class InstructionTime:
    """Every execution of one HLO instruction; `nodes` empty: XLA-inserted.
    `count`/`total_ps`: host HLO events; `device_*`: its device kernels and copies."""

    name: str
    opcode: str
    fusion: bool
    count: int
    total_ps: int
    nodes: tuple[NodeTime, ...]
    device_count: int = 0
    device_ps: int = 0
    resolved_by: tuple[str, ...] = ()
    # No op_name of its own: the nodes of its nearest named neighbour (the rule,
    # and the instruction chain from it to that neighbour).
    inferred_by: str = ""
    inferred_from: tuple[str, ...] = ()


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
    # device kernels and copies that ran an instruction, and the part on TF nodes
    device_ps: int = 0
    device_attributed_ps: int = 0

    def fusions(self) -> list[tuple[str, InstructionTime]]:
        """(module, fusion) pairs over all modules, largest first."""
        found = [(m.name, i) for m in self.modules for i in m.instructions if i.fusion]
        return sorted(
            found, key=lambda pair: (-pair[1].device_ps, -pair[1].total_ps, pair[0], pair[1].name)
        )

    def to_json(self) -> dict[str, Any]:
        return {
            **new_header(FORMAT, VERSION, self.source),
            "split_rule": SPLIT_RULE,
            "totals": {
                "hlo_ps": self.hlo_ps,
                "attributed_ps": self.attributed_ps,
                "xla_inserted_ps": self.xla_inserted_ps,
                "device_ps": self.device_ps,
                "device_attributed_ps": self.device_attributed_ps,
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
        document = read_document(path, FORMAT)
        with malformed_as_error(path, FORMAT):
            totals = document["totals"]
            return HloProfile(
                document["source"],
                totals["hlo_ps"],
                totals["attributed_ps"],
                totals["xla_inserted_ps"],
                tuple(_module_from_json(module) for module in document["modules"]),
                totals.get("device_ps", 0),
                totals.get("device_attributed_ps", 0),
            )


def build_hlo_profile(
    source: str,
    xla: HloAttribution,
    device: DeviceAttribution | None = None,
    table: EventTable | None = None,
) -> HloProfile:
    """Sums `xla`'s events and parts, and `device`'s instruction kernels (with the
    `table` they came from), per module and instruction."""
    counts: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    calls: dict[str, set[str]] = defaultdict(set)
    for event in xla.events:
        count_ps = counts[(event.module, event.instruction)]
        count_ps[0] += 1
        count_ps[1] += event.duration_ps
        calls[event.module].add(event.call)
    node_ps: dict[tuple[str, str], dict[str, list[int]]] = defaultdict(dict)
    for part in xla.parts:
        by_node = node_ps[(part.event.module, part.event.instruction)]
        by_node.setdefault(part.node, [0, 0])[0] += part.ps
    on_device = _device_instructions(device, table, node_ps)
    for module_name, _ in on_device:
        calls.setdefault(module_name, set())  # ran on the device only: no host call
    modules = []
    for module_name in sorted(calls):
        known = xla.modules.get(module_name)
        instructions = []
        names = {n for owner, n in (*counts, *on_device) if owner == module_name}
        for name in names:
            count, total = counts.get((module_name, name), (0, 0))
            device_count, device_ps, rules = on_device.get((module_name, name), (0, 0, ()))
            info = known.instructions.get(name) if known else None
            nodes = tuple(NodeTime(n, *ps) for n, ps in node_ps[(module_name, name)].items())
            instructions.append(
                InstructionTime(
                    name,
                    info.opcode if info else "",
                    bool(info and info.is_fusion),
                    count,
                    total,
                    nodes,
                    device_count,
                    device_ps,
                    rules,
                    info.inferred_by if info else "",
                    info.inferred_from if info else (),
                )
            )
        instructions.sort(key=lambda i: (-i.device_ps, -i.total_ps, i.name))
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
    modules.sort(key=lambda m: (-sum(i.device_ps for i in m.instructions), -m.total_ps, m.name))
    device_ps = sum(ps for _, ps, _ in on_device.values())
    device_attributed = sum(n.device_ps for m in modules for i in m.instructions for n in i.nodes)
    return HloProfile(
        source,
        xla.hlo_ps,
        xla.attributed_ps,
        xla.inserted_ps,
        tuple(modules),
        device_ps,
        device_attributed,
    )


def _device_instructions(
    device: DeviceAttribution | None,
    table: EventTable | None,
    node_ps: dict[tuple[str, str], dict[str, list[int]]],
) -> dict[tuple[str, str], tuple[int, int, tuple[str, ...]]]:
    """(module, instruction) -> (device events, their ps, rules) over the device events
    resolved to an instruction; adds their node parts to `node_ps`."""
    if device is None or table is None or not len(device):
        return {}
    durations = table.duration_ps[device.rows]
    ps = np.bincount(device.resolution, weights=durations, minlength=len(device.resolutions))
    count = np.bincount(device.resolution, minlength=len(device.resolutions))
    found: dict[tuple[str, str], list[Any]] = {}
    for at, resolution in enumerate(device.resolutions):
        if not resolution.instruction or not count[at]:
            continue
        entry = found.setdefault((resolution.module, resolution.instruction), [0, 0, set()])
        entry[0] += int(count[at])
        entry[1] += round(ps[at])
        entry[2].add(resolution.rule or resolution.reason)
    for node, resolution, _, part_ps in device.parts_by_node_and_resolution():
        if resolution.instruction:
            by_node = node_ps[(resolution.module, resolution.instruction)]
            by_node.setdefault(node.name, [0, 0])[1] += part_ps
    return {key: (c, p, tuple(sorted(rules))) for key, (c, p, rules) in found.items()}


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
                "device_count": i.device_count,
                "device_ps": i.device_ps,
                "resolved_by": list(i.resolved_by),
                "inferred_by": i.inferred_by,
                "inferred_from": list(i.inferred_from),
                "tf_nodes": [
                    {"name": n.name, "ps": n.ps, "device_ps": n.device_ps} for n in i.nodes
                ],
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
                tuple(NodeTime(n["name"], n["ps"], n.get("device_ps", 0)) for n in i["tf_nodes"]),
                i.get("device_count", 0),
                i.get("device_ps", 0),
                tuple(i.get("resolved_by", ())),
                i.get("inferred_by", ""),
                tuple(i.get("inferred_from", ())),
            )
            for i in module["instructions"]
        ),
    )
