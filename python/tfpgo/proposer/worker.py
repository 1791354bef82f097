"""A step timed in its own process: for changes TensorFlow only takes before
its runtime starts (thread pools are fixed when the first op runs).

    python -m tfpgo.proposer.worker --model mlp --mode train --batch-size 32 \\
        --warmup 2 [--inter-op N] [--intra-op N] [--onednn 0|1] [--auto-jit]
        [--jit-compile] [--xla-regions FILE] [--precision POLICY]
        [--grappler OPTION=on|off ...]

The worker sets oneDNN, the thread pools and the Keras dtype policy, loads the
model (with `--jit-compile` in `tf.function(jit_compile=True)`; with
`--xla-regions` traced with the regions of an xla_regions.json marked for XLA,
`tfpgo.proposer.xla_regions`, auto-jit off), runs its first step twice from the
same state and the warmup steps, prints the first step's outputs (one JSON
object: `first`, `again`, `restored`, `random_ops`,
for the numerics check) and `ready`; then for every line `K` on stdin it runs K steps and prints
their wall times (ns) as one JSON list; it exits at the end of stdin. The
parent (`WorkerArm`) drives two workers, baseline and candidate, block by
block: the idle one waits on its stdin and takes no CPU.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from tfpgo.errors import UserError
from tfpgo.toolpaths import python_env

if TYPE_CHECKING:
    from tfpgo.mlir.xla_regions import XlaRegions
    from tfpgo.models import ModelCase

READY = "ready"


def main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    from tfpgo.models import check_model_spec, parse_mode

    check_model_spec(args.model)  # a bad spec fails before TensorFlow loads
    parse_mode(args.mode)
    grappler = grappler_options(args.grappler)
    if args.precision and not _built_from_code(args.model):
        raise UserError(
            f"{args.model}: a Keras dtype policy applies to models built from code (a "
            "built-in model or a .py hook), not to a saved model with its own dtypes"
        )
    regions = _xla_regions(args)
    _set_load_environment(args, regions)
    case = _load(args, grappler, regions)
    if args.profile_dir:
        from tfpgo.models.profiling import profile

        profile(case, Path(args.profile_dir), args.steps, args.warmup)
        return 0
    _serve(case, args.warmup)
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tfpgo.proposer.worker")
    parser.add_argument("--model", required=True)
    parser.add_argument("--mode", required=True)
    parser.add_argument("--batch-size", type=int, required=True)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--signature", default="serving_default")
    parser.add_argument("--input", action="append", default=[])
    parser.add_argument("--inter-op", type=int)
    parser.add_argument("--intra-op", type=int)
    parser.add_argument("--onednn", choices=["0", "1"], help="TF_ENABLE_ONEDNN_OPTS")
    parser.add_argument(
        "--auto-jit", action="store_true", help="XLA auto-clustering, CPU included (TF_XLA_FLAGS)"
    )
    parser.add_argument("--jit-compile", action="store_true", help="the whole step compiled by XLA")
    parser.add_argument(
        "--xla-regions",
        type=Path,
        metavar="FILE",
        help="an xla_regions.json: exactly its regions' ops compiled by XLA, auto-jit off",
    )
    parser.add_argument("--precision", help="a Keras dtype policy, e.g. mixed_bfloat16")
    parser.add_argument(
        "--grappler",
        action="append",
        default=[],
        metavar="OPTION=on|off",
        help="a Grappler option (tf.config.optimizer.set_experimental_options), repeatable",
    )
    parser.add_argument("--profile-dir", help="profile --steps steps into this logdir and exit")
    parser.add_argument("--steps", type=int, default=5)
    return parser


def _set_load_environment(args: argparse.Namespace, regions: XlaRegions | None) -> None:
    """oneDNN and XLA auto-clustering as asked: TensorFlow reads them when it loads."""
    if args.onednn is not None:
        os.environ["TF_ENABLE_ONEDNN_OPTS"] = args.onednn
    if args.auto_jit:
        from tfpgo.proposer.auto_clustering import XLA_FLAGS

        flags = [os.environ.get("TF_XLA_FLAGS", ""), *XLA_FLAGS]
        os.environ["TF_XLA_FLAGS"] = " ".join(flag for flag in flags if flag)
    if regions is not None:  # _XlaScope is honoured only with auto-jit off
        flags = [os.environ.get("TF_XLA_FLAGS", ""), "--tf_xla_auto_jit=0"]
        os.environ["TF_XLA_FLAGS"] = " ".join(flag for flag in flags if flag)


def _load(
    args: argparse.Namespace, grappler: dict[str, bool], regions: XlaRegions | None
) -> ModelCase:
    """The model's step with the thread pools, dtype policy, Grappler options and
    XLA compilation asked for."""
    import tensorflow as tf

    # Before any op runs: afterwards TensorFlow refuses (RuntimeError).
    if args.inter_op is not None:
        tf.config.threading.set_inter_op_parallelism_threads(args.inter_op)
    if args.intra_op is not None:
        tf.config.threading.set_intra_op_parallelism_threads(args.intra_op)
    from tfpgo.models import load_model
    from tfpgo.models.user import SignatureChoice

    if args.precision:
        import keras

        keras.mixed_precision.set_global_policy(args.precision)
    choice = SignatureChoice(args.signature, tuple(args.input))
    case = load_model(args.model, args.mode, args.batch_size, choice)
    if grappler:  # after the model's own code, before a function's graph is optimized
        tf.config.optimizer.set_experimental_options(grappler)
    return _compiled(case, args.jit_compile, regions)


def _serve(case: ModelCase, warmup: int) -> None:
    """Prints the first step's outputs and READY, then times the steps stdin asks for."""
    from tfpgo.proposer.blocks import step_timer
    from tfpgo.proposer.numerics import random_op_types, repeated_first_step

    # The first step's outputs, twice from the freshly loaded (seeded) state: the
    # parent compares them with the other worker's (the numerics check).
    first, again, restored = repeated_first_step(case)
    random_ops = sorted(random_op_types(case))
    document = {"first": first, "again": again, "restored": restored, "random_ops": random_ops}
    print(json.dumps(document), flush=True)
    run = step_timer(case.step, warmup)
    print(READY, flush=True)
    for line in sys.stdin:
        print(json.dumps(list(run(int(line)))), flush=True)


def _xla_regions(args: argparse.Namespace) -> XlaRegions | None:
    """The regions of --xla-regions, read before TensorFlow loads; None without it."""
    if args.xla_regions is None:
        return None
    if args.auto_jit or args.jit_compile:
        raise UserError(
            "--xla-regions compiles exactly its regions with auto-jit off: it does not go "
            "with --auto-jit or --jit-compile"
        )
    from tfpgo.mlir.xla_regions import read_regions

    return read_regions(args.xla_regions)


def _compiled(case: ModelCase, jit_compile: bool, regions: XlaRegions | None) -> ModelCase:
    """The loaded step, whole or in regions compiled by XLA as asked."""
    from tfpgo.proposer.jit_compile import with_jit_compile
    from tfpgo.proposer.proposal import NotApplicable
    from tfpgo.proposer.xla_regions import with_xla_regions

    try:
        if jit_compile:
            return with_jit_compile(case)
        if regions is not None:
            return with_xla_regions(case, regions)
    except NotApplicable as reason:
        raise UserError(f"{case.name}: {reason}") from None
    return case


# Grappler's switches tf.config.optimizer.set_experimental_options takes.
GRAPPLER_OPTIONS = frozenset(
    {
        "layout_optimizer", "constant_folding", "shape_optimization", "remapping",
        "arithmetic_optimization", "dependency_optimization", "loop_optimization",
        "function_optimization", "debug_stripper", "disable_model_pruning",
        "scoped_allocator_optimization", "pin_to_host_optimization",
        "implementation_selector", "auto_mixed_precision", "disable_meta_optimizer",
    }
)  # fmt: skip


def grappler_options(settings: list[str]) -> dict[str, bool]:
    """`OPTION=on|off` settings as set_experimental_options takes them."""
    options = {}
    for setting in settings:
        name, _, value = setting.partition("=")
        if name not in GRAPPLER_OPTIONS or value not in ("on", "off"):
            raise UserError(
                f"--grappler {setting}: expected OPTION=on|off with OPTION one of "
                + ", ".join(sorted(GRAPPLER_OPTIONS))
            )
        options[name] = value == "on"
    return options


def _built_from_code(spec: str) -> bool:
    from tfpgo.models import BUILTIN_MODELS

    return spec in BUILTIN_MODELS or spec.endswith(".py")


@dataclass(frozen=True)
class ModelSpec:
    """How to load the step again in a worker process (`load_model` arguments)."""

    model: str
    mode: str
    batch_size: int
    signature: str = "serving_default"  # a SavedModel's (tfpgo.models.user.SignatureChoice)
    inputs: tuple[str, ...] = ()


def worker_command(spec: ModelSpec, warmup: int) -> list[str]:
    command = [
        sys.executable, "-m", "tfpgo.proposer.worker", "--model", spec.model,
        "--mode", spec.mode, "--batch-size", str(spec.batch_size), "--warmup", str(warmup),
        "--signature", spec.signature,
    ]  # fmt: skip
    for text in spec.inputs:
        command += ["--input", text]
    return command


def worker_env() -> dict[str, str]:
    """This process's import path (Bazel runfiles included) for the worker."""
    return python_env(TF_CPP_MIN_LOG_LEVEL=os.environ.get("TF_CPP_MIN_LOG_LEVEL", "2"))


def profile_in_worker(
    spec: ModelSpec, flags: tuple[str, ...], logdir: Path, steps: int, warmup: int
) -> None:
    """Profiles the step with `flags` applied, in a worker process, into `logdir`."""
    command = worker_command(spec, warmup) + list(flags)
    command += ["--profile-dir", str(logdir), "--steps", str(steps)]
    done = subprocess.run(command, env=worker_env(), capture_output=True, text=True)
    if done.returncode != 0:
        tail = " / ".join(done.stderr.strip().splitlines()[-3:])
        raise UserError(f"optimize worker ({' '.join(flags)}) failed to profile: {tail}")


class WorkerArm:
    """One arm of an A/B run in a worker process; a block runner when called."""

    def __init__(self, spec: ModelSpec, warmup: int, flags: tuple[str, ...] = ()) -> None:
        command = worker_command(spec, warmup) + list(flags)
        self.flags = flags
        env = worker_env()
        # Closed in close(): the log lives as long as the worker.
        self._log = tempfile.TemporaryFile("w+")  # noqa: SIM115
        self._process = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            text=True,
            env=env,
        )
        # Both pipes were asked for above; the names keep their types non-optional.
        assert self._process.stdin is not None and self._process.stdout is not None
        self._stdin, self._stdout = self._process.stdin, self._process.stdout
        self._ready = False
        # Once ready: the first step's outputs, the same step again from the same
        # state (a nondeterministic step differs), and what was restored.
        self.first_outputs: list[float] = []
        self.again_outputs: list[float] = []
        self.restored = ""
        self.random_ops: tuple[str, ...] = ()

    def __call__(self, steps: int) -> tuple[int, ...]:
        self.wait_ready()
        self._stdin.write(f"{steps}\n")
        self._stdin.flush()
        return tuple(int(x) for x in json.loads(self._expect(None)))

    def wait_ready(self) -> None:
        """Waits until the worker has loaded the model and run its warmup; start
        both arms first, then wait, so they load side by side."""
        if not self._ready:
            first = json.loads(self._expect(None))
            self.first_outputs = [float(x) for x in first["first"]]
            self.again_outputs = [float(x) for x in first["again"]]
            self.restored = str(first["restored"])
            self.random_ops = tuple(str(op) for op in first["random_ops"])
            self._expect(READY)
            self._ready = True

    def close(self) -> None:
        if self._process.poll() is None:
            self._stdin.close()
            self._process.wait(timeout=60)
        self._log.close()

    def _expect(self, text: str | None) -> str:
        line = self._stdout.readline().strip()
        if not line or (text is not None and line != text):
            self._process.kill()
            self._process.wait()
            self._log.seek(0)
            tail = self._log.read().strip().splitlines()[-3:]
            raise UserError(
                f"optimize worker ({' '.join(self.flags) or 'baseline'}) failed: "
                + (" / ".join(tail) or f"exit status {self._process.returncode}")
            )
        return line


if __name__ == "__main__":
    from tfpgo.cli import run_main

    sys.exit(run_main(main, prog="tfpgo.proposer.worker"))
