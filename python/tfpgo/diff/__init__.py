"""Comparing two op profiles (`profile_diff`): `compare` builds the record,
`step_time` the step-time interval, `output` the Markdown, HTML and picture."""

from tfpgo.diff.compare import ProfileDiff, compare

__all__ = ["ProfileDiff", "compare"]
