"""`bazel run //tools:tensorboard -- --logdir pgo_runs`: TensorBoard with its default
plugins (xprof's Profile tab among them) and tfpgo's tab.

The plugin lives in tfpgo.tensorboard.plugin; this file only starts TensorBoard.
Its flags are checked before TensorBoard starts, and a bad one is one line, as for
every tfpgo tool: the flag TensorBoard refuses (no `--logdir`, a value of the wrong
type), and what TensorBoard would only find out when serving (a port out of range
or in use, a --host not of this machine, a --logdir that is no directory).
"""

from __future__ import annotations

import argparse
import shlex
import sys
from typing import Any

from tfpgo import cli
from tfpgo.errors import UserError

PROG = "tensorboard"


def _tensorboard() -> Any:
    """A TensorBoard with the default plugins and tfpgo's tab, not yet configured."""
    try:
        from tensorboard import default, program
    except ImportError:
        raise UserError(
            "TensorBoard is not installed (pip install tensorboard; tools/bootstrap.sh installs it)"
        ) from None
    from tfpgo.tensorboard.plugin import TfpgoPlugin

    return program.TensorBoard(plugins=[*default.get_plugins(), TfpgoPlugin])


def build_parser(board: Any = None) -> argparse.ArgumentParser:
    """TensorBoard's serving flags, as `TensorBoard.configure` defines them (absl's
    parser, each plugin's flags), with the one-line errors of tfpgo.cli."""
    from absl.flags import argparse_flags

    class Parser(cli.ArgumentParser, argparse_flags.ArgumentParser):
        pass

    parser = Parser(prog=PROG, description=__doc__.split("\n\n")[0])
    for loader in (board or _tensorboard()).plugin_loaders:
        loader.define_flags(parser)
    return parser


def check_flags(flags: argparse.Namespace) -> None:
    """What TensorBoard would refuse only when serving, or not at all: one line now."""
    if flags.host and not flags.bind_all:
        try:
            cli.check_port_free(0, "--host", flags.host)
        except UserError:
            raise UserError(
                f"--host {flags.host}: not an address of this machine; name one "
                "(127.0.0.1, localhost) or pass --bind_all"
            ) from None
    port = flags.port  # None: "default", 6006 or the next free one
    if port is not None:
        if not 0 <= port <= 65535:
            raise UserError(f"--port {port}: must be a TCP port from 0 to 65535 (0: any)")
        if port:
            host = "" if flags.bind_all else flags.host or "localhost"
            cli.check_port_free(port, "--port", host)
    if flags.logdir and "://" not in flags.logdir:
        logdir = cli.user_path(flags.logdir)
        if not logdir.is_dir():
            problem = "is not a directory" if logdir.exists() else "does not exist"
            raise UserError(
                f"--logdir {flags.logdir}: {problem}; name the directory holding pgo outputs"
            )
    if flags.event_file and not cli.user_path(flags.event_file).is_file():
        raise UserError(f"--event_file {flags.event_file}: no such file; name an event file")
    try:
        shlex.split(flags.extra_data_server_flags)
    except ValueError as error:
        raise UserError(
            f"--extra_data_server_flags {flags.extra_data_server_flags}: {error}; quote "
            "the flags as a shell would"
        ) from None


def serve(board: Any) -> int:
    """Runs TensorBoard until Ctrl-C."""
    return board.main()


def main(argv: list[str]) -> int:
    board = _tensorboard()
    from absl import flags as absl_flags
    from tensorboard.plugins.base_plugin import FlagsError

    parser = build_parser(board)
    try:
        flags = parser.parse_args(argv[1:] if argv[:1] == ["serve"] else argv)
    except absl_flags.Error as error:  # an absl flag's value (--verbosity=loud)
        parser.error(str(error))
    check_flags(flags)
    paths = {
        name: str(cli.user_path(getattr(flags, name)))
        for name in ("logdir", "event_file")
        if getattr(flags, name) and "://" not in getattr(flags, name)
    }
    try:
        board.configure(argv=[PROG, *argv], **paths)
    except FlagsError as error:
        parser.error(" ".join(str(error).split()) or type(error).__name__)
    return serve(board)


if __name__ == "__main__":
    sys.exit(cli.run_main(main, prog=PROG))
