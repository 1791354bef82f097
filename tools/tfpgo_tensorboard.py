"""`bazel run //tools:tensorboard -- --logdir pgo_runs`: TensorBoard with its default
plugins (xprof's Profile tab among them) and tfpgo's tab.

The plugin lives in tfpgo.tensorboard.plugin; this file only starts TensorBoard.
"""

import sys

from tensorboard import default, program

from tfpgo.tensorboard.plugin import TfpgoPlugin


def main() -> int:
    board = program.TensorBoard(plugins=[*default.get_plugins(), TfpgoPlugin])
    board.configure(argv=[sys.argv[0], *sys.argv[1:]])
    return board.main()


if __name__ == "__main__":
    raise SystemExit(main())
