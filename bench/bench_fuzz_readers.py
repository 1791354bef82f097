"""Fuzzes every trace and profile reader with mutated real inputs (run by hand).

Readers: the XPlane reader (`.xplane.pb` and XSpace JSON) and the Chrome JSON
reader, both through the trace_reader CLI in-process (exit 0 with both
documents written, or one `trace_reader: error:` line and no file left); the
Python op profile reader (`OpProfile.read`); the C++ op profile reader in
process (tests/cc/read_op_profiles, which calls the `ReadOpProfile` the annotate
pass calls) and end to end through tfpgo-opt, one process per input (exit 1
with one error diagnostic naming the file). Inputs come from
tests/python/reader_fuzz.py: real seeds from tests/data, deterministically
mutated (byte flips, truncations, insertions, JSON token splices).

With `--atheris`, the Python readers run under atheris instead (libFuzzer's
coverage-guided mutations from the same seeds, with the JSON tokens as its
dictionary), one child process per reader, `--inputs` runs each.

Every finding (an input that ends in neither a result nor one clean error line)
is written to --findings DIR; the exit status is 1 if there is one.

    bazel run //bench:bench_fuzz_readers -- [--inputs 10000] [--tfpgo-opt-inputs 2000]
        [--seed 1] [--only xplane,chrome,op_profile,cc,tfpgo-opt] [--atheris]
        [--findings DIR] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import harness
import reader_fuzz


def read_op_profiles() -> Path:
    """The in-process driver of the C++ reader, from the runfiles or bazel-bin."""
    here = Path(__file__).resolve().parent
    for candidate in (
        Path(os.environ.get("RUNFILES_DIR", here.parent)) / "tfpgo/tests/cc/read_op_profiles",
        here.parent / "tests/cc/read_op_profiles",
        here.parent / "bazel-bin/tests/cc/read_op_profiles",
    ):
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    raise harness.BenchError("read_op_profiles not found: bazel build //tests/cc:read_op_profiles")


def timed(run: Callable[..., reader_fuzz.Tally], *args: object) -> reader_fuzz.Tally:
    start = time.perf_counter()
    tally = run(*args)
    tally.seconds = time.perf_counter() - start
    print(f"  {tally.reader}: {tally.inputs} inputs in {tally.seconds:.1f} s", flush=True)
    return tally


# --- atheris ---------------------------------------------------------------


def atheris_child(reader_name: str, libfuzzer_args: list[str], counts: Path) -> None:
    """Runs in a child process: atheris.Fuzz never returns."""
    import atheris

    # Imported again under instrumentation, so libFuzzer sees tfpgo's coverage.
    for module in [m for m in sys.modules if m.split(".")[0] in ("tfpgo", "reader_fuzz")]:
        del sys.modules[module]
    with atheris.instrument_imports(include=["tfpgo"]):
        import reader_fuzz as instrumented
    reader = instrumented.READERS[reader_name]
    check = instrumented.PYTHON_CHECKS[reader_name]
    scratch = Path(tempfile.mkdtemp(prefix="tfpgo_atheris_"))
    path = scratch / f"input{reader.suffix}"
    tally = {"inputs": 0, "ok": 0, "errors": 0}

    def one_input(data: bytes) -> None:
        path.write_bytes(data)
        outcome = check(path, scratch)
        tally["inputs"] += 1
        if outcome not in ("ok", "error"):
            counts.write_text(json.dumps({**tally, "finding": outcome}))
            raise AssertionError(f"{reader_name}: {outcome}")
        tally["ok" if outcome == "ok" else "errors"] += 1
        if tally["inputs"] % 100 == 0:
            counts.write_text(json.dumps(tally))

    atheris.Setup([sys.argv[0], *libfuzzer_args], one_input)
    atheris.Fuzz()


def dict_entry(token: bytes) -> str:
    """A libFuzzer dictionary value: printable ASCII as is, other bytes, quotes
    and backslashes as \\xHH."""
    return "".join(
        chr(b) if 0x20 <= b < 0x7F and b not in (0x22, 0x5C) else f"\\x{b:02X}" for b in token
    )


def fuzz_atheris(
    reader: reader_fuzz.Reader, runs: int, seed: int, findings: Path
) -> reader_fuzz.Tally:
    tally = reader_fuzz.Tally(f"{reader.name} (Python, atheris)")
    with tempfile.TemporaryDirectory(prefix="tfpgo_atheris_corpus_") as directory:
        corpus = Path(directory) / "corpus"
        corpus.mkdir()
        for index, path in enumerate(reader.seeds):
            (corpus / f"seed{index}").write_bytes(reader_fuzz.seed_bytes(path))
        dictionary = Path(directory) / "json.dict"
        dictionary.write_text(
            "".join(f'"{dict_entry(t)}"\n' for t in reader_fuzz.JSON_TOKENS if len(t) < 64)
        )
        counts = Path(directory) / "counts.json"
        findings.mkdir(parents=True, exist_ok=True)
        command = [
            sys.executable,
            __file__,
            "--atheris-child",
            reader.name,
            "--counts",
            str(counts),
            "--",
            str(corpus),
            f"-runs={runs}",
            f"-seed={seed}",
            f"-timeout={reader_fuzz.TIME_LIMIT_S}",
            "-rss_limit_mb=4096",
            "-max_len=200000",
            f"-dict={dictionary}",
            f"-artifact_prefix={findings}/{reader.name}-",
        ]
        start = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True)
        tally.seconds = time.perf_counter() - start
        counted = json.loads(counts.read_text()) if counts.exists() else {}
        tally.inputs, tally.ok, tally.errors = (
            counted.get(k, 0) for k in ("inputs", "ok", "errors")
        )
        if done.returncode != 0 or "finding" in counted:
            what = counted.get("finding") or done.stderr.strip().splitlines()[-1:]
            tally.findings.append(reader_fuzz.Finding(reader.name, tally.inputs, str(what), b""))
        last = [line for line in done.stderr.splitlines() if line.startswith("Done ")]
        print(f"  {tally.reader}: {last[-1] if last else done.stderr[-300:]}", flush=True)
    return tally


# Readers by name for --only: the Python readers, the C++ one in process, tfpgo-opt.
PARTS = (*reader_fuzz.READERS, "cc", "tfpgo-opt")


# --- report ------------------------------------------------------------------


def save_findings(tallies: list[reader_fuzz.Tally], directory: Path) -> int:
    found = 0
    for tally in tallies:
        for finding in tally.findings:
            found += 1
            if finding.data:
                directory.mkdir(parents=True, exist_ok=True)
                name = f"{finding.reader}-{finding.index}".replace(" ", "_").replace("/", "_")
                (directory / name).write_bytes(finding.data)
            print(f"FINDING {tally.reader} input {finding.index}: {finding.what}")
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inputs", type=int, default=10_000, help="inputs per reader")
    parser.add_argument(
        "--tfpgo-opt-inputs",
        type=int,
        default=2_000,
        help="op profiles through tfpgo-opt, one process each (about 0.1 s apiece)",
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--only",
        default=",".join(PARTS),
        help=f"comma-separated subset of {','.join(PARTS)} (default: all)",
    )
    parser.add_argument("--atheris", action="store_true", help="Python readers under atheris")
    parser.add_argument(
        "--findings", type=Path, default=Path(tempfile.gettempdir()) / "tfpgo_fuzz_findings"
    )
    parser.add_argument("--json", type=Path, help="also write the numbers here")
    parser.add_argument("--atheris-child", help=argparse.SUPPRESS)
    parser.add_argument("--counts", type=Path, help=argparse.SUPPRESS)
    args, rest = parser.parse_known_args()
    if args.atheris_child:
        atheris_child(args.atheris_child, [a for a in rest if a != "--"], args.counts)
        return 0
    print(f"seed {args.seed}; load average {harness.load_avg_1m()}", flush=True)
    only = set(args.only.split(","))
    if only - set(PARTS):
        parser.error(f"--only: unknown {','.join(sorted(only - set(PARTS)))}")
    tallies = []
    for name, reader in reader_fuzz.READERS.items():
        if name not in only:
            continue
        if args.atheris:
            tallies.append(fuzz_atheris(reader, args.inputs, args.seed, args.findings))
        else:
            tallies.append(timed(reader_fuzz.fuzz_python, reader, args.inputs, args.seed))
    if "cc" in only:
        tallies.append(
            timed(reader_fuzz.fuzz_op_profile_cc, read_op_profiles(), args.inputs, args.seed)
        )
    if "tfpgo-opt" in only and args.tfpgo_opt_inputs:
        tallies.append(
            timed(reader_fuzz.fuzz_tfpgo_opt, harness.tfpgo_opt(), args.tfpgo_opt_inputs, args.seed)
        )
    found = save_findings(tallies, args.findings)
    rows = [
        [
            t.reader,
            t.inputs,
            t.ok,
            t.errors,
            len(t.findings),
            f"{t.seconds:.1f}",
            f"{t.inputs / t.seconds:.0f}" if t.seconds else "—",
        ]
        for t in tallies
    ]
    print(
        harness.markdown_table(
            ["reader", "inputs", "valid result", "clean error", "findings", "s", "inputs/s"], rows
        )
    )
    print(f"load average {harness.load_avg_1m()}")
    if args.json:
        args.json.write_text(
            json.dumps([{**vars(t), "findings": len(t.findings)} for t in tallies], indent=1)
        )
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
