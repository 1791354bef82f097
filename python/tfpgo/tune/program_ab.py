"""--tune's A/B of two IREE programs, and the threads it runs them with.

Each A/B is the sequential paired one of tfpgo.ab.paired: both programs
in one IREE runtime, called in turn (tfpgo.iree.alternation), in up to
`Plan.processes` processes of `Plan.process_s` seconds each, loaded in random
order; it stops at the first look whose interval says helps, hurts, or no
effect beyond 2%.

Threads: the program runs as fast as it can with some count of IREE's worker
threads, each pinned to a CPU of this process's set or left to the scheduler.
`choose_threads` measures the original program every way (one short process
each, the mean call: what a loop of calls takes) and the A/Bs of the run use
the fastest, the same way in every process, so both arms run alike and as the
user's program would. Pinned or not matters on this 2-core machine: mlp's calls
with two pinned workers took 3.6-3.9 ms on the mean (a tenth of them over 6.8
ms), unpinned 2.9-3.4 ms (a tenth over 4.5-5.4 ms); the GRU's the other way
(15.5-16.0 against 16.3-20.3 ms). An arm on IREE's local-sync driver (`--tune`'s
`local-sync` candidate) runs on the process's own thread, pinned to the same
CPUs when the workers are.

An A/B between IREE's drivers runs each program in processes of its own, as the
runtime runs it (`tfpgo.runtime.load`: worker threads on every core, left to
the scheduler), the two taking turns process by process (`between_drivers`): in
one process the drivers disturb each other whichever way the workers run.
Unpinned, the scheduler moves sleeping workers next to the busy local-sync
caller: cnn's local-task calls took 0.91 ms between local-sync blocks and
0.50-0.51 ms alone, and the A/B kept local-sync (0.948) for a program it made
14% slower outside tfpgo. Pinned, the rnn's unrolled training step's local-task
calls took 12.0 ms where the runtime's take 8.1, and the A/B kept local-sync
(0.978) for a program it made 1.7x slower (13.2-14.3 ms).
"""

from __future__ import annotations

import math
import os
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from tfpgo.ab import paired
from tfpgo.ab.intervals import CONFIDENCE, ratio_interval
from tfpgo.ab.result import ABResult, ratio_text
from tfpgo.ab.trimmed import trimmed
from tfpgo.ab.turns import turn_order
from tfpgo.iree import alternation
from tfpgo.iree.alternation import Arm, Request
from tfpgo.iree.program import Workload
from tfpgo.iree.run import DEVICE

# An A/B alternates for at most AB_S seconds, in processes of PROCESS_S each (a
# process also pays about LOAD_S to load both programs and warm them up).
AB_S, PROCESS_S, LOAD_S = 20.0, 2.5, 1.0
# What a variant timed alone (one dispatch's tiles, one convolution's form: a
# `generation`, one process and no interval) must gain to be kept or proposed:
# a screen, not a verdict; the whole program's A/B decides after it. The margin
# is the Proposer's NOISE (tfpgo.proposer.blocks), never measured apart for
# dispatches timed alone.
SCREEN_MARGIN = 0.05
# Rounds a process runs at least: a slow program's processes last longer.
MIN_ROUNDS = 8
# In a round, each program runs one untimed call (the caches hold the other
# program's data after a switch; none for a call of alternation.SWITCH_FREE_S
# or more) and up to CALLS timed ones, as many as fit in BLOCK_S: their median
# is the round's time (tfpgo.iree.alternation).
CALLS, BLOCK_S = 5, 0.025
# Copies of each program an A/B process loads, in both orders: an even number
# from 2 to MAX_PLACEMENTS, as many as fit in WARMUP_SHARE of a process's
# alternation (each copy is warmed up), in COPIES_BYTES of memory for both
# programs, and a visit of two rounds to each copy at least twice a process.
# Each copy falls on the caches by chance, and the processes' spread shrinks as
# they load more (tfpgo.iree.alternation).
MAX_PLACEMENTS, WARMUP_SHARE, COPIES_BYTES = 16, 0.15, 1 << 30
# Each thread count is measured for THREADS_S seconds of calls.
THREADS_S = 1.0
# A generation of dispatch benchmarks alternates GENERATION_S an arm.
GENERATION_S = 0.3
# An A/B between drivers runs DRIVER_PAIRS pairs of processes, one program each.
DRIVER_PAIRS = 8


@dataclass(frozen=True)
class Way:
    """How IREE's worker threads run: how many, and whether each is pinned to a
    CPU of this process's set (`--task_topology_cpu_ids`) or left to the
    scheduler (`--task_topology_group_count`)."""

    count: int
    pinned: bool

    def text(self) -> str:
        return f"{self.count} {'pinned' if self.pinned else 'unpinned'}"


@dataclass(frozen=True)
class Threads:
    """The worker threads the A/Bs run with (`cpus`: the CPUs they are pinned
    to, () when unpinned), and the original program's mean call (ms) each way
    measured."""

    way: Way
    cpus: tuple[int, ...]
    mean_ms: dict[Way, float]

    @property
    def count(self) -> int:
        return self.way.count

    @property
    def call_s(self) -> float:
        """The original program's mean call with these threads (s): what an
        A/B's rounds take, where the profile's dispatch time leaves out the host's
        share (a loop's trips on the host: 0.64 ms of dispatches in an 18 ms call)."""
        return self.mean_ms[self.way] / 1e3

    @property
    def runtime_call_s(self) -> float:
        """The original program's mean call as `tfpgo.runtime` runs it (s): a worker
        on every core, left to the scheduler (the way these threads were fastest
        can be another: an A/B's calls are not a user's)."""
        runtime = Way(max(way.count for way in self.mean_ms), False)
        return self.mean_ms.get(runtime, self.mean_ms[self.way]) / 1e3

    def text(self) -> str:
        measured = ", ".join(f"{way.text()}: {ms:.3f} ms" for way, ms in self.mean_ms.items())
        where = f"pinned to CPUs {','.join(map(str, self.cpus))}" if self.cpus else "unpinned"
        return f"{self.count} threads {where} (a mean call, by threads: {measured})"


def cpus_of_process() -> tuple[int, ...]:
    return tuple(sorted(os.sched_getaffinity(0)))


def choose_threads(vmfb: Path, workload: Workload, scratch: Path, run_s: float) -> Threads:
    """The way of running IREE's worker threads (count, pinned or not) that the
    program's calls take least time with, on the mean (module docstring)."""
    cpus = cpus_of_process()
    arm, seconds = program_arm(vmfb, workload), max(THREADS_S, MIN_ROUNDS * run_s)
    means = {}
    for count in range(1, len(cpus) + 1):
        for pinned in (True, False):
            where = cpus[:count] if pinned else ()
            means[Way(count, pinned)] = alone_ms(arm, seconds, count, where, scratch, "threads")
    best = min(means, key=lambda way: (means[way], way.count, not way.pinned))
    return Threads(best, cpus[: best.count] if best.pinned else (), means)


def alone_ms(
    arm: Arm, seconds: float, threads: int, cpus: tuple[int, ...], scratch: Path, what: str
) -> float:
    """One program's mean call (ms) alone in a process of `seconds`, with `threads`
    workers pinned to `cpus` (none: left to the scheduler)."""
    # One program: no other's data in the caches, so no untimed call after a switch.
    request = Request((arm,), seconds, threads, cpus, (0,), switch_calls=0)
    rounds = alternation.alternate(request, scratch, f"--tune ({what})")
    return statistics.fmean(row[0] for row in rounds.times_ns) / 1e6


def plan(
    run_s: float, threads: Threads, seconds: float = AB_S, program_bytes: int = 0
) -> paired.Plan:
    """The processes of an A/B of about `seconds` of alternation for a program
    whose call takes `run_s`, at least paired.MIN_PROCESSES of at least
    MIN_ROUNDS rounds each, the timed and untimed calls of a program in a
    round, and the copies of the two programs (`program_bytes` together) a
    process loads."""
    calls = max(1, min(CALLS, math.floor(BLOCK_S / run_s) if run_s > 0 else CALLS))
    switch = alternation.switch_calls(run_s)
    round_s = 2 * (calls + switch) * run_s
    process_s = max(min(PROCESS_S, seconds / paired.MIN_PROCESSES), MIN_ROUNDS * round_s)
    processes = max(paired.MIN_PROCESSES, math.floor(seconds / process_s))
    placements = placements_for(run_s, process_s, round_s, program_bytes)
    return paired.Plan(processes, process_s, threads.count, threads.cpus, calls, placements, switch)


def placements_for(run_s: float, process_s: float, round_s: float, program_bytes: int) -> int:
    """How many copies of each program a process loads (MAX_PLACEMENTS)."""
    fits = [MAX_PLACEMENTS]
    if run_s > 0:
        warmup_s = alternation.warmup_calls(run_s) * run_s
        fits.append(math.floor(WARMUP_SHARE * process_s / (2 * warmup_s)))
        fits.append(math.floor(process_s / round_s / 4))
    if program_bytes > 0:
        fits.append(COPIES_BYTES // program_bytes)
    return max(2, min(fits) // 2 * 2)


class ProgramAB:
    """The A/Bs of one --tune run: the threads and the original program's call
    time are measured at the first A/B (a run that tries nothing measures
    nothing), and each A/B is planned from that call time; until then its
    profiled dispatch time (`run_s`, a lower bound) sizes the longest A/B."""

    def __init__(
        self,
        original: Path,
        run_s: float,
        workload: Workload,
        scratch: Path,
        seconds: float = AB_S,
        note: Callable[[str], None] = lambda _: None,
    ) -> None:
        self.original, self.run_s, self.workload = original, run_s, workload
        self.scratch, self.seconds, self.note = scratch, seconds, note
        self.threads: Threads | None = None

    def longest_s(self) -> float:
        """How long an A/B may take when it runs to its last process."""
        one = Way(1, True)
        sized = plan(self.run_s, Threads(one, (0,), {one: self.run_s * 1e3}), self.seconds)
        return sized.processes * (sized.process_s + LOAD_S)

    def measured_threads(self) -> Threads:
        """The threads the A/Bs run with, measured at the first call."""
        if self.threads is None:
            self.scratch.mkdir(parents=True, exist_ok=True)
            self.threads = choose_threads(self.original, self.workload, self.scratch, self.run_s)
            self.note(f"tune: A/Bs run {self.threads.text()}")
        return self.threads

    def call_s(self) -> float:
        """The original program's mean call as the runtime runs it (s)."""
        return self.measured_threads().runtime_call_s

    def measure(
        self, baseline: Path, candidate: Path, drivers: tuple[str, str] = (DEVICE, DEVICE)
    ) -> ABResult:
        """The sequential paired A/B of `candidate` against `baseline`, each on its
        IREE driver (module docstring)."""
        threads = self.measured_threads()
        if drivers[0] != drivers[1]:  # (module docstring)
            arms = (
                program_arm(baseline, self.workload, drivers[0]),
                program_arm(candidate, self.workload, drivers[1]),
            )
            return between_drivers(arms, threads.call_s, candidate.parent / "ab")
        program_bytes = baseline.stat().st_size + candidate.stat().st_size
        ab_plan = plan(threads.call_s, threads, self.seconds, program_bytes)
        arms = (
            program_arm(baseline, self.workload, drivers[0]),
            program_arm(candidate, self.workload, drivers[1]),
        )

        def process(order: tuple[int, int]) -> alternation.Rounds:
            request = ab_request(arms, ab_plan, order)
            return alternation.alternate(request, candidate.parent / "ab", "--tune (A/B)")

        return paired.run(process, ab_plan)


def between_drivers(arms: tuple[Arm, Arm], call_s: float, scratch: Path) -> ABResult:
    """The A/B of two programs on different drivers (module docstring): each
    process runs one program as the runtime does, its mean call timed over at
    least THREADS_S; DRIVER_PAIRS pairs of processes, taking turns; each pair's
    log-ratio of mean calls, their trimmed mean and interval, and the paired
    A/B's verdict on it."""
    cores = len(cpus_of_process())
    seconds = max(THREADS_S, MIN_ROUNDS * call_s)
    logs: list[float] = []
    means_ms: tuple[list[float], list[float]] = ([], [])
    for pair in range(DRIVER_PAIRS):
        mean = {}
        for arm in turn_order(pair, 2):
            mean[arm] = alone_ms(arms[arm], seconds, cores, (), scratch, "A/B between drivers")
            means_ms[arm].append(mean[arm])
        logs.append(math.log(mean[1] / mean[0]))
    estimate = trimmed(logs)
    ratio, low, high = ratio_interval(estimate.log_ratio, estimate.se, estimate.df, CONFIDENCE)
    said = paired.verdict(low, high, ratio, final=True)
    assert said is not None  # a final look always decides
    baseline_ms = statistics.median(means_ms[0])
    return ABResult(
        ratio, low, high, said, baseline_ms, baseline_ms * ratio, len(logs), CONFIDENCE,
        paired.MIN_GAIN, 2 * DRIVER_PAIRS, cores, pinned=False,
    )  # fmt: skip


def ab_request(arms: tuple[Arm, Arm], ab_plan: paired.Plan, order: tuple[int, int]) -> Request:
    """One process of an A/B of two programs: the plan's copies of each, the
    first loaded in `order` (tfpgo.iree.alternation)."""
    return Request(
        arms, ab_plan.process_s, ab_plan.threads, ab_plan.cpus, order, ab_plan.calls,
        placements=ab_plan.placements, switch_calls=ab_plan.switch_calls,
    )  # fmt: skip


def benchmark_arm(vmfb: Path) -> Arm:
    """A dispatch benchmark (tfpgo.iree.dispatch_benchmark): its one function,
    one invocation a call."""
    return Arm(str(vmfb), "", (), (1,))


def generation(
    default: Arm, variants: Sequence[Arm], scratch: Path, what: str
) -> list[tuple[float, float]]:
    """Each variant timed beside `default` in one alternation process, every arm
    in turn, one timed call a round, on all of this process's CPUs (pinned): per
    variant, its median call (ps) and `default`'s beside it, scaled so that their
    quotient is the paired ratio (tfpgo.ab.paired.estimate)."""
    cpus = cpus_of_process()
    seconds = GENERATION_S * (1 + len(variants))
    arms = (default, *variants)
    request = Request(arms, seconds, len(cpus), cpus, tuple(range(len(arms))), 1, MIN_ROUNDS)
    rounds = alternation.alternate(request, scratch, what)
    found = []
    for index in range(1, 1 + len(variants)):
        ratio = math.exp(paired.estimate(rounds, 0, index).log_ratio)
        ps = statistics.median(row[index] for row in rounds.times_ns) * 1e3
        found.append((ps, ps / ratio))
    return found


def result_text(result: ABResult) -> str:
    """`1.2 ms against 1.5 ms a run, ratio 0.800 [0.780, 0.820] (98.3%)`."""
    return (
        f"{result.candidate_ms:.1f} ms against {result.baseline_ms:.1f} ms a run, "
        f"ratio {ratio_text(result)}"
    )


def program_arm(vmfb: Path, workload: Workload, driver: str = DEVICE) -> Arm:
    """A whole program: its workload's entry and inputs, on `driver`."""
    return Arm(str(vmfb), workload.entry, tuple(str(path) for path in workload.inputs), (), driver)
