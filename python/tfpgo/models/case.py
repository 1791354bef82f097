"""The record every model source produces: one runnable, profiled step."""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass
from typing import Any

from tfpgo.errors import UserError


class Mode(enum.Enum):
    """What one profiled step does."""

    INFER = "infer"
    TRAIN = "train"


@dataclass(frozen=True)
class ModelCase:
    """One profiled program: `function(*inputs)` is one step.

    `function` is a `tf.function` (or a ConcreteFunction for SavedModel
    signatures); `concrete_function()` gives the graph that runs.
    """

    name: str
    mode: Mode
    batch_size: int
    function: Any
    inputs: tuple[Any, ...]
    description: str = ""

    def step(self) -> Any:
        """Runs one step and returns its outputs (tensors, not yet fetched)."""
        return self.function(*self.inputs)

    def concrete_function(self) -> Any:
        """The concrete function a step executes (traced once, then cached)."""
        if hasattr(self.function, "get_concrete_function"):
            return self.function.get_concrete_function(*self.inputs)
        return self.function


# TensorFlow and Keras make a name unique by appending `_<n>`, once or more
# (`adam_1`, `sgd_2_1`): a model built again in one process renames its scopes.
_UNIQUIFIER = re.compile(r"(?:_\d+)+$")


def without_uniquifier(component: str) -> str:
    """A scope's name as first given (`sgd_2_1` is `sgd`)."""
    return _UNIQUIFIER.sub("", component)


def uniquifier_numbers(name: str) -> tuple[int, ...]:
    """The numbers TensorFlow and Keras appended to `name`'s scopes, in order, 0
    for a scope as first given (`adam_1/dense/kernel` gives (1, 0)): what orders
    names alike up to `unscoped`, in the order they were made."""
    *scopes, _ = name.split("/")
    numbers: list[int] = []
    for scope in scopes:
        suffix = _UNIQUIFIER.search(scope)
        numbers += [int(n) for n in suffix[0].split("_")[1:]] if suffix else [0]
    return tuple(numbers)


def unscoped(name: str) -> str:
    """`name` with every scope as first given, its leaf as it is
    (`adam_1/dense_2/Mul_3` is `adam/dense/Mul_3`)."""
    *scopes, leaf = name.split("/")
    return "/".join([*map(without_uniquifier, scopes), leaf])


def parse_mode(mode: str | Mode) -> Mode:
    """`"infer"`/`"train"` (or a Mode) as a Mode; anything else is a UserError."""
    if isinstance(mode, Mode):
        return mode
    try:
        return Mode(mode)
    except ValueError:
        raise UserError(f"unknown mode {mode!r}; use 'infer' or 'train'") from None
