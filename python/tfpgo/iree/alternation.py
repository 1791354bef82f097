"""Programs timed against each other in one process, call by call, in turn.

This module is that process (why one process, and the measurements behind each
choice below: docs/tuning.md, "The A/B"). It loads every arm (a vmfb and a
function in it) into one IREE runtime, puts each arm's inputs on the device
once, warms each copy up (`warmup_calls`: WARMUP_CALLS, or as many as fit in
WARMUP_S), then runs the arms in rounds, forward (A B C) or reversed (C B A),
four rounds to a cycle: forward, reversed, reversed, forward
(`tfpgo.ab.turns.mirrored_order`). So A B B A B A A B holds for every two
arms: a drift of the machine falls on both of a pair alike, and each arm
follows the other as often as itself.

In a round each arm runs a block: its untimed calls after a switch
(`switch_calls`: SWITCH_CALLS, none for a call of SWITCH_FREE_S or more, whose
switch costs less than its calls' spread), then `calls` calls each timed alone
(`time.perf_counter_ns` around the invocation, which returns when the
program's work is done), of which the round keeps the median.

When the workers are as many as the process's CPUs, the calling thread runs its
timed rounds at the lowest priority (`_yield_to_workers`), so that waiting on a
call it takes no CPU from a worker; with fewer workers than CPUs, or where an
arm runs on local-sync (where the caller's contention is part of what differs),
it keeps its priority.

Where the process runs is chosen from outside (`Request`): its worker threads,
pinned to the CPUs it names (IREE's `--task_topology_cpu_ids`) or left to the
scheduler (`--task_topology_group_count`), every process of a comparison the
same way (an arm on local-sync runs on the process's own thread, then pinned to
those CPUs too), and the order the arms are loaded in. Each copy's bytes are
read into private anonymous memory in small pages, so no file's pages in the
page cache decide. A process may load each arm `placements` times, each copy in
its own memory, the load order reversed from one copy to the next, and move to
the next copies every two rounds, between the two reversed rounds and between
the two forward ones of a cycle (A0 B0 B0 A0 B1 A1 A1 B1), where the arm
changes too: an arm's time is its copies' mean, and each arm is the one to run
first from new copies equally often. The caller still randomizes the first
order over several processes (tfpgo.ab.paired).

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

from tfpgo.ab.paired import SWITCH_CALLS, Rounds
from tfpgo.ab.turns import mirrored_order
from tfpgo.iree.run import DEVICE, SYNC
from tfpgo.iree.tools import run_command
from tfpgo.toolpaths import python_env

# Untimed calls of each copy before the rounds: WARMUP_CALLS, or as many as
# fit in WARMUP_S, at least one (module docstring).
WARMUP_CALLS, WARMUP_S = 3, 0.1
# The calling thread's niceness while the workers hold every CPU (module docstring).
LOWEST_PRIORITY = 19
# A program whose call takes this long or more runs no untimed call after a
# switch (module docstring).
SWITCH_FREE_S = 0.1
# Extra seconds a process is allowed past its alternation: Python, IREE's
# runtime and the programs' loading and warm-up (a large program's weights);
# $TFPGO_IREE_TIMEOUT_S instead when set, as for IREE's tools.
START_ALLOWANCE_S = 30.0
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


def alternate(request: Request, scratch: Path, what: str) -> Rounds:
    """Runs one alternation process (module docstring) and returns its rounds.
    Killed at its timeout (the alternation and START_ALLOWANCE_S, started once more) or
    at the stage's deadline, it is one ToolTimeout line; a program IREE cannot
    load or call is one UserError line naming it."""
    scratch.mkdir(parents=True, exist_ok=True)
    path = scratch / "alternation.request.json"
    path.write_text(json.dumps(request.to_json()))
    command = [PYTHON, "-m", "tfpgo.iree.alternation", str(path)]
    output = run_command(
        command, "alternation", what, START_ALLOWANCE_S, python_env(), request.seconds
    )
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
        for index in mirrored_order(len(rows), len(request.arms)):
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
