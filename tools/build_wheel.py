"""Writes tfpgo's wheel: the Python package, the native tools it runs, and its
dependencies at requirements.txt's pins (`bazel build //:wheel` runs this).

    build_wheel.py --out tfpgo-V-py3-none-linux_x86_64.whl --requirements requirements.txt \\
        --package-root python --tool bazel-bin/tools/tfpgo-opt ... python/tfpgo/...

The wheel is a zip (PEP 427): the package under `tfpgo/`, the tools under
`tfpgo/bin/` (where tfpgo.toolpaths looks first, after its overrides), the
files of the checkout the package reads under `tfpgo/data/` (the C++ passes'
work-kind table, tfpgo.attribution.work_kind), and
`tfpgo-V.dist-info/` with METADATA (Requires-Dist: the runtime's packages, the
`flow` and `cluster` extras' packages; tfpgo.flow.distribution), WHEEL,
entry_points.txt (the `tfpgo` command) and RECORD (each file's sha256). Every
entry has a fixed date, so the same inputs make the same bytes.
"""

from __future__ import annotations

import ast
import base64
import hashlib
import re
import sys
import zipfile
from pathlib import Path

from tfpgo.cli import ArgumentParser, run_main
from tfpgo.errors import UserError
from tfpgo.flow.distribution import EXTRAS, RUNTIME

NAME = "tfpgo"
TAG = "py3-none-linux_x86_64"
REQUIRES_PYTHON = ">=3.11"
SUMMARY = "Profile-guided annotation for TensorFlow's MLIR, lowered to IREE and run as the step"
DESCRIPTION = """\
tfpgo runs a TensorFlow step under the profiler, puts what it measured onto the
step's MLIR, lowers it to StableHLO, linalg and an IREE program, and runs that
program from Python as the step (`tfpgo.compile`, `tfpgo.runtime`, the `tfpgo`
command).

This wheel is for Linux x86_64 on Debian 12 with Debian's LLVM 22: its
`tfpgo-opt` links `libMLIR.so.22.1` and `libLLVM.so.22.1` from
/usr/lib/llvm-22/lib (`apt-get install libmlir-22 llvm-22-dev`). The base
install is the runtime (numpy, iree-base-runtime); the flow needs
`pip install 'tfpgo[flow]'` (TensorFlow, IREE's compiler, ...), a Dask cluster
`tfpgo[cluster]`. Graphviz's `dot` draws the pictures.
"""
ENTRY_POINTS = "[console_scripts]\ntfpgo = tfpgo.flow.console:main\n"
# Zip entries' date: fixed, so that a rebuild of the same inputs is the same file.
FIXED_DATE = (2020, 1, 1, 0, 0, 0)


def pins(requirements: Path) -> dict[str, str]:
    """requirements.txt's `name==version` lines, by lowercase name."""
    found = {}
    for line in requirements.read_text().splitlines():
        text = line.split("#", 1)[0].strip()
        if match := re.fullmatch(r"([A-Za-z0-9_.-]+)==(\S+)", text):
            found[match[1].lower()] = f"{match[1]}=={match[2]}"
    return found


def requires_dist(requirements: Path) -> list[str]:
    """The Requires-Dist lines: the runtime's packages, then each extra's."""
    pinned = pins(requirements)
    wanted: list[tuple[str, str | None]] = [(name, None) for name in RUNTIME]
    wanted += [(name, extra) for extra, names in EXTRAS.items() for name in names]
    lines = []
    for name, extra in wanted:
        if name not in pinned:
            raise UserError(
                f"{requirements}: no pin of {name} (name==version), which the wheel needs"
            )
        lines.append(pinned[name] + (f'; extra == "{extra}"' if extra else ""))
    return lines


def package_version(package_root: Path) -> str:
    """`__version__` of tfpgo/__init__.py, read without importing it."""
    tree = ast.parse((package_root / NAME / "__init__.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "__version__":
            return str(ast.literal_eval(node.value))
    raise UserError(f"{package_root / NAME / '__init__.py'}: no __version__")


def metadata(version: str, requirements: Path) -> str:
    headers = [
        "Metadata-Version: 2.1",
        f"Name: {NAME}",
        f"Version: {version}",
        f"Summary: {SUMMARY}",
        f"Requires-Python: {REQUIRES_PYTHON}",
        "Description-Content-Type: text/markdown",
        *(f"Provides-Extra: {extra}" for extra in EXTRAS),
        *(f"Requires-Dist: {line}" for line in requires_dist(requirements)),
    ]
    return "\n".join(headers) + "\n\n" + DESCRIPTION


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def write_wheel(
    out: Path,
    package_root: Path,
    sources: list[Path],
    tools: list[Path],
    requirements: Path,
    read_files: list[Path],
) -> None:
    """The wheel at `out`, whose name must be tfpgo-<__version__>-<TAG>.whl."""
    version = package_version(package_root)
    expected = f"{NAME}-{version}-{TAG}.whl"
    if out.name != expected:
        raise UserError(f"{out.name}: the wheel of tfpgo {version} is named {expected}")
    entries: dict[str, tuple[bytes, int]] = {}
    for source in sources:
        name = source.relative_to(package_root).as_posix()
        if not name.startswith(f"{NAME}/"):
            raise UserError(f"{source}: not inside {package_root / NAME}")
        entries[name] = (source.read_bytes(), 0o644)
    for tool in tools:
        entries[f"{NAME}/bin/{tool.name}"] = (tool.read_bytes(), 0o755)
    for file in read_files:
        entries[f"{NAME}/data/{file.name}"] = (file.read_bytes(), 0o644)
    info = f"{NAME}-{version}.dist-info"
    wheel = f"Wheel-Version: 1.0\nGenerator: {NAME} tools/build_wheel.py\n"
    wheel += f"Root-Is-Purelib: false\nTag: {TAG}\n"
    entries[f"{info}/METADATA"] = (metadata(version, requirements).encode(), 0o644)
    entries[f"{info}/WHEEL"] = (wheel.encode(), 0o644)
    entries[f"{info}/entry_points.txt"] = (ENTRY_POINTS.encode(), 0o644)
    record = [_record_line(name, data) for name, (data, _) in sorted(entries.items())]
    record.append(f"{info}/RECORD,,")
    entries[f"{info}/RECORD"] = ("\n".join(record).encode() + b"\n", 0o644)
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, (data, mode) in entries.items():  # dist-info last, RECORD last of all
            entry = zipfile.ZipInfo(name, FIXED_DATE)
            entry.external_attr = (0o100000 | mode) << 16  # a regular file, its permissions
            entry.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(entry, data)


def main(argv: list[str]) -> int:
    parser = ArgumentParser(prog="build_wheel", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="the .whl to write")
    parser.add_argument("--requirements", type=Path, required=True, help="requirements.txt")
    parser.add_argument(
        "--package-root", type=Path, required=True, help="the directory holding tfpgo/"
    )
    parser.add_argument(
        "--tool", type=Path, action="append", default=[], help="a native tool; repeatable"
    )
    parser.add_argument(
        "--data", type=Path, action="append", default=[], help="a file the package reads"
    )
    parser.add_argument("sources", type=Path, nargs="+", help="the package's files")
    args = parser.parse_args(argv)
    write_wheel(args.out, args.package_root, args.sources, args.tool, args.requirements, args.data)
    return 0


if __name__ == "__main__":
    sys.exit(run_main(main, prog="build_wheel"))
