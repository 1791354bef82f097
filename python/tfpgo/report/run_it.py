"""The report's "Run it" section: the lowered step from Python and from IREE's
own command line, generated from `program.json` (tfpgo.runtime.manifest)."""

from __future__ import annotations

import shlex
from pathlib import Path

from tfpgo.iree.run import SYNC
from tfpgo.runtime.manifest import (
    DEFAULT,
    TUNED,
    ProgramManifest,
    Role,
    iree_run_module_args,
    values_path,
)
from tfpgo.runtime.structure import Tree, unflatten

RUN_IT_TITLE = "Run it"
PARAMETER_HEADER = ["#", "what", "name", "type", "updated by result"]


def run_it_text(manifest: ProgramManifest, directory: Path) -> str:
    """One paragraph: which program `load` picks and what a call does."""
    which = TUNED if TUNED in manifest.programs else DEFAULT
    carried = len(manifest.variables())
    state = (
        f" It carries {carried} variables from call to call as IREE device buffers; "
        "`step.variables()` reads them, `step.assign_to(model)` writes them back into "
        "TensorFlow's."
        if carried
        else ""
    )
    driver = manifest.drivers[which]
    where = (
        "each dispatch on the calling thread (IREE's local-sync driver, which --tune measured "
        "faster for it)"
        if driver == SYNC
        else "on IREE's local-task worker threads"
    )
    return (
        f"`tfpgo.runtime.load` runs {manifest.programs[which]} ({which}), {where}, with the "
        "step's own "
        f"arguments and returns its own outputs, checked here against TensorFlow's within "
        f"{manifest.rtol:g} relative + {manifest.atol:g}.{state} The program is compiled for "
        f"{manifest.target.cpu} by iree-compile {manifest.target.iree_compile}."
    )


def python_snippet(manifest: ProgramManifest, directory: Path) -> str:
    """Python that loads the program and calls it once on the profiled inputs."""
    inputs = [p for p in manifest.parameters if p.role is Role.INPUT]
    lines = ["import numpy as np", "import tfpgo.runtime", ""]
    lines.append(f"step = tfpgo.runtime.load({str(directory)!r})")
    for p in inputs:
        file = str(values_path(directory, p))
        lines.append(f"parameter_{p.index} = np.load({file!r})  # {p.name}: {p.type_text()}")
    signature = manifest.signature
    arguments = [_literal(signature.trees[name]) for name in signature.positional]
    arguments += [f"{name}={_literal(signature.trees[name])}" for name in signature.keywords]
    lines.append(f"outputs = step({', '.join(arguments)})")
    return "\n".join(lines)


def iree_command(manifest: ProgramManifest) -> str:
    """The `iree-run-module` command, one flag a line, run from the output directory."""
    program = TUNED if TUNED in manifest.programs else DEFAULT
    return " \\\n    ".join(shlex.quote(arg) for arg in iree_run_module_args(manifest, program))


def parameter_rows(manifest: ProgramManifest) -> list[list[str]]:
    """Each parameter of the entry: what it is to the step, its name and type,
    and for a variable the result that writes it."""
    return [
        [
            str(p.index),
            p.role.value,
            f"`{p.name}`",
            p.type_text(),
            "" if p.alias is None else str(p.alias),
        ]
        for p in manifest.parameters
    ]


def _literal(tree: Tree) -> str:
    """The Python expression of an argument whose leaves are loaded parameters."""
    value = unflatten(tree, lambda index: _Name(f"parameter_{index}"))
    return repr(value)


class _Name(str):
    """A variable's name, which repr leaves bare inside a literal."""

    def __repr__(self) -> str:
        return str(self)
