"""profile_diff (tfpgo.diff, tfpgo.diff.profile_diff): deltas, overlap, step-time interval, CLI."""

from __future__ import annotations

import shutil
from fractions import Fraction

import pytest
from profile_fixtures import CONV_TRAIN, DENSE_INFER, TRAIN, profile_real_step, read

from tfpgo import cli
from tfpgo.ab.intervals import t_quantile
from tfpgo.diff import compare, profile_diff
from tfpgo.diff.step_time import step_time_change
from tfpgo.iree import profile_document

RENDER_DATA = TRAIN.parents[2] / "render"


@pytest.fixture(scope="module")
def two_real_runs(tmp_path_factory):
    """Two real profiles of the same transformer training step, taken one after the other."""
    first = profile_real_step(tmp_path_factory.mktemp("run_a"))
    second = profile_real_step(tmp_path_factory.mktemp("run_b"))
    return first, second


@pytest.mark.parametrize("which", ["train", "conv_train", "real"])
def test_a_profile_diffed_with_itself_is_exact(which, two_real_runs):
    path = {"train": TRAIN, "conv_train": CONV_TRAIN, "real": two_real_runs[0]}[which]
    profile = read(path)
    diff = compare(profile, read(path), "a", "a")
    assert diff.overlap == Fraction(1)
    assert not diff.changed_ops and not diff.added and not diff.removed
    assert all(delta.self_ps == delta.total_ps == delta.count == 0 for delta in diff.ops)
    assert not [delta for delta in diff.scopes if delta.changed]
    if profile.step_wall_ps:
        change = diff.step_time
        assert change is not None and change.low_ps is not None and change.high_ps is not None
        assert change.delta_ps == 0
        assert change.low_ps == -change.high_ps


def test_two_real_runs(two_real_runs):
    a, b = (read(path) for path in two_real_runs)
    diff = compare(a, b, "a", "b")
    # The overlap is the formula's on these two profiles, whatever their times were
    # (a loaded machine once halved one run's op time: no bound on it holds). The
    # second model's optimizer scope is renamed (`sgd_1_1`): its ops are added.
    share_a = {op.name: Fraction(op.self_ps, a.totals.op_self_ps) for op in a.ops}
    share_b = {op.name: Fraction(op.self_ps, b.totals.op_self_ps) for op in b.ops}
    assert diff.overlap == sum(min(share, share_b.get(name, 0)) for name, share in share_a.items())
    assert {d.name for d in diff.added} == set(share_b) - set(share_a)
    assert sum(delta.self_ps for delta in diff.ops) == b.totals.op_self_ps - a.totals.op_self_ps
    for delta in diff.ops:
        assert delta.self_ps == delta.b.self_ps - delta.a.self_ps
    top_scopes = [delta for delta in diff.scopes if "/" not in delta.name]
    assert sum(d.self_ps for d in top_scopes) == b.totals.op_self_ps - a.totals.op_self_ps
    change = diff.step_time
    assert change is not None and change.low_ps is not None and change.high_ps is not None
    assert change.steps_a == change.steps_b == 3
    assert change.low_ps <= change.delta_ps <= change.high_ps
    assert change.delta_ps == pytest.approx(
        sum(b.step_wall_ps) / 3 - sum(a.step_wall_ps) / 3, abs=1
    )


def test_added_removed_and_the_overlap_score():
    a, b = read(TRAIN), read(DENSE_INFER)
    diff = compare(a, b, "train", "dense")
    names_a, names_b = {op.name for op in a.ops}, {op.name for op in b.ops}
    assert {d.name for d in diff.added} == names_b - names_a
    assert {d.name for d in diff.removed} == names_a - names_b
    share_a = {op.name: op.self_ps / a.totals.op_self_ps for op in a.ops}
    share_b = {op.name: op.self_ps / b.totals.op_self_ps for op in b.ops}
    by_hand = sum(min(share_a[name], share_b[name]) for name in names_a & names_b)
    assert float(diff.overlap) == pytest.approx(by_hand, rel=1e-12)
    assert diff.step_time is None  # neither fixture recorded per-step durations


@pytest.mark.parametrize(
    ("freedom", "quantile"),
    [(1, 12.7062047), (2, 4.3026527), (4, 2.7764451), (10, 2.2281389), (30, 2.0422725)],
)
def test_t_quantile_matches_the_tables(freedom, quantile):
    assert t_quantile(0.975, freedom) == pytest.approx(quantile, abs=1e-6)


def test_welch_interval_by_hand():
    # means 12 and 22; variances 4 and 4, so se = sqrt(8/3) and Welch's df = 4
    change = step_time_change((10, 12, 14), (20, 22, 24))
    assert change is not None
    half = 2.7764451 * (8 / 3) ** 0.5
    assert change.delta_ps == 10
    assert change.low_ps == pytest.approx(10 - half, abs=1e-5)
    assert change.high_ps == pytest.approx(10 + half, abs=1e-5)
    one_step = step_time_change((10,), (20, 22))
    assert one_step is not None
    assert one_step.delta_ps == 11 and one_step.low_ps is None
    assert step_time_change((), (1, 2)) is None


def test_cli_writes_markdown_html_and_picture(tmp_path, capsys, two_real_runs):
    run_a = tmp_path / "pgo_a"  # a pgo output directory and a bare op_profile.json
    run_a.mkdir()
    shutil.copyfile(two_real_runs[0], run_a / "op_profile.json")
    out = tmp_path / "diff"
    status = cli.run_main(profile_diff.main, [str(run_a), str(two_real_runs[1]), "-o", str(out)])
    assert status == 0
    assert "overlap:" in capsys.readouterr().out
    markdown = (out / "diff.md").read_text()
    assert "95% interval" in markdown and "## Ops with the largest change" in markdown
    scope_rows = markdown.split("## Scopes with the largest change")[1].split("## Ops")[0]
    rows = [line.split("|")[2:8] for line in scope_rows.strip().splitlines()[2:]]
    assert rows and len(rows) == len({tuple(row) for row in rows})  # no chain repeats
    page = (out / "diff.html").read_text()
    assert "<svg" in page and "<title>" in page
    assert (out / "diff.svg").read_text().startswith("<?xml")


def test_cli_self_diff_says_full_overlap(tmp_path, capsys):
    status = cli.run_main(profile_diff.main, [str(TRAIN), str(TRAIN), "-o", str(tmp_path)])
    assert status == 0
    printed = capsys.readouterr().out
    assert "overlap: 100.00%" in printed
    assert "0 changed" in printed and "0 added" in printed and "0 removed" in printed


@pytest.mark.parametrize(
    ("make_input", "message"),
    [
        (lambda tmp: tmp / "missing.json", "no such file"),
        (lambda tmp: tmp, "a directory without op_profile.json"),
        (lambda tmp: RENDER_DATA / "mlp_op_graph.json", "not a tfpgo.op_profile document"),
        (lambda tmp: _write(tmp / "bad.json", "{"), "not valid JSON"),
    ],
)
def test_bad_input_is_one_line_and_nonzero(tmp_path, capsys, make_input, message):
    bad = make_input(tmp_path)
    status = cli.run_main(
        profile_diff.main, [str(TRAIN), str(bad), "-o", str(tmp_path / "out")], prog="profile_diff"
    )
    assert status == 1
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and error.startswith("profile_diff: error: ")
    assert message in error
    assert not (tmp_path / "out").exists()


def test_an_output_dir_that_is_a_file_is_one_line(tmp_path, capsys):
    taken = _write(tmp_path / "taken", "")
    status = cli.run_main(
        profile_diff.main, [str(TRAIN), str(TRAIN), "-o", str(taken)], prog="profile_diff"
    )
    assert status == 1
    assert "is not a directory" in capsys.readouterr().err
    assert taken.read_text() == ""


def _iree_profile(d0_ps: int, path):
    """A dispatch profile by hand: d0 ran ops x and y (equal parts), d1 no tf op."""
    d0 = profile_document.Dispatch(
        "m_dispatch_0_matmul_8x8x8_f32", 2, d0_ps, ("x", "y"), 500, "compute"
    )
    d1 = profile_document.Dispatch("m_dispatch_1_slow_memcpy", 2, 300, (), 0, "")
    profile = profile_document.IreeProfile(
        "model.stablehlo.mlir", "main", 2, 1, 0.0, 1e-3, 1e-5, (d0, d1),
        {"x": d0_ps // 2, "y": d0_ps - d0_ps // 2}, {"x": 250, "y": 250},
    )  # fmt: skip
    profile.write(path)
    return path


def test_two_iree_dispatch_profiles_per_tf_op_and_per_dispatch(tmp_path, capsys):
    default = _iree_profile(1001, tmp_path / "iree_profile.json")
    tuned = _iree_profile(401, tmp_path / "iree_profile.tuned.json")
    by_op = profile_diff.read_profile(default)
    # Every dispatch picosecond: 1001 on x and y, the 300 of the copy on no op.
    assert {op.name: op.self_ps for op in by_op.ops} == {"x": 500, "y": 501}
    assert by_op.totals.op_self_ps + by_op.totals.non_op_ps == 1001 + 300
    diff = compare(by_op, profile_diff.read_profile(tuned), "a", "b")
    assert {d.name: d.self_ps for d in diff.ops} == {"x": 200 - 500, "y": 201 - 501}
    status = cli.run_main(
        profile_diff.main, [str(default), str(tuned), "--by", "dispatch", "-o", str(tmp_path)]
    )
    assert status == 0
    assert "2 in both (1 changed)" in capsys.readouterr().out
    table = (tmp_path / "diff.md").read_text()
    assert "| m_dispatch_0_matmul_8x8x8_f32 | 1 ns | 401 ps | −600 ps |" in table


def _write(path, text):
    path.write_text(text)
    return path
