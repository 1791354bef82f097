"""One dispatch's hill climb on its own benchmark (tfpgo.tune.dispatch_tiles).

From IREE's choice, or from what the tuning database knows of the root op
(`Prior`): every untried neighbour of the current best is compiled with a spec
naming it, and the generation is timed in one process beside IREE's choice,
every benchmark called in turn (`TimeGeneration`: tfpgo.tune.program_ab's
`generation`, each variant's ratio the paired ratio of its calls to IREE's
choice's, so the machine's drift falls on both). The best of a generation
becomes the current best if it beats it by more than the noise floor, timed a
second time beside IREE's choice and counted at the worse of its two ratios;
else the climb stops.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tfpgo.errors import UserError
from tfpgo.iree import dispatch_benchmark
from tfpgo.iree.tools import ToolTimeout
from tfpgo.tune.program_ab import SCREEN_MARGIN
from tfpgo.tune.tile_configs import SPEC_FLAG, RootConfig, neighbours, seeded, spec_text

# The tuning database's answer for one dispatch (its name, the dumped
# configurations, the program's flags): what it knows of it (`Prior`), or None.
Recorded = Callable[[str, Path, tuple[str, ...]], "Prior | None"]


@dataclass(frozen=True)
class TileTrial:
    """One variant of one dispatch, timed beside IREE's choice in the same round:
    the dispatch's mean time an invocation (ps) under each."""

    config: RootConfig
    ps: float
    iree_ps: float

    @property
    def ratio(self) -> float:
        return against_iree(self.ps, self.iree_ps)


def against_iree(ps: float, iree_ps: float) -> float:
    """A variant's time over IREE's own choice's at the same place; infinite when
    IREE's is unknown (no variant can be said to beat it)."""
    return ps / iree_ps if iree_ps > 0 else float("inf")


@dataclass(frozen=True)
class Prior:
    """What the tuning database knows of one dispatch before its search, and
    whence (a line for tiles.json and the report):

    - `final`: a search of this root op ended by its own rule; `winner` is what
      it kept (None: IREE's own tiles), and the dispatch is not searched;
    - else, with `winner` or `seen`: a search of it the time cut short; the
      climb resumes from `winner` (its best so far, if any), skipping the
      variants already timed (`seen`, by `RootConfig.text()`);
    - else `seeds`: per record of the same root op at other loop ranges, its
      IREE tiles and its winner; the climb starts from them (`seeded`)."""

    whence: str
    final: bool = False
    winner: TileTrial | None = None
    seen: frozenset[str] = frozenset()
    seeds: tuple[tuple[RootConfig, RootConfig], ...] = ()


# Times a generation: IREE's choice's benchmark and each variant's, in one
# process; per variant, its time and IREE's choice's beside it (ps an invocation).
TimeGeneration = Callable[[Path, Sequence[Path]], list[tuple[float, float]]]


@dataclass
class Climb:
    """One dispatch's hill climb (module docstring), from IREE's choice, or from
    what the tuning database knows of it (`prior`): seeds first, or a climb
    resumed."""

    name: str
    iree: RootConfig
    flags: tuple[str, ...]
    time_generation: TimeGeneration
    timeout_s: float
    prior: Prior | None = None
    tried: list[TileTrial] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    best: TileTrial | None = None
    ended: bool = False  # by its own rule (no neighbour left, or none better), not by time

    def run(self, unconfigured: Path, directory: Path, until: float) -> None:
        """Climbs on `unconfigured`, the dispatch's benchmark without IREE's
        configuration, compiling into `directory`."""
        directory.mkdir(parents=True, exist_ok=True)
        default = directory / "iree.vmfb"
        dispatch_benchmark.compile_benchmark(unconfigured, default, self.flags, self.timeout_s)
        current, seen = self.iree, {self.iree.text()}
        seeds: list[RootConfig] = []
        if self.prior is not None:
            seen |= self.prior.seen
            seeds = seeded(self.iree, self.prior.seeds)
            if self.prior.winner is not None:  # resumed: its best so far, timed then
                self.best, current = self.prior.winner, self.prior.winner.config
                self.tried.append(self.prior.winner)
        while time.monotonic() < until:
            seeding, generation = bool(seeds), seeds or neighbours(current)
            seeds = []
            compiled = []
            for config in [c for c in generation if c.text() not in seen]:
                if time.monotonic() >= until:
                    break
                seen.add(config.text())
                variant = directory / f"variant_{len(seen) - 1}"
                variant.with_suffix(".spec.mlir").write_text(spec_text([config]))
                vmfb = variant.with_suffix(".vmfb")
                spec = f"{SPEC_FLAG}{variant.with_suffix('.spec.mlir')}"
                try:
                    dispatch_benchmark.compile_benchmark(
                        unconfigured, vmfb, (*self.flags, spec), self.timeout_s
                    )
                except UserError as error:  # tiles IREE cannot lower: the variant is lost
                    self.failed[config.text()] = str(error)
                    continue
                compiled.append((config, vmfb))
            if not compiled:
                if seeding:
                    continue
                self.ended = time.monotonic() < until
                return
            try:
                timed = self.time_generation(default, [vmfb for _, vmfb in compiled])
            except ToolTimeout:
                raise  # the stage's deadline, or a hang: the candidate's, as a compile's
            except UserError as error:  # the benchmarks would not run: the climb ends here
                self.failed.update({config.text(): str(error) for config, _ in compiled})
                return
            trials = [
                TileTrial(config, ps, iree_ps)
                for (config, _), (ps, iree_ps) in zip(compiled, timed, strict=True)
            ]
            self.tried.extend(trials)
            k, leader = min(enumerate(trials), key=lambda pair: pair[1].ratio)
            if not self._beats(leader):
                if seeding:  # no seed helps here: the climb starts from IREE's choice
                    continue
                self.ended = True
                return
            # The best of many noisy timings is biased to luck: the leader is timed
            # once more beside IREE's choice and counts at the worse of its two ratios.
            try:
                ((ps, iree_ps),) = self.time_generation(default, [compiled[k][1]])
            except ToolTimeout:
                raise
            except UserError as error:
                self.failed[leader.config.text()] = str(error)
                return
            again = TileTrial(leader.config, ps, iree_ps)
            self.tried.append(again)
            leader = max(leader, again, key=lambda trial: trial.ratio)
            if not self._beats(leader):
                if seeding:
                    continue
                self.ended = True
                return
            self.best, current = leader, leader.config

    def _beats(self, trial: TileTrial) -> bool:
        """Beats the best so far (IREE's choice at first) by more than the noise floor."""
        return trial.ratio < (1.0 if self.best is None else self.best.ratio) * (1 - SCREEN_MARGIN)
