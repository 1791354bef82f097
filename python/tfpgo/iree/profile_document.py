"""`iree_profile.json` (`tfpgo.iree_profile`): the dispatches of a program run
by IREE, each with its invocations, its time, the tf ops its code names, and
its sites (the places in the program it runs at); written and read here
(docs/formats.md)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tfpgo.attribution.parts import split_equally
from tfpgo.documents import (
    expect_format,
    malformed_as_error,
    new_header,
    read_json,
    write_compact_json,
)

FORMAT = "tfpgo.iree_profile"
VERSION = 1


@dataclass(frozen=True)
class Site:
    """One place in the program where a dispatch runs (`tfpgo.iree.sites`), the tf
    ops of that place and the time of its invocations."""

    sources: tuple[str, ...]  # tf node names its ops carry
    total_ps: int
    tf_self_ps: int  # those ops' TensorFlow self time (op profile, the same steps)
    invocations: int = 1  # a run's invocations of it: a loop's measured trip count

    def parts(self) -> dict[str, int]:
        """Its time per tf op: equal integer parts, summing exactly."""
        if not self.sources:
            return {}
        return dict(zip(self.sources, split_equally(self.total_ps, len(self.sources)), strict=True))


# How a dispatch's time reached its sites: `program` (each invocation charged to
# its own site, in program order), `executable` (charged as a whole to the ops
# its executable's code names: the invocations did not match the sites).
BY_PROGRAM, BY_EXECUTABLE = "program", "executable"


@dataclass(frozen=True)
class Dispatch:
    """One dispatch function of the compiled program and what it ran."""

    name: str  # the dispatch function (`<entry>_dispatch_0_matmul_4x4096x1024_f32`)
    count: int
    total_ps: int
    sources: tuple[str, ...]  # tf node names of all its sites, in site order
    tf_self_ps: int  # those ops' TensorFlow self time, every site's (its bound)
    # `compute` (its linalg/arith ops carry them), `bindings` (only the values it
    # reads and writes do: a copy IREE made), "" (none: unattributed)
    found_in: str = ""
    sites: tuple[Site, ...] = ()
    sites_from: str = BY_EXECUTABLE

    def parts(self) -> dict[str, int]:
        """Its time per tf op it ran: each site's time in equal integer parts over
        that site's ops, summing exactly."""
        found: dict[str, int] = {}
        for site in self.sites:
            for name, ps in site.parts().items():
                found[name] = found.get(name, 0) + ps
        return found


@dataclass(frozen=True)
class IreeProfile:
    source: str
    entry: str
    runs: int
    warmup: int  # runs profiled before them and dropped
    outputs_max_abs: float  # |IREE - TensorFlow| over every output element
    rtol: float
    atol: float
    dispatches: tuple[Dispatch, ...]
    # per tf node: its share of the dispatches' time (equal integer parts)
    op_ps: dict[str, int] = field(default_factory=dict)
    # per tf node of `op_ps`: its TensorFlow self time over the profiled steps
    op_tf_ps: dict[str, int] = field(default_factory=dict)
    # Why the outputs could not be held to TensorFlow's ("" when they were).
    outputs_unchecked: str = ""

    @property
    def dispatch_ps(self) -> int:
        return sum(d.total_ps for d in self.dispatches)

    @property
    def run_dispatch_s(self) -> float:
        """The dispatches' time a run (s): a lower bound on a call, which also
        holds the host's share."""
        return self.dispatch_ps / max(self.runs, 1) / 1e12

    def outputs_text(self) -> str:
        """How IREE's outputs compare with TensorFlow's, for a line of the run or
        the report."""
        if self.outputs_unchecked:
            return (
                f"outputs not held to TensorFlow's (max |Δ| {self.outputs_max_abs:.3g}): "
                f"{self.outputs_unchecked}"
            )
        return f"outputs within {self.outputs_max_abs:.3g} of TensorFlow's"

    @property
    def attributed_ps(self) -> int:
        return sum(d.total_ps for d in self.dispatches if d.sources)

    def to_json(self) -> dict[str, Any]:
        return {
            **new_header(FORMAT, VERSION, self.source),
            "entry": self.entry,
            "runs": self.runs,
            "warmup": self.warmup,
            "outputs": {
                "max_abs": self.outputs_max_abs,
                "rtol": self.rtol,
                "atol": self.atol,
                "unchecked": self.outputs_unchecked or None,
            },
            "totals": {
                "dispatch_ps": self.dispatch_ps,
                "dispatch_attributed_ps": self.attributed_ps,
                "dispatch_unattributed_ps": self.dispatch_ps - self.attributed_ps,
            },
            "dispatches": [_dispatch_json(d) for d in self.dispatches],
            "ops": [
                {"name": name, "iree_ps": ps, "tf_self_ps": self.op_tf_ps.get(name, 0)}
                for name, ps in self.op_ps.items()
            ],
        }

    def write(self, path: Path) -> None:
        write_compact_json(path, self.to_json())

    @staticmethod
    def read(path: Path) -> IreeProfile:
        return IreeProfile.from_json(read_json(path), path)

    @staticmethod
    def from_json(document: Any, path: Path) -> IreeProfile:
        expect_format(path, document, FORMAT)
        with malformed_as_error(path, FORMAT):
            outputs = document["outputs"]
            return IreeProfile(
                document["source"],
                document["entry"],
                document["runs"],
                document["warmup"],
                outputs["max_abs"],
                outputs["rtol"],
                outputs["atol"],
                tuple(_read_dispatch(d) for d in document["dispatches"]),
                {op["name"]: op["iree_ps"] for op in document["ops"]},
                {op["name"]: op["tf_self_ps"] for op in document["ops"]},
                outputs.get("unchecked") or "",
            )


def _dispatch_json(dispatch: Dispatch) -> dict[str, Any]:
    return {
        **asdict(dispatch),
        "sources": list(dispatch.sources),
        "sites": [{**asdict(site), "sources": list(site.sources)} for site in dispatch.sites],
    }


def _read_dispatch(item: dict[str, Any]) -> Dispatch:
    """A dispatch of the document; one written before sites were read is one site."""
    sources = tuple(item["sources"])
    sites = tuple(
        Site(
            tuple(site["sources"]),
            site["total_ps"],
            site["tf_self_ps"],
            site.get("invocations", 1),
        )
        for site in item.get("sites", ())
    ) or (Site(sources, item["total_ps"], item["tf_self_ps"]),)
    return Dispatch(
        item["name"], item["count"], item["total_ps"], sources, item["tf_self_ps"],
        item["found_in"], sites, item.get("sites_from", BY_EXECUTABLE),
    )  # fmt: skip
