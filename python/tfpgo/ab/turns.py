"""The orders arms take turns in, round by round.

- `turn_order`: each round rotates the order by one, so no arm always runs
  first or always follows the same one (with two arms: AB, BA, AB, ...).
- `mirrored_order`: rounds forward (A B C) or reversed (C B A), four to a
  cycle: forward, reversed, reversed, forward (with two arms: AB, BA, BA, AB).
  A linear drift of the machine falls on every arm alike within each cycle,
  and when an alternation moves to fresh copies of its programs every two
  rounds (tfpgo.iree.alternation), each arm is the first to run on them as
  often as the other; rotation would always start a copy with the same arm.
"""

from __future__ import annotations


def turn_order(round_index: int, arms: int) -> list[int]:
    """The arms' indices in the order round `round_index` runs them."""
    shift = round_index % arms
    order = list(range(arms))
    return order[shift:] + order[:shift]


def mirrored_order(round_index: int, arms: int) -> list[int]:
    """The arms' indices in the order round `round_index` of an alternation runs
    them: forward, reversed, reversed, forward, and again."""
    order = list(range(arms))
    return order if round_index % 4 in (0, 3) else order[::-1]
