"""tfpgo.runtime: the program `pgo --lower iree` made, run from Python.

    step = tfpgo.runtime.load("pgo_out")    # the tuned program when --tune kept one
    outputs = step(x, y)                    # the tf.function's own arguments and outputs
    step.assign_to(model)                   # a training step's variables back into Keras

`load`, `Step` (tfpgo.runtime.step); `program.json` (tfpgo.runtime.manifest).
"""

from tfpgo.runtime.step import Step, load

__all__ = ["Step", "load"]
