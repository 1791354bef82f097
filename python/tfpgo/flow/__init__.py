"""The whole flow (`bazel run //:pgo`): model -> profile -> trace -> MLIR ->
pictures -> report. `stages` runs it from `FlowOptions`; `pgo` is its command line."""
