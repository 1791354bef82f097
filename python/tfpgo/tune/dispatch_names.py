"""What IREE writes into a dispatch function's name, read in one place: the
root op's kind and loop ranges (`..._dispatch_3_conv_8x14x14x256x3x3x256_f32`),
and from them a contraction's FLOPs. The tile search (`dispatch_tiles`) and the
machine's limit (`roofline`) both read names through here."""

from __future__ import annotations

import math
import re

# The loop ranges IREE writes into a dispatch's name: `..._conv_8x14x14x256x3x3x256_f32`.
_LOOPS = re.compile(r"_(\d+(?:x\d+)*)_[a-z]+\d+$")
_KIND = re.compile(r"_dispatch_\d+_([a-z_]+?)_\d+(?:x\d+)*_[a-z]+\d+$")
# Dispatch kinds whose loops are one multiply-add each: 2 x the product of the
# ranges is their FLOPs.
CONTRACTIONS = ("conv", "matmul", "matmul_like", "batch_matmul", "contract")


def loop_ranges(name: str) -> tuple[int, ...] | None:
    """The loop ranges IREE writes into a dispatch's name, or None."""
    loops = _LOOPS.search(name)
    return None if loops is None else tuple(int(v) for v in loops[1].split("x"))


def dispatch_kind(name: str) -> str | None:
    """The root op's kind in a dispatch's name (`matmul`, `conv`, `elementwise`,
    ...), or None."""
    found = _KIND.search(name)
    return None if found is None else found[1]


def dispatch_flops(name: str) -> int:
    """FLOPs of one invocation of a contraction dispatch (2 x the product of its
    loop ranges); 0 for other kinds or a name without ranges."""
    kind, loops = dispatch_kind(name), loop_ranges(name)
    if kind is None or loops is None or kind not in CONTRACTIONS:
        return 0
    return 2 * math.prod(loops)
