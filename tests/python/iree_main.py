"""StableHLO text compiled by IREE for this CPU and its `main` loaded into IREE's
Python runtime, for the tests that run a rewritten program as a user's code does."""

from collections.abc import Callable
from pathlib import Path
from typing import Any

from tfpgo.iree.run import DEVICE, compile_vmfb
from tfpgo.mlir.lowering import write_generic_stablehlo


def compiled_main(text: str, scratch: Path, name: str) -> tuple[Any, Callable[..., Any]]:
    """IREE's device and `main` of `text`, compiled under `scratch` as `name`; the
    returned function keeps its module and context alive."""
    import iree.runtime as rt

    source = scratch / f"{name}.mlir"
    write_generic_stablehlo(text, source)
    vmfb = scratch / f"{name}.vmfb"
    compile_vmfb(source, vmfb, timeout_s=300)
    device = rt.get_driver(DEVICE).create_default_device()
    config = rt.Config(device=device)
    context = rt.SystemContext(config=config)
    module = rt.VmModule.mmap(config.vm_instance, str(vmfb))
    context.add_vm_module(module)
    return device, context.modules[module.name]["main"]
