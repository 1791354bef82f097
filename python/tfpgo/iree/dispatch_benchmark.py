"""One dispatch alone: IREE's executable benchmarks, recompiled and timed.

`iree-compile --iree-hal-dump-executable-benchmarks-to=DIR` writes, per
executable, a module that runs its dispatch on buffers of the right sizes
(`util.func`s reflected as `iree.benchmark = "dispatch"`). Such a module compiles
in about a second where the whole program takes minutes, so a tile search can
try many variants of one dispatch. The dump carries the configuration IREE chose
(each op's `lowering_config`, the function's `translation_info`);
`unconfigured_benchmarks` removes it, so that recompiling selects the
configuration again, a tuning spec (`--iree-codegen-tuning-spec-path`)
included, as in the whole program. The modules are timed against each other
in one process (tfpgo.tune.program_ab's `generation`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tfpgo.iree.executable_sources import executable_exports
from tfpgo.iree.tools import compile_once

DUMP_FLAG = "--iree-hal-dump-executable-benchmarks-to="
# What IREE chose for a dispatch: cleared so that a recompile chooses again.
_CONFIGURATION = ("lowering_config", "translation_info", "compilation_info")


def unconfigured_benchmarks(dumped: Path, directory: Path) -> dict[str, Path]:
    """Per dispatch function (its executable export's name): the benchmark module
    IREE dumped into `dumped` for it, written into `directory` without the
    configuration IREE chose (see the module doc). Each dumped file is parsed once."""
    from iree.compiler import ir

    directory.mkdir(parents=True, exist_ok=True)
    found: dict[str, Path] = {}
    with ir.Context():
        for source in sorted(dumped.glob("*.mlir")):
            module = ir.Module.parse(source.read_text())
            module.operation.walk(_clear_configuration)
            path = directory / source.name
            path.write_text(str(module))
            for op in module.body.operations:
                if op.operation.name == "hal.executable":
                    for name, _ in executable_exports(op.operation):
                        found[name] = path
    return found


def _clear_configuration(op: Any) -> Any:
    from iree.compiler import ir

    attributes = op.operation.attributes
    for name in _CONFIGURATION:
        if name in attributes:
            del attributes[name]
    return ir.WalkResult.ADVANCE


def compile_benchmark(source: Path, vmfb: Path, flags: tuple[str, ...], timeout_s: float) -> None:
    """A benchmark module compiled as is (its device target is in the module)."""
    compile_once("iree-compile", source, flags, vmfb, "iree level", timeout_s)
