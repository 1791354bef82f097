"""The lowered step, callable from Python as the user wrote it.

`load(output_dir)` reads `program.json` (tfpgo.runtime.manifest), loads the
program into IREE's runtime (the tuned one when `--tune` kept one) and returns a
`Step`: called with the `tf.function`'s own arguments (numpy arrays, tensors),
it returns the step's own nest of outputs (numpy arrays).

A training step is stateful. The variables it carries are IREE device buffers,
updated in place (tfpgo.mlir.tied_state):
each call's updated variables are the next call's parameters, with no copy to
the host; `variables()` copies them out by name, `assign_to` writes them into
TensorFlow's variables (then `tf.train.Checkpoint` and `model.save` see them).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tfpgo.errors import UserError
from tfpgo.iree.run import DEVICE, SYNC
from tfpgo.iree.target import host_features, refusal
from tfpgo.runtime import variables as step_variables
from tfpgo.runtime.manifest import DEFAULT, TUNED, ProgramManifest, Role, Tensor, values_path
from tfpgo.runtime.structure import flatten, unflatten

# IREE's CPU drivers: worker threads, or the calling thread alone.
DRIVERS = (DEVICE, SYNC)
# IREE's local-task driver builds its worker pool once a process, when it is
# first made; every device after shares it (iree.runtime caches the driver).
_process_threads: int | None = None


def load(
    output_dir: str | os.PathLike[str],
    program: str | None = None,
    threads: int | None = None,
    variables: Any = None,
    driver: str | None = None,
) -> Step:
    """The step of a `pgo --lower iree` output directory, ready to call.

    `program`: "tuned" (the default when `--tune` kept one) or "default".
    `threads`: IREE's worker threads (default: every core this process may use);
    one count a process, fixed by the first `load`.
    `variables`: where a training step starts from: the `tf.function` (its
    captured variables, optimizer slots included), a Keras model (its variables
    and its optimizer's), or a list of variables; by default the values the
    step was profiled from. `driver`: IREE's CPU driver, "local-task" (a pool of
    worker threads) or "local-sync" (every dispatch on the calling thread: one
    core, but no thread wake-up, which a loop in the program pays at every
    trip); by default the one program.json names for the program (local-sync
    where --tune measured it faster). Every problem is one UserError line."""
    check_driver(driver)
    directory = Path(output_dir)
    manifest = ProgramManifest.read(directory)
    chosen = program or (TUNED if TUNED in manifest.programs else DEFAULT)
    if chosen not in (DEFAULT, TUNED):
        raise UserError(f"program: {chosen!r} is no program; use 'tuned' or 'default'")
    if chosen not in manifest.programs:
        raise UserError(
            f"{directory}: --tune kept no tuned program here; load it with program='default'"
        )
    vmfb = directory / manifest.programs[chosen]
    if not vmfb.is_file():
        raise UserError(f"{vmfb}: no such file; the output directory is incomplete, lower again")
    why = refusal(manifest.target, vmfb, host_features())
    if why is not None:
        raise UserError(why)
    driver = manifest.drivers[chosen] if driver is None else driver
    step = Step(manifest, directory, vmfb, _threads(threads), driver)
    if variables is not None:
        step.start_from(variables)
    return step


def check_driver(driver: str | None) -> None:
    """`driver=` names one of IREE's CPU drivers (None: program.json's)."""
    if driver is not None and driver not in DRIVERS:
        raise UserError(
            f"driver: {driver!r} is no CPU driver of IREE's; use {' or '.join(DRIVERS)}"
        )


class Step:
    """One loaded program: call it as the step (module docstring)."""

    def __init__(
        self, manifest: ProgramManifest, directory: Path, vmfb: Path, threads: int, driver: str
    ):
        import iree.runtime as rt

        self.manifest, self.program, self.threads, self.driver = manifest, vmfb, threads, driver
        # IREE's objects are kept for the step's life: the VM instance, context
        # and module must outlive every call's buffers.
        self._device = rt.get_driver(driver).create_default_device()
        self._config = rt.Config(device=self._device)
        self._context = rt.SystemContext(config=self._config)
        try:
            self._module = rt.VmModule.mmap(self._config.vm_instance, str(vmfb))
            self._context.add_vm_module(self._module)
            self._function = self._context.modules[self._module.name][manifest.entry]
        except (RuntimeError, ValueError, KeyError) as error:
            first = str(error).strip().splitlines()[0] if str(error).strip() else type(error)
            raise UserError(
                f"{vmfb}: IREE cannot load it as the program of {directory / 'program.json'} "
                f"({first}); lower the model again"
            ) from None
        self._inputs = {p.index: p for p in manifest.parameters if p.role is Role.INPUT}
        self._state: dict[int, Any] = {}  # carried parameters: device buffers
        self.reset()

    def reset(self) -> None:
        """Every carried parameter back to its value in the profiled step."""
        import numpy as np

        values = {}
        for parameter in self.manifest.parameters:
            if parameter.role is Role.INPUT:
                continue
            path = values_path(self.program.parent, parameter)
            try:
                values[parameter.index] = np.load(path, allow_pickle=False)
            except (OSError, ValueError) as error:
                raise UserError(
                    f"{path}: cannot read the starting value of {parameter.name} ({error}); "
                    "lower the model again"
                ) from None
        self._put(values)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """One step on the step's own arguments; its outputs, nested as the step
        nests them (numpy arrays). A training step's variables advance."""
        results = self.call_flat(self._bind(args, kwargs))
        return unflatten(self.manifest.outputs, lambda index: host_array(results[index]))

    def call_flat(self, inputs: Mapping[int, Any]) -> tuple[Any, ...]:
        """One step on the input parameters by position (numpy); every result,
        as IREE's device arrays. The carried variables advance."""
        checked = {index: _checked(self._inputs[index], value) for index, value in inputs.items()}
        arguments = [
            checked[index] if index in self._inputs else self._state[index]
            for index in range(len(self.manifest.parameters))
        ]
        try:
            results = self._function(*arguments)
        except ValueError as error:  # IREE's word on a call it refused
            first = str(error).strip().splitlines()[0]
            raise UserError(f"{self.program}: IREE refused the call ({first})") from None
        if len(self.manifest.results) == 1:
            results = (results,)
        for result in self.manifest.results:
            if result.alias is not None:
                self._state[result.alias] = results[result.index]
        return tuple(results)

    def variables(self) -> dict[str, Any]:
        """The carried variables' current values (numpy), by name."""

        return {p.name: host_array(self._state[p.index]) for p in self.manifest.variables()}

    def start_from(self, source: Any) -> None:
        """Each carried variable that `source` has (tfpgo.runtime.variables), from
        its current value; the others keep theirs."""
        matched = step_variables.match(self.manifest, source)
        self._put({index: variable.numpy() for index, variable in matched.items()})

    def assign_to(self, target: Any) -> None:
        """Writes the carried variables into `target`'s (a `tf.function`, a Keras
        model or a list of variables, matched as `load(variables=...)` is)."""

        matched = step_variables.match(self.manifest, target)
        for index, variable in matched.items():
            variable.assign(host_array(self._state[index]))

    def _put(self, values: Mapping[int, Any]) -> None:
        import iree.runtime as rt

        for index, value in values.items():
            parameter = self.manifest.parameters[index]
            array = _checked(parameter, value, f"variable {parameter.name}")
            self._state[index] = rt.asdevicearray(self._device, array)

    def _bind(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[int, Any]:
        """The step's arguments, flattened to parameter positions."""
        signature = self.manifest.signature
        if len(args) > len(signature.positional):
            raise UserError(
                f"the step takes {len(signature.positional)} positional arguments "
                f"({', '.join(signature.positional)}), got {len(args)}"
            )
        bound = dict(zip(signature.positional, args, strict=False))  # fewer: by keyword
        for name, value in kwargs.items():
            if name in bound:
                raise UserError(f"argument {name}: given twice")
            if name not in signature.trees:
                raise UserError(f"argument {name}: the step has no such argument")
            bound[name] = value
        missing = [name for name in signature.trees if name not in bound]
        if missing:
            takes = _spelled(signature)
            raise UserError(f"argument {missing[0]}: missing (the step takes {takes})")
        flat: dict[int, Any] = {}
        for name, value in bound.items():
            flatten(signature.trees[name], value, name, flat)
        return flat


def _checked(tensor: Tensor, value: Any, what: str = "") -> Any:
    """`value` as a numpy array of `tensor`'s shape and dtype: an array or tensor
    must have them; a Python number or list is converted to the dtype."""
    import numpy as np

    what = what or f"argument {tensor.name}"
    typed = hasattr(value, "dtype")
    try:
        array = np.asarray(value) if typed else np.asarray(value, dtype=tensor.dtype)
    except (TypeError, ValueError) as error:
        raise UserError(f"{what}: not a tensor of {tensor.dtype} ({error})") from None
    expected = f"{tensor.dtype} of shape {list(tensor.shape)}"
    got = f"{array.dtype.name} of shape {list(array.shape)}"
    if tuple(array.shape) != tensor.shape:
        raise UserError(
            f"{what}: expected {expected}, got {got} (the program is compiled for the "
            "profiled shapes; profile the step at this shape to run it)"
        )
    if array.dtype.name != tensor.dtype:
        raise UserError(f"{what}: expected {expected}, got {got}; convert it to {tensor.dtype}")
    # not np.ascontiguousarray, which makes a scalar a 1-element vector
    return array if array.flags.c_contiguous else array.copy(order="C")


def host_array(value: Any) -> Any:
    """A device buffer's value as a numpy array of its own (the buffer may be
    the next call's parameter)."""
    import numpy as np

    return np.array(value.to_host(), copy=True)


def _spelled(signature: Any) -> str:
    keywords = [f"{name}=" for name in signature.keywords]
    return "(" + ", ".join([*signature.positional, *keywords]) + ")"


def _threads(asked: int | None) -> int:
    """The worker threads of this process's IREE runtime: set by the first load
    (before IREE's driver exists), the same for every load after."""
    import iree.runtime as rt

    global _process_threads
    wanted = asked if asked is not None else len(os.sched_getaffinity(0))
    if asked is not None and asked < 1:
        raise UserError(f"threads: {asked} is not a positive count of threads")
    if _process_threads is None:
        rt.flags.parse_flags(f"--task_topology_group_count={wanted}")
        _process_threads = wanted
    elif asked is not None and asked != _process_threads:
        raise UserError(
            f"threads: this process's IREE runtime already runs {_process_threads} threads (set "
            "by its first load); load with that count, or in a new process"
        )
    return _process_threads
