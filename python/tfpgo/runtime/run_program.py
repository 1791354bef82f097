"""`bazel run //tools:run_program -- --output-dir D`: the lowered step, run.

Runs the program of a `pgo --lower iree` output directory (the tuned one when
`--tune` kept one) on the inputs of an `.npz` (one array per argument leaf,
named as `program.json` names it: `x`, `inputs["ids"]`, `args[0]`; by default the
profiled step's own inputs), `--steps` times: a training step's variables carry
from step to step. `--save` writes the last step's outputs (by their paths:
`output["loss"]`) and a training step's final variables (`variables/<name>`).
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path
from typing import Any

from tfpgo import cli
from tfpgo.atomic import staged_file
from tfpgo.errors import UserError
from tfpgo.runtime.manifest import DEFAULT, TUNED, Role, values_path
from tfpgo.runtime.step import DRIVERS, Step, host_array, load

PROG = "run_program"


def build_parser() -> cli.ArgumentParser:
    parser = cli.ArgumentParser(
        prog=PROG,
        description="Run the step of a `pgo --lower iree` output with IREE's runtime.",
    )
    parser.add_argument("--output-dir", required=True, help="the pgo output directory")
    parser.add_argument(
        "--inputs",
        help="an .npz with one array per argument leaf, named as program.json names it "
        "(default: the profiled step's inputs)",
    )
    parser.add_argument(
        "--program",
        choices=(TUNED, DEFAULT),
        help="which program (default: tuned when --tune kept one, else default)",
    )
    parser.add_argument("--steps", type=cli.positive_int, default=1, help="steps (default 1)")
    parser.add_argument("--threads", type=cli.positive_int, help="IREE's threads (default: all)")
    parser.add_argument(
        "--driver",
        choices=DRIVERS,
        help="IREE's CPU driver: worker threads (local-task) or the calling thread "
        "(local-sync); default: the one program.json names for the program",
    )
    parser.add_argument(
        "--save", help="an .npz for the last step's outputs and a training step's variables"
    )
    return parser


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    directory = cli.user_path(args.output_dir)
    step = load(directory, args.program, args.threads, driver=args.driver)
    inputs = _inputs(step, directory, cli.user_path(args.inputs) if args.inputs else None)
    seconds = []
    results: tuple[Any, ...] = ()
    for _ in range(args.steps):
        started = time.perf_counter()
        results = step.call_flat(inputs)
        seconds.append(time.perf_counter() - started)
    outputs = {r.name: r for r in step.manifest.results if r.role is Role.OUTPUT}
    saved = {name: host_array(results[r.index]) for name, r in outputs.items()}
    saved.update({f"variables/{name}": v for name, v in step.variables().items()})
    if args.save:
        _save(cli.user_path(args.save), saved)
    which = step.program.name
    print(
        f"{PROG}: {args.steps} step(s) of {which} on {step.driver} ({step.threads} threads), "
        f"{statistics.median(seconds) * 1e3:.3f} ms a step (median, the call as Python sees it)"
    )
    for name in outputs:
        value = saved[name]
        print(f"  {name}: {value.dtype} {list(value.shape)}{_scalar(value)}")
    if args.save:
        print(f"{PROG}: saved {len(saved)} arrays to {args.save}")
    return 0


def _inputs(step: Step, directory: Path, npz: Path | None) -> dict[int, Any]:
    """The input parameters by position: from `npz` by name, else the profiled
    step's own values."""
    import numpy as np

    wanted = {p.name: p for p in step.manifest.parameters if p.role is Role.INPUT}
    if npz is None:
        return {p.index: np.load(values_path(directory, p)) for p in wanted.values()}
    try:
        with np.load(npz, allow_pickle=False) as archive:
            given = {name: archive[name] for name in archive.files}
    except (OSError, ValueError) as error:
        raise UserError(f"{npz}: not an .npz of arrays ({error})") from None
    unknown = sorted(set(given) - set(wanted))
    if unknown:
        raise UserError(f"{npz}: {unknown[0]} is no argument of the step ({', '.join(wanted)})")
    missing = [name for name in wanted if name not in given]
    if missing:
        raise UserError(f"{npz}: no array for argument {missing[0]} ({', '.join(wanted)})")
    return {p.index: given[name] for name, p in wanted.items()}


def _save(path: Path, arrays: dict[str, Any]) -> None:
    import numpy as np

    with staged_file(path) as staged, open(staged, "wb") as handle:
        np.savez(handle, **arrays)


def _scalar(value: Any) -> str:
    return f" = {value.item():.6g}" if value.ndim == 0 and value.dtype.kind in "fiu" else ""
