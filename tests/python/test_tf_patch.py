"""The TensorFlow patch series, tools/apply_tf_patch.sh and the tblgen check.

The tests that need a TensorFlow 2.21 source tree read its path from $TF_SRC
and are skipped, with the reason, when it is not set. Under Bazel:

    bazel test //tests/python:test_tf_patch --test_env=TF_SRC=/abs/path/tensorflow

The tree is never modified: everything is applied to scratch copies.
"""

import os
import re
import subprocess
from pathlib import Path

import check_tf_patch as check
import pytest

from tfpgo.cli import run_main
from tfpgo.errors import UserError

TF_SRC = os.environ.get("TF_SRC", "")
needs_tf_src = pytest.mark.skipif(
    not TF_SRC,
    reason="TF_SRC is not set: run with --test_env=TF_SRC=/abs/path/to/tensorflow-2.21 "
    "(see tensorflow_patch/README.md)",
)


def run_apply(*args):
    return subprocess.run(
        ["bash", str(check.APPLY_SCRIPT), *map(str, args)],
        capture_output=True,
        text=True,
        check=False,
    )


def git_repo(root: Path) -> None:
    git = ["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@localhost"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "base"], check=True)


def fake_tf_tree(root: Path, version: str) -> Path:
    """A git tree that passes the script's TensorFlow probe but is not TF."""
    (root / "tensorflow").mkdir(parents=True)
    (root / "tensorflow" / "tf_version.bzl").write_text(f'TF_VERSION = "{version}"\n')
    probe = root / check.PROBE_FILE
    probe.parent.mkdir(parents=True)
    probe.write_text("class TF_Op;\n")
    git_repo(root)
    return root


# --- Without a TensorFlow tree ----------------------------------------------


def test_series_is_numbered_and_only_modifies_existing_files():
    patches = sorted(check.PATCH_DIR.glob("*.patch"))
    assert patches, "no patches"
    numbers = [int(p.name[:4]) for p in patches]
    assert numbers == list(range(1, len(patches) + 1))
    for patch in patches:
        text = patch.read_text()
        assert "new file mode" not in text, f"{patch.name}: new files belong in the overlay"
        assert "deleted file mode" not in text
        for path in re.findall(r"^diff --git a/(\S+) b/", text, re.MULTILINE):
            assert not (check.REPO_ROOT / "tensorflow_patch" / path).exists(), path


def test_split_template_args_keeps_nested_commas():
    assert check.split_template_args("A, B<C, D<E, F>>::Impl, G") == [
        "A",
        "B<C, D<E, F>>::Impl",
        "G",
    ]


def test_count_annotated_names_classes_lacking_the_trait():
    decls = (
        f"class AOp : public ::mlir::Op<AOp, ::mlir::OpTrait::ZeroRegions, {check.TRAIT}, "
        f"{check.INTERFACE_TRAIT}> {{\n"
        f"class BOp : public ::mlir::Op<BOp, ::mlir::OpTrait::NOperands<2>::Impl, "
        f"{check.INTERFACE_TRAIT}> {{\n"
        "class COp : public ::mlir::Op<COp> {\n"
        "class Unrelated : public Base {\n"
    )
    count = check.count_annotated(check.OpTd("x.td", True), decls)
    assert (count.classes, count.with_trait, count.with_interface) == (3, 1, 2)
    assert count.lacking == ("BOp", "COp")


def test_apply_refuses_a_directory_that_is_not_tensorflow(tmp_path):
    result = run_apply(tmp_path)
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1
    assert "not a TensorFlow source tree" in result.stderr


def test_apply_refuses_another_tensorflow_version(tmp_path):
    tree = fake_tf_tree(tmp_path / "tf", "2.22.0")
    result = run_apply("--check", tree)
    assert result.returncode == 1
    assert "'2.22.0', the series is for 2.21.0" in result.stderr


def test_apply_refuses_uncommitted_changes(tmp_path):
    tree = fake_tf_tree(tmp_path / "tf", "2.21.0")
    (tree / "local_edit.txt").write_text("work in progress\n")
    result = run_apply(tree)
    assert result.returncode == 1
    assert "uncommitted changes (local_edit.txt)" in result.stderr


def test_apply_refuses_a_tree_the_series_does_not_fit(tmp_path):
    tree = fake_tf_tree(tmp_path / "tf", "2.21.0")
    result = run_apply(tree)
    assert result.returncode == 1
    assert "the series does not apply" in result.stderr
    assert (
        subprocess.run(
            ["git", "-C", str(tree), "status", "--porcelain"], capture_output=True, text=True
        ).stdout
        == ""
    )


def test_check_cli_reports_a_missing_tree_in_one_line(tmp_path, capsys):
    status = run_main(check.main, [str(tmp_path / "absent")], prog="check_tf_patch")
    assert status == 1
    assert capsys.readouterr().err == (
        f"check_tf_patch: error: TF_SRC {tmp_path / 'absent'}: not a directory\n"
    )


# --- Against $TF_SRC ----------------------------------------------------------


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    tf_src = Path(TF_SRC)
    try:
        return check.verify(tf_src, tmp_path_factory.mktemp("verify"))
    except UserError as error:
        pytest.fail(f"check_tf_patch failed: {error}")


@needs_tf_src
def test_every_tf_op_class_carries_trait_and_interface(report):
    by_td = {count.td: count for count in report.ops}
    tf_ops = by_td["tensorflow/compiler/mlir/tensorflow/ir/tf_ops.td"]
    assert tf_ops.classes > 500  # TF 2.21 defines 824 ops on TF_Op
    for count in report.ops:
        expected = count.classes if count.on_tf_op else 0
        assert (count.with_trait, count.with_interface) == (expected, expected), count
    if report.baseline is not None:  # TF_SRC was pristine
        assert report.baseline.classes == tf_ops.classes
        assert report.baseline.with_trait == report.baseline.with_interface == 0


@needs_tf_src
def test_series_applies_once_and_reruns_cleanly(report):
    assert len(report.apply_messages) == 3
    assert "nothing to do" in report.apply_messages[2]
    assert [item.split()[-1] for item in report.generated] == [
        output.td for output in check.OVERLAY_OUTPUTS
    ]


@needs_tf_src
def test_series_applies_to_a_tree_with_lf_line_endings(tmp_path):
    tree = tmp_path / "tf"
    for rel in [*check.patched_files(), check.VERSION_FILE]:
        (tree / rel).parent.mkdir(parents=True, exist_ok=True)
        (tree / rel).write_bytes((Path(TF_SRC) / rel).read_bytes().replace(b"\r\n", b"\n"))
    git_repo(tree)
    first, second = run_apply(tree), run_apply(tree)
    assert first.returncode == 0, first.stderr
    assert second.returncode == 0 and "nothing to do" in second.stdout, second.stderr
    base_td = (tree / check.PROBE_FILE).read_bytes()
    assert b"\r" not in base_td
    assert b"!listconcat(traits, [TF_ProfileAnnotation])" in base_td
