"""A profile's names and a lowered module's location names, made to meet.

TensorFlow's XLA compiler names each op of its StableHLO after its tf node,
but not as the runtime profiled it: an op of a loop body ran as
`w/while/body/_1/w/while/add`, its node is `w/while/add`. The profile handed to
`tf-profile-materialize-annotations` (`path-to-profile`) takes the node names
the tf level resolved. A second trace of a step (under `jit_compile`)
uniquifies scopes anew (`sgd_1` becomes `sgd`; a scope uniquified twice, the
profile's `sgd_2_1` after other optimizers were made in the process, is
compared without either suffix): the module's locations take
the profile's names. Either only where the new name is unambiguous.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import replace

from tfpgo.attribution.op_profile import OpProfile
from tfpgo.models.case import unscoped

# A name location (`loc("sgd/Mul")`).
_LOCATION_NAME = re.compile(r'loc\("((?:[^"\\]|\\.)*)"')


def location_names(module_text: str) -> set[str]:
    """The names of a printed module's name locations."""
    return set(_LOCATION_NAME.findall(module_text))


def by_node_names(profile: OpProfile, landed_on: Mapping[str, tuple[str, ...]]) -> OpProfile:
    """`profile` with each entry that landed on one op under another name named as
    that op. Entries that landed on one op together (Grappler's rewrite of an add
    tree runs one node as several kernels) then share its name, and
    `tf-profile-materialize-annotations` sums them into its record, as the tf
    level does. An entry split over several ops (a merged one) keeps its name."""
    return replace(
        profile,
        ops=tuple(
            replace(op, name=ops[0]) if len(ops := landed_on.get(op.name, ())) == 1 else op
            for op in profile.ops
        ),
    )


def with_profile_names(module_text: str, names: set[str]) -> str:
    """`module_text` with each name location no entry of `names` (a profile's)
    has renamed to the one entry name equal to it up to `_<k>` suffixes of its
    scopes (a second trace uniquifies scopes anew: its `sgd/Mul_3` is the
    profile's `sgd_1/Mul_3`), where exactly one is and no other location takes
    it. The module then names the tf level's nodes, as every record's `source`
    must."""
    candidates: dict[str, list[str]] = {}
    for name in names:
        candidates.setdefault(unscoped(name), []).append(name)
    located = location_names(module_text)
    targets = {
        location: found[0]
        for location in located - names
        if len(found := candidates.get(unscoped(location), [])) == 1
    }
    taken = Counter(targets.values())
    targets = {
        location: name
        for location, name in targets.items()
        if taken[name] == 1 and name not in located
    }
    return _LOCATION_NAME.sub(lambda match: f'loc("{targets.get(match[1], match[1])}"', module_text)
