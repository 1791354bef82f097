"""The order arms take turns in: each round rotates it by one, so no arm always
runs first or always follows the same one (with two arms: AB, BA, AB, ...)."""

from __future__ import annotations


def turn_order(round_index: int, arms: int) -> list[int]:
    """The arms' indices in the order round `round_index` runs them."""
    shift = round_index % arms
    order = list(range(arms))
    return order[shift:] + order[:shift]
