"""Phases of a training step from the structure of its op graph, not from names.

Optimizers differ in scope names (`sgd`, `adam_w`, `adafactor`, a user's own),
so a list of names always misses one. The dataflow of the exported module
says what each op is for:

* optimizer: the variable updates (`AssignVariableOp`, `AssignAddVariableOp`,
  `AssignSubVariableOp`, `ResourceApply*`, `ResourceSparseApply*`,
  `ResourceScatter*`), and every op whose results only feed them (the learning
  rate schedule, the moment estimates, the slots' reads), found backwards from
  the updates: an op joins when all its consumers have;
* backward: the ops the gradient tape emitted, under its scope
  (`gradient_tape/...`, `gradients/...`: TensorFlow names them so), and the
  `AddN`s with which the tape sums the gradients of a value used twice (an
  `AddN` with a backward input);
* forward: the rest of what the step's results depend on (the ancestors of a
  function's `return`: the model and the loss);
* other: what remains (side effects outside the loss: summaries, counters
  that are no variable update).

The classes are computed on the op graph (`op_graph.json`) and handed to the
analysers per runtime name of the op profile, through the ops each entry
landed on (`attribution.json`); entries that landed on no op fall back to
the name rules of `tfpgo.analysis.phase`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from tfpgo.analysis.phase import Phase, is_gradient_name

UPDATE_OPS = frozenset({"AssignVariableOp", "AssignAddVariableOp", "AssignSubVariableOp"})
UPDATE_PREFIXES = ("ResourceApply", "ResourceSparseApply", "ResourceScatter")
RETURN_OPS = frozenset({"func.return", "return", "tf_executor.fetch"})


@dataclass(frozen=True)
class OpDataflow:
    """The op graph as the phase rule needs it: each op's node name and type
    (without dialect prefix), and the data edges (producer index, consumer index)."""

    names: tuple[str, ...]
    op_types: tuple[str, ...]
    edges: tuple[tuple[int, int], ...]


def is_update(op_type: str) -> bool:
    return op_type in UPDATE_OPS or op_type.startswith(UPDATE_PREFIXES)


def node_phases(graph: OpDataflow) -> list[Phase]:
    """The phase of every op of `graph` (see the module doc)."""
    count = len(graph.names)
    consumers: list[list[int]] = [[] for _ in range(count)]
    producers: list[list[int]] = [[] for _ in range(count)]
    for source, target in graph.edges:
        consumers[source].append(target)
        producers[target].append(source)
    phases = [Phase.OTHER] * count
    backward = [is_gradient_name(name) for name in graph.names]
    for node in range(count):
        if graph.op_types[node] == "AddN" and any(backward[p] for p in producers[node]):
            backward[node] = True
    # Optimizer: from the updates backwards, an op joins once all its consumers have.
    waiting = [len(set(targets)) for targets in consumers]
    pending = [n for n in range(count) if is_update(graph.op_types[n]) and not backward[n]]
    optimizer = [False] * count
    for node in pending:
        optimizer[node] = True
    while pending:
        node = pending.pop()
        for producer in set(producers[node]):
            waiting[producer] -= 1
            if waiting[producer] == 0 and not optimizer[producer] and not backward[producer]:
                optimizer[producer] = True
                pending.append(producer)
    # Forward: what a return depends on, outside the other two.
    forward = [False] * count
    pending = [n for n in range(count) if graph.op_types[n] in RETURN_OPS]
    while pending:
        node = pending.pop()
        for producer in producers[node]:
            if not forward[producer] and not backward[producer] and not optimizer[producer]:
                forward[producer] = True
                pending.append(producer)
    for node in range(count):
        if backward[node]:
            phases[node] = Phase.BACKWARD
        elif optimizer[node]:
            phases[node] = Phase.OPTIMIZER
        elif forward[node]:
            phases[node] = Phase.FORWARD
    return phases


def phases_by_entry(
    graph: OpDataflow, landed_on: Mapping[str, Iterable[str]], entries: Iterable[str]
) -> dict[str, Phase]:
    """Each profile entry's phase: that of the first op it landed on (`landed_on`
    maps a runtime name to op names when it is not the op's own name). Entries
    that landed on no op of the graph are left out."""
    by_name: dict[str, Phase] = {}
    for name, phase in zip(graph.names, node_phases(graph), strict=True):
        by_name.setdefault(name, phase)
    found = {}
    for entry in entries:
        for op in landed_on.get(entry, (entry,)):
            if op in by_name:
                found[entry] = by_name[op]
                break
    return found
