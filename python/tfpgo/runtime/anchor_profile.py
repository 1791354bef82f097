"""`anchor_profile.json` (`tfpgo.anchor_profile`): what an anchor engine (an
engine a CPU user would pick instead of tfpgo: tfpgo.runtime.anchors) spends
per layer on the step, each layer on the tf ops it came from
(tfpgo.runtime.openvino_layers); written and read here (docs/formats.md).

Every executed layer is kept: one on tf ops carries them, one that ran no tf op
(a layout reorder the engine inserted) carries why instead, so the layers' times
sum to the engine's whole profiled time.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tfpgo.attribution.parts import split_in_proportion
from tfpgo.documents import new_header, read_versioned, write_compact_json

FORMAT = "tfpgo.anchor_profile"
VERSION = 1
ANCHOR_PROFILE = "anchor_profile.json"


@dataclass(frozen=True)
class Layer:
    """One executed node of the engine's compiled step and its median time a call."""

    name: str  # the engine's node (OpenVINO: its executed node's name)
    kind: str  # its node type (Convolution, FullyConnected, Reorder)
    kernel: str  # what ran it (brgconv_avx512_f32)
    ps: int  # median time a call over the profiled calls
    tf_ops: tuple[str, ...]  # the tf node names it ran (fused ones too)
    unattributed: str = ""  # why it ran no tf op (set exactly when tf_ops is empty)

    def parts(self, weights: Mapping[str, int]) -> dict[str, int]:
        """Its time per tf op, in integer parts proportional to `weights` that sum
        exactly; equal parts where none of its ops has a weight."""
        if not self.tf_ops:
            return {}
        shares = [weights.get(op, 0) for op in self.tf_ops]
        return dict(zip(self.tf_ops, split_in_proportion(self.ps, shares), strict=True))


@dataclass(frozen=True)
class EngineLayers:
    """One engine's profiled layers of the step."""

    engine: str  # tfpgo.runtime.anchors' name of it (OpenVINO f32)
    calls: int  # calls profiled (after those that warm it)
    layers: tuple[Layer, ...]

    @property
    def total_ps(self) -> int:
        return sum(layer.ps for layer in self.layers)

    @property
    def attributed_ps(self) -> int:
        return sum(layer.ps for layer in self.layers if layer.tf_ops)

    def op_ps(self, weights: Mapping[str, int]) -> dict[str, int]:
        """Per tf op, its part of the layers' time a call: each layer's time split
        over the tf ops it fused in proportion to `weights`, TensorFlow's own time
        for each op (so a convolution's layer is charged mostly to the
        convolution, little to the bias and ReLU fused into it)."""
        found: dict[str, int] = {}
        for layer in self.layers:
            for name, ps in layer.parts(weights).items():
                found[name] = found.get(name, 0) + ps
        return found


@dataclass(frozen=True)
class AnchorProfile:
    source: str  # what was profiled (the model)
    engines: tuple[EngineLayers, ...]
    # per anchor engine without per-layer times: why
    refused: dict[str, str] = field(default_factory=dict)

    def fastest(self, among: Collection[str] | None = None) -> EngineLayers | None:
        """The engine (of those named `among`, if given) whose profiled layers
        take the least time a call."""
        engines = [e for e in self.engines if among is None or e.engine in among]
        return min(engines, key=lambda engine: engine.total_ps, default=None)

    def to_json(self) -> dict[str, Any]:
        return {
            **new_header(FORMAT, VERSION, self.source),
            "engines": [
                {
                    "engine": engine.engine,
                    "calls": engine.calls,
                    "total_ps": engine.total_ps,
                    "attributed_ps": engine.attributed_ps,
                    "layers": [_layer_json(layer) for layer in engine.layers],
                }
                for engine in self.engines
            ],
            "refused": self.refused,
        }

    def write(self, path: Path) -> None:
        write_compact_json(path, self.to_json())

    @staticmethod
    def read(path: Path) -> AnchorProfile:
        return read_versioned(path, FORMAT, _parse)


def _layer_json(layer: Layer) -> dict[str, Any]:
    item: dict[str, Any] = {
        "name": layer.name,
        "kind": layer.kind,
        "kernel": layer.kernel,
        "ps": layer.ps,
        "tf_ops": list(layer.tf_ops),
    }
    if layer.unattributed:
        item["unattributed"] = layer.unattributed
    return item


def _parse(document: dict[str, Any]) -> AnchorProfile:
    engines = []
    for engine in document["engines"]:
        layers = tuple(
            Layer(
                item["name"],
                item["kind"],
                item["kernel"],
                int(item["ps"]),
                tuple(str(op) for op in item["tf_ops"]),
                item.get("unattributed", ""),
            )
            for item in engine["layers"]
        )
        for layer in layers:
            if bool(layer.tf_ops) == bool(layer.unattributed):
                raise ValueError(f"layer {layer.name!r}: tf ops or a reason, exactly one")
        engines.append(EngineLayers(engine["engine"], int(engine["calls"]), layers))
    refused = {str(name): str(why) for name, why in document["refused"].items()}
    return AnchorProfile(document["source"], tuple(engines), refused)
