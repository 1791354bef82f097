"""The user's own models: a Python hook file, a SavedModel, a `.keras` file.

The hook: a Python file that defines

    def tfpgo_model(batch_size: int):
        return model_or_function, example_inputs

where `model_or_function` is a `keras.Model` (profiled as an inference or a
training step like the built-ins) or a `tf.function` (profiled exactly as
written; the mode only names the step marker), and `example_inputs` is a tuple
of tensors (or one tensor) the step is called with, batch dimension included.

A SavedModel directory is profiled through its `serving_default` signature
(inference only): that concrete function is both what runs and what is
exported to MLIR.
"""

from __future__ import annotations

import importlib.util
import zipfile
from pathlib import Path
from typing import Any

from tfpgo.errors import UserError
from tfpgo.models.builtin import keras_case
from tfpgo.models.case import Mode, ModelCase

HOOK_NAME = "tfpgo_model"


def check(path: Path) -> None:
    """Raises the UserError `load` gives for a path that is no kind of model,
    without importing or building anything."""
    if path.is_dir():
        if not (path / "saved_model.pb").exists():
            raise UserError(f"{path}: directory has no saved_model.pb; pass a SavedModel")
    elif path.suffix not in (".keras", ".py"):
        raise UserError(
            f"{path}: unknown model file type; use a .py hook, a .keras file or a "
            "SavedModel directory"
        )


def load(path: Path, mode: Mode, batch_size: int) -> ModelCase:
    """Dispatches on what `path` is: hook file, SavedModel dir or .keras file
    (`path` has passed `check`, as `tfpgo.models.load_model` ensures)."""
    if path.is_dir():
        return _saved_model(path, mode, batch_size)
    if path.suffix == ".keras":
        return _keras_file(path, mode, batch_size)
    return _hook_file(path, mode, batch_size)


def _hook_file(path: Path, mode: Mode, batch_size: int) -> ModelCase:
    spec = importlib.util.spec_from_file_location(f"tfpgo_user_model_{path.stem}", path)
    if spec is None or spec.loader is None:
        raise UserError(f"{path}: cannot be imported as a Python module")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as error:  # the user's code: report, don't crash with a trace
        raise UserError(f"{path}: importing failed: {type(error).__name__}: {error}") from None
    hook = getattr(module, HOOK_NAME, None)
    if not callable(hook):
        raise UserError(
            f"{path}: defines no {HOOK_NAME}(batch_size) function; see "
            "tfpgo.models.user for the hook"
        )
    try:
        result = hook(batch_size)
        target, inputs = result
    except (TypeError, ValueError):
        raise UserError(
            f"{path}: {HOOK_NAME} must return (model_or_function, example_inputs)"
        ) from None
    inputs = tuple(inputs) if isinstance(inputs, list | tuple) else (inputs,)
    if _is_keras_model(target):
        return keras_case(path.stem, target, inputs, mode, batch_size, f"hook in {path}")
    if not hasattr(target, "get_concrete_function"):
        raise UserError(
            f"{path}: {HOOK_NAME} returned {type(target).__name__}; expected "
            "a keras.Model or a tf.function"
        )
    return ModelCase(path.stem, mode, batch_size, target, inputs, f"tf.function in {path}")


def _keras_file(path: Path, mode: Mode, batch_size: int) -> ModelCase:
    import keras

    from tfpgo.models.builtin import example_inputs

    if not zipfile.is_zipfile(path):  # Keras would say "File not found" of it
        raise UserError(
            f"{path}: not a .keras archive (a .keras file is a zip; this one is corrupt or "
            "another format); save the model with model.save('name.keras')"
        )
    try:
        model = keras.models.load_model(path, compile=False)
    except Exception as error:  # corrupt or foreign file
        raise UserError(f"{path}: not a loadable .keras model: {error}") from None
    shapes = []
    for tensor in model.inputs:
        shape = tuple(tensor.shape[1:])
        if any(dim is None for dim in shape):
            raise UserError(
                f"{path}: input {tensor.name} has unknown dimensions {shape}; "
                "use a hook file that gives example inputs"
            )
        shapes.append(shape)
    inputs = example_inputs(shapes, batch_size)
    return keras_case(path.stem, model, inputs, mode, batch_size, f"keras file {path}")


def _saved_model(path: Path, mode: Mode, batch_size: int) -> ModelCase:
    import numpy as np
    import tensorflow as tf

    if mode is not Mode.INFER:
        raise UserError(
            f"{path}: a SavedModel is profiled for inference only; use "
            "--mode infer or a hook file for training"
        )
    try:
        loaded = tf.saved_model.load(str(path))
    except Exception as error:
        raise UserError(f"{path}: not a loadable SavedModel: {error}") from None
    signature = loaded.signatures.get("serving_default")
    if signature is None:
        raise UserError(f"{path}: SavedModel has no serving_default signature")
    _, kwargs_spec = signature.structured_input_signature
    rng = np.random.default_rng(0)
    names, tensors = [], []
    for name, spec in sorted(kwargs_spec.items()):
        shape = [
            batch_size if i == 0 and dim is None else dim
            for i, dim in enumerate(spec.shape.as_list())
        ]
        if any(dim is None for dim in shape):
            raise UserError(f"{path}: input {name} has unknown dimensions {shape}")
        value = rng.standard_normal(shape).astype(spec.dtype.as_numpy_dtype)
        names.append(name)
        tensors.append(tf.constant(value))

    def run_signature(*xs: Any, _loaded: Any = loaded) -> Any:  # keeps `loaded` alive
        return signature(**dict(zip(names, xs, strict=True)))

    run_signature.get_concrete_function = lambda *_: signature  # type: ignore[attr-defined]
    return ModelCase(
        path.name,
        mode,
        batch_size,
        run_signature,
        tuple(tensors),
        f"SavedModel {path} (serving_default)",
    )


def _is_keras_model(value: Any) -> bool:
    try:
        import keras
    except ImportError:
        return False
    return isinstance(value, keras.Model)
