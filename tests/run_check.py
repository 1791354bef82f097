"""Runs one source check (ruff, mypy or clang-format) as a Bazel test.

    run_check.py ruff <config> <file>...          ruff check + ruff format --check
    run_check.py mypy <config> <file>...          mypy over the files
    run_check.py clang-format <binary> <style> <file>...

The files are the test's data (the BUILD file lists them), so the test reruns
whenever one of them changes. The tools are the pinned ones: ruff and mypy from
the interpreter bound by @local_python (requirements.txt), clang-format from
Debian's clang-format-22 (tools/bootstrap.sh). On a failure the log names the
command that fixes or reproduces it from the repository root.
"""

from __future__ import annotations

import os
import subprocess
import sys

FIXES = {
    "ruff": (
        "python3 -m ruff check --fix . && python3 -m ruff format .\n"
        "(what --fix cannot change is listed above; fix it by hand)"
    ),
    "mypy": "python3 -m mypy  (reads mypy.ini: the files and the settings)",
    "clang-format": (
        "/usr/lib/llvm-22/bin/clang-format -i $(git ls-files 'tensorflow_patch/*.cc' "
        "'tensorflow_patch/*.h' 'tools/*.cc' 'tools/*.h')"
    ),
}


def _run(command: list[str]) -> bool:
    print("$", " ".join(command[:6]), "..." if len(command) > 6 else "", flush=True)
    return subprocess.run(command, check=False).returncode == 0


def _ruff(config: str, files: list[str]) -> bool:
    ruff = [sys.executable, "-m", "ruff"]
    checked = _run([*ruff, "check", "--no-cache", "--config", config, *files])
    formatted = _run([*ruff, "format", "--check", "--no-cache", "--config", config, *files])
    return checked and formatted


def _mypy(config: str, files: list[str]) -> bool:
    cache = os.path.join(os.environ.get("TEST_TMPDIR", "/tmp"), "mypy_cache")
    return _run(
        [sys.executable, "-m", "mypy", "--config-file", config, "--cache-dir", cache, *files]
    )


def _clang_format(binary: str, style: str, files: list[str]) -> bool:
    return _run([binary, f"--style=file:{style}", "--dry-run", "-Werror", *files])


def main(argv: list[str]) -> int:
    tool, *rest = argv
    if tool == "ruff":
        ok = _ruff(rest[0], rest[1:])
    elif tool == "mypy":
        ok = _mypy(rest[0], rest[1:])
    elif tool == "clang-format":
        ok = _clang_format(rest[0], rest[1], rest[2:])
    else:
        print(f"run_check.py: unknown tool {tool!r}", file=sys.stderr)
        return 2
    if ok:
        return 0
    print(f"\n{tool} found problems (above). From the repository root, run:\n  {FIXES[tool]}")
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
