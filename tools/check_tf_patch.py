"""Checks the TensorFlow patch series against a TensorFlow 2.21 source tree.

Building TensorFlow takes hours on a large machine, so this checks what can be
checked in seconds, on a scratch copy (the tree given is never modified):

  (a) `tools/apply_tf_patch.sh` accepts the tree, applies the series and the
      overlay to the copy, and a second run changes nothing;
  (b) LLVM 22's `mlir-tblgen -gen-op-decls` over the patched op definitions
      succeeds and every generated class of an op defined on `TF_Op` carries
      the `TF::ProfileAnnotation` trait and the ProfilerAnnotationsInterface,
      while dialects with their own base class (tfl, tf_executor, tfr) do not;
      the overlay's own `.td` files generate too.

The scratch copy holds the files the series patches and every `.td` under
`tensorflow/`: that is all mlir-tblgen reads.
"""

from __future__ import annotations

import argparse
import hashlib
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from tfpgo.cli import run_main, user_path
from tfpgo.errors import UserError

# Not resolved: under Bazel this is the runfiles tree, whose declared data
# (apply script, patches, overlay) is what gets checked.
REPO_ROOT = Path(__file__).absolute().parents[1]
APPLY_SCRIPT = REPO_ROOT / "tools" / "apply_tf_patch.sh"
PATCH_DIR = REPO_ROOT / "tensorflow_patch" / "patches"
DEFAULT_LLVM_ROOT = Path("/usr/lib/llvm-22")

TRAIT = "::mlir::OpTrait::TF::ProfileAnnotation"
INTERFACE_TRAIT = "::mlir::TF::ProfilerAnnotationsInterface::Trait"
PROBE_FILE = "tensorflow/compiler/mlir/tensorflow/ir/tf_op_base.td"
VERSION_FILE = "tensorflow/tf_version.bzl"


@dataclass(frozen=True)
class OpTd:
    """An op definition file and whether its ops derive from TF_Op."""

    path: str
    on_tf_op: bool


OP_TDS = (
    OpTd("tensorflow/compiler/mlir/tensorflow/ir/tf_ops.td", True),
    OpTd("tensorflow/compiler/mlir/tensorflow/ir/host_runtime/tfrt_ops.td", True),
    OpTd("tensorflow/compiler/mlir/quantization/tensorflow/passes/tf_quant_ops.td", True),
    OpTd("tensorflow/dtensor/mlir/ir/tf_dtensor.td", True),
    OpTd("tensorflow/compiler/mlir/tensorflow/ir/tf_executor_ops.td", False),
    OpTd("tensorflow/compiler/mlir/lite/ir/tfl_ops.td", False),
    OpTd("tensorflow/compiler/mlir/tfr/ir/tfr_ops.td", False),
)

_IR = "tensorflow/compiler/mlir/tensorflow/ir/"
_PROFILE_GUIDED = "tensorflow/compiler/mlir/tensorflow/transforms/profile_guided/"


@dataclass(frozen=True)
class OverlayOutput:
    """One file TensorFlow's BUILD (as patched) generates from an overlay .td."""

    td: str
    out: str
    flags: tuple[str, ...]


OVERLAY_OUTPUTS = (
    OverlayOutput(
        _IR + "tf_profiler_annotations.td",
        _IR + "tf_profiler_annotations.h.inc",
        ("-gen-op-interface-decls",),
    ),
    OverlayOutput(
        _IR + "tf_profiler_annotations.td",
        _IR + "tf_profiler_annotations.cc.inc",
        ("-gen-op-interface-defs",),
    ),
    OverlayOutput(
        _PROFILE_GUIDED + "passes.td",
        _PROFILE_GUIDED + "passes.h.inc",
        ("-gen-pass-decls", "-name=TFProfileGuided"),
    ),
)

_OP_CLASS = re.compile(r"^class (\w+) : public ::mlir::Op<(.*)> \{$", re.MULTILINE)


@dataclass(frozen=True)
class OpClassCount:
    """How many generated op classes of one `.td` carry the trait and interface."""

    td: str
    on_tf_op: bool
    classes: int
    with_trait: int
    with_interface: int
    lacking: tuple[str, ...]  # classes missing the trait or the interface

    def summary(self) -> str:
        return (
            f"{self.td}: {self.with_trait} of {self.classes} op classes carry "
            f"TF::ProfileAnnotation, {self.with_interface} of {self.classes} "
            "ProfilerAnnotationsInterface"
        )


@dataclass(frozen=True)
class Report:
    """Outcome of a successful check."""

    apply_messages: tuple[str, ...]
    baseline: OpClassCount | None  # tf_ops.td before the series; None if pre-applied
    ops: tuple[OpClassCount, ...]
    generated: tuple[str, ...]  # overlay outputs, "<td> <flag>"
    registration: str  # what check_registration established


def split_template_args(text: str) -> list[str]:
    """Splits `A, B<C, D>, E` at top-level commas."""
    parts, depth, start = [], 0, 0
    for index, char in enumerate(text):
        if char == "<":
            depth += 1
        elif char == ">":
            depth -= 1
        elif char == "," and depth == 0:
            parts.append(text[start:index].strip())
            start = index + 1
    parts.append(text[start:].strip())
    return [part for part in parts if part]


def op_class_bases(decls: str) -> dict[str, tuple[str, ...]]:
    """Maps each op class in `-gen-op-decls` output to its trait/interface bases."""
    classes = {}
    for match in _OP_CLASS.finditer(decls):
        name, args = match.group(1), split_template_args(match.group(2))
        if not args or args[0] != name:
            raise UserError(f"unexpected op class declaration for {name} in mlir-tblgen output")
        classes[name] = tuple(args[1:])
    return classes


def count_annotated(td: OpTd, decls: str) -> OpClassCount:
    """Counts the classes of `decls` that carry the trait and the interface."""
    classes = op_class_bases(decls)
    with_trait = [name for name, bases in classes.items() if TRAIT in bases]
    with_interface = [name for name, bases in classes.items() if INTERFACE_TRAIT in bases]
    both = set(with_trait) & set(with_interface)
    return OpClassCount(
        td=td.path,
        on_tf_op=td.on_tf_op,
        classes=len(classes),
        with_trait=len(with_trait),
        with_interface=len(with_interface),
        lacking=tuple(sorted(set(classes) - both)),
    )


def _run(command: Sequence[str | Path], what: str) -> str:
    result = subprocess.run(
        [str(part) for part in command], capture_output=True, text=True, check=False
    )
    if result.returncode != 0:
        lines = (result.stderr or result.stdout).strip().splitlines()
        first = next((line for line in lines if "error" in line), lines[0] if lines else "")
        raise UserError(f"{what} failed: {first.strip()}")
    return result.stdout


class Tblgen:
    """mlir-tblgen of an LLVM installation, run over one TensorFlow tree."""

    def __init__(self, llvm_root: Path, tf_tree: Path) -> None:
        self.binary = llvm_root / "bin" / "mlir-tblgen"
        self.include = llvm_root / "include"
        self.tf_tree = tf_tree
        if not self.binary.is_file():
            raise UserError(f"{self.binary} not found; install mlir-22-tools or pass --llvm-root")

    def generate(self, td: str, flags: Iterable[str], out: Path) -> str:
        out.parent.mkdir(parents=True, exist_ok=True)
        _run(
            [
                self.binary,
                *flags,
                "-I",
                self.tf_tree,
                "-I",
                self.include,
                self.tf_tree / td,
                "-o",
                out,
            ],
            f"mlir-tblgen {' '.join(flags)} {td}",
        )
        return out.read_text()


def check_tf_tree(tf_src: Path) -> None:
    """Raises UserError unless `tf_src` looks like a TensorFlow source tree."""
    if not tf_src.is_dir():
        raise UserError(f"TF_SRC {tf_src}: not a directory")
    if not (tf_src / PROBE_FILE).is_file():
        raise UserError(f"TF_SRC {tf_src}: not a TensorFlow source tree ({PROBE_FILE} missing)")


def patched_files() -> list[str]:
    """Paths the series modifies, from the patches' `diff --git` lines."""
    paths = set()
    for patch in sorted(PATCH_DIR.glob("[0-9][0-9][0-9][0-9]-*.patch")):
        paths.update(re.findall(r"^diff --git a/(\S+) b/", patch.read_text(), re.MULTILINE))
    if not paths:
        raise UserError(f"no patches in {PATCH_DIR}")
    return sorted(paths)


def make_scratch_tree(tf_src: Path, scratch: Path) -> None:
    """Copies what the series and mlir-tblgen touch into a new git repository."""
    wanted = set(patched_files()) | {VERSION_FILE}
    wanted.update(str(td.relative_to(tf_src)) for td in (tf_src / "tensorflow").rglob("*.td"))
    for rel in sorted(wanted):
        source = tf_src / rel
        if not source.is_file():
            raise UserError(f"TF_SRC {tf_src}: {rel} is missing")
        (scratch / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, scratch / rel)
    git: list[str | Path] = [
        "git",
        "-C",
        scratch,
        "-c",
        "user.name=tfpgo",
        "-c",
        "user.email=tfpgo@localhost",
    ]
    _run([*git, "init", "-q"], "git init")
    _run([*git, "add", "-A"], "git add")
    _run([*git, "commit", "-q", "-m", "scratch copy"], "git commit")


def tree_digest(root: Path) -> str:
    """Hash of every file's path and content below `root`, outside .git."""
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file() and ".git" not in p.parts):
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def apply_series(tree: Path) -> list[str]:
    """Applies the series to `tree` twice and checks the second run is a no-op."""
    messages = [_run(["bash", APPLY_SCRIPT, "--check", tree], "apply_tf_patch.sh --check").strip()]
    messages.append(_run(["bash", APPLY_SCRIPT, tree], "apply_tf_patch.sh").strip())
    before = tree_digest(tree)
    messages.append(_run(["bash", APPLY_SCRIPT, tree], "apply_tf_patch.sh (second run)").strip())
    if tree_digest(tree) != before:
        raise UserError("apply_tf_patch.sh is not idempotent: its second run changed the tree")
    return messages


def verify_annotations(tblgen: Tblgen, gen_dir: Path) -> tuple[OpClassCount, ...]:
    """Runs -gen-op-decls over OP_TDS; TF_Op ops must all be annotated, others none."""
    counts = []
    for td in OP_TDS:
        decls = tblgen.generate(td.path, ["-gen-op-decls"], gen_dir / (td.path + ".h.inc"))
        count = count_annotated(td, decls)
        if count.classes == 0:
            raise UserError(f"mlir-tblgen -gen-op-decls {td.path} produced no op classes")
        if td.on_tf_op and count.lacking:
            raise UserError(f"{count.summary()}; lacking: {', '.join(count.lacking[:5])}")
        if not td.on_tf_op and (count.with_trait or count.with_interface):
            raise UserError(f"{count.summary()}; expected none (not defined on TF_Op)")
        counts.append(count)
    return tuple(counts)


def generate_overlay(tblgen: Tblgen, gen_dir: Path) -> tuple[str, ...]:
    """Generates OVERLAY_OUTPUTS into `gen_dir`, at the paths Bazel would use."""
    done = []
    for output in OVERLAY_OUTPUTS:
        if not (tblgen.tf_tree / output.td).is_file():
            raise UserError(f"overlay file {output.td} is missing from the patched tree")
        text = tblgen.generate(output.td, output.flags, gen_dir / output.out)
        if not text.strip():
            raise UserError(f"mlir-tblgen {' '.join(output.flags)} {output.td} produced nothing")
        done.append(f"{' '.join(output.flags)} {output.td}")
    return tuple(done)


def check_registration(tree: Path, gen_dir: Path, llvm_root: Path) -> str:
    """Checks that the function the patched registerTensorFlowPasses() calls is
    the one the overlay declares: `void mlir::TF::registerProfileGuidedPasses()`.

    The series forward-declares it in transforms/passes.h (so the many targets
    that list passes.h need no new header); a mismatch would only surface when
    linking tf-opt, hours into a TensorFlow build. Compiles the overlay's
    passes.h against LLVM 22's headers with the C++ compiler.
    """
    patched = (tree / "tensorflow/compiler/mlir/tensorflow/transforms/passes.h").read_text()
    if "TF::registerProfileGuidedPasses();" not in patched:
        raise UserError(
            "patched transforms/passes.h does not call TF::registerProfileGuidedPasses()"
        )
    source = gen_dir / "registration_check.cc"
    source.write_text(
        '#include "tensorflow/compiler/mlir/tensorflow/transforms/profile_guided/passes.h"\n'
        "void (*const kRegister)() = &mlir::TF::registerProfileGuidedPasses;\n"
    )
    compiler = shutil.which("c++") or shutil.which("g++") or shutil.which("clang++")
    if compiler is None:
        raise UserError("no C++ compiler (c++, g++, clang++) on PATH")
    _run(
        [
            compiler,
            "-std=c++17",
            "-fsyntax-only",
            "-I",
            tree,
            "-I",
            gen_dir,
            "-I",
            llvm_root / "include",
            source,
        ],
        "compiling the overlay's profile_guided/passes.h",
    )
    return "void mlir::TF::registerProfileGuidedPasses() is declared by the overlay"


def verify(tf_src: Path, work: Path, llvm_root: Path = DEFAULT_LLVM_ROOT) -> Report:
    """Checks (a) and (b) for `tf_src` in the scratch directory `work`."""
    check_tf_tree(tf_src)
    scratch = work / "tf"
    make_scratch_tree(tf_src, scratch)
    tblgen = Tblgen(llvm_root, scratch)
    tf_ops = OP_TDS[0]
    counted = count_annotated(
        tf_ops, tblgen.generate(tf_ops.path, ["-gen-op-decls"], work / "baseline.h.inc")
    )
    baseline: OpClassCount | None = counted
    if counted.with_trait == counted.classes:
        baseline = None  # TF_SRC already carries the series
    elif counted.with_trait:
        raise UserError(f"TF_SRC carries part of the series: {counted.summary()}")
    messages = apply_series(scratch)
    gen_dir = work / "gen"
    ops = verify_annotations(tblgen, gen_dir)
    tblgen.generate(tf_ops.path, ["-gen-op-defs"], gen_dir / "tf_all_ops.cc.inc")
    generated = generate_overlay(tblgen, gen_dir)
    registration = check_registration(scratch, gen_dir, llvm_root)
    return Report(tuple(messages), baseline, ops, generated, registration)


def format_report(report: Report) -> list[str]:
    lines = [f"(a) {message}" for message in report.apply_messages]
    if report.baseline is not None:
        lines.append(f"(b) before the series: {report.baseline.summary()}")
    lines += [f"(b) {count.summary()}" for count in report.ops]
    lines += [f"(b) overlay: mlir-tblgen {item} ok" for item in report.generated]
    lines.append(f"(b) registration: {report.registration}")
    return lines


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="check_tf_patch",
        description="Check that the tfpgo patch series applies to a TensorFlow 2.21 tree "
        "and attaches the ProfileAnnotation trait to every tf op (on a scratch copy).",
    )
    parser.add_argument("tf_src", help="TensorFlow source tree (a git work tree)")
    parser.add_argument(
        "--llvm-root", default=str(DEFAULT_LLVM_ROOT), help="LLVM 22 installation with mlir-tblgen"
    )
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="tfpgo_tf_patch.") as work:
        report = verify(user_path(args.tf_src), Path(work), user_path(args.llvm_root))
    for line in format_report(report):
        print(line)
    print("check_tf_patch: ok")
    return 0


if __name__ == "__main__":
    sys.exit(run_main(main, prog="check_tf_patch"))
