"""What IREE compiles of a program: the program without the profile it carries.

The flow's StableHLO carries each op's measured record in its locations
(`tf-annotate-operations-profile carry-in-location=true`, read back at every
lower level) and, after a profile-guided rewrite, in `profiler_*` attributes.
Those numbers change from run to run; given to iree-compile, they would make
every build of one model new bytes. So every compile of a program (its vmfb,
executable sources, dispatch sites and bytecode, here or on a cluster's
workers) reads a copy made by tfpgo-opt's `tf-strip-profile-annotations`,
which keeps the node names a dispatch is attributed by. The copy is made once
per file content and lies beside the program (`<name>.program.mlir`).
"""

from __future__ import annotations

from pathlib import Path

from tfpgo.iree.tools import run_command
from tfpgo.toolpaths import tfpgo_opt

# Every attribute the profile-guided passes set, and every carried record, is
# spelled with it: a program without it has nothing to strip.
_PROFILE_MARK = b"profiler_"
# Programs read in this process: source → (its size and modification time then,
# what IREE compiles of it: its stripped copy, or itself when it carried none).
_STRIPPED: dict[Path, tuple[int, int, Path]] = {}


def compiled_source(program: Path) -> Path:
    """`program` (StableHLO in generic form) without the profile it carries:
    `program` itself when it carries none, else its stripped copy."""
    stat = program.stat()
    made = _STRIPPED.get(program)
    if made is not None and made[:2] == (stat.st_size, stat.st_mtime_ns) and made[2].is_file():
        return made[2]
    if _PROFILE_MARK not in program.read_bytes():
        # Read once: a compile's forms and sites ask again of the same file.
        _STRIPPED[program] = (stat.st_size, stat.st_mtime_ns, program)
        return program
    stripped = program.with_name(f"{program.stem}.program.mlir")
    run_command(
        [
            str(tfpgo_opt()),
            "--allow-unregistered-dialect",
            "--mlir-print-op-generic",
            "--mlir-print-debuginfo",
            "--tf-strip-profile-annotations",
            str(program),
            "-o",
            str(stripped),
        ],
        "tfpgo-opt",
        f"{program}: removing the profile before IREE compiles it",
    )
    _STRIPPED[program] = (stat.st_size, stat.st_mtime_ns, stripped)
    return stripped
