"""One dispatch alone: IREE's executable benchmarks, recompiled and timed.

`iree-compile --iree-hal-dump-executable-benchmarks-to=DIR` writes, per
executable, a module that runs its dispatch on buffers of the right sizes
(`util.func`s reflected as `iree.benchmark = "dispatch"`). Such a module compiles
in about a second where the whole program takes minutes, so a tile search can
try many variants of one dispatch. The dump carries the configuration IREE chose
(each op's `lowering_config`, the function's `translation_info`);
`unconfigured_benchmarks` removes it, so that recompiling selects the
configuration again, a tuning spec (`--iree-codegen-tuning-spec-path`)
included, as in the whole program.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tfpgo.errors import UserError
from tfpgo.iree.run import DEVICE, executable_exports
from tfpgo.iree.tools import compile_once, run_tool

DUMP_FLAG = "--iree-hal-dump-executable-benchmarks-to="
REPETITIONS = 7
MIN_TIME_S = 0.03  # per repetition: a few invocations of a ms dispatch, one of a slow one
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


def time_dispatch(vmfb: Path, function: str | None = None, inputs: Sequence[str] = ()) -> float:
    """The dispatch's time an invocation (ps): the median of REPETITIONS
    repetitions of iree-benchmark-module, each at least MIN_TIME_S long (one
    invocation per iteration, as the module was compiled: `--batch_size=1`).
    With `function`, that function of a program instead, called on `inputs`
    (iree-benchmark-module's `--input=` values). The
    median, not the fastest: a variant can match IREE's choice at its best and
    still be faster in most runs (on ResNet-like 3x3 convolutions here, the same
    fastest repetition, 10% less median time and 13% less CPU time), and the
    program runs at its typical speed, not its best."""
    args = [f"--module={vmfb}", f"--device={DEVICE}", "--batch_size=1"]
    if function:
        args += [f"--function={function}", *(f"--input={value}" for value in inputs)]
    args += [f"--benchmark_repetitions={REPETITIONS}", f"--benchmark_min_time={MIN_TIME_S}s"]
    args += ["--benchmark_format=json"]
    report = json.loads(run_tool("iree-benchmark-module", args, "iree level (dispatch benchmark)"))
    runs = [b for b in report["benchmarks"] if b.get("run_type") == "iteration"]
    if not runs:
        raise UserError(f"iree level (dispatch benchmark): {vmfb.name} ran no benchmark")
    scale = {"ns": 1e3, "us": 1e6, "ms": 1e9, "s": 1e12}
    return statistics.median(b["real_time"] * scale[b["time_unit"]] for b in runs)
