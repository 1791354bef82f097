"""`program.json`: what a lowered program takes and gives, in the step's terms.

IREE's entry function takes and returns flat lists of tensors (`%input0 …
%input25`). The manifest says what each is: a leaf of the step's own arguments
(`x`, `inputs["ids"]`), a variable the step carries (its name, as in
`model.variables`; the result that updates it), or a value the step captured
(a constant); how the step's outputs nest; the tolerance the program was checked
with against TensorFlow; the target it was compiled for; and the programs,
default and tuned, with IREE's CPU driver each runs on.
`program/parameter_<i>.npy` beside it holds each parameter's value in the
profiled step: the example inputs, the variables' starting values.
Format: docs/formats.md (`tfpgo.program`, version 1).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tfpgo.documents import new_header, read_document, write_compact_json
from tfpgo.errors import UserError
from tfpgo.iree.run import DEVICE, SYNC
from tfpgo.iree.target import CompileTarget
from tfpgo.runtime.structure import Tree, check_tree

FORMAT = "tfpgo.program"
VERSION = 1
MANIFEST = "program.json"
VALUES = "program"  # the folder of parameter_<i>.npy
DEFAULT, TUNED = "default", "tuned"


class Role(enum.Enum):
    """What a parameter or result of the program is to the step."""

    INPUT = "input"  # a leaf of the step's arguments
    OUTPUT = "output"  # a leaf of the step's outputs
    VARIABLE = "variable"  # a variable the step reads (a parameter) or writes (a result)
    CAPTURED = "captured"  # a constant the step captured: passed, never written


@dataclass(frozen=True)
class Tensor:
    """One parameter or result of the entry function: its position, role, name
    (a path in the step's arguments or outputs, or a variable's name), shape and
    dtype (numpy's name), and for a variable the other side of its update: the
    result that writes a parameter, or the parameter a result writes."""

    index: int
    role: Role
    name: str
    shape: tuple[int, ...]
    dtype: str
    alias: int | None = None

    def type_text(self) -> str:
        """IREE's spelling of the type (`8x16xf32`, `i64` for a scalar)."""
        element = _IREE_ELEMENT.get(self.dtype, self.dtype)
        return "x".join([*map(str, self.shape), element])

    def to_json(self) -> dict[str, Any]:
        item: dict[str, Any] = {
            "index": self.index,
            "role": self.role.value,
            "name": self.name,
            "shape": list(self.shape),
            "dtype": self.dtype,
        }
        if self.alias is not None:
            item["alias"] = self.alias
        return item

    @staticmethod
    def from_json(item: dict[str, Any]) -> Tensor:
        alias = item.get("alias")
        return Tensor(
            int(item["index"]),
            Role(item["role"]),
            str(item["name"]),
            tuple(int(size) for size in item["shape"]),
            str(item["dtype"]),
            None if alias is None else int(alias),
        )


_IREE_ELEMENT = {
    "float32": "f32", "float16": "f16", "float64": "f64", "bfloat16": "bf16",
    "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64", "bool": "i1",
    "uint8": "ui8", "uint16": "ui16", "uint32": "ui32", "uint64": "ui64",
}  # fmt: skip


@dataclass(frozen=True)
class Signature:
    """The step's own arguments: the names its positional arguments bind to (a
    `*args` item is `args[0]`), its keyword-only names, and each argument's tree
    over parameter positions (tfpgo.runtime.structure)."""

    positional: tuple[str, ...]
    keywords: tuple[str, ...]
    trees: dict[str, Tree]  # by argument name

    def to_json(self) -> dict[str, Any]:
        return {
            "positional": list(self.positional),
            "keywords": list(self.keywords),
            "trees": self.trees,
        }

    @staticmethod
    def from_json(item: dict[str, Any]) -> Signature:
        return Signature(
            tuple(map(str, item["positional"])),
            tuple(map(str, item["keywords"])),
            {str(name): tree for name, tree in item["trees"].items()},
        )


@dataclass(frozen=True)
class ProgramManifest:
    """Everything a caller needs to run the lowered step (module docstring)."""

    mode: str  # "infer" or "train"
    entry: str
    signature: Signature
    outputs: Tree  # over result positions
    parameters: tuple[Tensor, ...]
    results: tuple[Tensor, ...]
    rtol: float
    atol: float
    target: CompileTarget
    programs: dict[str, str]  # DEFAULT (and TUNED when --tune kept one): vmfb file names
    # IREE's CPU driver each program runs on ("local-sync" when --tune chose it).
    drivers: dict[str, str]

    def variables(self) -> tuple[Tensor, ...]:
        """The parameters that are variables the step carries, in order."""
        return tuple(p for p in self.parameters if p.role is Role.VARIABLE)

    def to_json(self) -> dict[str, Any]:
        return {
            **new_header(FORMAT, VERSION, "tfpgo --lower iree"),
            "mode": self.mode,
            "entry": self.entry,
            "signature": self.signature.to_json(),
            "outputs": self.outputs,
            "parameters": [tensor.to_json() for tensor in self.parameters],
            "results": [tensor.to_json() for tensor in self.results],
            "tolerance": {"rtol": self.rtol, "atol": self.atol},
            "target": self.target.to_json(),
            "programs": self.programs,
            "drivers": self.drivers,
            "values": VALUES,
        }

    def write(self, directory: Path) -> None:
        write_compact_json(directory / MANIFEST, self.to_json())

    @staticmethod
    def read(directory: Path) -> ProgramManifest:
        """The manifest of the output directory `directory`; one UserError line for
        a missing directory or manifest, or one that is not a manifest."""
        if not directory.is_dir():
            raise UserError(f"{directory}: no such output directory; run pgo --lower iree first")
        path = directory / MANIFEST
        if not path.exists():
            raise UserError(
                f"{directory}: no {MANIFEST}, so no lowered program; run "
                f"pgo --lower iree --output-dir {directory}"
            )
        document = read_document(path, FORMAT)
        try:
            manifest = _from_json(document)
        except (KeyError, TypeError, ValueError, AttributeError) as error:
            raise UserError(
                f"{path}: malformed {FORMAT} document ({type(error).__name__}: {error}); "
                "lower the model again"
            ) from None
        for name, tree in manifest.signature.trees.items():
            check_tree(tree, f"{path}: argument {name}")
        check_tree(manifest.outputs, f"{path}: outputs")
        return manifest


def _from_json(document: dict[str, Any]) -> ProgramManifest:
    tolerance = document["tolerance"]
    programs = {str(k): str(v) for k, v in document["programs"].items()}
    if DEFAULT not in programs:
        raise ValueError("no default program")
    # A manifest written before --tune chose drivers: every program on local-task.
    named = {str(k): str(v) for k, v in document.get("drivers", {}).items()}
    drivers = {name: named.get(name, DEVICE) for name in programs}
    unknown = sorted(set(drivers.values()) - {DEVICE, SYNC})
    if unknown:
        raise ValueError(f"driver {unknown[0]!r} is no CPU driver of IREE's")
    return ProgramManifest(
        str(document["mode"]),
        str(document["entry"]),
        Signature.from_json(document["signature"]),
        document["outputs"],
        tuple(Tensor.from_json(item) for item in document["parameters"]),
        tuple(Tensor.from_json(item) for item in document["results"]),
        float(tolerance["rtol"]),
        float(tolerance["atol"]),
        CompileTarget.from_json(document["target"]),
        programs,
        drivers,
    )


def values_path(directory: Path, parameter: Tensor) -> Path:
    """The file of `parameter`'s value in the profiled step."""
    return directory / VALUES / f"parameter_{parameter.index}.npy"


def iree_run_module_args(manifest: ProgramManifest, program: str) -> list[str]:
    """IREE's own command for one step of `program` on the profiled values, on its
    driver, run from the output directory (`program/parameter_<i>.npy` in
    parameter order)."""
    args = ["iree-run-module", f"--module={manifest.programs[program]}"]
    args.append(f"--device={manifest.drivers[program]}")
    args.append(f"--function={manifest.entry}")
    args += [f"--input=@{values_path(Path(), p)}" for p in manifest.parameters]
    return args
