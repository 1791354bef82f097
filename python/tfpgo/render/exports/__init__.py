"""Files for the tools people already use: Model Explorer, Perfetto/chrome://tracing, CSV."""

from tfpgo.render.exports.csv_export import op_profile_rows, write_csv
from tfpgo.render.exports.model_explorer import model_explorer_node_data, write_model_explorer
from tfpgo.render.exports.trace_events import trace_events, write_trace_events

__all__ = [
    "model_explorer_node_data",
    "op_profile_rows",
    "trace_events",
    "write_csv",
    "write_model_explorer",
    "write_trace_events",
]
