"""Analysers over the op profile: where the time of a step goes.

Layering (after MindSpore's profiler): the trace readers parse raw traces into
the op profile (`tfpgo.attribution.op_profile`); each analyser here is one small module
that turns the op profile into one typed breakdown (`op_type`, `scope`,
`phase`); `document` bundles them into `analysis.json`. Presentation (report
tables, the icicle chart in `tfpgo.render.icicle`) and any advice built on
top (a proposer) read the `Analysis` record and never the raw trace.
"""

from tfpgo.analysis.document import Analysis, analyse

__all__ = ["Analysis", "analyse"]
