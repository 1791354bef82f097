"""The device part of the op profile (`op_profile.json` version 3): per-node device
time, the kernels with the ops they ran for, copies by direction, what stayed
unattributed and why, and how busy each device was inside the steps.

Built from a `DeviceAttribution`; `op_profile.build_op_profile` merges the
per-node times into its entries and writes the rest beside them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tfpgo.attribution.device_attribution import DeviceAttribution, distinct_rows
from tfpgo.trace.device import KINDS
from tfpgo.trace.events import NO_STEP, EventTable


@dataclass(frozen=True)
class DeviceTime:
    """One node's time on one device."""

    device: str
    self_ps: int
    count: int


@dataclass(frozen=True)
class DeviceKernel:
    """Every execution of one kernel (or copy) name on one device for one instruction
    (resolution); `ops` the nodes its time went to, `reason` why none when empty;
    `folded` the instruction's nodes the annotated module does not have, whose part
    went to `ops`."""

    device: str
    name: str
    kind: str
    module: str
    instruction: str
    rule: str
    reason: str
    count: int
    total_ps: int
    ops: tuple[str, ...]
    folded: tuple[str, ...] = ()


@dataclass(frozen=True)
class DeviceCopies:
    """Copies (or memsets) of one direction: all of them, and the part on ops."""

    kind: str
    count: int
    total_ps: int
    attributed_ps: int


@dataclass(frozen=True)
class DeviceStep:
    """One device in one step: the span of the step's device events (by launch), and
    the part of it with at least one event running."""

    device: str
    step: int
    window_ps: int
    busy_ps: int


@dataclass(frozen=True)
class DeviceProfile:
    """The device document parts, and per node index of `attribution.nodes` the time."""

    node_ps: np.ndarray
    node_count: np.ndarray
    node_first_ps: np.ndarray
    per_device: dict[int, tuple[DeviceTime, ...]]
    kernels: tuple[DeviceKernel, ...]
    copies: tuple[DeviceCopies, ...]
    steps: tuple[DeviceStep, ...]
    device_ps: int
    kernel_ps: int
    copy_ps: int
    attributed_ps: int
    events: int

    @property
    def busy_ps(self) -> int:
        return sum(step.busy_ps for step in self.steps)

    @property
    def idle_ps(self) -> int:
        return sum(step.window_ps - step.busy_ps for step in self.steps)

    @property
    def unattributed(self) -> tuple[DeviceKernel, ...]:
        return tuple(kernel for kernel in self.kernels if not kernel.ops)


def build_device_profile(table: EventTable, device: DeviceAttribution) -> DeviceProfile:
    """Sums `device` per node, per kernel, per copy direction and per step."""
    nodes = len(device.nodes)
    node_ps = np.bincount(device.part_node, weights=device.part_ps, minlength=nodes)
    node_count = np.bincount(device.part_node, minlength=nodes)
    starts = table.start_ps[device.rows]
    first = np.full(nodes, np.iinfo(np.int64).max, np.int64)
    np.minimum.at(first, device.part_node, starts[device.part_event])
    per_device: dict[int, tuple[DeviceTime, ...]] = {}
    if len(device.devices) > 1:
        for node in range(nodes):
            mine = device.part_node == node
            on = device.device[device.part_event[mine]]
            ps = np.bincount(on, weights=device.part_ps[mine], minlength=len(device.devices))
            count = np.bincount(on, minlength=len(device.devices))
            per_device[node] = tuple(
                DeviceTime(name, int(ps[d]), int(count[d]))
                for d, name in enumerate(device.devices)
                if count[d]
            )
    durations = table.duration_ps[device.rows]
    is_copy = (
        np.array([k.is_copy for k in KINDS])[device.kinds] if len(device) else np.zeros(0, bool)
    )
    attributed = device.attributed_mask()
    return DeviceProfile(
        node_ps.round().astype(np.int64),
        node_count.astype(np.int64),
        first,
        per_device,
        _kernels(table, device, durations),
        _copies(device, durations, is_copy, attributed),
        _steps(table, device),
        int(durations.sum()),
        int(durations[~is_copy].sum()),
        int(durations[is_copy].sum()),
        int(durations[attributed].sum()),
        len(device),
    )


def _kernels(
    table: EventTable, device: DeviceAttribution, durations: np.ndarray
) -> tuple[DeviceKernel, ...]:
    """Events grouped by (device, name, resolution), largest first."""
    if not len(device):
        return ()
    names = table.name_id[device.rows].astype(np.int64)
    first, inverse = distinct_rows([device.device.astype(np.int64), names, device.resolution])
    totals = np.bincount(inverse, weights=durations, minlength=first.shape[0])
    counts = np.bincount(inverse, minlength=first.shape[0])
    kernels = []
    for at, event in enumerate(first.tolist()):
        device_id, name_id = int(device.device[event]), int(names[event])
        resolution = device.resolutions[int(device.resolution[event])]
        kernels.append(
            DeviceKernel(
                device.devices[device_id],
                table.names[name_id],
                KINDS[int(device.kinds[first[at]])].value,
                resolution.module,
                resolution.instruction,
                resolution.rule,
                resolution.reason,
                int(counts[at]),
                round(totals[at]),
                tuple(node.name for node in resolution.nodes),
                resolution.folded,
            )
        )
    kernels.sort(key=lambda k: (-k.total_ps, k.device, k.name, k.instruction))
    return tuple(kernels)


def _copies(
    device: DeviceAttribution, durations: np.ndarray, is_copy: np.ndarray, attributed: np.ndarray
) -> tuple[DeviceCopies, ...]:
    found = []
    for code, kind in enumerate(KINDS):
        mine = (device.kinds == code) & is_copy
        if mine.any():
            found.append(
                DeviceCopies(
                    kind.value,
                    int(mine.sum()),
                    int(durations[mine].sum()),
                    int(durations[mine & attributed].sum()),
                )
            )
    return tuple(found)


def _steps(table: EventTable, device: DeviceAttribution) -> tuple[DeviceStep, ...]:
    """Busy and idle time per device and step (one window over all events when the
    trace marks no steps): the events sorted by (device, step, start) once, each
    group a slice."""
    if not len(device):
        return ()
    steps = table.step[device.rows].astype(np.int64)
    marked = steps != NO_STEP
    label = None
    if not marked.any():
        steps, marked, label = np.zeros_like(steps), np.ones_like(marked), -1
    events = np.flatnonzero(marked)
    starts = table.start_ps[device.rows[events]]
    order = np.lexsort((starts, steps[events], device.device[events]))
    events, starts = events[order], starts[order]
    ends = starts + table.duration_ps[device.rows[events]]
    group = np.stack([device.device[events].astype(np.int64), steps[events]], 1)
    bounds = np.flatnonzero(np.append(True, (group[1:] != group[:-1]).any(axis=1)))
    bounds = np.append(bounds, events.size)
    found = []
    for low, high in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True):
        reach = np.maximum.accumulate(ends[low:high])  # each event's end, or an earlier later one
        gaps = np.maximum(starts[low + 1 : high] - reach[:-1], 0)
        window = int(reach[-1] - starts[low])
        device_id, step = group[low].tolist()
        name = device.devices[device_id]
        found.append(
            DeviceStep(name, step if label is None else label, window, window - int(gaps.sum()))
        )
    return tuple(found)
