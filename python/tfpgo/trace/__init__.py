"""From a trace to events: readers (by content) -> the typed event table ->
filters -> the event DAG (`mlir_graph.json`). Turning the events into profiles is
`tfpgo.attribution`'s; `tfpgo.flow.trace_reader` runs both."""
