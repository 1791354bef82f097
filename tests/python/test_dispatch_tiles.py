"""Per-dispatch tile sizes as IREE tuning specs (tfpgo.tune.dispatch_tiles): IREE's
own choice read back, neighbours that keep the tiling valid, a spec that IREE
applies to the one dispatch it names, and a search that keeps only what beat
IREE's choice (real iree-compile; the timing of rounds injected)."""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import ab_samples
import pytest
from iree_tile_oracle import TWO_MATMULS, Tiles, applied_matmul_tiles, spec_tiles, tiles_of

from tfpgo.errors import UserError
from tfpgo.iree import dispatch_benchmark, profile_document
from tfpgo.iree import run as iree_run
from tfpgo.iree.target import HostTarget
from tfpgo.iree.tools import run_tool
from tfpgo.report.tune_tables import held_back_rows, limit_text
from tfpgo.tune import dispatch_tiles, program_ab, tile_configs
from tfpgo.tune.db_records import TileTiming, VariantTimes
from tfpgo.tune.document import CandidateTrial, Decision, TuneDocument
from tfpgo.tune.headroom import held_back
from tfpgo.tune.records import Records
from tfpgo.tune.roofline import MachineLimit, hot_fractions, model_fraction
from tfpgo.tune.tile_configs import RootConfig, neighbours, root_configs, spec_text


def _paired(time_one):
    """A generation timer from a one-benchmark timer: each variant, then IREE's
    choice beside it (as one process would, in turn)."""
    return lambda default, variants: [(time_one(v), time_one(default)) for v in variants]


BIG = "main_dispatch_0_matmul_256x256x512_f32"
SMALL = "main_dispatch_1_matmul_128x64x256_f32"
# (M, N, K) of each product in TWO_MATMULS, read off its operand types.
BIG_LOOPS, SMALL_LOOPS = (256, 256, 512), (128, 64, 256)


def _configs(stablehlo: Path, out: Path, flags: tuple[str, ...] = ()) -> dict[str, RootConfig]:
    dump = out / "configurations"
    # Bounded: IREE 3.13's iree-compile now and then deadlocks with a tuning spec
    # (compile_vmfb kills it and compiles once more).
    iree_run.compile_vmfb(
        stablehlo,
        out / "m.vmfb",
        (*flags, f"--iree-hal-dump-executable-configurations-to={dump}"),
        timeout_s=120,
    )
    return root_configs(dump)


def _applied(stablehlo: Path, out: Path, spec: Path | None = None) -> dict[tuple[int, ...], Tiles]:
    """The tiles IREE gives each matmul of `stablehlo` compiled with the tuning
    spec `spec` (or none), read from the configurations it dumped into `out`
    without `root_configs` (iree_tile_oracle)."""
    out.mkdir()
    dump = out / "configurations"
    flags = [f"--iree-hal-dump-executable-configurations-to={dump}"]
    if spec is not None:
        flags.append(f"{tile_configs.SPEC_FLAG}{spec}")
    iree_run.compile_vmfb(stablehlo, out / "m.vmfb", flags, timeout_s=120)  # as _configs
    return applied_matmul_tiles(dump)


def test_a_spec_sets_the_tiles_of_the_dispatch_it_names_only(tmp_path):
    stablehlo = tmp_path / "m.mlir"
    stablehlo.write_text(TWO_MATMULS)
    (tmp_path / "iree").mkdir()
    chosen = _configs(stablehlo, tmp_path / "iree")
    assert set(chosen) == {BIG, SMALL}
    big = chosen[BIG]
    assert big.loops == (256, 256, 512) and big.pipeline == "DoubleTilingExpert"
    assert big.distribution[2] == 0 and big.vector_reduction[2] > 0  # K is the reduction
    wanted = next(n for n in neighbours(big) if n.distribution != big.distribution)
    spec = tmp_path / "spec.mlir"
    spec.write_text(spec_text([wanted]))
    (tmp_path / "tuned").mkdir()
    tuned = _configs(stablehlo, tmp_path / "tuned", (f"{tile_configs.SPEC_FLAG}{spec}",))
    assert tuned[BIG] == wanted
    assert tuned[SMALL] == chosen[SMALL]  # same rank, other loop ranges: untouched


def test_a_spec_leaves_a_root_op_of_another_kind_with_the_same_ranges(tmp_path):
    """The matcher checks the root op's name with its loop ranges: tiles recorded
    for a batch matmul of the same ranges leave the matmul at IREE's own, and the
    same tiles named for the matmul reach it (read back from IREE's dump)."""
    stablehlo = tmp_path / "m.mlir"
    stablehlo.write_text(TWO_MATMULS)
    (tmp_path / "iree").mkdir()
    big = _configs(stablehlo, tmp_path / "iree")[BIG]
    assert big.op == "linalg.matmul"  # read from the dumped configuration
    wanted = next(n for n in neighbours(big) if n.distribution != big.distribution)
    for op, applied in (("linalg.batch_matmul", big), ("linalg.matmul", wanted)):
        spec = tmp_path / f"{op}.spec.mlir"
        spec.write_text(spec_text([replace(wanted, op=op)]))
        dump = tmp_path / f"{op}.dump"
        dump.mkdir()
        tuned = _configs(stablehlo, dump, (f"{tile_configs.SPEC_FLAG}{spec}",))
        assert tuned[BIG] == applied, op


def test_neighbours_change_one_tile_and_keep_the_tiling_valid():
    config = RootConfig((8, 14, 14, 256, 3, 3, 256), (2, 14, 14, 64, 0, 0, 0),
                        (1, 1, 7, 16, 0, 0, 0), (0, 0, 0, 0, 1, 1, 8), "Conv")  # fmt: skip
    found = neighbours(config)
    assert [n.distribution for n in found[:6]] == [
        (2, 14, 14, 128, 0, 0, 0),  # innermost parallel workgroup tile wider
        (2, 14, 14, 32, 0, 0, 0),  # narrower
        # 14 is its loop's range: not widened; 7 keeps a multiple of its vector tile 7
        (2, 14, 7, 64, 0, 0, 0),
        (2, 7, 14, 64, 0, 0, 0),  # the next one out (28 > 14 is left out)
        (4, 14, 14, 64, 0, 0, 0),  # the outermost wider
        (1, 14, 14, 64, 0, 0, 0),  # and narrower
    ]
    assert [n.vector_parallel for n in found[6:8]] == [
        (1, 1, 7, 32, 0, 0, 0),
        (1, 1, 7, 8, 0, 0, 0),
    ]
    assert [n.vector_reduction for n in found[8:]] == [
        (0, 0, 0, 0, 1, 1, 16),
        (0, 0, 0, 0, 1, 1, 4),
    ]
    for variant in found:
        changed = [
            i
            for i in range(len(config.loops))
            for a, b in (
                (config.distribution, variant.distribution),
                (config.vector_parallel, variant.vector_parallel),
                (config.vector_reduction, variant.vector_reduction),
            )
            if a[i] != b[i]
        ]
        assert len(changed) == 1
    # A tile at its loop's range is not widened; a workgroup tile stays a
    # multiple of its vector tile; a tiled loop is never untiled (a tile of 1
    # halved stays 1).
    full = RootConfig((16, 32), (16, 32), (8, 16), (0, 0), "DoubleTilingExpert")
    assert all(n.distribution[1] <= 32 and n.distribution[1] % n.vector_parallel[1] == 0
               for n in neighbours(full))  # fmt: skip
    ones = RootConfig((4, 4), (1, 1), (1, 1), (0, 0), "DoubleTilingExpert")
    assert all(0 not in n.distribution[:2] for n in neighbours(ones))
    # IREE's own tile need not be a multiple of its vector tile (MobileNetV2's
    # classifier, batch 8): only the loop a variant changes must be, its workgroup
    # tile rounded to the nearest multiple (100 -> 96, 25 -> 32; 4 -> 8 is IREE's).
    classifier = RootConfig((8, 1000, 1280), (8, 50, 0), (8, 16, 0), (0, 0, 16), "Mmt")
    assert [n.text() for n in neighbours(classifier)] == [
        replace(classifier, distribution=(8, 96, 0)).text(),
        replace(classifier, distribution=(8, 32, 0)).text(),
        replace(classifier, vector_reduction=(0, 0, 32)).text(),
        replace(classifier, vector_reduction=(0, 0, 8)).text(),
    ]


def _dispatch(
    name: str, total_ps: int, tf_self_ps: int, count: int = 1
) -> profile_document.Dispatch:
    return profile_document.Dispatch(name, count, total_ps, ("op",), tf_self_ps)


def test_targets_rank_by_headroom_over_the_measured_bound():
    # Loop ranges in the names give the FLOPs: 2 x 64^3 = 524,288 for the matmuls.
    fast = _dispatch("f_dispatch_0_matmul_64x64x64_f32", 524_288, 0)  # 1 FLOP/ps: the best rate
    slow = _dispatch("f_dispatch_1_matmul_64x64x64_f32", 2_097_152, 0)  # 4x its roofline
    beaten = _dispatch("f_dispatch_2_matmul_64x64x64_f32", 1_048_576, 600_000)  # TF bound lower
    at_tf = _dispatch("f_dispatch_3_elementwise_1024_f32", 400_000, 500_000)  # under TF's time
    unbound = _dispatch("f_dispatch_4_elementwise_2048_f32", 900_000, 0)  # no bound at all
    # Under MIN_SHARE: neither a target nor, timed this coarsely, a rate to bound others by.
    cold = _dispatch("f_dispatch_5_matmul_64x64x64_f32", 10_000, 0)
    # 2% of the dispatch time, twice its TensorFlow time: a target of a later round only.
    small = _dispatch("f_dispatch_6_elementwise_512_f32", 100_000, 50_000)
    profile = profile_document.IreeProfile(
        "s", "main", 1, 0, 0.0, 1e-3, 1e-5, (fast, slow, beaten, at_tf, unbound, cold, small)
    )
    found = dispatch_tiles.targets(profile)
    # slow: 2,097,152 - 524,288; beaten: min(600,000, 524,288) is its bound.
    assert [(t.name, t.bound_ps, t.headroom_ps) for t in found] == [
        (slow.name, 524_288, 1_572_864),
        (beaten.name, 524_288, 524_288),
    ]
    # A later round: a dispatch searched before is no target, but still sets the rate;
    # smaller dispatches are.
    assert [t.name for t in dispatch_tiles.targets(profile, {slow.name}, later=True)] == [
        beaten.name,
        small.name,
    ]


def test_an_anchor_bounds_a_dispatch_whose_ops_it_ran():
    """The anchor's time for a dispatch's share of its ops (per call, times the
    runs) is a third bound: a dispatch TensorFlow ran slower than IREE still has
    headroom against a faster engine, and comes first; one whose ops the anchor
    never ran gets no bound from it. The anchor's layer on two ops is split by
    TensorFlow's time for each (2:1)."""
    from tfpgo.runtime.anchor_profile import EngineLayers, Layer

    site = profile_document.Site(("a", "b"), 900_000, 1_000_000)
    behind = profile_document.Dispatch(
        "f_dispatch_0_conv_8_f32", 2, 900_000, ("a", "b"), 1_000_000, "compute", (site,)
    )
    other = profile_document.Site(("c",), 600_000, 0)
    unknown = profile_document.Dispatch(
        "f_dispatch_1_elementwise_8_f32", 2, 600_000, ("c",), 0, "compute", (other,)
    )
    profile = profile_document.IreeProfile(
        "s", "main", 2, 0, 0.0, 1e-3, 1e-5, (behind, unknown), op_tf_ps={"a": 2, "b": 1}
    )
    assert dispatch_tiles.targets(profile) == []  # TensorFlow is slower: no headroom
    layers = (
        Layer("conv", "Convolution", "brgconv", 150_000, ("a", "b")),
        Layer("elsewhere", "Add", "jit", 1, ("d",)),
    )
    found = dispatch_tiles.targets(profile, anchor=EngineLayers("OpenVINO f32", 3, layers))
    # 2 runs x (100,000 + 50,000): the engine's time for both ops over the runs.
    assert [(t.name, t.bound_ps, t.headroom_ps) for t in found] == [(behind.name, 300_000, 600_000)]


def test_the_report_says_what_holds_each_hot_dispatch_back(tmp_path):
    """The constructed limit (1 FLOP/ps f32, 1 byte/ps): the elementwise dispatch
    moves 2^20 bytes in 1,150,000 ps (91%: left out), the matmul computes 524,288
    FLOPs in 2,000,000 ps (26%, bound by compute), the wide elementwise over 2^20
    f32 moves 2^22 bytes in 10^7 ps (42%, bound by memory). Each row lists the
    tile searches of its root op (by what IREE names it after its number, from
    a program numbered otherwise), its decisions, and the whole-program options."""
    limit = MachineLimit(HostTarget("c", "+f"), "c", "avx2", 1, {"f32": 1000.0}, 1000.0, 1000.0)
    near = _dispatch("f_dispatch_0_elementwise_262144_f32", 1_150_000, 500_000)
    far = _dispatch("f_dispatch_1_matmul_64x64x64_f32", 2_000_000, 100_000)
    wide = _dispatch("f_dispatch_2_elementwise_1048576_f32", 10_000_000, 0)
    profile = profile_document.IreeProfile("s", "main", 1, 0, 0.0, 1e-3, 1e-5, (near, far, wide))
    tiles = {"dispatches": {"g_dispatch_7_matmul_64x64x64_f32": {
        "tried": [{"ps": 90.0, "iree_ps": 100.0}, {"ps": 120.0, "iree_ps": 100.0}],
        "in_place": [{"ps": 97.0, "iree_ps": 100.0}],
    }}}  # fmt: skip
    (tmp_path / "tiles.json").write_text(json.dumps(tiles))
    decision = Decision("dispatch-tiles", "g_dispatch_7_matmul_64x64x64_f32", ("op",),
                        "tiles [8, 8, 0]", 1000, 970, False)  # fmt: skip
    o2 = CandidateTrial("O2", "--iree-opt-level=O2", "rejected", "", ab_samples.result(1.0))
    rows = held_back(profile, limit, [decision], [o2], tmp_path)
    assert [(r.dispatch, round(r.fraction, 2), r.bound_by) for r in rows] == [
        (wide.name, 0.42, "memory"),
        (far.name, 0.26, "compute"),
    ]
    # 0.999: the 30% trimmed mean of the constructed rounds' jitter.
    whole = "whole program: O2 0.999 (no measurable effect)"
    assert rows[0].tries == (whole,)
    assert rows[1].tries == (
        "tiles.json: 2 tile variants, best 0.90 alone, 0.97 in the program",
        "dispatch-tiles: tiles [8, 8, 0], 0.97 (not kept)",
        whole,
    )
    document = TuneDocument(60, 1, (), (), (), None, None, held_back=rows)
    document.write(tmp_path / "tune.json")
    assert TuneDocument.read(tmp_path / "tune.json") == document
    assert held_back_rows(document)[0] == [wide.name, "42%", "memory", whole]


def test_a_dispatch_at_this_machines_limit_is_no_target(tmp_path):
    """With the machine's limit (a constructed one: 1 FLOP/ps f32, 1 byte/ps), an
    elementwise dispatch over 2^18 f32 moves 2^20 bytes: at 1,150,000 ps it runs
    within 15% of that roofline and is left out, though TensorFlow ran its ops in
    500,000 ps; a matmul 64^3 at 2,000,000 ps is a target whose bound is its
    roofline (524,288 ps of FLOPs at peak), not the 100,000 ps TensorFlow took."""
    limit = MachineLimit(HostTarget("c", "+f"), "c", "avx2", 1, {"f32": 1000.0}, 1000.0, 1000.0)
    near = _dispatch("f_dispatch_0_elementwise_262144_f32", 1_150_000, 500_000)
    far = _dispatch("f_dispatch_1_matmul_64x64x64_f32", 2_000_000, 100_000)
    profile = profile_document.IreeProfile("s", "main", 1, 0, 0.0, 1e-3, 1e-5, (near, far))
    assert [(t.name, t.bound_ps) for t in dispatch_tiles.targets(profile)] == [
        (far.name, 100_000),
        (near.name, 500_000),
    ]
    found = dispatch_tiles.targets(profile, limit=limit)
    assert [(t.name, t.bound_ps) for t in found] == [(far.name, 524_288)]
    fractions = dict(hot_fractions([(d.name, 1, d.total_ps) for d in (near, far)], limit, 0.01))
    assert fractions == pytest.approx(
        {far.name: 524_288 / 2_000_000, near.name: 1_048_576 / 1_150_000}
    )
    document = TuneDocument(60, 1, (), (), (), None, None, "", tuple(fractions.items()))
    assert limit_text(document) == (
        "Fraction of this machine's limit (roofline) per hot dispatch: 1_matmul_64x64x64_f32 "
        "26%, 0_elementwise_262144_f32 91%; 1 of 2 within 15% of it."
    )
    document.write(tmp_path / "tune.json")
    assert TuneDocument.read(tmp_path / "tune.json") == document
    # The program as a whole: its bounds' sum over its time, a dispatch with no
    # bound (its name says nothing of its work) counting as all to gain.
    odd = ("f_dispatch_2_slow_thing", 1, 100_000)
    timed = [(d.name, 1, d.total_ps) for d in (near, far)]
    whole = model_fraction(timed, limit)
    assert whole == pytest.approx((1_048_576 + 524_288) / 3_150_000)
    assert model_fraction([*timed, odd], limit) == pytest.approx((1_048_576 + 524_288) / 3_250_000)
    assert limit_text(replace(document, limit_fraction=whole)).endswith(
        "1 of 2 within 15% of it; the program as a whole 50%."
    )
    only_near = replace(
        document,
        at_limit=(document.at_limit[1],),
        limit_fraction=model_fraction(timed[:1], limit),
    )
    assert limit_text(only_near).endswith(
        "every hot dispatch runs within 15% of this machine's limit; the program as a whole "
        "91%: nothing left to gain here."
    )


def test_the_search_climbs_on_benchmarks_and_decides_in_place(tmp_path):
    """Real iree-compile and benchmark modules; the timing injected. On the
    benchmarks the machine slows 2% a timing, BIG's innermost workgroup tile
    doubled is 20% faster and doubled again 40%, SMALL's best variant only 2%.
    In the program, BIG's doubled-again tile is 5% slower than IREE's choice and
    the doubled one 30% faster: the program decides."""
    stablehlo = tmp_path / "m.mlir"
    stablehlo.write_text(TWO_MATMULS)
    (tmp_path / "iree").mkdir()
    iree_choice = _configs(stablehlo, tmp_path / "iree")
    calls: list[str] = []

    def widened(factor: int) -> RootConfig:
        """BIG's IREE choice with its innermost workgroup tile `factor` times wider."""
        config = iree_choice[BIG]
        tiles = (config.distribution[0], factor * config.distribution[1], config.distribution[2])
        return replace(config, distribution=tiles)

    def time_dispatch(vmfb: Path) -> float:
        calls.append(vmfb.name)
        load = 1.02 ** len(calls)
        spec = vmfb.with_suffix(".spec.mlir")
        text = spec.read_text() if spec.exists() else ""
        if "dispatch_0" not in str(vmfb.parent):
            return (49.0 if text else 50.0) * load
        for factor, ps in ((4, 60.0), (2, 80.0)):
            if widened(factor).text() in text:
                return ps * load
        return 100.0 * load

    in_place_calls: list[str] = []

    def time_in_place(vmfb: Path) -> dict[str, float]:
        in_place_calls.append(vmfb.name)
        spec = vmfb.with_suffix(".spec.mlir")
        text = spec.read_text() if spec.exists() else ""
        big = 100.0
        for factor, in_place in ((4, 105.0), (2, 70.0)):
            if widened(factor).text() in text:
                big = in_place
        return {BIG: big, SMALL: 50.0}

    hot = dispatch_tiles.HotDispatch
    wanted = [hot(BIG, 300, 100), hot(SMALL, 150, 100), hot("not_a_dispatch", 150, 100)]
    found = dispatch_tiles.search(
        stablehlo, (), wanted, _paired(time_dispatch), time_in_place, tmp_path / "s",
        time.monotonic() + 600, 120,
    )  # fmt: skip
    assert set(found.dispatches) == {BIG, SMALL}
    # Every variant is timed beside IREE's choice (the generation's default arm).
    variants = [name for name in calls if name != "iree.vmfb"]
    assert variants and calls.count("iree.vmfb") == len(variants)
    # On the benchmark: two steps up, 0.6 (IREE's choice timed right after each
    # variant: one drift step, 2%, off).
    best = min(found.tried[BIG], key=lambda t: t.ratio)
    assert best.config == widened(4)
    assert best.ratio == pytest.approx(0.6, rel=0.021)
    # In the program: the benchmark's three best variants of each dispatch, round
    # by round between timings of IREE's choice; the program's winner is kept.
    assert in_place_calls[:3] == ["default.vmfb", "in_place_0.vmfb", "default.vmfb"]
    assert [round(t.ratio, 2) for t in found.in_place[BIG]][:2] == [1.05, 0.7]
    chosen = found.chosen[BIG].config
    assert chosen == widened(2)
    assert SMALL not in found.chosen  # 2% on its benchmark, nothing in place
    assert {t.config for t in found.tried[SMALL]} <= set(neighbours(iree_choice[SMALL]))
    dispatch_tiles.write_search(found, tmp_path)
    # The spec holds the chosen tiles for BIG's loop ranges alone, as IREE's parser
    # reads it, and IREE applies them to BIG alone (its dumped configuration).
    assert spec_tiles((tmp_path / tile_configs.SPEC).read_text()) == {BIG_LOOPS: tiles_of(chosen)}
    iree = applied_matmul_tiles(tmp_path / "iree" / "configurations")  # no spec
    applied = _applied(stablehlo, tmp_path / "applied", tmp_path / tile_configs.SPEC)
    assert applied == {BIG_LOOPS: tiles_of(chosen), SMALL_LOOPS: iree[SMALL_LOOPS]}
    assert applied[BIG_LOOPS] != iree[BIG_LOOPS]
    assert json.loads((tmp_path / dispatch_tiles.SEARCH).read_text())["dispatches"][BIG]["in_place"]
    # With the budget spent, nothing is tried and nothing is chosen.
    spent = dispatch_tiles.search(
        stablehlo, (), wanted[:1], _paired(time_dispatch), time_in_place, tmp_path / "spent",
        time.monotonic(), 120,
    )  # fmt: skip
    assert spent.tried == {BIG: []} and spent.chosen == {} and spent.in_place == {}
    assert spent.cut == [BIG] and found.cut == []  # the time ended it, not its rule


def test_a_generation_that_cannot_run_ends_its_climb(tmp_path):
    """The alternation process of a generation fails (IREE cannot load or call a
    benchmark): the climb ends with its variants listed as failed, with the line;
    the search goes on and chooses nothing."""
    stablehlo = tmp_path / "m.mlir"
    stablehlo.write_text(TWO_MATMULS)
    line = "dispatch-tiles (a generation): alternation failed: error: IREE could not load"

    def fails(default: Path, variants: Sequence[Path]) -> list[tuple[float, float]]:
        raise UserError(line)

    found = dispatch_tiles.search(
        stablehlo, (), [dispatch_tiles.HotDispatch(BIG, 300, 100)], fails, lambda vmfb: {},
        tmp_path / "s", time.monotonic() + 600, 120,
    )  # fmt: skip
    assert found.tried == {BIG: []} and found.chosen == {}
    assert found.failed and set(found.failed.values()) == {line}
    assert all(key.startswith(f"{BIG} ") for key in found.failed)


def test_a_later_round_keeps_the_earlier_tiles_in_every_program_and_spec(tmp_path):
    """A second round tunes BIG with SMALL's tiles from the first round as `base`:
    the program it times in place, and the spec it writes, keep them."""
    stablehlo = tmp_path / "m.mlir"
    stablehlo.write_text(TWO_MATMULS)
    (tmp_path / "iree").mkdir()
    iree_choice = _configs(stablehlo, tmp_path / "iree")
    earlier = neighbours(iree_choice[SMALL])[0]
    wider = neighbours(iree_choice[BIG])[0]

    def time_dispatch(vmfb: Path) -> float:  # on its benchmark, `wider` wins
        spec = vmfb.with_suffix(".spec.mlir")
        return 50.0 if spec.exists() and wider.text() in spec.read_text() else 100.0

    in_place_specs: list[str] = []

    def time_in_place(vmfb: Path) -> dict[str, float]:
        spec = vmfb.with_suffix(".spec.mlir")
        in_place_specs.append(spec.read_text() if spec.exists() else "")
        return {BIG: 50.0 if wider.text() in in_place_specs[-1] else 100.0, SMALL: 10.0}

    found = dispatch_tiles.search(
        stablehlo, (), [dispatch_tiles.HotDispatch(BIG, 300, 100)], _paired(time_dispatch),
        time_in_place, tmp_path / "s", time.monotonic() + 600, 120, base=(earlier,),
    )  # fmt: skip
    assert found.chosen[BIG].config == wider
    # The program without this round's spec is the program with the earlier tiles.
    assert root_configs(tmp_path / "s" / "configurations")[SMALL] == earlier
    # Both tiles in the spec timed in place and in the spec written, as IREE's parser
    # reads them, and IREE applies both (its dumped configuration).
    both = {SMALL_LOOPS: tiles_of(earlier), BIG_LOOPS: tiles_of(wider)}
    assert [spec_tiles(spec) for spec in in_place_specs if spec] == [both]
    dispatch_tiles.write_search(found, tmp_path, (earlier,))
    assert spec_tiles((tmp_path / tile_configs.SPEC).read_text()) == both
    assert _applied(stablehlo, tmp_path / "applied", tmp_path / tile_configs.SPEC) == both


def test_a_dispatch_benchmark_recompiles_with_the_spec_and_is_timed(tmp_path):
    """IREE's benchmark of one dispatch, its configuration cleared, takes a spec
    as the whole program does (the dumped configuration shows the spec's tiles),
    and a generation times it: about as IREE's own profile times its
    invocations, and in proportion to its work."""
    stablehlo = tmp_path / "m.mlir"
    stablehlo.write_text(TWO_MATMULS)
    benchmarks = tmp_path / "benchmarks"
    iree_choice = _configs(stablehlo, tmp_path, (f"{dispatch_benchmark.DUMP_FLAG}{benchmarks}",))
    sources = dispatch_benchmark.unconfigured_benchmarks(benchmarks, tmp_path / "unconfigured")
    assert set(sources) == {BIG, SMALL}
    unconfigured = sources[BIG]
    assert "lowering_config" in (benchmarks / unconfigured.name).read_text()
    assert "lowering_config" not in unconfigured.read_text()
    wanted = neighbours(iree_choice[BIG])[0]
    spec = tmp_path / "spec.mlir"
    spec.write_text(spec_text([wanted]))
    dump = tmp_path / "tuned"
    vmfb = tmp_path / "big.vmfb"
    flags = (
        f"{tile_configs.SPEC_FLAG}{spec}",
        f"--iree-hal-dump-executable-configurations-to={dump}",
    )
    dispatch_benchmark.compile_benchmark(unconfigured, vmfb, flags, 120)
    assert root_configs(dump) == {BIG: wanted}
    small = tmp_path / "small.vmfb"
    dispatch_benchmark.compile_benchmark(sources[SMALL], small, (), 120)
    # Timed in one process in turn with SMALL's benchmark as the default arm.
    arm = program_ab.benchmark_arm
    ((timed_ps, small_ps),) = program_ab.generation(arm(small), [arm(vmfb)], tmp_path, "test")
    # IREE's own profile of the same modules is the oracle: a call of a
    # benchmark is one invocation and its submission, so it takes about the
    # invocation's time or more (units or a wrong field are 1000x off), and the
    # arms keep the order of their modules' invocations, so the generation times
    # the module it is given. (A call's submission adds a constant to both, so
    # no ratio of live timings is asserted.)
    big_profiled = _profiled_invocation_ps(vmfb, BIG, tmp_path)
    small_profiled = _profiled_invocation_ps(small, SMALL, tmp_path)
    assert 0.5 < timed_ps / big_profiled < 20
    assert big_profiled > small_profiled and timed_ps > small_ps


def _profiled_invocation_ps(vmfb: Path, function: str, scratch: Path) -> float:
    """The median time (ps) of `function`'s invocations in IREE's own profile of
    20 iterations of the benchmark module `vmfb`: each invocation's host execution
    event, as `iree-profile` lists it (read here, not by tfpgo's profile reader)."""
    bundle = scratch / f"{vmfb.stem}.ireeprof"
    args = [f"--module={vmfb}", f"--device={iree_run.DEVICE}", "--batch_size=1"]
    args += ["--benchmark_min_time=20x", "--benchmark_repetitions=1"]
    args += ["--device_profiling_mode=host-execution,executable-metadata"]
    run_tool("iree-benchmark-module", [*args, f"--device_profiling_output={bundle}"], "test")
    listed = ["dispatch", "--dispatch_events", "--format=jsonl", str(bundle)]
    events = [json.loads(line) for line in run_tool("iree-profile", listed, "test").splitlines()]
    invocations = [e for e in events if e.get("type") == "host_dispatch_event" and e["valid"]]
    durations_ns = [e["duration_ns"] for e in invocations if e["key"] == function]
    assert len(durations_ns) >= 20
    return statistics.median(durations_ns) * 1000


def test_a_compile_that_does_not_finish_is_killed_and_said_in_one_line(tmp_path):
    stablehlo = tmp_path / "m.mlir"
    stablehlo.write_text(TWO_MATMULS)
    with pytest.raises(UserError) as error:
        iree_run.compile_vmfb(stablehlo, tmp_path / "m.vmfb", (), timeout_s=0.01)
    assert str(error.value).startswith(
        f"iree level: iree-compile on {stablehlo} did not finish in 0.01 s, killed both times"
    )
    assert not (tmp_path / "m.vmfb").exists()


def test_a_dispatch_with_a_tile_record_is_not_searched_again(tmp_path):
    """The first search records each dispatch it climbed on, by root op; a second
    search of a program with the same root op on this target takes the recorded
    winner with no climb (its benchmark never timed); --retune searches again."""
    stablehlo = tmp_path / "m.mlir"
    stablehlo.write_text(TWO_MATMULS)
    (tmp_path / "iree").mkdir()
    wider = _configs(stablehlo, tmp_path / "iree")[BIG]
    wider = replace(wider, distribution=(wider.distribution[0], 2 * wider.distribution[1], 0))
    timed: list[str] = []

    def time_dispatch(vmfb: Path) -> float:
        timed.append(vmfb.parent.name)
        spec = vmfb.with_suffix(".spec.mlir")
        text = spec.read_text() if spec.exists() else ""
        return 60.0 if "dispatch_0" in str(vmfb.parent) and wider.text() in text else 100.0

    def time_in_place(vmfb: Path) -> dict[str, float]:
        spec = vmfb.with_suffix(".spec.mlir")
        text = spec.read_text() if spec.exists() else ""
        return {BIG: 70.0 if wider.text() in text else 100.0, SMALL: 50.0}

    notes: list[str] = []
    records = Records.open(tmp_path / "tuning.db", stablehlo, False, notes.append, "first")
    assert records is not None
    wanted = [dispatch_tiles.HotDispatch(BIG, 300, 100)]

    def searched(scratch: Path, reuse: Records) -> dispatch_tiles.Search:
        found = dispatch_tiles.search(
            stablehlo, (), wanted, _paired(time_dispatch), time_in_place, scratch,
            time.monotonic() + 600, 120, (), reuse.prior,
        )  # fmt: skip
        reuse.record_search(found, scratch / "configurations", (), stablehlo)
        return found

    first = searched(tmp_path / "first", records)
    assert first.chosen[BIG].config == wider and not first.reused and timed
    (record,) = records.db.tile_records(records.target)
    assert record.model == "first" and record.winner_config() == wider and record.finished
    timed.clear()
    second = searched(tmp_path / "second", records)
    assert not [name for name in timed if name.startswith("dispatch_")]  # no climb
    assert second.chosen[BIG].config == wider and second.tried == {}
    assert second.reused[BIG].startswith("from a record of first (")
    dispatch_tiles.write_search(second, tmp_path / "second")  # tiles.json says so
    written = json.loads((tmp_path / "second" / dispatch_tiles.SEARCH).read_text())
    assert written["dispatches"][BIG]["tried"] == []
    assert written["dispatches"][BIG]["reused"] == second.reused[BIG]
    assert spec_tiles((tmp_path / "second" / tile_configs.SPEC).read_text()) == {
        BIG_LOOPS: tiles_of(wider)
    }
    assert len(records.db.tile_records(records.target)) == 1  # nothing new to record
    again = Records.open(tmp_path / "tuning.db", stablehlo, True, notes.append)
    dump = tmp_path / "second" / "configurations"
    assert again is not None and again.prior(BIG, dump, ()) is None
    assert notes == []
    records.db.close()
    again.db.close()


# One matmul of BIG's form (the same op, maps and types) at a quarter of its rows:
# BIG's program at batch 8 where it was tuned at batch 32.
QUARTER = "main_dispatch_0_matmul_64x256x512_f32"
QUARTER_MATMUL = """
func.func @main(%a: tensor<64x512xf32>, %b: tensor<512x256xf32>) -> tensor<64x256xf32> {
  %0 = "stablehlo.dot_general"(%a, %b) <{dot_dimension_numbers = #stablehlo.dot<
      lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]>}>
      : (tensor<64x512xf32>, tensor<512x256xf32>) -> tensor<64x256xf32>
  return %0 : tensor<64x256xf32>
}
"""


def _spec_text(vmfb: Path) -> str:
    spec = vmfb.with_suffix(".spec.mlir")
    return spec.read_text() if spec.exists() else ""


def test_seeds_scale_a_records_winner_to_this_size():
    """A record's winner applied to IREE's tiles at another size: what tuning
    changed (each tile over IREE's), then the winner's tiles as they are, bounded
    by the loop ranges, rounded to vector multiples; never IREE's own, another
    pipeline's, or an invalid tiling."""
    iree = RootConfig((64, 256, 512), (8, 64, 0), (8, 16, 0), (0, 0, 16), "DoubleTilingExpert")
    seed = RootConfig((256, 256, 512), (32, 64, 0), (8, 16, 0), (0, 0, 16), "DoubleTilingExpert")
    wider = replace(seed, distribution=(32, 128, 0))
    assert tile_configs.seeded(iree, [(seed, wider)]) == [
        replace(iree, distribution=(8, 128, 0)),  # scaled: the N tile doubled
        replace(iree, distribution=(32, 128, 0)),  # as recorded
    ]
    taller = replace(seed, distribution=(256, 64, 0))  # 8x the rows: 64 here, as recorded 256
    assert tile_configs.seeded(iree, [(seed, taller)]) == [replace(iree, distribution=(64, 64, 0))]
    odd = replace(seed, distribution=(32, 96, 0))  # 1.5x: 96, a multiple of 16
    assert tile_configs.seeded(iree, [(seed, odd)])[0].distribution == (8, 96, 0)
    other_pipeline = replace(wider, pipeline="Mmt4dTilingExpert")
    assert tile_configs.seeded(iree, [(seed, other_pipeline)]) == []
    assert tile_configs.seeded(iree, [(seed, seed)]) == [replace(iree, distribution=(32, 64, 0))]


def test_a_record_at_another_size_seeds_the_climb(tmp_path):
    """BIG searched and recorded: its climb went two steps (innermost workgroup
    tile doubled, then the outer one too). The same matmul at 64 rows has no
    record of its own, so its climb starts from that winner applied to IREE's
    tiles at 64 rows (the oracle: IREE's choice for it, read from its own
    compile, with both tiles doubled: no neighbour of IREE's choice), and keeps
    it; tiles.json says whence."""
    big, quarter = tmp_path / "big.mlir", tmp_path / "quarter.mlir"
    big.write_text(TWO_MATMULS)
    quarter.write_text(QUARTER_MATMUL)
    (tmp_path / "iree").mkdir()
    (tmp_path / "iree_quarter").mkdir()
    big_iree = _configs(big, tmp_path / "iree")[BIG]
    quarter_iree = _configs(quarter, tmp_path / "iree_quarter")[QUARTER]

    def doubled(config: RootConfig, dims: tuple[int, ...]) -> RootConfig:
        tiles = tuple(2 * t if d in dims else t for d, t in enumerate(config.distribution))
        return replace(config, distribution=tiles)

    step, winner = doubled(big_iree, (1,)), doubled(big_iree, (0, 1))
    expected = doubled(quarter_iree, (0, 1))
    assert all(t <= size for t, size in zip(expected.distribution, expected.loops, strict=True))
    assert expected not in neighbours(quarter_iree)
    alone = {step.text(): 80.0, winner.text(): 60.0, expected.text(): 60.0}
    timed: list[str] = []

    def time_dispatch(vmfb: Path) -> float:
        text = _spec_text(vmfb)
        timed.append(text)
        return next((ps for config, ps in alone.items() if config in text), 100.0)

    def time_in_place(vmfb: Path) -> dict[str, float]:
        text = _spec_text(vmfb)
        fast = any(config in text for config in (winner.text(), expected.text()))
        return {BIG: 70.0 if fast else 100.0, QUARTER: 70.0 if fast else 100.0}

    notes: list[str] = []
    records = Records.open(tmp_path / "tuning.db", big, False, notes.append, "batch32")
    assert records is not None
    first = dispatch_tiles.search(
        big, (), [dispatch_tiles.HotDispatch(BIG, 300, 100)], _paired(time_dispatch), time_in_place,
        tmp_path / "first", time.monotonic() + 600, 120, (), records.prior,
    )  # fmt: skip
    records.record_search(first, tmp_path / "first" / "configurations", (), big)
    assert first.chosen[BIG].config == winner and first.seeded == {}
    timed.clear()
    second = dispatch_tiles.search(
        quarter, (), [dispatch_tiles.HotDispatch(QUARTER, 300, 100)], _paired(time_dispatch),
        time_in_place, tmp_path / "second", time.monotonic() + 600, 120, (), records.prior,
    )  # fmt: skip
    assert second.reused == {}
    assert second.seeded[QUARTER].startswith("seeded from records of the op at 256x256x512 (")
    assert expected.text() in timed[0] and timed[1] == ""  # the seed, beside IREE's own
    assert second.tried[QUARTER][0].config == expected
    assert second.chosen[QUARTER].config == expected
    dispatch_tiles.write_search(second, tmp_path / "second")
    written = json.loads((tmp_path / "second" / dispatch_tiles.SEARCH).read_text())
    assert written["dispatches"][QUARTER]["seeded"] == second.seeded[QUARTER]
    assert notes == []
    records.db.close()


def test_a_search_the_time_cut_short_is_resumed_from_its_best(tmp_path):
    """A first search of BIG gets no time for its climb: its record says it did
    not finish. A record of a climb that got further is then made up (its best, a
    variant 20% faster, and the variants it timed), as a run cut mid-climb
    writes it. The next search neither reuses it as final nor starts over: the
    climb starts from that best, times none of the variants already timed, and
    keeps climbing from there."""
    stablehlo = tmp_path / "m.mlir"
    stablehlo.write_text(TWO_MATMULS)
    notes: list[str] = []
    records = Records.open(tmp_path / "tuning.db", stablehlo, False, notes.append, "cut")
    assert records is not None
    wanted = [dispatch_tiles.HotDispatch(BIG, 300, 100)]

    def nothing_faster(vmfb: Path) -> float:
        return 100.0

    first = dispatch_tiles.search(
        stablehlo, (), wanted, _paired(nothing_faster), lambda vmfb: {}, tmp_path / "first",
        time.monotonic(), 120, (), records.prior,
    )  # fmt: skip
    assert first.cut == [BIG]
    records.record_search(first, tmp_path / "first" / "configurations", (), stablehlo)
    (cut,) = records.db.tile_records(records.target)
    assert not cut.finished and cut.winner is None
    iree = cut.iree_config()
    step, *others = neighbours(iree)
    further = replace(
        cut,
        variants=tuple(
            VariantTimes(c.text(), (TileTiming(80.0 if c == step else 100.0, 100.0),))
            for c in (step, *others)
        ),
        winner=step.text(),
        winner_alone=TileTiming(80.0, 100.0),
        when=cut.when + 1,
    )
    assert records.db.add_tiles(records.target, further)
    timed: list[str] = []
    two_steps = neighbours(step)[0]

    def time_dispatch(vmfb: Path) -> float:
        text = _spec_text(vmfb)
        timed.append(text)
        return 60.0 if two_steps.text() in text else 100.0

    second = dispatch_tiles.search(
        stablehlo, (), wanted, _paired(time_dispatch), lambda vmfb: {}, tmp_path / "second",
        time.monotonic() + 600, 120, (), records.prior,
    )  # fmt: skip
    assert second.reused == {} and second.seeded[BIG].startswith("resumed from 2 search(es)")
    assert second.tried[BIG][0].config == step  # its best, as timed then
    variants = [t.config for t in second.tried[BIG][1:]]
    assert variants and not set(variants) & {step, *others}  # nothing timed twice
    assert set(variants) <= set(neighbours(step)) | set(neighbours(two_steps))
    assert second.chosen[BIG].config == two_steps and second.cut == []
    records.db.close()
