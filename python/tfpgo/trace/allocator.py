"""Returning freed memory to the system at once while a huge trace is read.

glibc's malloc serves blocks under a threshold from its heap and keeps them when
freed; the threshold grows to 32 MB as big blocks are freed, so the numpy
temporaries of a 10M-event trace (tens of MB each, made and freed stage after
stage) pile up as resident memory nobody uses: 1.07 GB peak against 0.96 GB
with the heap trimmed (bench/bench_scaling.py). Setting the trim threshold
turns the growth off (blocks over 128 KB are mapped and unmapped on their own)
and trims the heap's free top past 1 MB.

The setting is process-wide and stays: it is made only for traces big enough
to need it, never in a process about to time a model on small ones.
"""

from __future__ import annotations

import ctypes
import functools

HUGE_TRACE_BYTES = 64 << 20  # input size from which the trace reader sets it
_M_TRIM_THRESHOLD = -1  # mallopt's parameter number (malloc.h)
_TRIM_THRESHOLD_BYTES = 1 << 20


@functools.cache
def return_freed_memory_early() -> bool:
    """Sets glibc's trim threshold once; False where the C library is not glibc."""
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # not glibc (musl, macOS): its own policy stays
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    return bool(mallopt(_M_TRIM_THRESHOLD, _TRIM_THRESHOLD_BYTES))
