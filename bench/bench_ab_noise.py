"""Benchmark: the A/B's noise floor, old method against new (issue 48).

    bazel run //bench:bench_ab_noise [-- --only mlp,cnn --repeats 20 --short 3]

Each model is lowered by `pgo --lower iree` in a fresh process (kept under
`--root`; bench_step_wallclock's outputs are reused), and its program is
compiled a second time from the same StableHLO with the same flags: identical
bytes (checked; where IREE's compile is not deterministic, as on ResNet50, a
byte copy of the program, recorded as `twin`), so any difference an A/B sees
is noise. Then, nothing else running:

- the old method (`--tune` before issue 48): blocks of iterations, each a
  fresh `iree-benchmark-module` process, alternating (tfpgo.proposer.blocks), sized
  for 20 s as the loop sized them; its 95% interval (Welch on log block means);
- the new one (tfpgo.ab.paired): both programs in one process, called in
  turn, in the processes of `--tune`'s plan for 5, 10 and 20 s of alternation,
  loaded in random order; the 95% interval over all the plan's processes
  (random effects, Student's t), and what the sequential decision would have
  said on the same processes (`paired.replay`): every "helps" of these A/As is a
  null change kept.

Per model: the median half-width of each method and length, the new method's
coverage of 1.0 over `--repeats` 20 s A/As, its between-process standard
deviation, and the sequential decisions. Printed as Markdown and written to
`<root>/ab_noise.json` (`--json`).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import statistics
import time
from pathlib import Path
from typing import Any

import harness

from tfpgo.ab import paired
from tfpgo.iree import program as iree_program
from tfpgo.iree import run as iree_run
from tfpgo.iree.alternation import alternate
from tfpgo.proposer import blocks
from tfpgo.tune import program_ab

ZOO = ("mlp", "cnn", "transformer", "rnn", "resnet50")
LENGTHS_S = (5.0, 10.0, 20.0)
# The old method's sizing (tune.loop before issue 48): blocks of at least
# BLOCK_S, 3-1000 iterations, 5-15 blocks an arm for an A/B of about 20 s, each
# block paying about 0.2 s to start the tool.
BLOCK_S, PROCESS_S = 0.5, 0.2
# ResNet50 at batch 32 runs 5.5 s a call: a 20 s A/B holds three. At batch 1 it
# is a model of the zoo a 20 s A/B can measure.
MODELS: dict[str, harness.Model] = {"resnet50": ("resnet50", "infer", 1), **harness.MODELS}


def _twin(out: Path) -> tuple[Path, str]:
    """The program compiled again from its StableHLO, as --lower iree compiled
    it: the same bytes, checked. Where IREE's compile is not deterministic
    (ResNet50: three compiles, three sizes), a byte copy of the program instead,
    and the second value says so."""
    twin = out / "ab_noise" / "model.twin.vmfb"
    original = (out / iree_program.PROGRAM_VMFB).read_bytes()
    if not twin.is_file():
        twin.parent.mkdir(parents=True, exist_ok=True)
        iree_run.compile_vmfb(out / "model.stablehlo.mlirbc", twin, ())
    if twin.read_bytes() == original:
        return twin, "compiled again"
    copy = out / "ab_noise" / "model.copy.vmfb"
    copy.write_bytes(original)
    return copy, "a byte copy (compiling again gave other bytes)"


def _old(vmfb: Path, twin: Path, workload: iree_program.Workload, run_s: float) -> float:
    iterations = min(max(math.ceil(BLOCK_S / run_s), 3), 1000)
    block_s = iterations * run_s + PROCESS_S
    repetitions = min(max(math.ceil(20.0 / (2 * block_s)), 5), 15)
    samples = blocks.interleave(
        lambda n: harness.iteration_times(vmfb, workload, n),
        lambda n: harness.iteration_times(twin, workload, n),
        repetitions,
        iterations,
    )
    result = blocks.judge(samples)
    assert result.low is not None and result.high is not None
    return (result.high - result.low) / 2


def _new(
    vmfb: Path, twin: Path, workload: iree_program.Workload, ab_plan: paired.Plan, scratch: Path
) -> dict[str, Any]:
    arms = (program_ab.program_arm(vmfb, workload), program_ab.program_arm(twin, workload))
    draw = random.Random()
    processes = []
    started = time.monotonic()
    for _ in range(ab_plan.processes):
        order = (0, 1) if draw.random() < 0.5 else (1, 0)
        processes.append(alternate(program_ab.ab_request(arms, ab_plan, order), scratch, "A/A"))
    found = paired.interval(processes, 0.95)
    decided = paired.replay(processes, ab_plan)
    return {
        "half_width": (found.high - found.low) / 2,
        "covers": found.low <= 1 <= found.high,
        "ratio": found.ratio,
        "between": found.combined.between,
        "verdict": decided.verdict.value,
        "looks_processes": decided.processes,
        "wall_s": time.monotonic() - started,
    }


def _model(label: str, root: Path, repeats: int, short: int) -> dict[str, Any]:
    out = harness.lower_model(label, root, 0, MODELS)
    twin, made = _twin(out)
    vmfb = out / iree_program.PROGRAM_VMFB
    workload = harness.program_workload(out)
    profile = json.loads((out / "iree_profile.json").read_text())
    run_s = profile["totals"]["dispatch_ps"] / max(profile["runs"], 1) / 1e12
    scratch = out / "ab_noise"
    threads = program_ab.choose_threads(vmfb, workload, scratch, run_s)
    result: dict[str, Any] = {"label": label, "run_ms": threads.call_s * 1e3}
    result["threads"] = threads.text()
    result["twin"] = made
    result["old_20s"] = [_old(vmfb, twin, workload, threads.call_s) for _ in range(short)]
    program_bytes = vmfb.stat().st_size + twin.stat().st_size
    for seconds in LENGTHS_S:
        ab_plan = program_ab.plan(threads.call_s, threads, seconds, program_bytes)
        count = repeats if seconds == LENGTHS_S[-1] else short
        runs = [_new(vmfb, twin, workload, ab_plan, scratch) for _ in range(count)]
        result[f"new_{seconds:.0f}s"] = {"plan": vars(ab_plan), "runs": runs}
    return result


def _median_text(half_widths: list[float], digits: int) -> str:
    """`±1.23%`, or `–` where `--short 0` measured none."""
    if not half_widths:
        return "–"
    return f"±{statistics.median(half_widths) * 100:.{digits}f}%"


def _row(result: dict[str, Any]) -> list[str]:
    final = result["new_20s"]["runs"]
    cells = [
        f"{result['label']}{' (not in the zoo)' if result['label'] in harness.UNSEEN else ''}",
        f"{result['run_ms']:.2f}",
        str(result["new_20s"]["plan"]["placements"]),
        _median_text(result["old_20s"], 1),
    ]
    for seconds in LENGTHS_S:
        runs = result[f"new_{seconds:.0f}s"]["runs"]
        cells.append(_median_text([r["half_width"] for r in runs], 2))
    cells.append(f"{sum(r['covers'] for r in final)}/{len(final)}")
    cells.append(f"{statistics.median(r['between'] for r in final) * 100:.2f}%")
    verdicts = [r["verdict"] for r in final]
    cells.append(
        f"{verdicts.count('helps')} helps, {verdicts.count('hurts')} hurts of {len(verdicts)}; "
        f"{statistics.median(r['looks_processes'] for r in final):.0f} processes"
    )
    return cells


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path("/tmp/tfpgo_step_wallclock"))
    parser.add_argument("--only", default=",".join((*ZOO, *harness.UNSEEN)))
    parser.add_argument("--repeats", type=int, default=20, help="20 s A/As a model")
    parser.add_argument(
        "--short", type=int, default=3, help="5 s, 10 s and old-method A/As (0: none)"
    )
    parser.add_argument("--json", default="ab_noise.json", help="written under --root")
    args = parser.parse_args()
    os.environ.setdefault("TFPGO_OPT", str(harness.tfpgo_opt()))
    results = []
    for label in args.only.split(","):
        results.append(_model(label, args.root, args.repeats, args.short))
        harness.write_json(args.root / args.json, {"machine": harness.machine(),
                                                         "results": results})  # fmt: skip
        print(f"{label} (twin: {results[-1]['twin']}): {_row(results[-1])}", flush=True)
    header = ["model", "ms a run", "copies a process", "old, 20 s"]
    header += [f"new, {s:.0f} s" for s in LENGTHS_S]
    header += ["new 20 s covers 1.0", "between processes", "sequential decisions"]
    print(harness.markdown_table(header, [_row(r) for r in results]))
    return 0


if __name__ == "__main__":
    harness.run_main(main, "bench_ab_noise")
