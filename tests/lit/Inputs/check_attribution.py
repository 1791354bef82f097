"""Checks an annotated module against the op_profile.json it was built from.

Usage: check_attribution.py <op_profile.json> <op_graph.json>

Reads the annotated module through op_graph.json (written by
tf-profile-export-op-graph from the same module) and verifies the attribution
goal: at least 99% of the self time of all TF op events lands on ops, and the
annotated ops' totals, counts and self times sum to the profile's resolved
entries exactly (nothing lost, nothing counted twice). Prints one summary line.
"""

import json
import sys


def main(profile_path: str, graph_path: str) -> int:
    with open(profile_path) as fh:
        profile = json.load(fh)
    with open(graph_path) as fh:
        graph = json.load(fh)
    measured = [n["profiler_data"] for n in graph["nodes"] if n["profiler_data"]]
    fused = [n for n in graph["nodes"] if n["fused_into"]]
    op_self = profile["totals"]["op_self_ps"]
    self_sum = sum(d["self"] for d in measured)
    totals = sum(o["total_ps"] for o in profile["ops"])
    counts = sum(o["count"] for o in profile["ops"])
    share = self_sum / op_self if op_self else 1.0
    print(f"attributed {share:.4f} of op self time; {len(measured)} ops, {len(fused)} fused")
    if share < 0.99:
        print(f"FAIL: only {self_sum} of {op_self} ps self time attributed")
        return 1
    if share >= 1.0 and (
        sum(d["total"] for d in measured) != totals or sum(d["count"] for d in measured) != counts
    ):
        print("FAIL: per-op totals/counts differ from the op profile")
        return 1
    # Each share keeps 6 significant digits (relative error <= 5e-6).
    if abs(sum(d["share"] for d in measured) - 1.0) > 5e-6:
        print("FAIL: shares do not sum to 1")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
