"""Finds tfpgo's compiled tools from Python: in an installed wheel, under `bazel
run`/`bazel test`, in a built work tree, or on PATH.

Order: the $TFPGO_OPT override, the wheel's own copies (`tfpgo/bin/`, what
`bazel build //:wheel` packs), the runfiles of the running Bazel target, the work
tree's `bazel-bin`, then PATH. The first that exists wins, so a user can always
point at a tf-opt of a TensorFlow fork with TFPGO_OPT.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from tfpgo.errors import UserError

_REPO_ROOT = Path(__file__).resolve().parents[2]
# Where the wheel puts the native tools, inside the installed package (a
# checkout has no such folder: its tools are in bazel-bin and the runfiles).
PACKAGED_TOOLS = Path(__file__).resolve().parent / "bin"
# tfpgo-opt links the shared MLIR and LLVM of Debian's LLVM 22 packages
# (third_party/llvm22), found through its runpath: a wheel carries the tool,
# not these libraries.
LLVM_LIBRARIES = Path("/usr/lib/llvm-22/lib")
LLVM_SONAMES = ("libMLIR.so.22.1", "libLLVM.so.22.1")


def _runfiles_roots() -> list[Path]:
    roots = []
    for variable in ("RUNFILES_DIR", "TEST_SRCDIR"):
        if value := os.environ.get(variable):
            roots.append(Path(value))
    roots.append(Path(sys.argv[0] + ".runfiles"))
    for parent in Path(__file__).resolve().parents:
        if parent.name.endswith(".runfiles"):
            roots.append(parent)
    return roots


def _built_tool(name: str, variable: str, what: str, run_hint: str) -> Path:
    """A binary Bazel builds under tools/: $`variable` wins, then the wheel's
    copy, then the runfiles, then bazel-bin of this checkout, then PATH; else
    one line saying how to get it."""
    if override := os.environ.get(variable):
        path = Path(override)
        if not (path.is_file() and os.access(path, os.X_OK)):
            raise UserError(f"{variable}={override}: not an executable file")
        return path
    candidates = [PACKAGED_TOOLS / name]
    candidates += [root / "tfpgo" / "tools" / name for root in _runfiles_roots()]
    candidates.append(_REPO_ROOT / "bazel-bin" / "tools" / name)
    for candidate in candidates:
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    if found := shutil.which(name):
        return Path(found)
    raise UserError(
        f"{what} not found; {run_hint}, or build it with `bazel build //tools:{name}`, "
        f"or set {variable}"
    )


def xplane_columns() -> Path:
    """The `xplane-columns` decoder (tools/xplane-columns; $TFPGO_XPLANE_COLUMNS wins)."""
    return _built_tool(
        "xplane-columns",
        "TFPGO_XPLANE_COLUMNS",
        "xplane-columns (the .xplane.pb decoder)",
        "run through bazel",
    )


def kernels_library() -> Path:
    """The native kernels' shared library (tools/kernels; $TFPGO_KERNELS wins)."""
    return _built_tool(
        "libtfpgo_kernels.so",
        "TFPGO_KERNELS",
        "libtfpgo_kernels.so (tfpgo's native kernels)",
        "run through bazel",
    )


def tfpgo_opt() -> Path:
    """The `tfpgo-opt` binary (or whatever $TFPGO_OPT names); ours needs Debian's
    MLIR and LLVM 22 libraries, a missing one is one line naming the package."""
    path = _built_tool("tfpgo-opt", "TFPGO_OPT", "tfpgo-opt", "run through `bazel run //:pgo`")
    if not os.environ.get("TFPGO_OPT"):
        check_llvm_libraries(LLVM_LIBRARIES)
    return path


def check_llvm_libraries(directory: Path) -> None:
    """The shared libraries tfpgo-opt loads from `directory` (its runpath); the
    loader's own failure would come mid-stage, as a line about exit status 127."""
    missing = [name for name in LLVM_SONAMES if not (directory / name).is_file()]
    if missing:
        raise UserError(
            f"tfpgo-opt needs {', '.join(missing)} in {directory}, Debian's LLVM 22 "
            "(apt-get install libmlir-22 llvm-22-dev); tfpgo's wheel is built for "
            "Debian with LLVM 22"
        )


def python_env(**extra: str) -> dict[str, str]:
    """This process's environment, `extra` set, with its import path (Bazel's
    runfiles included) as PYTHONPATH: for a Python process of tfpgo's own."""
    return dict(os.environ, **extra, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
