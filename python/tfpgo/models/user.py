"""The user's own models: a Python hook file, a SavedModel, a `.keras` file.

The hook: a Python file that defines

    def tfpgo_model(batch_size: int):
        return model_or_function, example_inputs

where `model_or_function` is a `keras.Model` (profiled as an inference or a
training step like the built-ins) or a `tf.function` (profiled exactly as
written; the mode only names the step marker), and `example_inputs` is a tuple
of tensors (or one tensor) the step is called with, batch dimension included.

A SavedModel directory is profiled through one signature (inference only),
`serving_default` unless `--signature` names another: that concrete function is
both what runs and what is exported to MLIR. Example inputs follow the
signature, an unknown first dimension taking the batch size; an input the
signature does not size (unknown rank, other unknown dimensions) needs
`--input NAME=SHAPE[:DTYPE]`. Strings are `"0"`, `"1"`, ...
"""

from __future__ import annotations

import importlib.util
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from tfpgo.errors import UserError
from tfpgo.models.builtin import keras_case
from tfpgo.models.case import Mode, ModelCase

HOOK_NAME = "tfpgo_model"
# What TensorFlow's loader reads: the binary proto, the text proto, or a proto
# split into chunks (`saved_model.cpb`, TensorFlow's proto splitter).
SAVED_MODEL_FILES = ("saved_model.pb", "saved_model.pbtxt", "saved_model.cpb")


def check(path: Path) -> None:
    """Raises the UserError `load` gives for a path that is no kind of model,
    without importing or building anything."""
    if path.is_dir():
        if not any((path / name).exists() for name in SAVED_MODEL_FILES):
            raise UserError(f"{path}: directory has no saved_model.pb; pass a SavedModel")
    elif path.suffix not in (".keras", ".py"):
        raise UserError(
            f"{path}: unknown model file type; use a .py hook, a .keras file or a "
            "SavedModel directory"
        )
    elif path.suffix == ".keras":
        if not zipfile.is_zipfile(path):  # Keras would say "File not found" of it
            raise UserError(
                f"{path}: not a .keras archive (a .keras file is a zip; this one is corrupt "
                "or another format); save the model with model.save('name.keras')"
            )
    else:
        _check_hook_source(path)


def _check_hook_source(path: Path) -> None:
    """A hook file that cannot be read or compiled, found before TensorFlow loads."""
    try:
        source = path.read_bytes()
    except OSError as error:
        raise UserError(f"{path}: cannot read: {error.strerror}") from None
    try:
        compile(source, str(path), "exec")
    except (SyntaxError, ValueError) as error:
        raise UserError(f"{path}: importing failed: {type(error).__name__}: {error}") from None


def load(
    path: Path, mode: Mode, batch_size: int, choice: SignatureChoice | None = None
) -> ModelCase:
    """Dispatches on what `path` is: hook file, SavedModel dir or .keras file
    (`path` has passed `check`, as `tfpgo.models.load_model` ensures); `choice`
    applies to a SavedModel only."""
    if path.is_dir():
        return _saved_model(path, mode, batch_size, choice or SignatureChoice())
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
    except Exception as error:  # the user's code: name its own error, not the return shape
        detail = " ".join(str(error).split())
        raise UserError(
            f"{path}: {HOOK_NAME}({batch_size}) failed: {type(error).__name__}: {detail}"
        ) from None
    try:
        target, inputs = result
    except (TypeError, ValueError):
        raise UserError(
            f"{path}: {HOOK_NAME} must return (model_or_function, example_inputs), "
            f"not {type(result).__name__}"
        ) from None
    inputs = tuple(inputs) if isinstance(inputs, list | tuple) else (inputs,)
    if is_keras_model(target):
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


@dataclass(frozen=True)
class SignatureChoice:
    """Which signature of a SavedModel runs, and example inputs for the ones its
    signature does not size: `NAME=SHAPE[:DTYPE]` each (`--input`), SHAPE as
    `8x128` (`scalar` for rank 0), DTYPE a TensorFlow dtype name."""

    signature: str = "serving_default"
    inputs: tuple[str, ...] = ()


@dataclass(frozen=True)
class InputSpec:
    name: str
    shape: tuple[int, ...]
    dtype: str  # "" keeps the signature's


def parse_input(text: str) -> InputSpec:
    """One `--input NAME=SHAPE[:DTYPE]`; a UserError says what is wrong with it."""
    name, equals, rest = text.partition("=")
    shape_text, _, dtype = rest.partition(":")
    usage = f"--input {text}: expected NAME=SHAPE[:DTYPE], e.g. word=4:string or x=8x224x224x3"
    if not name or not equals or not shape_text:
        raise UserError(usage)
    if shape_text == "scalar":
        return InputSpec(name, (), dtype)
    dims = shape_text.replace(",", "x").split("x")
    # ASCII only: str.isdigit() also accepts "²" and other scripts' digits.
    if not all(dim.isascii() and dim.isdigit() for dim in dims):
        raise UserError(usage)
    return InputSpec(name, tuple(int(dim) for dim in dims), dtype)


def _saved_model(path: Path, mode: Mode, batch_size: int, choice: SignatureChoice) -> ModelCase:
    import tensorflow as tf

    if mode is not Mode.INFER:
        raise UserError(
            f"{path}: a SavedModel is profiled for inference only; use "
            "--mode infer or a hook file for training"
        )
    given = {spec.name: spec for spec in map(parse_input, choice.inputs)}
    try:
        loaded = tf.saved_model.load(str(path))
    except Exception as error:
        if not (path / "variables").is_dir() and "TensorSliceReader" in str(error):
            raise UserError(
                f"{path}: the SavedModel's variables/ directory is missing (its graph has "
                "variables to restore); copy the whole SavedModel directory"
            ) from None
        detail = " ".join(str(error).split())  # one line
        raise UserError(
            f"{path}: not a loadable SavedModel ({type(error).__name__}: {detail}); "
            "profile it through a .py hook that builds the model instead"
        ) from None
    signatures = sorted(loaded.signatures.keys())
    if not signatures:
        raise UserError(
            f"{path}: the SavedModel has no signatures to run; export one "
            "(tf.saved_model.save(obj, path, signatures=...)) or use a .py hook"
        )
    signature = loaded.signatures.get(choice.signature)
    if signature is None:
        raise UserError(
            f"{path}: no signature {choice.signature!r}; it has "
            f"{', '.join(signatures)}: choose one with --signature NAME"
        )
    _, kwargs_spec = signature.structured_input_signature
    unknown = sorted(given.keys() - kwargs_spec.keys())
    if unknown:
        raise UserError(
            f"--input {unknown[0]}: signature {choice.signature!r} of {path} has no such "
            f"input; its inputs: {', '.join(sorted(kwargs_spec))}"
        )
    rng = np.random.default_rng(0)
    names, tensors = [], []
    for name, spec in sorted(kwargs_spec.items()):
        shape, dtype = _example_shape(path, name, spec, given.get(name), batch_size)
        names.append(name)
        tensors.append(example_tensor(shape, dtype, rng, f"{path}: input {name!r}"))

    def run_signature(*xs: Any, _loaded: Any = loaded) -> Any:  # keeps `loaded` alive
        return signature(**dict(zip(names, xs, strict=True)))

    run_signature.get_concrete_function = lambda *_: signature  # type: ignore[attr-defined]
    return ModelCase(
        path.name,
        mode,
        batch_size,
        run_signature,
        tuple(tensors),
        f"SavedModel {path} ({choice.signature})",
    )


def _example_shape(
    path: Path, name: str, spec: Any, given: InputSpec | None, batch_size: int
) -> tuple[tuple[int, ...], Any]:
    """The shape and dtype of input `name`'s example: from --input, else from the
    signature with an unknown first dimension taken as the batch."""
    import tensorflow as tf

    if given is not None:
        try:
            dtype = tf.as_dtype(given.dtype) if given.dtype else spec.dtype
        except TypeError:
            raise UserError(f"--input {name}: unknown dtype {given.dtype!r}") from None
        if dtype != spec.dtype:
            raise UserError(
                f"--input {name}: dtype {dtype.name} does not match the signature's "
                f"{spec.dtype.name}; give :{spec.dtype.name} or leave the dtype out"
            )
        if not spec.shape.is_compatible_with(given.shape):
            raise UserError(
                f"--input {name}: shape {list(given.shape)} does not fit the signature's "
                f"{spec.shape}"
            )
        return given.shape, dtype
    flag = f"--input {name}=SHAPE[:DTYPE]"
    if spec.shape.rank is None:
        raise UserError(
            f"{path}: input {name!r} ({spec.dtype.name}) has an unknown rank; give example "
            f"inputs with {flag}, e.g. --input {name}=4"
        )
    dims = spec.shape.as_list()
    shape = [batch_size if i == 0 and dim is None else dim for i, dim in enumerate(dims)]
    if any(dim is None for dim in shape):
        raise UserError(
            f"{path}: input {name!r} has unknown dimensions {dims}; give example inputs with {flag}"
        )
    return tuple(shape), spec.dtype


def example_tensor(shape: tuple[int, ...], dtype: Any, rng: Any, what: str) -> Any:
    """Deterministic example values of any dtype a signature takes: normal floats,
    small integers, booleans, and strings `"0"`, `"1"`, ...; for another dtype
    (variant, resource) one error line naming `what` needs it."""
    import tensorflow as tf

    size = int(np.prod(shape)) if shape else 1
    if dtype == tf.string:
        values = np.array([str(i).encode() for i in range(size)], dtype=object).reshape(shape)
    elif dtype.is_bool:
        values = rng.integers(0, 2, shape).astype(bool)
    elif dtype.is_integer:
        values = rng.integers(0, 8, shape).astype(dtype.as_numpy_dtype)
    elif dtype.is_floating or dtype.is_complex:
        values = rng.standard_normal(shape).astype(dtype.as_numpy_dtype)
    else:
        raise UserError(
            f"{what} is a {dtype.name} tensor, which tfpgo cannot make example values for; "
            "profile the model through a .py hook that builds its inputs"
        )
    return tf.constant(values, dtype=dtype)


def is_keras_model(value: Any) -> bool:
    try:
        import keras
    except ImportError:
        return False
    return isinstance(value, keras.Model)
