"""Device planes: the events an accelerator ran (GPU kernels, copies, memsets).

A profiler records each accelerator as its own plane, `/device:GPU:0` (any
`/device:` plane: TPUs and other devices read the same way), one line per stream
(`Stream #14(Compute)`). The CUPTI collector (XLA's
`xla/backends/profiler/gpu/cupti_collector.cc`) names copies `MemcpyH2D`,
`MemcpyD2H`, `MemcpyD2D`, `MemcpyP2P` and memsets `Memset`; every other event is a
kernel, named by the kernel. Each carries stats: `correlation_id` (the CUDA API
call that launched it), and what the framework annotated at launch: `hlo_op`,
`hlo_module`, `program_id` (XLA), `tf_op` (TensorFlow's `node:Type`),
`kernel_details`, and in CUDA-graph launches `cuda_graph_id`.

The host plane records the launching API calls (`cuLaunchKernel`,
`cuGraphLaunch`, `cuMemcpyHtoDAsync`, ...) with the same `correlation_id`:
`link_launches` turns each pair into a flow (launch -> device event) and gives a
device event the step of its launch, so a kernel that runs after its step's
marker ended on the host still counts in that step (xprof's rule too).
"""

from __future__ import annotations

from enum import Enum

import numpy as np

from tfpgo.trace.events import EventTable

DEVICE_PLANE_PREFIX = "/device:"
CORRELATION_STAT = "correlation_id"


class DeviceKind(Enum):
    """What a device event did. Copies and memsets are `copy` kinds."""

    KERNEL = "kernel"
    MEMCPY_H2D = "memcpy_h2d"
    MEMCPY_D2H = "memcpy_d2h"
    MEMCPY_D2D = "memcpy_d2d"
    MEMCPY_P2P = "memcpy_p2p"
    MEMCPY_OTHER = "memcpy_other"
    MEMSET = "memset"

    @property
    def is_copy(self) -> bool:
        return self is not DeviceKind.KERNEL


_COPY_PREFIXES = (
    ("MemcpyH2D", DeviceKind.MEMCPY_H2D),
    ("MemcpyD2H", DeviceKind.MEMCPY_D2H),
    ("MemcpyD2D", DeviceKind.MEMCPY_D2D),
    ("MemcpyP2P", DeviceKind.MEMCPY_P2P),
    ("Memcpy", DeviceKind.MEMCPY_OTHER),
    ("Memset", DeviceKind.MEMSET),
)
KINDS = tuple(DeviceKind)


def device_kind(name: str) -> DeviceKind:
    """The kind of a device event from its name (the CUPTI collector's names)."""
    for prefix, kind in _COPY_PREFIXES:
        if name.startswith(prefix):
            return kind
    return DeviceKind.KERNEL


def is_device_plane(plane: str) -> bool:
    return plane.startswith(DEVICE_PLANE_PREFIX)


def device_track_mask(table: EventTable) -> np.ndarray:
    """Per track: whether it is a stream of a device plane."""
    return np.array([is_device_plane(t.plane) for t in table.tracks] or [False], dtype=bool)


def hlo_event_rows(table: EventTable) -> np.ndarray:
    """Indices of the host's HLO instruction events (those with an `hlo_op` stat off
    the device planes: XLA on CPU), ascending. Device kernels carry `hlo_op` too; their
    time is device time (`tfpgo.attribution.device_attribution`)."""
    rows = table.rows_with_stat("hlo_op")
    return rows[~device_track_mask(table)[table.track_id[rows]]] if rows.size else rows


def device_rows(table: EventTable) -> np.ndarray:
    """Indices of the events on device planes, ascending."""
    if len(table) == 0 or not table.tracks:
        return np.zeros(0, np.int64)
    return np.flatnonzero(device_track_mask(table)[table.track_id])


def kind_codes(table: EventTable, rows: np.ndarray) -> np.ndarray:
    """The `DeviceKind` of each event in `rows`, as an index into `KINDS`."""
    by_name = np.array([KINDS.index(device_kind(n)) for n in table.names] or [0], np.int8)
    return by_name[table.name_id[rows]]


def link_launches(table: EventTable) -> None:
    """Adds a flow from each host launch to the device events with its correlation id
    (same host), and gives each such device event its launch's step."""
    rows, values = table.stat_column(CORRELATION_STAT)
    if rows.size == 0:
        return
    on_device = device_track_mask(table)[table.track_id[rows]]
    if not on_device.any() or on_device.all():
        return
    host_of_track = np.unique(
        np.array([t.host for t in table.tracks], dtype=object), return_inverse=True
    )[1]
    host = host_of_track[table.track_id[rows]].astype(np.int64)
    ids = values.astype(np.int64)
    launches, launch_keys = rows[~on_device], np.stack([host[~on_device], ids[~on_device]], 1)
    kernels, kernel_keys = rows[on_device], np.stack([host[on_device], ids[on_device]], 1)
    # one launch per (host, id): the first in event order
    keys, first = np.unique(launch_keys, axis=0, return_index=True)
    order = np.lexsort((keys[:, 1], keys[:, 0]))
    keys, first = keys[order], first[order]
    packed = keys[:, 0] * (1 << 40) + keys[:, 1]
    wanted = kernel_keys[:, 0] * (1 << 40) + kernel_keys[:, 1]
    slot = np.minimum(np.searchsorted(packed, wanted), packed.size - 1)
    hit = packed[slot] == wanted
    launch = launches[first[slot[hit]]]
    kernel = kernels[hit]
    table.flows = np.concatenate([table.flows, np.stack([launch, kernel], 1).astype(np.int64)])
    table.step[kernel] = table.step[launch]
