"""Programs timed against each other in one process, call by call, in turn.

A process of IREE's benchmark tool per block of iterations measures each
program from a cold start: its weights paged in again, a new thread pool, and
whatever the machine did in between. Timed so, one program against itself
(A/A) gave a 95% interval of ±7-20% on this 2-core machine; called alternately
in one process it gave ±0.9% (issue 48). This module is that process: it loads
every arm (a vmfb and a function in it) into one IREE runtime, puts each arm's
inputs on the device once, warms each arm up with a few untimed calls, then runs them
in rounds, forward (A B C) or reversed (C B A), four rounds to a cycle: forward,
reversed, reversed, forward (`forward`). So A B B A B A A B holds for every two
arms: a drift of the machine, linear or curved, falls on both of a pair alike,
and each arm follows the other as often as itself.

In a round each arm runs a block: `SWITCH_CALLS` call untimed, then `calls`
calls each timed alone (`time.perf_counter_ns` around the invocation, which
returns when the program's work is done), of which the round keeps the median.
The untimed calls are there because the first call after the other program
ran finds the caches holding that program's weights: on mlp (16 MB of
weights, 2 ms a call) it took 15-25% longer than the next, so a call timed
right after a switch measures the switch, not the program as a loop runs it.
A switch costs at most refilling the caches (32 MB of L3 here, about 2 ms from
memory), so a program whose call takes `SWITCH_FREE_S` or more runs none
(`switch_calls`): on ResNet50 (150 ms a call, 100 MB of weights streamed each
call) the first call after a switch took 0.8% longer on the median, within its
calls' spread of 3-7%, and the untimed call halved the calls a 20 s A/B times.
Likewise each copy's warm-up (`warmup_calls`) stops after the first call once
it has run `WARMUP_S`: ResNet50's first call took 152 ms where the next took 148.

When the workers are as many as the process's CPUs, the calling thread runs
its timed rounds at the lowest priority (`_yield_to_workers`): waiting on a
call, IREE's runtime keeps it busy (on mlp 0.7 ms of CPU a 3.8 ms call, at
the lowest priority 0.1 ms), and with every CPU running a worker it takes one
from a worker, which then waits for the scheduler's next tick: 23% of mlp's
calls took 4-8 ms where the rest took 2.2-3.2 ms. At the lowest priority 1% do,
and a process's ratio has a standard error of 0.8-1.2% where it had 2.4%. With
fewer workers than CPUs it keeps its priority: a step with host work (the GRU's
loop) runs that work on this thread, and there a free CPU is its own. It keeps
it too where an arm runs on local-sync: between drivers, the caller's
contention is part of what differs (the GRU step took 9.8 ms a call on two pinned workers
with the caller yielding, 16-20 ms with it at its priority, as a user's loop
calls it).

Where the process runs is chosen from outside (`Request`): its worker threads,
pinned to the CPUs it names (IREE's `--task_topology_cpu_ids`) or left to the
scheduler (`--task_topology_group_count`), every process of a comparison the
same way (an arm on local-sync runs on the process's own thread, then pinned to
those CPUs too), and the order the arms are loaded in. Memory layout
can favour one copy of a program over another. Each copy's bytes are read into
private anonymous memory, so no file's pages in the page cache decide (mapped
from their files, the copy from the older file ran 6-13% faster in every
process), in small pages: in 2 MB pages (MADV_HUGEPAGE) every copy's weights
fall on the caches' sets alike and mlp's between-process spread rose from 2.5%
to 7.5-8.9% (24 processes each; the memory had been shared anonymous, where
the advice does nothing, so small pages all along). Even so, on mlp (16 MB of
weights a copy) the program loaded first ran 3% slower, over 32 processes;
in other pools of processes it was the copy loaded second that ran 3-8%
faster, and in others no place stood out: each copy falls on the caches by
chance, and one copy of mlp runs up to 5% faster than another of the same
program in the same process. So a process may load each arm `placements`
times, each copy in its own memory, the load order reversed from one copy to
the next, and move to the next copies every two rounds: an arm's time is its
copies' mean, whatever place stands out weighs one copy in `placements`, and
the spread of the processes' ratios shrinks as more copies are loaded (mlp,
16 processes each, the caller yielding: 1.9% with 4 copies, 0.9% with 8 or
16). The move falls between the two reversed rounds and
between the two forward ones of a cycle (A0 B0 B0 A0 B1 A1 A1 B1), where the
arm changes too, so each arm is the one to run first from new copies equally
often. (Moving between a reversed and a forward round, A0 B0 B0 A0 A1 B1 B1 A1,
made A always the first: the twin of identical bytes then ran 0.2-0.6% faster
over 20 A/As of the GRU and 6 of cnn.) The caller still randomizes the first
order over several processes (tfpgo.proposer.paired).

`alternate` starts one such process under IREE's tool timeouts and the stage's
deadline (tfpgo.iree.tools); `python -m tfpgo.iree.alternation REQUEST.json`
is the process itself, writing its `Rounds` as JSON on stdout.
"""

from __future__ import annotations

import json
import math
import mmap
import os
import statistics
import sys
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from tfpgo.iree.run import DEVICE, SYNC
from tfpgo.iree.tools import run_command
from tfpgo.toolpaths import python_env

# Untimed calls of each copy before the rounds: WARMUP_CALLS, or as many as
# fit in WARMUP_S, at least one (module docstring).
WARMUP_CALLS, WARMUP_S = 3, 0.1
# The calling thread's niceness while the workers hold every CPU (module docstring).
LOWEST_PRIORITY = 19
# Untimed calls of a program before its timed ones in a round, none for a
# program whose call takes SWITCH_FREE_S or more (module docstring).
SWITCH_CALLS, SWITCH_FREE_S = 1, 0.1
# Extra seconds a process is allowed past its alternation: Python, IREE's
# runtime and the programs' loading and warm-up (a large program's weights);
# $TFPGO_IREE_TIMEOUT_S instead when set, as for IREE's tools.
START_S = 30.0
# The interpreter that runs the process (a test puts a stand-in here).
PYTHON = sys.executable
# Functions IREE adds to every module, which no arm calls.
_INITIALIZERS = frozenset({"__init", "__deinit"})


@dataclass(frozen=True)
class Arm:
    """A program to time: a vmfb, the function it calls ("": its one function,
    as a dispatch benchmark has), its arguments: .npy files, or integers (a
    dispatch benchmark's invocation count), and IREE's CPU driver it runs on
    (local-sync: on the calling thread)."""

    vmfb: str
    function: str
    inputs: tuple[str, ...] = ()
    integers: tuple[int, ...] = ()
    driver: str = DEVICE


@dataclass(frozen=True)
class Request:
    arms: tuple[Arm, ...]
    seconds: float  # the alternation's length, after the warm-up
    threads: int  # IREE's worker threads
    cpus: tuple[int, ...]  # one thread pinned to each; () leaves them unpinned
    load_order: tuple[int, ...]  # arm indices, in the order they are loaded
    calls: int = 1  # timed calls of each arm in a round (its median is kept)
    min_rounds: int = 4
    # Copies of every arm in memory, each loaded in its own order (module
    # docstring); every two rounds move to the next copy.
    placements: int = 1
    switch_calls: int = SWITCH_CALLS  # untimed calls of each arm in a round (`switch_calls`)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, document: dict[str, Any]) -> Request:
        arms = tuple(
            Arm(a["vmfb"], a["function"], tuple(a["inputs"]), tuple(a["integers"]), a["driver"])
            for a in document["arms"]
        )
        return cls(
            arms,
            float(document["seconds"]),
            int(document["threads"]),
            tuple(document["cpus"]),
            tuple(document["load_order"]),
            int(document["calls"]),
            int(document["min_rounds"]),
            int(document["placements"]),
            int(document["switch_calls"]),
        )


@dataclass(frozen=True)
class Rounds:
    """One process's calls: per round, each arm's median timed call (ns, by arm
    index); round r ran the arms forward when `forward(r)`, else reversed."""

    times_ns: tuple[tuple[int, ...], ...]
    load_order: tuple[int, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "times_ns": [list(row) for row in self.times_ns],
            "load_order": list(self.load_order),
        }

    @classmethod
    def from_json(cls, document: dict[str, Any]) -> Rounds:
        return cls(
            tuple(tuple(int(t) for t in row) for row in document["times_ns"]),
            tuple(int(i) for i in document["load_order"]),
        )


def alternate(request: Request, scratch: Path, what: str) -> Rounds:
    """Runs one alternation process (module docstring) and returns its rounds.
    Killed at its timeout (the alternation and START_S, started once more) or
    at the stage's deadline, it is one ToolTimeout line; a program IREE cannot
    load or call is one UserError line naming it."""
    scratch.mkdir(parents=True, exist_ok=True)
    path = scratch / "alternation.request.json"
    path.write_text(json.dumps(request.to_json()))
    command = [PYTHON, "-m", "tfpgo.iree.alternation", str(path)]
    output = run_command(command, "alternation", what, START_S, python_env(), request.seconds)
    return Rounds.from_json(json.loads(output))


def _memory_of(vmfb: Path) -> mmap.mmap:
    """The program's bytes in private anonymous memory of small pages, whatever
    the page cache holds of its file (module docstring)."""
    data = vmfb.read_bytes()
    memory = mmap.mmap(-1, len(data), flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    if hasattr(mmap, "MADV_NOHUGEPAGE"):
        memory.madvise(mmap.MADV_NOHUGEPAGE)
    memory.write(data)
    return memory


def _only_function(module: Any) -> str:
    """The one function a dispatch benchmark exports (IREE's module initializers
    aside)."""
    names = [name for name in module.function_names if name not in _INITIALIZERS]
    if len(names) != 1:
        raise ValueError(f"{module.name} exports {len(names)} functions, not one: {names[:3]}")
    return names[0]


def _arguments(arm: Arm, device: Any) -> list[Any]:
    import iree.runtime as rt
    import numpy as np

    return [rt.asdevicearray(device, np.load(p, allow_pickle=False)) for p in arm.inputs] + [
        *arm.integers
    ]


def warmup_calls(call_s: float) -> int:
    """The untimed calls that warm a copy up, for a call of `call_s` (module
    docstring)."""
    if call_s <= 0:
        return WARMUP_CALLS
    return max(1, min(WARMUP_CALLS, math.ceil(WARMUP_S / call_s)))


def switch_calls(call_s: float) -> int:
    """The untimed calls of a program after a switch, for a call of `call_s`
    (module docstring)."""
    return 0 if call_s >= SWITCH_FREE_S else SWITCH_CALLS


def load_orders(request: Request) -> list[tuple[int, ...]]:
    """The order each copy of the arms is loaded in: the request's, reversed
    for every other copy (module docstring)."""
    return [request.load_order[:: 1 if copy % 2 == 0 else -1] for copy in range(request.placements)]


def placement_of(round_index: int, placements: int) -> int:
    """The copy a round runs: two rounds each copy, the next two the next."""
    return (round_index // 2) % placements


def forward(round_index: int) -> bool:
    """Whether a round runs the arms forward: forward, reversed, reversed,
    forward, and again (module docstring)."""
    return round_index % 4 in (0, 3)


def round_order(round_index: int, arms: int) -> list[int]:
    """The arms' indices in the order a round runs them."""
    order = list(range(arms))
    return order if forward(round_index) else order[::-1]


def _load(arm: Arm, configs: dict[str, Any], keep: list[Any]) -> tuple[Any, list[Any]]:
    """A copy of the arm in its own memory and context: its function and its
    arguments on the device (`keep` holds what must outlive the calls)."""
    import iree.runtime as rt

    config = configs[arm.driver]
    context = rt.SystemContext(config=config)
    memory = _memory_of(Path(arm.vmfb))
    module = rt.VmModule.wrap_buffer(config.vm_instance, memory)
    context.add_vm_module(module)
    function = context.modules[module.name][arm.function or _only_function(module)]
    arguments = _arguments(arm, config.device)
    keep.append((context, module, arguments, memory))
    return function, arguments


def _warm_up(function: Any, arguments: list[Any]) -> None:
    """A copy's untimed calls before the rounds: as many as `warmup_calls` gives
    for the first one's time."""
    started = time.perf_counter()
    function(*arguments)
    for _ in range(warmup_calls(time.perf_counter() - started) - 1):
        function(*arguments)


def caller_yields(request: Request) -> bool:
    """Whether the calling thread runs the rounds at the lowest priority: every
    arm on local-task's workers, as many as the CPUs the process may run on
    (module docstring)."""
    on_workers = all(arm.driver == DEVICE for arm in request.arms)
    return on_workers and request.threads >= len(os.sched_getaffinity(0))


def _yield_to_workers() -> None:
    """The calling thread at the lowest priority; IREE's workers, already
    started, keep theirs (module docstring)."""
    os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), LOWEST_PRIORITY)


def _run(request: Request) -> Rounds:
    import iree.runtime as rt

    if request.cpus:
        rt.flags.parse_flags(f"--task_topology_cpu_ids={','.join(map(str, request.cpus))}")
    else:
        rt.flags.parse_flags(f"--task_topology_group_count={request.threads}")
    if request.cpus and any(arm.driver == SYNC for arm in request.arms):
        os.sched_setaffinity(0, request.cpus)  # a local-sync arm runs on this thread
    # One device a driver, shared by the arms on it.
    configs = {
        driver: rt.Config(device=rt.get_driver(driver).create_default_device())
        for driver in sorted({arm.driver for arm in request.arms})
    }
    keep: list[Any] = []  # every context and module outlives the calls
    calls = {
        (index, placement): _load(request.arms[index], configs, keep)
        for placement, order in enumerate(load_orders(request))
        for index in order
    }
    for function, arguments in calls.values():
        _warm_up(function, arguments)
    if caller_yields(request):
        _yield_to_workers()
    rows: list[tuple[int, ...]] = []
    ends = time.monotonic() + request.seconds
    while len(rows) < request.min_rounds or time.monotonic() < ends:
        row = [0] * len(request.arms)
        placement = placement_of(len(rows), request.placements)
        for index in round_order(len(rows), len(request.arms)):
            function, arguments = calls[index, placement]
            for _ in range(request.switch_calls):
                function(*arguments)
            timed = []
            for _ in range(request.calls):
                started = time.perf_counter_ns()
                function(*arguments)
                timed.append(time.perf_counter_ns() - started)
            row[index] = round(statistics.median(timed))
        rows.append(tuple(row))
    return Rounds(tuple(rows), request.load_order)


def main(argv: list[str]) -> int:
    request = Request.from_json(json.loads(Path(argv[1]).read_text()))
    try:
        rounds = _run(request)
    except Exception as error:  # whatever IREE or the request raised: one line, no trace
        first = (str(error).strip().splitlines() or [type(error).__name__])[0]
        print(f"error: IREE could not load or call a program of the A/B ({first})", file=sys.stderr)
        return 1
    json.dump(rounds.to_json(), sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
