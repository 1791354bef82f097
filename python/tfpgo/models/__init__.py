"""Models to profile: built-in cases by name and the user's own models.

A `ModelCase` is one runnable step (inference or training) as a `tf.function`
plus the example inputs it is called with. Profiling runs exactly this function,
and the MLIR export converts exactly its concrete function, so the node names
in the trace and the locations in the MLIR describe the same program.

`load_model(spec, mode, batch_size)` accepts:
  * a built-in name (`BUILTIN_MODELS`): mlp (default, one dense layer dominates),
    cnn, resnet50, transformer, rnn;
  * a Python file with a `tfpgo_model` hook (see `tfpgo.models.user`);
  * a SavedModel directory (one signature, `serving_default` by default; inference only);
  * a `.keras` file.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from tfpgo.errors import UserError
from tfpgo.models.builtin import BUILTIN_MODELS, DEFAULT_MODEL
from tfpgo.models.case import Mode, ModelCase, parse_mode

if TYPE_CHECKING:
    from tfpgo.models.user import SignatureChoice

__all__ = [
    "BUILTIN_MODELS",
    "DEFAULT_MODEL",
    "Mode",
    "ModelCase",
    "check_model_spec",
    "load_model",
    "parse_mode",
    "seed_everything",
]


def load_model(
    spec: str = DEFAULT_MODEL,
    mode: str | Mode = Mode.INFER,
    batch_size: int = 32,
    choice: SignatureChoice | None = None,
) -> ModelCase:
    """Builds the ModelCase for a built-in name or a path to a user model; `choice`:
    a SavedModel's signature and example inputs (tfpgo.models.user)."""
    from tfpgo.models import builtin, user

    mode = parse_mode(mode)
    if batch_size < 1:
        raise UserError(f"batch size must be positive, got {batch_size}")
    check_model_spec(spec)
    seed_everything()
    if spec in BUILTIN_MODELS:
        return builtin.build(spec, mode, batch_size)
    return user.load(Path(spec), mode, batch_size, choice)


MODEL_SEED = 0


def seed_everything() -> None:
    """Seeds Python, NumPy, TensorFlow and Keras before a model is built or loaded:
    two processes loading the same model get the same initial weights and the
    same random-generator seeds (dropout masks), whatever the model's source."""
    import keras  # heavy: imported only when a model is loaded

    keras.utils.set_random_seed(MODEL_SEED)


def check_model_spec(spec: str) -> None:
    """Raises the UserError `load_model` gives for a spec that names no model,
    cheaply: callers check before announcing any work."""
    from tfpgo.models import user

    if spec in BUILTIN_MODELS:
        return
    path = Path(spec)
    if not path.exists():
        names = ", ".join(sorted(BUILTIN_MODELS))
        raise UserError(
            f"{spec}: no such built-in model or path; use one of {names}, a .py file "
            "with a tfpgo_model hook, a SavedModel directory or a .keras file"
        )
    user.check(path)
