"""What an IREE program was compiled for, and whether this machine runs it.

`--lower iree` compiles for the host CPU (`--iree-llvmcpu-target-cpu=host`): the
executables use every vector extension the compiling machine has. The target is
read from the executable sources (`#hal.executable.target<"llvm-cpu", ...>`), the
same text IREE embeds, so what is recorded is what the code needs. A machine that
lacks one of those extensions would fault in the middle of a dispatch; IREE's
VM bytecode, for its part, is only promised to load in the runtime of the
compiler's own release. `refusal` checks both before a program is loaded.

Two records of a target, because two questions are asked of it:

- `CompileTarget`: what a compiled program needs of the machine that runs it
  (every feature its code may use, resolved; the compiler's release). Stored in
  `program.json`; `refusal` checks it.
- `HostTarget`: what to tell iree-compile so that it compiles for this machine
  from another (`--scheduler`): the CPU's name and only the features beyond
  those IREE implies for it, as flags. It also keys the roofline (a
  `MachineLimit`) and, with the compiler and its flags, the tuning database's
  records (`tune.db_records.Target`).

Both are read from the same text, the executable target, by one parser.
"""

from __future__ import annotations

import re
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tfpgo.errors import UserError
from tfpgo.iree import run as iree_run

_EXECUTABLE_TARGET = re.compile(
    r'hal\.executable\.target<"(?P<backend>[\w-]+)", "(?P<format>[\w-]+)", '
    r'\{cpu = "(?P<cpu>[^"]*)", cpu_features = "(?P<features>[^"]*)"'
)
# The smallest program with an executable: its target shows what `host` resolves to.
_PROBE = """func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.add %x, %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}
"""
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

    match = _EXECUTABLE_TARGET.search(sources.read_text())
    if match is None:
        raise UserError(f"{sources}: names no llvm-cpu executable target; lower the model again")
    enabled: dict[str, bool] = {}
    for word in match["features"].split(","):
        if word[:1] in "+-" and len(word) > 1:
            enabled[word[1:]] = word[0] == "+"
    features = tuple(sorted(name for name, on in enabled.items() if on))
    return CompileTarget(match["backend"], match["format"], match["cpu"], features, VERSION)


@dataclass(frozen=True)
class HostTarget:
    """A machine's CPU as iree-compile resolves `--iree-llvmcpu-target-cpu=host`
    there, in the flags that make another machine compile for it."""

    cpu: str
    features: str  # those beyond the ones IREE implies for `cpu`, as `+f,-g`

    def flags(self) -> tuple[str, ...]:
        return (
            f"--iree-llvmcpu-target-cpu={self.cpu}",
            f"--iree-llvmcpu-target-cpu-features={self.features}",
        )


def host_target() -> HostTarget:
    """What `host` resolves to on this machine. IREE writes it into the executable
    target as the features it implies for the CPU's name, then the host's own;
    given a CPU name and features, it adds the implied ones again. So the implied
    ones are read too (the CPU named, no features) and taken off the front. Were
    they not in front, all would be named: the same features, spelled longer."""
    with tempfile.TemporaryDirectory(prefix="tfpgo-host-cpu-") as scratch:
        probe = Path(scratch) / "probe.mlir"
        probe.write_text(_PROBE)
        cpu, resolved = _probe_target(probe, ())
        _, implied = _probe_target(probe, (f"--iree-llvmcpu-target-cpu={cpu}",))
    return HostTarget(cpu, resolved.removeprefix(f"{implied},"))


def _probe_target(probe: Path, flags: Sequence[str]) -> tuple[str, str]:
    """(cpu, cpu_features) of the executable iree-compile makes of `probe`."""
    sources = probe.with_suffix(".sources.mlir")
    args = [*iree_run.IREE_FLAGS, *flags, "--compile-to=executable-sources", str(probe)]
    iree_run.run_tool("iree-compile", [*args, "-o", str(sources)], "iree level (host CPU)")
    found = _EXECUTABLE_TARGET.search(sources.read_text())
    if found is None:
        raise UserError(
            "iree level (host CPU): iree-compile named no cpu and cpu_features in its "
            "executable target, so what to compile for on the cluster is unknown; tune "
            "without --scheduler"
        )
    return found["cpu"], found["features"]


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
