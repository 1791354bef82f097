"""XLA's compiled modules from a trace's `/host:metadata` plane.

When a step runs under XLA the profiler stores, per compiled module, one event
metadata entry on the `/host:metadata` plane whose stat `Hlo Proto` holds the
serialized `HloProto`. Each HLO instruction's `metadata.op_name` / `op_type`
name the TensorFlow node it was lowered from (XLA's provenance, the one xprof
uses). A fusion instruction's fused computation lists the instructions, and so
the nodes, it covers. The protos are parsed with the classes XLA ships
(`tfpgo.trace.readers.xplane_proto.hlo_pb2`).

Besides the nodes, the facts the GPU kernel rules (`tfpgo.attribution.
command_buffer`) need: the computations an instruction calls, each computation's
schedule, a fusion's backend kind and the fingerprint of its fused computation.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from tfpgo.trace.readers.xplane_proto import hlo_pb2, parse_message

METADATA_PLANE = "/host:metadata"
HLO_PROTO_STAT = "Hlo Proto"
JAX_VERSION_STAT = "jax_version"
# Markers tf2xla puts on the entry parameters and results; no TF node ran them
# (JAX names its parameters by their argument: see _argument_names).
_XLA_ARGUMENT_NAMES = frozenset({"XLA_Args", "XLA_Retvals"})
# Fused parameters only pass operands in; they do no work of a node.
_PASS_THROUGH = frozenset({"parameter"})
# Instructions that do no work of a node: they inherit no name (tfpgo.trace.
# xla_attribution lists them as XLA-inserted if they ever run as events).
_NEVER_INFERRED = frozenset({"parameter", "constant"})
_NOT_PTX = re.compile(r"[^A-Za-z0-9_$]")
# What XLA's kernel fingerprint leaves out of an instruction: its names and ids
# (`HloPrintOptions::Fingerprint` canonicalizes them), metadata and backend config
# (`Canonical()` prints neither), the annotation-only fields (frontend attributes,
# statistics, original value; seldom set inside a fused computation), and the
# operand and callee ids, taken by position and by content instead (`_fingerprint`).
_NOT_FINGERPRINTED = (
    "name",
    "id",
    "operand_ids",
    "called_computation_ids",
    "control_predecessor_ids",
    "metadata",
    "backend_config",
    "frontend_attributes",
    "statistics_viz",
    "original_value",
)


@dataclass(frozen=True)
class TfNode:
    """A TensorFlow node an HLO instruction came from (`metadata.op_name`/`op_type`)."""

    name: str
    op_type: str


@dataclass(frozen=True)
class HloInstruction:
    """One instruction of a compiled module, with the TF nodes it covers.

    `nodes` is the instruction's own node for a plain instruction, and the
    distinct nodes of the instructions inside the fused computation (and the
    computations those call), in order of appearance, for a fusion. Empty when
    XLA inserted the instruction (copies, parameters): it has no `op_name`.
    """

    name: str
    opcode: str
    nodes: tuple[TfNode, ...]
    custom_call_target: str = ""  # a library call's target (`__cublas$lt$matmul`)
    # Nodes inherited from the dataflow graph (no `op_name` of its own):
    # `inferred_by` is `nearest_user` or `nearest_operand`, `inferred_from` the
    # instruction chain from this one to the named one. Empty when not inferred.
    inferred_by: str = ""
    inferred_from: tuple[str, ...] = ()
    # The computations it calls, by name (a while's condition and body, a
    # conditional's branches, a call's callee, an async start's wrapped computation).
    called: tuple[str, ...] = ()
    # A fusion's `fusion_backend_config.kind` (`__triton`, `__cudnn$fusion`), else "".
    backend_kind: str = ""
    # A fusion's fused computation as XLA's kernel reuse cache tells computations
    # apart (`_fingerprint`); "" for other instructions.
    fingerprint: str = ""

    @property
    def is_fusion(self) -> bool:
        return self.opcode == "fusion"

    @property
    def kernel_name(self) -> str:
        """The GPU kernel XLA emits for this instruction: its name through
        `llvm_ir::SanitizeFunctionName` (`xla/service/llvm_ir/llvm_util.cc`, NVPTX's
        rules: every character but `[A-Za-z0-9_$]` becomes `_`, a leading digit gets
        `_` in front), so `loop_add_fusion.2` launches `loop_add_fusion_2`."""
        return sanitized_function_name(self.name)


def sanitized_function_name(name: str) -> str:
    """XLA's `llvm_ir::SanitizeFunctionName` (see `HloInstruction.kernel_name`)."""
    name = _NOT_PTX.sub("_", name) or "__unnamed"
    if name[0].isdigit():
        name = "_" + name
    return name + "_" if name in ("_", "$") else name


@dataclass(frozen=True)
class HloModule:
    """A compiled module: its name, XLA's unique id, instructions by name, and the
    entry computation's instructions in the order XLA scheduled them (the order a
    GPU executable launches their kernels; the proto order when it has no schedule).
    `sequences`: every computation's instructions, by computation name, in the same
    order (what a while, conditional or call runs)."""

    name: str
    program_id: int
    instructions: Mapping[str, HloInstruction]
    schedule: tuple[str, ...] = ()
    sequences: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


def recorded_by_jax(plane: Any) -> bool:
    """Whether JAX recorded the trace: its metadata plane names `jax_version` (JAX's
    profiler session sets it; TensorFlow's does not)."""
    names = {key: value.name for key, value in plane.stat_metadata.items()}
    return any(names.get(stat.metadata_id) == JAX_VERSION_STAT for stat in plane.stats)


def read_metadata_plane(plane: Any, origin: str) -> Iterator[HloModule]:
    """Every module whose `HloProto` the metadata plane holds."""
    stat_names = {key: value.name for key, value in plane.stat_metadata.items()}
    for metadata in plane.event_metadata.values():
        for stat in metadata.stats:
            if stat_names.get(stat.metadata_id) == HLO_PROTO_STAT and stat.bytes_value:
                yield parse_hlo_proto(stat.bytes_value, origin)


def parse_hlo_proto(data: bytes, origin: str) -> HloModule:
    """An `HloProto` (serialized) as an HloModule; a UserError names `origin` if it is none."""
    proto = parse_message(
        hlo_pb2().HloProto(),
        data,
        f"{origin}: an '{HLO_PROTO_STAT}' stat of the metadata plane is not an HloProto; "
        "the trace is damaged, profile again",
    )
    return _module(proto.hlo_module)


def _module(module: Any) -> HloModule:
    computations = {computation.id: computation for computation in module.computations}
    arguments = _argument_names(module, computations)
    names = {computation.id: computation.name for computation in module.computations}
    instructions: dict[str, HloInstruction] = {}
    fusions: list[tuple[str, int]] = []  # (fusion, its fused computation)
    for computation in module.computations:
        own: dict[str, tuple[TfNode, ...]] = {}
        for instruction in computation.instructions:
            if instruction.opcode == "fusion":
                nodes = _covered_nodes(instruction, computations, arguments) or _own_node(
                    instruction, arguments
                )
            else:
                nodes = _own_node(instruction, arguments)
            own[instruction.name] = nodes
        inferred = _inferred_nodes(computation, own)
        for instruction in computation.instructions:
            by, chain = inferred.get(instruction.name, ("", ()))
            instructions[instruction.name] = HloInstruction(
                instruction.name,
                instruction.opcode,
                own[instruction.name] or (own[chain[-1]] if chain else ()),
                instruction.custom_call_target,
                by,
                chain,
                tuple(names[i] for i in instruction.called_computation_ids if i in names),
                _backend_kind(instruction) if instruction.opcode == "fusion" else "",
            )
            if instruction.opcode == "fusion" and instruction.called_computation_ids:
                fusions.append((instruction.name, instruction.called_computation_ids[0]))
    sequences = _sequences(module)  # before the fingerprints clear the ids
    memo: dict[int, str] = {}
    for name, fused in fusions:
        found = _fingerprint(fused, computations, memo)
        instructions[name] = replace(instructions[name], fingerprint=found)
    entry = names.get(module.entry_computation_id, "")
    return HloModule(module.name, int(module.id), instructions, sequences.get(entry, ()), sequences)


def _backend_kind(instruction: Any) -> str:
    """A fusion's `fusion_backend_config.kind` (its backend config is JSON)."""
    if not instruction.backend_config:
        return ""
    try:
        config = json.loads(instruction.backend_config)
    except ValueError:
        return ""
    fusion = config.get("fusion_backend_config") if isinstance(config, dict) else None
    kind = fusion.get("kind") if isinstance(fusion, dict) else None
    return kind if isinstance(kind, str) else ""


def _fingerprint(computation_id: int, computations: Mapping[int, Any], memo: dict[int, str]) -> str:
    """The fused computation as XLA's kernel reuse cache keys it
    (`GetComputationFingerprint`, xla/service/gpu/kernel_reuse_cache.h; now in
    xla/codegen/emitters/computation_fingerprint.cc: the computation printed with
    `HloPrintOptions::Fingerprint()`, constants in full): each instruction with
    the fields `_NOT_FINGERPRINTED` names left out,
    operands by position, called computations by their own fingerprint, and the
    root's position. Two fusions with equal fingerprints are the ones XLA may
    emit one kernel for. Clears those fields of the parsed proto (it is read once)."""
    if computation_id in memo:
        return memo[computation_id]
    memo[computation_id] = ""  # a cycle (none in valid HLO) hashes as empty
    computation = computations.get(computation_id)
    if computation is None:
        return ""
    position = {instruction.id: at for at, instruction in enumerate(computation.instructions)}
    digest = hashlib.sha256()
    for instruction in computation.instructions:
        operands = [position.get(i, -1) for i in instruction.operand_ids]
        called = [_fingerprint(i, computations, memo) for i in instruction.called_computation_ids]
        for name in _NOT_FINGERPRINTED:
            if name in instruction.DESCRIPTOR.fields_by_name:
                instruction.ClearField(name)
        essential = instruction.SerializeToString(deterministic=True)
        digest.update(f"{len(essential)}:".encode() + essential)
        digest.update(repr((operands, called)).encode())
    digest.update(repr(position.get(computation.root_id, -1)).encode())
    memo[computation_id] = digest.hexdigest()
    return memo[computation_id]


def _inferred_nodes(
    computation: Any, own: Mapping[str, tuple[TfNode, ...]]
) -> dict[str, tuple[str, tuple[str, ...]]]:
    """For each instruction without an `op_name` (copies XLA inserts, the
    reduce-window fusions its CPU tree-reduction rewrite splits off their
    reduce): the nearest instruction of the same computation that has nodes,
    through its users first (what it was made for), else through its operands,
    breadth first in the computation's order: (rule, chain from it to the named
    one). Parameters and constants do no work of a node: never inferred. An
    argument's own name (`_argument_names`) is a name, not a gap: not inferred."""
    ids = {instruction.id: instruction.name for instruction in computation.instructions}
    operands: dict[str, list[str]] = {}
    users: dict[str, list[str]] = {name: [] for name in ids.values()}
    for instruction in computation.instructions:
        operands[instruction.name] = [ids[i] for i in instruction.operand_ids if i in ids]
        for operand in operands[instruction.name]:
            users[operand].append(instruction.name)
    found = {}
    for instruction in computation.instructions:
        name = instruction.name
        if own[name] or instruction.metadata.op_name or instruction.opcode in _NEVER_INFERRED:
            continue
        for rule, graph in (("nearest_user", users), ("nearest_operand", operands)):
            chain = _nearest_named(name, graph, own)
            if chain:
                found[name] = (rule, chain)
                break
    return found


def _nearest_named(
    start: str, graph: Mapping[str, list[str]], own: Mapping[str, tuple[TfNode, ...]]
) -> tuple[str, ...]:
    """The path from `start` to the first instruction with nodes, breadth first."""
    parent = {start: start}
    frontier = [start]
    while frontier:
        following = []
        for name in frontier:
            for neighbour in graph[name]:
                if neighbour in parent:
                    continue
                parent[neighbour] = name
                if own[neighbour]:
                    path = [neighbour]
                    while path[-1] != start:
                        path.append(parent[path[-1]])
                    return tuple(reversed(path))
                following.append(neighbour)
        frontier = following
    return ()


def _sequences(module: Any) -> dict[str, tuple[str, ...]]:
    """Each computation's instruction names in schedule order (the proto order for
    a computation the schedule does not list: fused computations)."""
    found = {}
    for computation in module.computations:
        names = {instruction.id: instruction.name for instruction in computation.instructions}
        sequence = module.schedule.sequences.get(computation.id)
        if sequence is None:
            found[computation.name] = tuple(names.values())
        else:
            found[computation.name] = tuple(
                names[i] for i in sequence.instruction_ids if i in names
            )
    return found


def _argument_names(module: Any, computations: Mapping[int, Any]) -> frozenset[str]:
    """The `op_name`s of the entry computation's parameters: the step's arguments
    (`XLA_Args` from tf2xla; JAX names them by their path, `p['w1']`, `x`). An
    instruction named after one only moves an argument in (a transpose or copy of
    it): it ran for no op."""
    entry = computations.get(module.entry_computation_id)
    found = {
        i.metadata.op_name
        for i in (entry.instructions if entry is not None else ())
        if i.opcode == "parameter" and i.metadata.op_name
    }
    return frozenset(found | _XLA_ARGUMENT_NAMES)


def _own_node(instruction: Any, arguments: frozenset[str]) -> tuple[TfNode, ...]:
    """The instruction's node, none for an argument's name. JAX leaves `op_type`
    empty: its type is then the last component of `op_name` (`jit(step)/jvp(dense)/
    dot_general`: `dot_general`, the JAX primitive; xprof types JAX ops the same way)."""
    name = instruction.metadata.op_name
    if not name or name in arguments:
        return ()
    return (TfNode(name, instruction.metadata.op_type or name.rsplit("/", 1)[-1]),)


def _covered_nodes(
    fusion: Any, computations: Mapping[int, Any], arguments: frozenset[str]
) -> tuple[TfNode, ...]:
    """Distinct nodes of every instruction the fusion's computations hold."""
    nodes: dict[str, TfNode] = {}
    pending = list(fusion.called_computation_ids)
    seen: set[int] = set()
    while pending:
        computation_id = pending.pop(0)
        if computation_id in seen or computation_id not in computations:
            continue
        seen.add(computation_id)
        for instruction in computations[computation_id].instructions:
            pending.extend(instruction.called_computation_ids)
            if instruction.opcode in _PASS_THROUGH:
                continue
            for node in _own_node(instruction, arguments):
                nodes.setdefault(node.name, node)
    return tuple(nodes.values())
