"""The one exception type that reaches the user.

Anything that is the user's fault (a missing file, a bad flag value, a checkpoint that
does not fit) raises `RedthreadError` with a one-line message naming the problem. The CLI
prints it as `error: <message>` and exits non-zero, without a traceback.
"""


class RedthreadError(Exception):
    """A user-facing error: one line, names the bad input."""
