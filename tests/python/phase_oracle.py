"""The phases of a hook's training step read from TensorFlow's own graph, with
no tfpgo code and no name rule: the oracle of test_phases_structure.

Run as `python phase_oracle.py HOOK.py BATCH OUT.json` in a process of its own,
so that the hook traces its step once in a fresh process, as `pgo` does, and
gives its nodes the names the profile has. `tf.GradientTape.gradient` is
wrapped while the step is traced, to learn which tensors are the loss (its
target) and the gradients (its result); each class is then found by dataflow
on the traced `FuncGraph`:

* updates: the ops whose type writes a variable (`Assign*VariableOp`,
  `ResourceApply*`, `ResourceSparseApply*`, `ResourceScatter*`);
* tape: the ancestors of the gradients (the gradients' own ops included)
  that are no ancestor of the loss;
* forward: the loss and its ancestors;
* update math: the ancestors of the updates that are neither tape nor
  forward (the learning rate schedule, the moments, the slots' reads).

Writes {"ops": {name: type}, "updates", "tape", "forward", "update_math": [names]}.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

UPDATE_TYPES = ("AssignVariableOp", "AssignAddVariableOp", "AssignSubVariableOp")
UPDATE_TYPE_PREFIXES = ("ResourceApply", "ResourceSparseApply", "ResourceScatter")


def _ancestors(ops) -> set:
    """`ops` and every op they read a tensor of (data edges only)."""
    seen = set()
    pending = list(ops)
    while pending:
        op = pending.pop()
        if op in seen:
            continue
        seen.add(op)
        pending.extend(tensor.op for tensor in op.inputs)
    return seen


def main(hook_path: Path, batch_size: int, out: Path) -> None:
    import tensorflow as tf

    recorded = []
    gradient = tf.GradientTape.gradient

    def recording(tape, target, sources, *args, **kwargs):
        result = gradient(tape, target, sources, *args, **kwargs)
        recorded.append((target, result))
        return result

    spec = importlib.util.spec_from_file_location("hook", hook_path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    step, inputs = module.tfpgo_model(batch_size)
    tf.GradientTape.gradient = recording
    try:
        graph = step.get_concrete_function(*inputs).graph
    finally:
        tf.GradientTape.gradient = gradient
    # A step that creates variables is traced twice (tf.function's variable
    # lifting); the graph that runs is the last trace's.
    loss, gradients = recorded[-1]
    gradients = [g for g in tf.nest.flatten(gradients) if g is not None]
    forward = _ancestors([loss.op])
    tape = _ancestors([g.op for g in gradients]) - forward
    updates = [
        op
        for op in graph.get_operations()
        if op.type in UPDATE_TYPES or op.type.startswith(UPDATE_TYPE_PREFIXES)
    ]
    update_math = _ancestors(updates) - tape - forward - set(updates)
    names = {
        "ops": {op.name: op.type for op in graph.get_operations()},
        "updates": sorted(op.name for op in updates),
        "tape": sorted(op.name for op in tape),
        "forward": sorted(op.name for op in forward),
        "update_math": sorted(op.name for op in update_math),
    }
    out.write_text(json.dumps(names, indent=1))


if __name__ == "__main__":
    main(Path(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3]))
