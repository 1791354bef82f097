"""The XSpace and HloProto protobuf classes TensorFlow ships.

TensorFlow ships the generated `xplane_pb2`; importing it through the
`tensorflow` package costs seconds, so the module file is loaded directly
(it only needs `google.protobuf`). A standalone `tsl` package wins if present.
XLA's `hlo_pb2` imports its siblings through the `tensorflow` package, so it
is imported normally, and only when a trace holds XLA modules.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
from pathlib import Path
from types import ModuleType
from typing import Any

from tfpgo.errors import UserError

_RELATIVE = Path("tsl", "profiler", "protobuf", "xplane_pb2.py")


@functools.cache
def xplane_pb2() -> ModuleType:
    """The generated module with `XSpace`, `XPlane`, `XLine`, `XEvent`, `XStat`."""
    try:
        return importlib.import_module("tsl.profiler.protobuf.xplane_pb2")
    except ImportError:
        pass
    spec = importlib.util.find_spec("tensorflow")
    for root in (spec.submodule_search_locations or []) if spec else []:
        path = Path(root) / _RELATIVE
        if path.exists():
            module_spec = importlib.util.spec_from_file_location("_tfpgo_xplane_pb2", path)
            assert module_spec is not None and module_spec.loader is not None
            module = importlib.util.module_from_spec(module_spec)
            module_spec.loader.exec_module(module)
            return module
    raise UserError(
        "reading .xplane.pb needs TensorFlow's xplane_pb2; install "
        "tensorflow-cpu (see requirements.txt)"
    )


@functools.cache
def hlo_pb2() -> ModuleType:
    """The generated module with XLA's `HloProto` (a standalone `xla` package wins)."""
    for name in ("xla.service.hlo_pb2", "tensorflow.compiler.xla.service.hlo_pb2"):
        try:
            return importlib.import_module(name)
        except ImportError:
            continue
    raise UserError(
        "reading the XLA modules of a trace needs XLA's hlo_pb2; install "
        "tensorflow-cpu (see requirements.txt)"
    )


def parse_message(message: Any, data: bytes, not_it: str) -> Any:
    """`data` parsed into the empty protobuf `message`; a decode error becomes
    the UserError "<not_it> (<decoder's reason>)<fix>", where `not_it` names the
    file and what it is not, and ends with what to do after a `;`."""
    from google.protobuf.message import DecodeError

    head, _, fix = not_it.partition(";")
    try:
        message.ParseFromString(data)
    except DecodeError as error:
        raise UserError(f"{head} ({error});{fix}") from None
    return message


def parse_xspace(path: Path, data: bytes) -> Any:
    """`data` as an XSpace; a UserError names the file if it is not one."""
    space = parse_message(
        xplane_pb2().XSpace(),
        data,
        f"{path}: not a valid XSpace protobuf; the file is truncated or not an .xplane.pb",
    )
    if not space.planes and data:
        raise UserError(f"{path}: parses as protobuf but holds no XSpace planes; not an .xplane.pb")
    return space
