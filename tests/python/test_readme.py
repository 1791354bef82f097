"""The README's commands run as written, its links lead somewhere, and CI runs its tests.

Every ```sh block of README.md and of the topic docs that took its reference material
(`TOPIC_DOCS`) is split into commands, and each must be one this test can check:

* `tools/bootstrap.sh`: an executable file;
* `bazel run //pkg:name [-- args]`: `name` is a rule of pkg/BUILD. A Python tool is
  started as `bazel run` starts it (its main file run as `__main__`): a `--help` runs
  for real, other arguments go through the tool's own parser and it stops there;
  tfpgo-opt's flags and pass options must be ones its `--help` lists;
* `bazel test|build PATTERNS`: each names a rule (or is `//...`);
* `python -m MODULE args`: the args parse with MODULE's own parser;
* `pip install bazel-bin/NAME.whl[EXTRA]`: NAME.whl is what a rule of the top BUILD
  makes (//:wheel), each EXTRA one the wheel declares (tfpgo.flow.distribution); that
  the wheel installs and runs is test_wheel's.

The quick start's `bazel run //:pgo` is run for real by test_flow (its
`test_readme_main_command_runs_the_default_model`); here it is checked to be that
same command. .ci/run must run exactly the README's test command.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import os
import re
import runpy
import shlex
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any
from unittest import mock

import pytest

import tfpgo
from tfpgo import toolpaths
from tfpgo.flow import distribution, pgo

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
TOPIC_DOCS = tuple(
    ROOT / "docs" / name
    for name in (
        "guide.md", "lowering.md", "tuning.md", "optimize.md", "runtime.md", "development.md"
    )
)  # fmt: skip
QUICK_START = "tools/bootstrap.sh && bazel run //:pgo"
TEST_COMMAND = "tools/bootstrap.sh && bazel test //..."
README_MAX_LINES = 350


# ----------------------------------------------------------------- reading markdown


@dataclass(frozen=True)
class Command:
    """One command of a ```sh block, split as a shell splits it."""

    doc: Path
    line: int
    argv: tuple[str, ...]

    def __str__(self) -> str:
        return f"{self.doc.relative_to(ROOT)}:{self.line}: {shlex.join(self.argv)}"


def sh_blocks(doc: Path) -> list[tuple[int, str]]:
    """(first line number, text) of every ```sh block of `doc`."""
    text = doc.read_text()
    return [
        (text.count("\n", 0, match.start(1)) + 1, match.group(1))
        for match in re.finditer(r"^```sh\n(.*?)^```", text, re.M | re.S)
    ]


def commands(doc: Path) -> list[Command]:
    """The commands of `doc`'s ```sh blocks: continuation lines joined, comments
    dropped, `a && b` split into `a` and `b`."""
    found = []
    for first, text in sh_blocks(doc):
        pending, start = "", first
        for number, line in enumerate(text.splitlines(), first):
            start = start if pending else number
            if line.endswith("\\"):
                pending += line[:-1] + " "
                continue
            argv = shlex.split(pending + line, comments=True)
            pending = ""
            while argv:
                part = argv[: argv.index("&&")] if "&&" in argv else argv
                found.append(Command(doc, start, tuple(part)))
                argv = argv[len(part) + 1 :]
    return found


def without_code(text: str) -> str:
    """`text` without fenced blocks and code spans (their brackets are no links)."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)
    return re.sub(r"`[^`\n]*`", "code", text)


def github_anchor(heading: str) -> str:
    """GitHub's anchor of a heading: its text lowercased, punctuation dropped (hyphens
    and underscores kept), spaces to '-'."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(doc: Path) -> set[str]:
    """Every heading anchor of `doc`, a repeated heading numbered as GitHub numbers it."""
    seen: dict[str, int] = {}
    found = set()
    text = re.sub(r"^```.*?^```", "", doc.read_text(), flags=re.M | re.S)
    for heading in re.findall(r"^#{1,6} +(.+?) *$", text, re.M):
        anchor = github_anchor(heading)
        found.add(f"{anchor}-{seen[anchor]}" if anchor in seen else anchor)
        seen[anchor] = seen.get(anchor, 0) + 1
    return found


def relative_links(doc: Path) -> list[str]:
    targets = re.findall(r"\]\(([^)\s]+)\)", without_code(doc.read_text()))
    return [target for target in targets if not re.match(r"[a-z]+:", target)]


def link_problem(doc: Path, target: str) -> str | None:
    """Why `target`, a relative link in `doc`, leads nowhere (None: it leads somewhere)."""
    path, _, anchor = target.partition("#")
    file = (doc.parent / path).resolve() if path else doc
    if not file.exists():
        return f"{target}: no such file"
    if anchor and file.suffix != ".md":
        return f"{target}: an anchor into a file that is not markdown"
    if anchor and anchor not in anchors(file):
        return f"{target}: no heading of {file.relative_to(ROOT)} has the anchor #{anchor}"
    return None


# ----------------------------------------------------------------- the build's targets


class _BuildScope(dict[str, Any]):
    """The names a BUILD file uses: each is a function recording the rule it declares."""

    def __init__(self) -> None:
        super().__init__()
        self.rules: dict[str, tuple[str, dict[str, Any]]] = {}

    def __missing__(self, kind: str) -> Callable[..., list[str]]:
        def declare(*_args: Any, **kwargs: Any) -> list[str]:
            if "name" in kwargs:
                self.rules[kwargs["name"]] = (kind, kwargs)
            return []

        return declare


@cache
def rules(package: str) -> dict[str, tuple[str, dict[str, Any]]]:
    """name -> (kind, attributes) of every rule `package`'s BUILD file declares."""
    build = ROOT / package / "BUILD"
    if not build.is_file():
        return {}
    scope = _BuildScope()
    exec(compile(build.read_text(), str(build), "exec"), {"__builtins__": {}}, scope)
    return scope.rules


def split_label(label: str) -> tuple[str, str]:
    match = re.fullmatch(r"//([\w/.-]*):([\w.+-]+)", label)
    assert match, f"{label}: not a //package:name label"
    return match.group(1), match.group(2)


def main_file(label: str) -> Path | None:
    """The Python file a binary rule runs (None: the rule runs no Python file)."""
    package, name = split_label(label)
    kind, attributes = rules(package)[name]
    if kind == "tfpgo_bench":
        return ROOT / package / f"{name}.py"
    main = attributes.get("main")
    if not main:
        return None
    if main.startswith("//"):
        main_package, main_name = split_label(main)
        return ROOT / main_package / main_name
    return ROOT / package / main


# ----------------------------------------------------------------- the tools' parsers


class Parsed(Exception):
    """A tool's parser accepted its arguments; the tool stopped before any work."""

    def __init__(self, namespace: argparse.Namespace) -> None:
        super().__init__("parsed")
        self.namespace = namespace


@contextlib.contextmanager
def stop_after_parsing() -> Iterator[None]:
    """Every argparse parser raises Parsed with what it parsed, instead of returning it."""
    original = argparse.ArgumentParser.parse_args

    def parse_args(self: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> Any:
        raise Parsed(original(self, *args, **kwargs))

    with mock.patch.object(argparse.ArgumentParser, "parse_args", parse_args):
        yield


def run_as_main(
    start: Callable[[], object], argv: list[str], what: str, capsys: Any
) -> argparse.Namespace | None:
    """Runs a tool's entry point with `argv` as `bazel run` or `python -m` would: a
    `--help` for real (exit status 0 and a usage text), other arguments only through
    the tool's parser (what it parsed is returned; a parser's error fails the test)."""
    with contextlib.ExitStack() as stack:
        stack.enter_context(mock.patch.object(sys, "argv", [what, *argv]))
        if argv != ["--help"]:
            stack.enter_context(stop_after_parsing())
        try:
            start()
        except Parsed as parsed:
            return parsed.namespace
        except SystemExit as exit:
            shown = capsys.readouterr()
            if argv == ["--help"] and exit.code in (0, None):
                assert "usage:" in shown.out, f"{what}: --help printed no usage"
                return None
            pytest.fail(f"{what}: exit status {exit.code}: {shown.err.strip()}")
    pytest.fail(f"{what}: ended without parsing its arguments")


@cache
def tfpgo_opt_options() -> dict[str, set[str]]:
    """tfpgo-opt's options as its --help lists them: name -> the options nested under
    it (a pass's or a pipeline's own)."""
    shown = subprocess.run(
        [str(toolpaths.tfpgo_opt()), "--help"], capture_output=True, text=True, check=True
    ).stdout
    options: dict[str, set[str]] = {}
    stack: list[tuple[int, str]] = []
    for line in shown.splitlines():
        indent = len(line) - len(line.lstrip())
        while stack and stack[-1][0] >= indent:
            stack.pop()  # a line as shallow (an option or a heading) ends the nesting
        if not (match := re.match(r"--([\w.-]+)", line.lstrip())):
            continue
        if stack:
            options[stack[-1][1]].add(match.group(1))
        options.setdefault(match.group(1), set())
        stack.append((indent, match.group(1)))
    return options


def check_tfpgo_opt(args: list[str], what: str) -> None:
    """Each `--flag` is one tfpgo-opt lists, and each `key[=value]` of a pass's quoted
    options one that pass lists."""
    known = tfpgo_opt_options()
    for arg in args:
        if not arg.startswith("--"):
            continue  # the input file
        name, _, value = arg[2:].partition("=")
        assert name in known, f"{what}: tfpgo-opt has no option --{name}"
        for option in value.split() if known[name] else ():
            key = option.partition("=")[0]
            assert key in known[name], f"{what}: --{name} has no option {key}"


# ----------------------------------------------------------------- one check per command


def check_bazel_run(command: Command, capsys: Any) -> None:
    label, *rest = command.argv[2:]
    package, name = split_label(label)
    assert name in rules(package), f"{command}: no rule {name} in {package or '.'}/BUILD"
    assert rest[:1] in ([], ["--"]), f"{command}: the tool's arguments follow `--`"
    args = rest[1:]
    if name == "tfpgo-opt":
        check_tfpgo_opt(args, str(command))
        return
    main = main_file(label)
    if main is None:  # a native binary: it exists; arguments would need a check of their own
        assert not args, f"{command}: test_readme has no check for {label}'s arguments"
        return
    namespace = run_as_main(
        lambda: runpy.run_path(str(main), run_name="__main__"), args, str(command), capsys
    )
    if label == "//:pgo" and namespace is not None:
        pgo.options_from_args(namespace)  # what the flow checks before any stage


def check_bazel_targets(command: Command) -> None:
    patterns = command.argv[2:]
    assert patterns, f"{command}: names no target"
    for pattern in patterns:
        if pattern.endswith("/..."):
            assert (ROOT / pattern[2:-4]).is_dir(), f"{command}: no package {pattern}"
            continue
        package, name = split_label(pattern)
        assert name in rules(package), f"{command}: no rule {name} in {package or '.'}/BUILD"


def check_python_module(command: Command, capsys: Any) -> None:
    module = command.argv[2]
    run_as_main(
        lambda: runpy.run_module(module, run_name="__main__", alter_sys=True),
        list(command.argv[3:]),
        str(command),
        capsys,
    )


def wheel_outputs() -> list[str]:
    """The files the top BUILD's genrules make (the wheel)."""
    return [out for kind, rule in rules("").values() if kind == "genrule" for out in rule["outs"]]


def check_pip_install(command: Command) -> None:
    """`pip install bazel-bin/NAME.whl[EXTRA,...]`: a wheel this workspace builds,
    extras it declares."""
    assert len(command.argv) == 3, f"{command}: install one wheel"
    match = re.fullmatch(r"bazel-bin/([\w.+-]+\.whl)(?:\[([\w,]+)\])?", command.argv[2])
    assert match, f"{command}: not bazel-bin/NAME.whl[EXTRAS]"
    assert match[1] in wheel_outputs(), f"{command}: no rule of BUILD makes {match[1]}"
    unknown = set((match[2] or "").split(",")) - {""} - set(distribution.EXTRAS)
    assert not unknown, f"{command}: the wheel declares no extra {', '.join(sorted(unknown))}"


def check_command(command: Command, capsys: Any) -> None:
    argv = command.argv
    if argv == ("tools/bootstrap.sh",):
        assert os.access(ROOT / argv[0], os.X_OK), f"{command}: not an executable file"
    elif argv[:2] == ("bazel", "run"):
        check_bazel_run(command, capsys)
    elif argv[:2] in (("bazel", "test"), ("bazel", "build")):
        check_bazel_targets(command)
    elif argv[0] in ("python", "python3") and argv[1:2] == ("-m",):
        check_python_module(command, capsys)
    elif argv[:2] == ("pip", "install"):
        check_pip_install(command)
    else:
        pytest.fail(f"{command}: test_readme cannot check this command; teach it how")


# ----------------------------------------------------------------- the tests

DOCUMENTED = [command for doc in (README, *TOPIC_DOCS) for command in commands(doc)]


@pytest.mark.parametrize("command", DOCUMENTED, ids=str)
def test_every_documented_command_runs_as_written(command, capsys):
    check_command(command, capsys)


def test_the_readme_shows_the_install_the_flow_and_the_tests_first():
    (wheel,) = wheel_outputs()
    install = f"tools/bootstrap.sh && bazel build //:wheel && pip install 'bazel-bin/{wheel}[flow]'"
    blocks = tuple(text.strip() for _, text in sh_blocks(README)[:3])
    assert blocks == (install, QUICK_START, TEST_COMMAND)


def test_ci_runs_exactly_the_readme_test_command():
    lines = (ROOT / ".ci" / "run").read_text().splitlines()
    steps = [line for line in lines if line.strip() and not line.startswith(("#", "set ", "cd "))]
    assert steps == [TEST_COMMAND]


def test_the_quick_start_is_the_run_test_flow_makes():
    """test_flow runs the //:pgo binary with no arguments and checks ./pgo_out: the
    quick start must be that command, and ./pgo_out of the default model its defaults."""
    pgo_args = [
        command.argv[3:]
        for command in commands(README)
        if command.argv[:3] == ("bazel", "run", "//:pgo")
    ]
    assert pgo_args[0] == ()
    tree = ast.parse((ROOT / "tests" / "python" / "test_flow.py").read_text())
    (runner,) = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef)
        and node.name == "test_readme_main_command_runs_the_default_model"
    ]
    (call,) = [
        node
        for node in ast.walk(runner)
        if isinstance(node, ast.Call) and ast.unparse(node.func) == "subprocess.run"
    ]
    assert ast.unparse(call.args[0]) == "[str(binary)]"
    defaults = pgo.build_parser().parse_args([])
    assert (defaults.model, defaults.output_dir) == ("mlp", "pgo_out")


def test_the_stage_table_follows_the_stage_order():
    section = README.read_text().split("## Where each stage lives", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `(\w+)/` \|", section, re.M)
    packages = [name for name in rows if (ROOT / "python" / "tfpgo" / name).is_dir()]
    assert tuple(packages) == tfpgo.STAGES


@pytest.mark.parametrize(
    "doc", [README, *sorted((ROOT / "docs").glob("*.md"))], ids=lambda doc: doc.name
)
def test_every_relative_link_leads_somewhere(doc):
    problems = [problem for link in relative_links(doc) if (problem := link_problem(doc, link))]
    assert not problems, "\n".join(problems)


def test_the_readme_is_a_guide_not_a_notebook():
    assert len(README.read_text().splitlines()) <= README_MAX_LINES
