"""The lowered program under IREE (`--lower iree`): compiled for this CPU, run on
the profiled inputs and checked against TensorFlow's outputs, its dispatches
profiled and attributed to tf ops (`run`); one program and its workload as the
tuning loop compiles, checks and times its variants (`program`)."""
