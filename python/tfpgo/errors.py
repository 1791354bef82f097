"""The one exception type for problems with the user's input.

Every stage raises `UserError` with one line that names the file, the problem
and what to do; the command lines (`tfpgo.cli.run_main`) print it and exit 1.
Anything else escaping a stage is a bug in tfpgo.
"""


class UserError(Exception):
    """A problem with the user's input: reported as one line, exit status 1."""
