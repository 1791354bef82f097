"""Mutation fuzzing of tfpgo's readers: inputs, mutators and the outcome check.

Every reader, given any bytes, must end in one of two ways: a valid result, or
one clean line of error (a UserError for the Python readers, one MLIR error
diagnostic and exit status 1 for tfpgo-opt). Anything else is a finding: another
exception type, a message of several lines, a crash or abort, a hang (a time
limit per input), or an output file left behind by a failed run (the
trace_reader CLI writes its outputs atomically).

Inputs are real seeds from tests/data (an XPlane, Chrome traces, op profiles),
mutated deterministically from one `random.Random(seed)`: byte flips,
truncations, insertions of random bytes, deletions and duplications of spans,
and, for JSON, splices of JSON tokens (brackets, separators, literals, extreme
numbers, escapes, lone surrogates, deep nesting) in place of a token of the
seed. Used by tests/python/test_reader_fuzz.py (a few hundred inputs per reader
in `bazel test //...`) and bench/bench_fuzz_readers.py (10,000 and more, by hand).
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import random
import re
import signal
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from tfpgo import cli, errors
from tfpgo.attribution.op_profile import OpProfile
from tfpgo.flow import trace_reader

DATA = Path(__file__).resolve().parent.parent / "data"
LIT_INPUTS = Path(__file__).resolve().parent.parent / "lit" / "Inputs"
TIME_LIMIT_S = 10  # per input; the seeds read in milliseconds

# Spliced in place of a JSON token of the seed.
JSON_TOKENS = (
    b"{",
    b"}",
    b"[",
    b"]",
    b",",
    b":",
    b'"',
    b"null",
    b"true",
    b"false",
    b"0",
    b"-1",
    b"-0",
    b"1.5",
    b"1e3",
    b"1E-3",
    b"1e309",
    b"-1e309",
    b"9223372036854775807",
    b"9223372036854775808",
    b"-9223372036854775809",
    b"123456789012345678901234567890",
    b"NaN",
    b"Infinity",
    b'""',
    b'"\\u0000"',
    b'"\\ud83d\\ude00"',
    b'"\\ud800"',
    b'"\\udc00x"',
    b'"\\uZZZZ"',
    b'"\\x"',
    b'"\xff\xfe"',
    b'"\xc3"',
    b"[" * 2000 + b"]" * 2000,
    b"[" * 100_000,
    b'{"a":' * 2000 + b"1" + b"}" * 2000,
    b"{}",
    b"[]",
)
_JSON_TOKEN = re.compile(
    rb'"(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?|true|false|null|[][{}:,]'
)


def mutate(data: bytes, rng: random.Random, is_json: bool) -> bytes:
    """One to three mutations of `data`."""
    for _ in range(rng.choice((1, 1, 1, 2, 3))):
        data = _mutate_once(data, rng, is_json)
    return data


def _mutate_once(data: bytes, rng: random.Random, is_json: bool) -> bytes:
    kinds = ["flip", "truncate", "insert", "delete", "duplicate", "byte"]
    if is_json:
        kinds += ["token", "token", "token"]
    kind = rng.choice(kinds)
    if not data:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(1, 8)))
    at = rng.randrange(len(data))
    if kind == "flip":
        return data[:at] + bytes([data[at] ^ (1 << rng.randrange(8))]) + data[at + 1 :]
    if kind == "byte":
        interesting = (0x00, 0x01, 0x7F, 0x80, 0xFF, 0x22, 0x5C, 0x0A)
        return data[:at] + bytes([rng.choice(interesting)]) + data[at + 1 :]
    if kind == "truncate":
        return data[:at]
    if kind == "insert":
        junk = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 16)))
        return data[:at] + junk + data[at:]
    span = rng.randrange(1, min(64, len(data) - at) + 1)
    if kind == "delete":
        return data[:at] + data[at + span :]
    if kind == "duplicate":
        return data[: at + span] + data[at : at + span] + data[at + span :]
    tokens = [m.span() for m in _JSON_TOKEN.finditer(data)]
    if not tokens:
        return data
    start, end = rng.choice(tokens)
    return data[:start] + rng.choice(JSON_TOKENS) + data[end:]


@dataclass(frozen=True)
class Finding:
    """An input that did not end in a valid result or one clean line of error."""

    reader: str
    index: int
    what: str
    data: bytes = field(repr=False)


@dataclass
class Tally:
    """Outcomes of one reader's run."""

    reader: str
    inputs: int = 0
    ok: int = 0
    errors: int = 0
    seconds: float = 0.0
    findings: list[Finding] = field(default_factory=list)

    def record(self, index: int, data: bytes, outcome: str | None) -> None:
        """`outcome`: "ok", "error", or the description of a finding."""
        self.inputs += 1
        if outcome == "ok":
            self.ok += 1
        elif outcome == "error":
            self.errors += 1
        else:
            self.findings.append(Finding(self.reader, index, str(outcome), data))


@dataclass(frozen=True)
class Reader:
    """A reader under test: its seeds and the name its inputs are written
    under (the readers go by content; the name only shows in error lines)."""

    name: str
    seeds: tuple[Path, ...]
    suffix: str


def seed_bytes(path: Path) -> bytes:
    """A seed's bytes; gzip seeds are mutated decompressed (mutating the
    compressed bytes would only exercise zlib)."""
    data = path.read_bytes()
    return gzip.decompress(data) if path.suffix == ".gz" else data


READERS = {
    "xplane": Reader(
        "xplane",
        (
            DATA / "trace_reader/mlp_infer.xplane.pb",
            DATA / "tf2_21/dense/trace.xplane.pb",
            DATA / "trace_reader/mlp_infer.xspace.json",
        ),
        ".xplane.pb",
    ),
    "chrome": Reader(
        "chrome",
        (DATA / "trace_reader/mlp_infer.trace.json.gz", DATA / "trace_reader/two_hosts_flows.json"),
        ".trace.json",
    ),
    "op_profile": Reader(
        "op_profile",
        (DATA / "tf2_21/dense/op_profile.json", LIT_INPUTS / "xla_op_profile.json"),
        ".op_profile.json",
    ),
}


def inputs(reader: Reader, count: int, seed: int) -> Iterator[bytes]:
    """`count` mutated inputs, the same for the same `seed`."""
    rng = random.Random(f"{reader.name}:{seed}")
    seeds = [seed_bytes(path) for path in reader.seeds]
    for _ in range(count):
        seed_data = rng.choice(seeds)
        yield mutate(seed_data, rng, is_json=seed_data.lstrip()[:1] in (b"{", b"["))


class _Timeout(Exception):
    pass


@contextlib.contextmanager
def time_limit(seconds: int) -> Iterator[None]:
    """Raises _Timeout in the main thread when the block runs too long."""

    def expire(_signum: int, _frame: object) -> None:
        raise _Timeout

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def _one_line(message: str) -> bool:
    return bool(message.strip()) and "\n" not in message.strip()


def check_trace_cli(path: Path, scratch: Path) -> str:
    """Runs the trace_reader CLI in-process on `path`: exit 0 with both
    documents written (and reading back), or exit 1 with one
    `trace_reader: error:` line and no file left in the output directory."""
    out = scratch / "out"
    out.mkdir(exist_ok=True)
    for leftover in out.iterdir():
        leftover.unlink()
    argv = ["--path-to-trace", str(path), "--quiet"]
    argv += ["--store-output", str(out / "dag.json"), "--op-profile", str(out / "op.json")]
    stderr = io.StringIO()
    try:
        with time_limit(TIME_LIMIT_S), contextlib.redirect_stderr(stderr):
            status = cli.run_main(trace_reader.main, argv, prog=trace_reader.PROG)
    except _Timeout:
        return f"hang: over {TIME_LIMIT_S} s"
    except Exception as error:
        return f"{type(error).__name__}: {error}"[:300]
    written = sorted(p.name for p in out.iterdir())
    if status == 0:
        if written != ["dag.json", "op.json"]:
            return f"exit 0 but wrote {written}"
        return _valid_outputs(out)
    message = stderr.getvalue()
    if status != 1 or not _one_line(message) or "error:" not in message:
        return f"exit {status} with {message!r}"[:300]
    if written:
        return f"failed and left {written}"
    return "error"


def _valid_outputs(out: Path) -> str:
    """A successful run's documents read back: the DAG as JSON, the op profile
    through its own reader."""
    try:
        json.loads((out / "dag.json").read_bytes())
        OpProfile.read(out / "op.json")
    except (ValueError, errors.UserError) as error:
        return f"exit 0 but an output does not read back: {error}"[:300]
    return "ok"


def check_op_profile_python(path: Path, _scratch: Path) -> str:
    """OpProfile.read: an OpProfile that serializes back, or one UserError line."""
    try:
        with time_limit(TIME_LIMIT_S):
            profile = OpProfile.read(path)
            json.dumps(profile.to_json())
    except errors.UserError as error:
        return "error" if _one_line(str(error)) else f"UserError of several lines: {error!r}"
    except _Timeout:
        return f"hang: over {TIME_LIMIT_S} s"
    except Exception as error:
        return f"{type(error).__name__}: {error}"[:300]
    return "ok"


PYTHON_CHECKS: dict[str, Callable[[Path, Path], str]] = {
    "xplane": check_trace_cli,
    "chrome": check_trace_cli,
    "op_profile": check_op_profile_python,
}


def fuzz_python(reader: Reader, count: int, seed: int) -> Tally:
    """Feeds `count` mutated inputs to the reader's Python check."""
    check = PYTHON_CHECKS[reader.name]
    tally = Tally(f"{reader.name} (Python)")
    with tempfile.TemporaryDirectory(prefix="tfpgo_fuzz_") as directory:
        scratch = Path(directory)
        path = scratch / f"input{reader.suffix}"
        for index, data in enumerate(inputs(reader, count, seed)):
            path.write_bytes(data)
            tally.record(index, data, check(path, scratch))
    return tally


EMPTY_MODULE = 'func.func @f() {\n  "tf.A"() : () -> () loc("a")\n  return\n}\n'


def fuzz_op_profile_cc(read_op_profiles: Path, count: int, seed: int, batch: int = 500) -> Tally:
    """The C++ reader in-process: `read_op_profiles` (tests/cc) reads a batch of
    files per process and prints one line per file, `ok <ops>` or
    `error <message>`; a crash or hang is pinned on the input it stopped at."""
    tally = Tally("op_profile (C++ reader)")
    reader = READERS["op_profile"]
    with tempfile.TemporaryDirectory(prefix="tfpgo_fuzz_cc_") as directory:
        scratch = Path(directory)
        all_inputs = list(inputs(reader, count, seed))
        for start in range(0, count, batch):
            chunk = all_inputs[start : start + batch]
            paths = []
            for offset, data in enumerate(chunk):
                paths.append(scratch / f"{offset}.json")
                paths[-1].write_bytes(data)
            _run_batch(read_op_profiles, paths, chunk, start, tally)
    return tally


def _run_batch(tool: Path, paths: list[Path], chunk: list[bytes], start: int, tally: Tally) -> None:
    while paths:
        try:
            done = subprocess.run(
                [str(tool), *map(str, paths)],
                capture_output=True,
                timeout=TIME_LIMIT_S + len(paths) * 0.05,
            )
            lines, status, hung = done.stdout.decode().splitlines(), done.returncode, False
        except subprocess.TimeoutExpired as expired:
            lines, status, hung = (expired.stdout or b"").decode().splitlines(), None, True
        for offset, line in enumerate(lines):
            tally.record(start + offset, chunk[offset], _cc_outcome(line))
        if status == 0 and len(lines) == len(paths):
            return
        stopped = len(lines)
        if stopped < len(paths):
            what = "hang" if hung else f"exit status {status} (crash or abort)"
            tally.record(start + stopped, chunk[stopped], what)
        paths, chunk, start = paths[stopped + 1 :], chunk[stopped + 1 :], start + stopped + 1


def _cc_outcome(line: str) -> str:
    if line.startswith("ok "):
        return "ok"
    if line.startswith("error ") and line[6:].strip():
        return "error"
    return f"unexpected line {line!r}"[:300]


def check_op_profile_tfpgo_opt(tfpgo_opt: Path, profile: Path, module: Path) -> str:
    """tfpgo-opt end to end: exit 0 with the output written, or exit 1 with one
    error diagnostic line naming the profile and no output file."""
    output = module.with_name("out.mlir")
    output.unlink(missing_ok=True)
    command = [
        str(tfpgo_opt),
        "--allow-unregistered-dialect",
        f"--tf-annotate-operations-profile=path-to-profile={profile}",
        str(module),
        "-o",
        str(output),
    ]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=TIME_LIMIT_S)
    except subprocess.TimeoutExpired:
        return f"hang: over {TIME_LIMIT_S} s"
    if done.returncode == 0:
        return "ok" if output.is_file() else "exit 0 without the output"
    message = done.stderr
    if done.returncode != 1 or not _one_line(message):
        return f"exit {done.returncode} with {message[-300:]!r}"
    if "error:" not in message or str(profile) not in message:
        return f"error line does not name the profile: {message!r}"
    if output.exists():
        return "failed and left its output file"
    return "error"


def fuzz_tfpgo_opt(tfpgo_opt: Path, count: int, seed: int) -> Tally:
    """`count` mutated op profiles through tfpgo-opt, one process each."""
    tally = Tally("op_profile (tfpgo-opt)")
    with tempfile.TemporaryDirectory(prefix="tfpgo_fuzz_opt_") as directory:
        scratch = Path(directory)
        module = scratch / "m.mlir"
        module.write_text(EMPTY_MODULE)
        profile = scratch / "op_profile.json"
        for index, data in enumerate(inputs(READERS["op_profile"], count, seed)):
            profile.write_bytes(data)
            tally.record(index, data, check_op_profile_tfpgo_opt(tfpgo_opt, profile, module))
    return tally
