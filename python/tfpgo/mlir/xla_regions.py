"""Runs `tf-profile-guided-xla-regions` in tfpgo-opt and reads what it chose.

The pass (C++, tensorflow_patch/) reads `profiler_data` on the tf ops of the
annotated module and chooses XLA regions: connected ops XLA fuses well that
TensorFlow runs as many small kernels, ranked by measured time. It writes
`xla_regions.json` (format `tfpgo.xla_regions` v1, docs/formats.md); this module
is the Python side of that process boundary, and the one reader of the document
(the proposer's `xla_regions` rule and its worker read it through here).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from tfpgo.documents import malformed_as_error, read_document
from tfpgo.errors import UserError
from tfpgo.mlir.annotate import run_tfpgo_opt

FORMAT = "tfpgo.xla_regions"
PASS = "tf-profile-guided-xla-regions"
DOCUMENT = "xla_regions.json"


@dataclass(frozen=True)
class RegionOp:
    """One tf op of a region (or one the pass declined)."""

    node: str  # the TF node name: the join key with the traced step and its profile
    op: str  # the tf dialect op name, `tf.Relu`
    self_ps: int  # its measured self time
    reason: str = ""  # declined ops: why the pass left it to TensorFlow


@dataclass(frozen=True)
class XlaRegion:
    """Ops the pass wants compiled together (`_XlaScope` = `name`)."""

    name: str
    self_ps: int
    share: float  # self_ps / the profiled op time
    ops: tuple[RegionOp, ...]
    reason: str


@dataclass(frozen=True)
class XlaRegions:
    """The pass's choice for one annotated module."""

    path: Path  # the document it was read from
    profiled_ps: int
    min_share: float
    regions: tuple[XlaRegion, ...]
    declined: tuple[RegionOp, ...]

    def scope_of(self) -> dict[str, str]:
        """TF node name -> the region it belongs to."""
        return {op.node: region.name for region in self.regions for op in region.ops}


def choose_regions(annotated: Path, report: Path, min_share: float) -> XlaRegions:
    """Runs the pass on `annotated` (a module the profile-guided pipeline annotated),
    choosing regions of at least `min_share` of the profiled time, writes its choice
    to `report` and returns it read back."""
    spec = f"min-share={min_share} report-output={report.absolute()}"
    run_tfpgo_opt(annotated.absolute(), Path(os.devnull), [f"--{PASS}={spec}"])
    return read_regions(report)


def read_regions(path: Path) -> XlaRegions:
    """Reads a `tfpgo.xla_regions` document; a malformed one is one UserError line."""
    document = read_document(path, FORMAT)
    with malformed_as_error(path, FORMAT):
        regions = tuple(
            XlaRegion(
                str(region["name"]),
                int(region["self_ps"]),
                float(region["share"]),
                tuple(_region_op(op) for op in region["ops"]),
                str(region.get("reason", "")),
            )
            for region in document["regions"]
        )
        declined = tuple(_region_op(op) for op in document.get("declined", ()))
        found = XlaRegions(
            path,
            int(document["profiled_ps"]),
            float(document.get("min_share", 0.0)),
            regions,
            declined,
        )
    _check_disjoint(found)
    return found


def _region_op(item: dict) -> RegionOp:
    return RegionOp(
        str(item["node"]), str(item["op"]), int(item["self_ps"]), str(item.get("reason", ""))
    )


def _check_disjoint(found: XlaRegions) -> None:
    """A node belongs to one region: `_XlaScope` holds one name."""
    seen: dict[str, str] = {}
    for region in found.regions:
        if not region.ops:
            raise UserError(f"{found.path}: region {region.name} has no ops; drop it")
        for op in region.ops:
            if op.node in seen:
                raise UserError(
                    f"{found.path}: node {op.node} is in regions {seen[op.node]} and "
                    f"{region.name}; a node can be compiled in one region only"
                )
            seen[op.node] = region.name
