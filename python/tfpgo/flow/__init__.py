"""The whole flow (`bazel run //:pgo`): model -> profile -> trace -> MLIR ->
pictures -> report. `stages` runs it from `FlowOptions`; `pgo` is its command line.
`trace_reader` is the trace stage's entry and command line: the event DAG
(`tfpgo.trace`) and the profiles (`tfpgo.attribution`) from one read."""
