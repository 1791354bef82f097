"""Per-dispatch tile sizes as IREE tuning specs (tfpgo.tune.dispatch_tiles): IREE's
own choice read back, neighbours that keep the tiling valid, a spec that IREE
applies to the one dispatch it names, and a search that keeps only what beat
IREE's choice (real iree-compile; the timing of rounds injected)."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from tfpgo.errors import UserError
from tfpgo.iree import run as iree_run
from tfpgo.tune import dispatch_tiles
from tfpgo.tune.dispatch_tiles import RootConfig, neighbours, root_configs, spec_text

TWO_MATMULS = """
func.func @main(%a: tensor<256x512xf32>, %b: tensor<512x256xf32>, %c: tensor<128x256xf32>,
                %d: tensor<256x64xf32>) -> (tensor<256x256xf32>, tensor<128x64xf32>) {
  %0 = "stablehlo.dot_general"(%a, %b) <{dot_dimension_numbers = #stablehlo.dot<
      lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]>}>
      : (tensor<256x512xf32>, tensor<512x256xf32>) -> tensor<256x256xf32>
  %1 = "stablehlo.dot_general"(%c, %d) <{dot_dimension_numbers = #stablehlo.dot<
      lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]>}>
      : (tensor<128x256xf32>, tensor<256x64xf32>) -> tensor<128x64xf32>
  return %0, %1 : tensor<256x256xf32>, tensor<128x64xf32>
}
"""
BIG = "main_dispatch_0_matmul_256x256x512_f32"
SMALL = "main_dispatch_1_matmul_128x64x256_f32"


def _configs(stablehlo: Path, out: Path, flags: tuple[str, ...] = ()) -> dict[str, RootConfig]:
    dump = out / "configurations"
    iree_run.compile_vmfb(
        stablehlo,
        out / "m.vmfb",
        (*flags, f"--iree-hal-dump-executable-configurations-to={dump}"),
    )
    return root_configs(dump)


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
    tuned = _configs(stablehlo, tmp_path / "tuned", (f"{dispatch_tiles.SPEC_FLAG}{spec}",))
    assert tuned[BIG] == wanted
    assert tuned[SMALL] == chosen[SMALL]  # same rank, other loop ranges: untouched


def test_neighbours_change_one_tile_and_keep_the_tiling_valid():
    config = RootConfig((8, 14, 14, 256, 3, 3, 256), (2, 14, 14, 64, 0, 0, 0),
                        (1, 1, 7, 16, 0, 0, 0), (0, 0, 0, 0, 1, 1, 8), "Conv")  # fmt: skip
    found = neighbours(config)
    assert [n.distribution for n in found[:3]] == [
        (2, 14, 14, 128, 0, 0, 0),  # innermost parallel workgroup tile wider
        (2, 14, 14, 32, 0, 0, 0),  # narrower
        (4, 14, 14, 64, 0, 0, 0),  # outermost wider
    ]
    assert found[3].vector_parallel == (1, 1, 7, 32, 0, 0, 0)
    assert [n.vector_reduction for n in found[4:]] == [
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
    # multiple of its vector tile.
    full = RootConfig((16, 32), (16, 32), (8, 16), (0, 0), "DoubleTilingExpert")
    assert all(n.distribution[1] <= 32 and n.distribution[1] % n.vector_parallel[1] == 0
               for n in neighbours(full))  # fmt: skip


def test_the_search_keeps_only_variants_that_beat_iree_by_more_than_the_noise(tmp_path):
    stablehlo = tmp_path / "m.mlir"
    stablehlo.write_text(TWO_MATMULS)

    calls = []

    def time_round(vmfb: Path) -> dict[str, float]:
        """The machine slows down 10% a call; round 1 makes the big matmul 20%
        faster than IREE's choice, round 2 the small one 2%."""
        calls.append(vmfb.name)
        load = 1.1 ** len(calls)
        index = int(m[1]) if (m := re.search(r"round_(\d+)", vmfb.name)) else -1
        return {BIG: (80.0 if index == 1 else 100.0) * load,
                SMALL: (49.0 if index == 2 else 50.0) * load}  # fmt: skip

    found = dispatch_tiles.search(
        stablehlo, (), [BIG, SMALL, "not_a_dispatch"], time_round, tmp_path,
        time.monotonic() + 600,
    )  # fmt: skip
    assert set(found.dispatches) == {BIG, SMALL}
    # The drift does not pick the variant that ran last: each round is timed
    # between two timings of IREE's choice, whose mean is its baseline.
    assert calls[:5] == ["default.vmfb", "round_0.vmfb", "default.vmfb", "round_1.vmfb",
                         "default.vmfb"]  # fmt: skip
    assert {n: t.config for n, t in found.chosen.items()} == {
        BIG: neighbours(found.dispatches[BIG])[1]
    }
    ratios = [round(t.ratio, 3) for t in found.tried[BIG]][:3]
    assert ratios == [round(1.1 / 1.105, 3), round(0.8 * 1.1 / 1.105, 3), round(1.1 / 1.105, 3)]
    dispatch_tiles.write_search(found, tmp_path)
    written = (tmp_path / dispatch_tiles.SPEC).read_text()
    assert written == spec_text([found.chosen[BIG].config])
    # With the budget spent, only IREE's choice is measured and nothing is chosen.
    spent = dispatch_tiles.search(
        stablehlo, (), [BIG], time_round, tmp_path / "spent", time.monotonic()
    )
    assert spent.tried == {BIG: []} and spent.chosen == {}


def test_a_compile_that_does_not_finish_is_killed_and_said_in_one_line(tmp_path):
    stablehlo = tmp_path / "m.mlir"
    stablehlo.write_text(TWO_MATMULS)
    with pytest.raises(UserError) as error:
        iree_run.compile_vmfb(stablehlo, tmp_path / "m.vmfb", (), timeout_s=0.01)
    assert str(error.value) == "iree level: iree-compile did not finish in 0 s; killed"
    assert not (tmp_path / "m.vmfb").exists()
