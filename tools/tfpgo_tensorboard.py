"""`bazel run //tools:tensorboard -- --logdir pgo_runs`: TensorBoard with its default
plugins (xprof's Profile tab among them) and tfpgo's tab.

The plugin lives in tfpgo.tensorboard.plugin; this file only starts TensorBoard.
A flag TensorBoard refuses (no `--logdir`, a bad port) is one line, as for every
tfpgo tool.
"""

import sys


def main() -> int:
    try:
        from tensorboard import default, program
        from tensorboard.plugins.base_plugin import FlagsError
    except ImportError:
        print(
            "tensorboard: error: TensorBoard is not installed (pip install tensorboard; "
            "tools/bootstrap.sh installs it)",
            file=sys.stderr,
        )
        return 1
    from tfpgo.tensorboard.plugin import TfpgoPlugin

    board = program.TensorBoard(plugins=[*default.get_plugins(), TfpgoPlugin])
    try:
        board.configure(argv=[sys.argv[0], *sys.argv[1:]])
        return board.main()
    except FlagsError as error:
        message = " ".join(str(error).split()) or type(error).__name__
        print(f"tensorboard: error: {message}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
