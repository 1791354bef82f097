"""The `tfpgo` command an installed wheel puts on PATH: the `pgo` flow
(tfpgo.flow.pgo), with the same flags as `bazel run //:pgo`.

The base wheel is the runtime alone (tfpgo.flow.distribution): without the
flow's packages the command says in one line which extra to install, instead of
an ImportError from deep inside a stage.
"""

from __future__ import annotations

import sys

from tfpgo.cli import run_main
from tfpgo.errors import UserError
from tfpgo.flow.distribution import require

PROG = "tfpgo"


def main() -> int:
    try:
        require("flow", f"the {PROG} command")
    except UserError as error:
        print(f"{PROG}: error: {error}", file=sys.stderr)
        return 1
    from tfpgo.flow import pgo  # imports the flow's packages: after `require`

    return run_main(lambda argv: pgo.main(argv, prog=PROG), prog=PROG)
