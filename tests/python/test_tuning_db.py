"""The tuning database (tfpgo.tune.db, tfpgo.tune.db_records, tools/tuning_db.py):
records in and out as they went in; a record applied only on its own target and
root op, seeding the same root op at other sizes, never applied on another
target or compiler version and listed as stale; two processes writing one file
at once; a corrupt or foreign file as one line, left byte for byte; merge and
prune; an exported spec that IREE's parser reads and plain iree-compile applies
(real iree-compile, its executable configurations read by iree_tile_oracle);
the tool's subcommands in-process, each error one line."""

from __future__ import annotations

import importlib.util
import json
import os
import sqlite3
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path
from types import ModuleType

import pytest
from iree_tile_oracle import TWO_MATMULS, applied_matmul_tiles, spec_tiles, tiles_of

from tfpgo.ab.result import ABResult, Verdict
from tfpgo.iree import run as iree_run
from tfpgo.iree.tools import run_tool
from tfpgo.tune import db, dispatch_tiles, tile_climb, tile_configs
from tfpgo.tune import document as tune_document
from tfpgo.tune.db_records import (
    CandidateRecord,
    ProgramRun,
    RootOp,
    Target,
    TileRecord,
    TileTiming,
    VariantTimes,
    codegen_flags,
    from_json,
    program_key,
    program_values,
    root_ops,
    to_json,
)
from tfpgo.tune.records import nearest_first
from tfpgo.tune.roofline import MachineLimit
from tfpgo.tune.tile_configs import RootConfig, neighbours, root_configs

TOOL = Path(__file__).resolve().parents[2] / "tools" / "tuning_db.py"
FLAGS = ("--iree-hal-target-device=local", "--iree-input-type=stablehlo")
HERE = Target.of("znver4", "+avx512f", "3.13.0 @ 89ece87b", FLAGS)
NEWER_IREE = replace(HERE, compiler="3.14.0 @ 0123abcd")
OTHER_CPU = replace(HERE, cpu="skylake", features="+avx2")
MATMUL_MAPS = ("(d0, d1, d2) -> (d0, d2)", "(d0, d1, d2) -> (d2, d1)", "(d0, d1, d2) -> (d0, d1)")
MATMUL = RootOp("linalg.matmul", MATMUL_MAPS, ("f32", "f32", "f32"), (256, 256, 512))
MATMUL_B8 = replace(MATMUL, loops=(64, 256, 512))  # another batch: the same form
# Another kind of root op with MATMUL's loop ranges: transposed B.
MATMUL_BT = replace(
    MATMUL, indexing_maps=(MATMUL_MAPS[0], "(d0, d1, d2) -> (d1, d2)", MATMUL_MAPS[2])
)
IREE_TILES = RootConfig((256, 256, 512), (64, 64, 0), (8, 16, 0), (0, 0, 16), "DoubleTilingExpert")
WIDER = replace(IREE_TILES, distribution=(64, 128, 0))


def _record(
    root: RootOp = MATMUL, winner: RootConfig | None = WIDER, when: float = 1.0, model: str = "m"
) -> TileRecord:
    tried = VariantTimes(
        WIDER.text(), (TileTiming(80.0, 100.0), TileTiming(84.0, 100.0)), (TileTiming(90.0, 100.0),)
    )
    return TileRecord(
        root,
        "main_dispatch_0_matmul_256x256x512_f32",
        "DoubleTilingExpert",
        IREE_TILES.text(),
        (tried,),
        None if winner is None else winner.text(),
        None if winner is None else TileTiming(84.0, 100.0),
        None if winner is None else TileTiming(90.0, 100.0),
        model,
        "p" * 16,
        when,
    )


def _decision(name: str, when: float = 1.0, program: str = "p" * 16) -> CandidateRecord:
    return CandidateRecord(
        program,
        name,
        "O2",
        ("--iree-opt-level=O2",),
        0.9,
        0.85,
        0.95,
        "helps",
        True,
        "helps: ...",
        when,
    )


def _run(finished: bool = False) -> ProgramRun:
    return ProgramRun(
        "p" * 16,
        "resnet50",
        finished,
        (f"{tile_configs.SPEC_FLAG}{tile_configs.SPEC}",),
        "// a spec\n",
        (replace(WIDER, op="linalg.matmul"),),
        0.31,
        600.0,
        ("iree-O2",),
        ("main_dispatch_7_conv_8x14x14x256x3x3x256_f32",),
        2.0,
    )


def _limit(target: Target) -> MachineLimit:
    document = {
        "format": "tfpgo.roofline",
        "version": 1,
        "target": {"cpu": target.cpu, "features": target.features},
        "cpu": "AMD EPYC",
        "isa": "avx512",
        "threads": 2,
        "peak_gflops": {"f32": 234.0, "f64": 116.9},
        "not_native": {},
        "bandwidth_gbs": {"copy": 37.0, "triad": 38.0},
    }
    return MachineLimit.from_json(document)


def _tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("tuning_db_tool", TOOL)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    from tfpgo import cli

    tool = _tool()
    status = cli.run_main(tool.main, argv, prog=tool.PROG)
    out, err = capsys.readouterr()
    return status, out, err


@pytest.fixture
def here_is_host(monkeypatch: pytest.MonkeyPatch) -> None:
    """`host` is HERE (no iree-compile run to resolve it)."""
    monkeypatch.setattr(Target, "host", classmethod(lambda cls, flags=(): HERE))


def test_records_round_trip(tmp_path):
    for record in (_record(), _record(winner=None), _decision("iree-O2"), _run(), HERE, MATMUL):
        assert from_json(type(record), json.loads(json.dumps(to_json(record)))) == record
    with db.TuningDb.open(tmp_path / "cache" / "tfpgo" / "tuning.db") as database:
        assert database.journal == "wal"  # this file system has it
        assert database.add_tiles(HERE, _record())
        assert not database.add_tiles(HERE, _record())  # the same row: nothing added
        assert database.add_decision(HERE, _decision("iree-O2"))
        assert database.add_run(HERE, _run())
        database.put_limit(HERE, _limit(HERE), when=3.0)
        assert database.exact_records(HERE, MATMUL) == [_record()]
        assert database.decisions(HERE, "p" * 16) == [_decision("iree-O2")]
        assert database.last_run(HERE, "p" * 16) == _run()
        assert database.last_run(HERE, "q" * 16) is None
        assert database.limit(HERE) == _limit(HERE)
        assert database.limit(NEWER_IREE) == _limit(HERE)  # a limit is the machine's
        assert database.limit(OTHER_CPU) is None
        assert _record().winner_config() == replace(WIDER, op="linalg.matmul")


def test_records_of_the_loop(tmp_path):
    """TileRecord.of_search and CandidateRecord.of_trial: what the loop has, as records."""
    trial = tile_climb.TileTrial
    found = dispatch_tiles.Search(
        {"d": IREE_TILES},
        {"d": [trial(WIDER, 80.0, 100.0), trial(WIDER, 86.0, 100.0)]},
        {"d": trial(WIDER, 90.0, 100.0)},
        {},
        {"d": [trial(WIDER, 90.0, 100.0)]},
    )
    record = TileRecord.of_search(found, "d", MATMUL, "m", "p" * 16, 5.0)
    assert record.winner == WIDER.text() and record.iree == IREE_TILES.text()
    assert record.winner_alone == TileTiming(86.0, 100.0)  # the worse of its two, as a climb counts
    assert record.winner_in_place == TileTiming(90.0, 100.0) and record.winner_ratio == 0.9
    assert record.variants == (
        VariantTimes(
            WIDER.text(),
            (TileTiming(80.0, 100.0), TileTiming(86.0, 100.0)),
            (TileTiming(90.0, 100.0),),
        ),
    )
    result = ABResult(0.9, 0.85, 0.95, Verdict.HELPS, 10.0, 9.0, 5, 0.95, 0.05)
    loop_trial = tune_document.CandidateTrial("iree-O2", "O2", "kept", "helps: ...", result, 1e-9)
    decision = CandidateRecord.of_trial(loop_trial, "p" * 16, ("--iree-opt-level=O2",), True, 1.0)
    assert decision == _decision("iree-O2")


def test_a_record_applied_seeded_and_stale(tmp_path, here_is_host, capsys):
    """Reuse only on this target and root op exactly; the same root op at another
    size seeds; a root op of other maps never; another compiler version or CPU
    never, and is listed as stale."""
    path = tmp_path / "tuning.db"
    with db.TuningDb.open(path) as database:
        database.add_tiles(HERE, _record(MATMUL, when=1.0))
        database.add_tiles(HERE, _record(MATMUL, when=2.0, model="newer"))
        database.add_tiles(HERE, _record(MATMUL_B8))
        database.add_tiles(HERE, _record(MATMUL_BT))
        for other in (NEWER_IREE, OTHER_CPU):
            database.add_tiles(other, _record(MATMUL, model="stale"))
            database.add_tiles(other, _record(MATMUL_B8, model="stale"))
            database.add_decision(other, _decision("iree-O2"))
        exact = database.exact_records(HERE, MATMUL)
        assert [r.model for r in exact] == ["newer", "m"]  # newest first
        assert all(r.root == MATMUL for r in exact)
        assert [r.root for r in database.seed_records(HERE, MATMUL)] == [MATMUL_B8]
        assert [r.root for r in database.seed_records(HERE, MATMUL_B8)] == [MATMUL, MATMUL]
        assert [r.root for r in database.exact_records(HERE, MATMUL_BT)] == [MATMUL_BT]
        assert database.seed_records(HERE, MATMUL_BT) == []
        assert database.decisions(HERE, "p" * 16) == []  # only the stale targets have one
        stale = {s.target.key: s for s in database.stale(HERE)}
        assert set(stale) == {NEWER_IREE.key, OTHER_CPU.key}
        assert stale[NEWER_IREE.key].tiles == 2 and stale[NEWER_IREE.key].decisions == 1
        assert NEWER_IREE.differences(HERE) == "iree-compile 3.14.0 @ 0123abcd"
        unknown = Target.of(
            "znver4", "+avx512f", "3.13.0 @ 89ece87b", (*FLAGS, "--iree-opt-level=O2")
        )
        assert database.exact_records(unknown, MATMUL) == []  # other flags: another target
    status, out, err = _cli(["list", "--tuning-db", str(path)], capsys)
    assert status == 0 and err == ""
    lines = {line.split()[0]: line for line in out.splitlines()[1:]}
    assert (
        "this machine's" in lines[HERE.key]
        and "4 tile records (4 with a winner)" in lines[HERE.key]
    )
    assert "stale: iree-compile 3.14.0 @ 0123abcd" in lines[NEWER_IREE.key]
    assert "stale: CPU skylake, other CPU features" in lines[OTHER_CPU.key]


def test_seeds_nearest_in_size_first():
    """The same matmul at another batch (one loop changed) before a newer record
    of other widths; among those, the nearer sizes; the newest among equals."""
    batch_8 = replace(MATMUL, loops=(64, 256, 512))
    records = [
        _record(replace(MATMUL, loops=(256, 128, 128)), when=4.0, model="newest, other widths"),
        _record(replace(MATMUL, loops=(1024, 256, 512)), when=3.0, model="batch 128"),
        _record(replace(MATMUL, loops=(128, 256, 512)), when=2.0, model="batch 16"),
        _record(replace(MATMUL, loops=(256, 256, 512)), when=1.0, model="batch 32, older"),
        _record(replace(MATMUL, loops=(256, 256, 512)), when=1.5, model="batch 32, newer"),
    ]
    newest_first = sorted(records, key=lambda r: -r.when)
    assert [r.model for r in nearest_first(batch_8, newest_first)] == [
        "batch 16",
        "batch 32, newer",
        "batch 32, older",
        "batch 128",
        "newest, other widths",
    ]


_WRITER = """
import sys, time
from pathlib import Path
from tfpgo.tune import db
from tfpgo.tune.db_records import CandidateRecord, Target
path, tag, other, barrier = Path(sys.argv[1]), sys.argv[2], sys.argv[3], Path(sys.argv[4])
target = Target.of("znver4", "+avx512f", "3.13.0 @ 89ece87b", ())


def meet(step):
    # A barrier: this writer's file, then wait for the other's (a condition, polled).
    (barrier / f"{tag}.{step}").touch()
    while not (barrier / f"{other}.{step}").exists():
        time.sleep(0.005)


def write(database, indices):
    for index in indices:
        name = f"{tag}-{index}"
        decision = CandidateRecord("p", name, "", (), 1.0, None, None, "helps", False, "", 1.0)
        assert database.add_decision(target, decision)


meet("ready")  # both create the file and start writing together
with db.TuningDb.open(path) as database:
    write(database, range(100))
    meet("half")  # each has committed its first half, and holds the file open
    write(database, range(100, 200))
"""


def test_two_processes_writing_one_database_lose_nothing(tmp_path):
    """Two writers meet at a barrier (a file each creates, each waiting for the
    other's), open one new file together and write 200 decisions each, meeting
    again halfway with the database open. The commit order the database records
    proves they overlapped: each writer committed rows both before and after
    rows of the other, into one file both held open."""
    path, barrier = tmp_path / "shared" / "tuning.db", tmp_path / "barrier"
    barrier.mkdir()
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", _WRITER, str(path), tag, other, str(barrier)],
            env=environment,
            stderr=subprocess.PIPE,
            text=True,
        )
        for tag, other in (("a", "b"), ("b", "a"))
    ]
    for writer in writers:
        _, err = writer.communicate(timeout=300)
        assert writer.returncode == 0, err
    target = Target.of("znver4", "+avx512f", "3.13.0 @ 89ece87b", ())
    with db.TuningDb.open(path) as database:
        names = {decision.name for decision in database.decisions(target, "p")}
    assert len(names) == 400
    assert names == {f"{tag}-{index}" for tag in "ab" for index in range(200)}
    # The order of commits (the rows' ids): each writer's rows begin before the
    # other's last and end after the other's first; a writer that had the file to
    # itself from open to close would have all its rows on one side of the other's.
    with sqlite3.connect(path) as connection:
        rows = connection.execute("SELECT name FROM decisions ORDER BY id").fetchall()
    at = {name: index for index, (name,) in enumerate(rows)}
    assert at["a-0"] < at["b-199"] and at["b-0"] < at["a-199"], rows
    # Each writer's second half came after the other's first half was committed.
    assert at["a-99"] < at["b-100"] and at["b-99"] < at["a-100"], rows


def _foreign_sqlite(path: Path) -> None:
    connection = sqlite3.connect(path)
    with connection:
        connection.execute("CREATE TABLE photos (id INTEGER PRIMARY KEY, name TEXT)")
        connection.execute("INSERT INTO photos (name) VALUES ('cat.jpg')")
    connection.close()


@pytest.mark.parametrize("kind", ["random bytes", "foreign sqlite", "truncated", "newer version"])
def test_a_file_that_is_not_a_database_is_one_line_and_left_as_it_is(tmp_path, kind, capsys):
    path = tmp_path / "tuning.db"
    if kind == "random bytes":
        path.write_bytes(os.urandom(4096))
    elif kind == "foreign sqlite":
        _foreign_sqlite(path)
    else:
        with db.TuningDb.open(path) as database:
            database.add_tiles(HERE, _record())
            database._connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            if kind == "newer version":
                database._connection.execute("UPDATE meta SET value = '2' WHERE name = 'version'")
        if kind == "truncated":  # a page of the header, the rest garbage
            path.write_bytes(path.read_bytes()[:100] + os.urandom(8192))
    before = path.read_bytes()
    with pytest.raises(db.TuningDbError) as raised:
        db.TuningDb.open(path)
    message = str(raised.value)
    assert "\n" not in message and str(path) in message
    notes: list[str] = []
    assert db.open_or_none(path, notes.append) is None
    assert len(notes) == 1 and "going on without one" in notes[0]
    status, out, err = _cli(["list", "--tuning-db", str(path)], capsys)
    assert status == 1 and out == "" and len(err.strip().splitlines()) == 1
    assert "Traceback" not in err and err.startswith("tuning_db: error: tuning database")
    assert path.read_bytes() == before


def test_merge_is_a_union_without_duplicates(tmp_path):
    first, second = tmp_path / "a.db", tmp_path / "b.db"
    with db.TuningDb.open(first) as database:
        database.add_tiles(HERE, _record(MATMUL))
        database.add_decision(HERE, _decision("iree-O2"))
        database.put_limit(HERE, _limit(HERE), when=1.0)
    with db.TuningDb.open(second) as database:
        database.add_tiles(HERE, _record(MATMUL))  # on both
        database.add_tiles(HERE, _record(MATMUL_B8))
        database.add_decision(HERE, _decision("iree-im2col"))
        database.add_run(HERE, _run())
        database.add_tiles(OTHER_CPU, _record(MATMUL))
    second_bytes = second.read_bytes()
    with db.TuningDb.open(first) as database:
        merged = database.merge(second)
        assert (merged.tiles, merged.decisions, merged.runs, merged.targets) == (2, 1, 1, 1)
        assert database.merge(second) == db.Merged(0, 0, 0, 0, 0)
        assert len(database.tile_records(HERE)) == 2
        assert {d.name for d in database.decisions(HERE, "p" * 16)} == {"iree-O2", "iree-im2col"}
        assert database.last_run(HERE, "p" * 16) == _run()
        assert [s.target for s in database.stale(HERE)] == [OTHER_CPU]
        with pytest.raises(db.TuningDbError, match="no such file"):
            database.merge(tmp_path / "missing.db")
    assert second.read_bytes() == second_bytes


def test_prune_drops_other_targets_and_says_what(tmp_path):
    with db.TuningDb.open(tmp_path / "tuning.db") as database:
        for target in (HERE, NEWER_IREE, OTHER_CPU):
            database.add_tiles(target, _record())
            database.add_decision(target, _decision("iree-O2"))
        database.add_run(NEWER_IREE, _run())
        database.put_limit(HERE, _limit(HERE))
        database.put_limit(OTHER_CPU, _limit(OTHER_CPU))
        dropped = {s.target: (s.tiles, s.decisions, s.runs) for s in database.prune(HERE)}
        assert dropped == {NEWER_IREE: (1, 1, 1), OTHER_CPU: (1, 1, 0)}
        assert [s.target for s in database.summaries()] == [HERE]
        assert database.limit(HERE) is not None and database.limit(OTHER_CPU) is None
        assert database.prune(HERE) == []


def test_default_path(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert db.default_path() == tmp_path / "tfpgo" / "tuning.db"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert db.default_path() == tmp_path / "home" / ".cache" / "tfpgo" / "tuning.db"


def test_target_flags_and_program_keys(tmp_path):
    spec, moved = tmp_path / "a" / "spec.mlir", tmp_path / "b" / "spec.mlir"
    for path in (spec, moved):
        path.parent.mkdir()
        path.write_text("// tiles\n")
    flags = (
        "--iree-opt-level=O3",
        f"{tile_configs.SPEC_FLAG}{spec}",
        f"--iree-hal-dump-executable-configurations-to={tmp_path}",
        "--iree-llvmcpu-target-cpu=host",
        "--iree-opt-level=O2",  # iree-compile takes the last
        "--iree-opt-data-tiling",
    )
    assert codegen_flags(flags) == ("--iree-opt-data-tiling", "--iree-opt-level=O2")
    assert Target.of("c", "f", "v", flags) == Target.of("c", "f", "v", codegen_flags(flags))
    assert Target.of("c", "f", "v", flags).key != Target.of("c", "f", "v", ()).key
    stablehlo = tmp_path / "m.mlir"
    stablehlo.write_text(TWO_MATMULS)
    here = program_key(stablehlo, [f"{tile_configs.SPEC_FLAG}{spec}"])
    assert here == program_key(stablehlo, [f"{tile_configs.SPEC_FLAG}{moved}"])
    moved.write_text("// other tiles\n")
    assert here != program_key(stablehlo, [f"{tile_configs.SPEC_FLAG}{moved}"])
    assert here != program_key(stablehlo, [])


def test_export_is_parsed_by_iree_and_applied_by_plain_iree_compile(tmp_path, capsys):
    """A record made from IREE's own choice for a real matmul, its winner a
    neighbour; the exported spec, read back by IREE's parser, holds the winner's
    tiles for the matmul's loop ranges, and iree-compile given nothing but the spec
    applies them (and leaves the other matmul, of no record, alone)."""
    stablehlo = tmp_path / "m.mlir"
    stablehlo.write_text(TWO_MATMULS)
    dump = tmp_path / "iree"
    iree_run.compile_vmfb(
        stablehlo,
        tmp_path / "iree.vmfb",
        [f"--iree-hal-dump-executable-configurations-to={dump}"],
        timeout_s=120,
    )
    roots, configs = root_ops(dump), root_configs(dump)
    name = "main_dispatch_0_matmul_256x256x512_f32"
    assert roots[name] == MATMUL  # the root op's semantics, read with IREE's parser
    iree = configs[name]
    winner = next(n for n in neighbours(iree) if n.distribution != iree.distribution)
    record = TileRecord(
        roots[name], name, iree.pipeline, iree.text(),
        (VariantTimes(winner.text(), (TileTiming(70.0, 100.0),)),),
        winner.text(), TileTiming(70.0, 100.0), None, "two_matmuls",
        program_key(stablehlo, ()), time.time(),
    )  # fmt: skip
    host = Target.host()
    path = tmp_path / "tuning.db"
    with db.TuningDb.open(path) as database:
        database.add_tiles(host, record)
        database.add_tiles(NEWER_IREE, replace(record, winner=IREE_TILES.text()))  # never exported
    spec = tmp_path / "out" / "tuning_spec.mlir"
    status, out, err = _cli(
        ["export", "--tuning-db", str(path), "--target", "host", "-o", str(spec)], capsys
    )
    assert status == 0 and err == "" and "the tiles of 1 root ops" in out
    assert spec_tiles(spec.read_text()) == {MATMUL.loops: tiles_of(winner)}
    applied = tmp_path / "applied"
    run_tool(
        "iree-compile",
        [
            *iree_run.IREE_FLAGS,
            f"{tile_configs.SPEC_FLAG}{spec}",
            f"--iree-hal-dump-executable-configurations-to={applied}",
            str(stablehlo),
            "-o",
            str(tmp_path / "tuned.vmfb"),
        ],
        "test (plain iree-compile)",
        timeout_s=120,
    )
    found = applied_matmul_tiles(applied)
    assert found[MATMUL.loops] == tiles_of(winner)
    assert found[(128, 64, 256)] == tiles_of(configs["main_dispatch_1_matmul_128x64x256_f32"])


def test_export_leaves_out_root_ops_the_matcher_cannot_tell_apart(tmp_path):
    with db.TuningDb.open(tmp_path / "tuning.db") as database:
        database.add_tiles(HERE, _record(MATMUL))
        database.add_tiles(HERE, _record(MATMUL_BT))  # same op name and loop ranges
        database.add_tiles(HERE, _record(MATMUL_B8))
        better = replace(_record(MATMUL_B8, when=0.5), winner_in_place=TileTiming(50.0, 100.0))
        database.add_tiles(HERE, better)
        chosen, left_out = database.spec_records(HERE)
        assert chosen == [better] and left_out == [("linalg.matmul", MATMUL.loops)]
        with pytest.raises(db.TuningDbError, match="no tile record with a winner"):
            database.export_spec(OTHER_CPU)


def test_tool_subcommands(tmp_path, here_is_host, capsys):
    path, other = tmp_path / "tuning.db", tmp_path / "other.db"
    with db.TuningDb.open(path) as database:
        database.add_tiles(HERE, _record())
        database.add_decision(HERE, _decision("iree-O2"))
        database.add_run(HERE, _run())
    with db.TuningDb.open(other) as database:
        database.add_tiles(NEWER_IREE, _record())
    status, out, err = _cli(["show", "--tuning-db", str(path)], capsys)
    assert status == 0 and err == ""
    assert (
        "winner 0.900" in out
        and "decision pppppppppppppppp iree-O2: helps 0.900 [0.850, 0.950], kept" in out
    )
    assert "cut short in 600 s" in out and "iree-O2, main_dispatch_7" in out
    status, out, _ = _cli(["show", "--tuning-db", str(path), "--program", "q"], capsys)
    assert status == 0 and "tiles" not in out and "decision" not in out
    status, out, err = _cli(["merge", "--tuning-db", str(path), str(other)], capsys)
    assert status == 0 and "added 1 tile records" in out
    newer = NEWER_IREE.key[:6]
    status, out, _ = _cli(["show", "--tuning-db", str(path), "--target", newer], capsys)
    assert status == 0 and "3.14.0" in out
    status, out, err = _cli(["prune", "--tuning-db", str(path)], capsys)
    assert status == 0 and f"0 decisions, 0 runs of target {NEWER_IREE.key}" in out
    spec = tmp_path / "spec.mlir"
    assert _cli(["export", "--tuning-db", str(path), "-o", str(spec)], capsys)[0] == 0
    assert "linalg.matmul" in spec.read_text()


@pytest.mark.parametrize(
    "argv, message",
    [
        (["list", "--tuning-db", "{tmp}/missing.db"], "no such file"),
        (["prune", "--tuning-db", "{tmp}/new/missing.db"], "no such file"),
        (
            ["show", "--tuning-db", "{tmp}/tuning.db", "--target", "ffff"],
            "no target with a key starting 'ffff'",
        ),
        (
            [
                "export",
                "--tuning-db",
                "{tmp}/tuning.db",
                "--target",
                "{stale}",
                "-o",
                "{tmp}/s.mlir",
            ],
            "no tile record with a winner",
        ),
        (["export", "--tuning-db", "{tmp}/tuning.db", "-o", "{tmp}"], "is a directory"),
        (["merge", "--tuning-db", "{tmp}/tuning.db", "{tmp}/junk.db"], "not an SQLite file"),
        (
            ["prune", "--tuning-db", "{tmp}/tuning.db", "--keep", "0"],
            "no target with a key starting '0'",
        ),
        (["list", "--tuning-db", "{tmp}"], "is a directory"),
        (["frobnicate"], "invalid choice"),
        (["export", "--tuning-db", "{tmp}/tuning.db"], "-o/--output"),
    ],
)
def test_tool_errors_are_one_line(tmp_path, here_is_host, capsys, argv, message):
    path = tmp_path / "tuning.db"
    with db.TuningDb.open(path) as database:
        database.add_tiles(HERE, _record(winner=None))
        database.add_tiles(OTHER_CPU, _record(winner=None))
    (tmp_path / "junk.db").write_bytes(b"not a database at all")
    before = path.read_bytes()
    names = {"tmp": str(tmp_path), "stale": OTHER_CPU.key}
    try:
        status, out, err = _cli([arg.format(**names) for arg in argv], capsys)
    except SystemExit as exit:  # argparse's own errors (one line: tfpgo.cli.ArgumentParser)
        status, (out, err) = int(exit.code or 0), capsys.readouterr()
    assert status in (1, 2) and out == ""
    assert len(err.strip().splitlines()) == 1 and message in err and "Traceback" not in err
    assert path.read_bytes() == before and not (tmp_path / "s.mlir").exists()
    assert not (tmp_path / "missing.db").exists() and not (tmp_path / "new").exists()


def test_a_program_is_its_structure_not_its_profile_or_weights(tmp_path):
    """Two runs of one model (new random weights, a new profile) are one program to
    tune; another op is another program; the weights have a digest of their own."""
    base = (
        '"func.func"() ({\n'
        '  %0 = "stablehlo.constant"() <{value = dense<"0x0000803F"> : tensor<1xf32>}> '
        '{profiler_data = {count = 5 : i64, fused_sources = ["a", "b"], self = 7 : i64}} '
        ": () -> tensor<1xf32> loc(#loc3)\n"
        '  %1 = "stablehlo.add"(%0, %0) {profiler_hot = true} : (tensor<1xf32>, tensor<1xf32>) '
        "-> tensor<1xf32> loc(#loc4)\n"
        "}) : () -> ()\n"
        '#loc3 = loc(fused<{profiler_data = {self = 7 : i64}}>["a"])\n'
    )
    variants = {
        "base": base,
        "profile": base.replace("self = 7", "self = 9").replace("count = 5", "count = 6"),
        "weights": base.replace("0x0000803F", "0x00000040"),
        "located": base.replace("loc(#loc4)", "loc(unknown)"),
        # Another profile carries other locations: another number of alias lines.
        "aliases": base + '#loc4 = loc(fused<{profiler_data = {self = 1 : i64}}>["b"])\n',
        "other op": base.replace("stablehlo.add", "stablehlo.multiply"),
    }
    keys, values = {}, {}
    for name, text in variants.items():
        path = tmp_path / f"{name}.mlir"
        path.write_text(text)
        keys[name], values[name] = program_key(path, ()), program_values(path)
    assert keys["base"] == keys["profile"] == keys["weights"] == keys["located"]
    assert keys["aliases"] == keys["base"]
    assert keys["other op"] != keys["base"]
    assert values["base"] == values["profile"] != values["weights"]


def test_data_tilings_pack_ops_are_no_root_ops(tmp_path):
    """With data tiling IREE dumps `linalg.pack` encodings with workgroup tiles and
    no indexing maps: they are left out, the mmt4d roots read (once crashed)."""
    program = tmp_path / "m.mlir"
    program.write_text(
        "func.func @main(%a: tensor<64x128xf32>, %b: tensor<128x32xf32>) -> tensor<64x32xf32> {\n"
        "  %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0]\n"
        "    : (tensor<64x128xf32>, tensor<128x32xf32>) -> tensor<64x32xf32>\n"
        "  return %0 : tensor<64x32xf32>\n}\n"
    )
    dump = tmp_path / "dump"
    flags = ("--iree-opt-data-tiling", "--iree-llvmcpu-enable-ukernels=all")
    run_tool(
        "iree-compile",
        [*iree_run.IREE_FLAGS, *flags, f"--iree-hal-dump-executable-configurations-to={dump}",
         str(program), "-o", str(tmp_path / "m.vmfb")],
        "test",
        120,
    )  # fmt: skip
    assert any("encoding" in path.name for path in dump.iterdir())  # the pack ops are dumped
    assert {root.op for root in root_ops(dump).values()} == {"linalg.mmt4d"}
