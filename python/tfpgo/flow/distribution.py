"""What tfpgo's wheel declares it needs, and the one-line refusal when a part of
it is used without its packages.

The base wheel is the runtime (`tfpgo.runtime`: a lowered program run as the
step), which needs numpy and IREE's runtime only, so a serving machine installs
no compiler and no TensorFlow. The flow (the `tfpgo` command, `tfpgo.compile`)
needs the extra `tfpgo[flow]`; a multi-host logdir read on a Dask cluster
(`--scheduler`) the extra `tfpgo[cluster]`. tools/build_wheel.py writes these as
the wheel's Requires-Dist, each at requirements.txt's pin.
"""

from __future__ import annotations

import importlib.util

from tfpgo.errors import UserError

# distribution -> the module it provides (what is looked for before a part runs).
RUNTIME = {"numpy": "numpy", "iree-base-runtime": "iree.runtime"}
EXTRAS = {
    "flow": {
        "tensorflow-cpu": "tensorflow",
        "keras": "keras",
        "protobuf": "google.protobuf",
        "iree-base-compiler": "iree.compiler",
        "networkx": "networkx",
        "ai-edge-model-explorer": "model_explorer",
        # the engines a CPU user would pick instead, timed beside --tune's program
        "openvino": "openvino",
    },
    "cluster": {"dask": "dask", "distributed": "distributed"},
}


def missing(extra: str) -> list[str]:
    """The distributions of `extra` whose module this interpreter cannot find."""
    return [name for name, module in EXTRAS[extra].items() if not _importable(module)]


def require(extra: str, what: str) -> None:
    """One UserError line naming the extra to install when `what` (a part of
    tfpgo) would fail on a missing package of `extra` mid-run."""
    absent = missing(extra)
    if absent:
        raise UserError(
            f"{what} needs {', '.join(absent)}, which this Python lacks; "
            f"pip install 'tfpgo[{extra}]' (the base wheel is the runtime only)"
        )


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # a parent package (google, iree) is absent
        return False
