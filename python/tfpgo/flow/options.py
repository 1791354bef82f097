"""What one run of the flow is asked to do: `pgo`'s options, as a record."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from tfpgo import HOT_OPS
from tfpgo.models import DEFAULT_MODEL
from tfpgo.models.profiling import ProfilerLevels
from tfpgo.trace.hosts import HostReading


@dataclass(frozen=True)
class FlowOptions:
    model: str = DEFAULT_MODEL
    mode: str = "infer"
    steps: int = 5
    warmup: int = 2
    batch_size: int = 32
    levels: ProfilerLevels = field(default_factory=ProfilerLevels)
    output_dir: Path = Path("pgo_out")
    top_k: int = HOT_OPS
    min_share: float = 0.01
    from_trace: Path | None = None
    mlir: Path | None = None
    formats: tuple[str, ...] = ("svg", "png")
    picture_nodes: int = 150
    min_coverage: float = 0.9
    # Lower the profiled function to these levels (lowering.LEVELS, in order).
    lower: tuple[str, ...] = ()
    # --tune: seconds the tuning loop may start candidates in (None: no tuning; 0:
    # build from the tuning database's records).
    tune_budget_s: float | None = None
    # --tune: the tuning database (None: none, every run starts from zero), and
    # whether to measure again what it recorded.
    tuning_db: Path | None = None
    retune: bool = False
    # Measure the proposer's advice (tfpgo.proposer): A/B blocks an arm, steps a block.
    optimize: bool = False
    ab_repetitions: int = 10
    ab_steps: int = 10
    # Time candidates whose numerics cannot be checked, marked so in the report.
    optimize_unchecked: bool = False
    # --optimize-budget: seconds the optimize stage may take (None: no limit).
    optimize_budget_s: float | None = None
    # A SavedModel's signature and example inputs (`NAME=SHAPE[:DTYPE]`).
    signature: str = "serving_default"
    inputs: tuple[str, ...] = ()
    # How the hosts of a multi-host trace are read (local processes, or a Dask cluster).
    host_reading: HostReading = field(default_factory=HostReading)
