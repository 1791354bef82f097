"""The kind of work an op does: the one rule, shared with the C++ passes.

A profiled op's time goes to the ops that carry it of the highest kind
(docs/formats.md, "Conservation"): the convolution of a fused kernel, not its
elementwise epilogue; a fill or a copy only when nothing else carries it; a
constant never. `tf-profile-materialize-annotations` applies the rule in C++;
the code of IREE's executables (`model.dispatches.mlir`) is read here with
IREE's Python bindings, where no pass of ours runs, so both read the same
table: `kNamedWork` in the C++ header `work_kinds.h`, parsed once.
"""

from __future__ import annotations

import enum
import functools
import re
from pathlib import Path
from typing import Any

from tfpgo.errors import UserError

_CHECKOUT_TABLE = (
    Path(__file__).resolve().parents[3]
    / "tensorflow_patch/tensorflow/compiler/mlir/tensorflow/transforms/profile_guided"
    / "work_kinds.h"
)
# The wheel (//:wheel) has no checkout around it: it packs the header here.
PACKAGED_TABLE = Path(__file__).resolve().parents[1] / "data" / "work_kinds.h"
TABLE = PACKAGED_TABLE if PACKAGED_TABLE.is_file() else _CHECKOUT_TABLE
_ROW = re.compile(r'^\s*\{"(\w+)", "(\w+)", (true|false), Work::k(\w+)\},\s*$')
# What computes nothing at run time, whatever its operands (`ComputesNothing`).
_NOTHING = frozenset({"tensor.empty", "bufferization.alloc_tensor"})
# The dialects of a dispatch's computation. The others (IREE's bindings, loads
# and stores) bring its inputs in and its outputs out, as a function's
# arguments and results do in the modules the C++ pass reads: they move data,
# and the ops reading them are never "of only constant operands".
_CODE_DIALECTS = frozenset({"linalg", "arith", "math", "tensor", "bufferization", "scf"})


class Work(enum.IntEnum):
    """`Work` of work_kinds.h, lowest first."""

    NONE = 0
    MOVEMENT = 1
    COMPUTE = 2
    REDUCTION = 3


@functools.cache
def named_work(table: Path = TABLE) -> tuple[tuple[str, str, bool, Work], ...]:
    """The rows of `kNamedWork`: (dialect, name, prefix, kind)."""
    try:
        text = table.read_text()
    except OSError as error:
        raise UserError(f"{table}: cannot read the work-kind table ({error.strerror})") from None
    rows = tuple(
        (m[1], m[2], m[3] == "true", Work[m[4].upper()])
        for line in text.splitlines()
        if (m := _ROW.match(line))
    )
    if not rows:
        raise UserError(f"{table}: no kNamedWork rows (one '{{\"dialect\", ...}},' a line)")
    return rows


def named_kind(op_name: str, fallback: Work = Work.COMPUTE) -> Work:
    """The kind the table gives `dialect.name`, or `fallback` (`NamedWorkKind`)."""
    dialect, _, name = op_name.partition(".")
    for row_dialect, row_name, prefix, kind in named_work():
        if dialect == row_dialect and (name.startswith(row_name) if prefix else name == row_name):
            return kind
    return fallback


def kind_of(op: Any, kinds: dict[Any, Work]) -> Work:
    """The work of `op` (an IREE Python binding op), as `KindOfWork` in C++:
    nothing for a constant, an empty tensor or an op of only such operands;
    else the table's kind, a linalg op with a reduction loop (`iterator_types`)
    reducing. `kinds` holds the ops seen before it (their producers) and gets
    this one."""
    if op.name.partition(".")[0] not in _CODE_DIALECTS:
        return Work.MOVEMENT
    kinds[op] = kind = _kind(op, kinds)
    return kind


def _kind(op: Any, kinds: dict[Any, Work]) -> Work:
    name = op.name
    if name in _NOTHING or name.rpartition(".")[2] in ("constant", "Const"):
        return Work.NONE
    producers = [operand.owner for operand in op.operands]
    if producers and all(kinds.get(_op_of(p)) is Work.NONE for p in producers):
        return Work.NONE
    named = named_kind(name)
    if named is Work.MOVEMENT or "iterator_types" not in op.attributes:
        return named
    return Work.REDUCTION if "reduction" in str(op.attributes["iterator_types"]) else Work.COMPUTE


def _op_of(owner: Any) -> Any:
    """The op an operand's owner is (a block argument's owner is a block: None)."""
    return getattr(owner, "operation", None) if hasattr(owner, "name") else None


def highest(ops: list[Any], kinds: dict[Any, Work]) -> list[Any]:
    """The ops of the highest kind among `ops`: those a source's time goes to."""
    if not ops:
        return []
    top = max(kinds[op] for op in ops)
    return [op for op in ops if kinds[op] == top]
