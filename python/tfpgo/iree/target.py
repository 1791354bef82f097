"""What an IREE program was compiled for, and whether this machine runs it.

`--lower iree` compiles for the host CPU (`--iree-llvmcpu-target-cpu=host`): the
executables use every vector extension the compiling machine has. The target is
read from the executable sources (`#hal.executable.target<"llvm-cpu", ...>`), the
same text IREE embeds, so what is recorded is what the code needs. A machine that
lacks one of those extensions would fault in the middle of a dispatch; IREE's
VM bytecode, for its part, is only promised to load in the runtime of the
compiler's own release. `refusal` checks both before a program is loaded.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tfpgo.errors import UserError

_TARGET = re.compile(
    r'hal\.executable\.target<"(?P<backend>[\w-]+)", "(?P<format>[\w-]+)", '
    r'\{cpu = "(?P<cpu>[^"]*)", cpu_features = "(?P<features>[^"]*)"'
)
# How long iree-cpuinfo (a few milliseconds of CPUID) may take before it is
# taken as hung.
CPUINFO_TIMEOUT_S = 30


@dataclass(frozen=True)
class CompileTarget:
    """The machine a program was compiled for: IREE's backend and executable
    format, LLVM's CPU name, the CPU features the code may use (LLVM's names,
    `avx512f`, `sse4.1`), and the compiler's release."""

    backend: str
    executable_format: str
    cpu: str
    cpu_features: tuple[str, ...]
    iree_compile: str

    def to_json(self) -> dict[str, Any]:
        return {
            "backend": self.backend,
            "executable_format": self.executable_format,
            "cpu": self.cpu,
            "cpu_features": list(self.cpu_features),
            "iree_compile": self.iree_compile,
        }

    @staticmethod
    def from_json(item: dict[str, Any]) -> CompileTarget:
        return CompileTarget(
            str(item["backend"]),
            str(item["executable_format"]),
            str(item["cpu"]),
            tuple(str(feature) for feature in item["cpu_features"]),
            str(item["iree_compile"]),
        )


def read_target(sources: Path) -> CompileTarget:
    """The target of the executables in `sources` (IREE's executable sources, or
    `model.dispatches.mlir`): the features LLVM enables (of `+f` and `-f`, the
    last word on each feature wins)."""
    from iree.compiler.version import VERSION

    match = _TARGET.search(sources.read_text())
    if match is None:
        raise UserError(f"{sources}: names no llvm-cpu executable target; lower the model again")
    enabled: dict[str, bool] = {}
    for word in match["features"].split(","):
        if word[:1] in "+-" and len(word) > 1:
            enabled[word[1:]] = word[0] == "+"
    features = tuple(sorted(name for name, on in enabled.items() if on))
    return CompileTarget(match["backend"], match["format"], match["cpu"], features, VERSION)


def runtime_version() -> str:
    """The release of IREE's runtime in this process (`iree-base-runtime`)."""
    from iree.runtime.version import VERSION

    return str(VERSION)


def host_features() -> dict[str, bool]:
    """The CPU features IREE's runtime detects on this machine (`iree-cpuinfo`:
    `avx512f 1`, `amx-tile 0`), by LLVM's names; empty where the tool cannot
    tell (the check is then IREE's own when it loads the program)."""
    from tfpgo.iree.tools import runtime_tool

    try:
        listing = subprocess.run(
            [runtime_tool("iree-cpuinfo")],
            capture_output=True,
            text=True,
            timeout=CPUINFO_TIMEOUT_S,
            check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):  # FileNotFoundError: no such tool
        return {}
    found = (line.split() for line in listing.splitlines())
    return {words[0]: words[1] == "1" for words in found if len(words) == 2 and words[1] in "01"}


def refusal(target: CompileTarget, program: Path, features: dict[str, bool]) -> str | None:
    """Why this machine's IREE runtime cannot run `program`, compiled for
    `target`, on a CPU with `features` (`host_features`), as one line naming
    the cause and the fix; None when it can."""
    here = runtime_version()
    if target.iree_compile != here:
        return (
            f"{program}: compiled by iree-compile {target.iree_compile}, but this process has "
            f"IREE's runtime {here}; install iree-base-runtime=={target.iree_compile} or lower "
            "the model again with this release (pgo --lower iree)"
        )
    lacking = [name for name in target.cpu_features if features.get(name) is False]
    if lacking:
        return (
            f"{program}: compiled for another CPU ({target.cpu}, using {', '.join(lacking)}, "
            "which this CPU lacks); lower the model again on this machine (pgo --lower iree)"
        )
    return None
