"""From a trace to profiles: readers (by content) -> the typed event table ->
filters -> the event DAG (`mlir_graph.json`), the per-op profile
(`op_profile.json`) and, for XLA steps, the HLO profile (`hlo_profile.json`).
`trace_reader` is the stage's library entry and command line."""
