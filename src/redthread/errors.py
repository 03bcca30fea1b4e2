"""The one exception type that reaches the user, in the kinds Python code expects.

Anything that is the user's fault (a missing file, a bad flag value, a checkpoint that
does not fit) raises `RedthreadError` with a one-line message naming the problem. The CLI
prints it as `error: <message>` and exits non-zero, without a traceback.

Library users catch errors the Python way: the subclasses are also the built-in kind, so
`except ValueError` catches `rt.generate(model, idx, 10, top_p=0)` and `except
FileNotFoundError` catches `rt.load_checkpoint("nowhere")`, while `except RedthreadError`
still catches them all.

    RedthreadError              the base: any user-facing error
      InvalidValue(ValueError)  a value out of range or malformed (top_p=0, n_head not dividing d_model)
      InvalidType(TypeError)    a value of the wrong type (n_layer="2")
      MissingFile(FileNotFoundError)   a file or folder that is not there
"""

from numbers import Integral


class RedthreadError(Exception):
    """A user-facing error: one line, names the bad input."""


class InvalidValue(RedthreadError, ValueError):
    """A value out of range or malformed."""


class InvalidType(RedthreadError, TypeError):
    """A value of the wrong type."""


class MissingFile(RedthreadError, FileNotFoundError):
    """A file or folder that is not there."""

    def __str__(self) -> str:  # one line, as given (OSError's str would add nothing, but be explicit)
        return str(self.args[0]) if self.args else ""


def check_int(name: str, value, minimum: int = 1) -> int:
    """`value` if it is an integer >= minimum (a bool is not); else InvalidType or InvalidValue naming `name`."""
    wanted = "a positive integer" if minimum == 1 else f"an integer >= {minimum}"
    if not isinstance(value, Integral) or isinstance(value, bool):  # numpy's integers are Integral too
        raise InvalidType(f"{name} must be {wanted}, got {value!r}")
    if value < minimum:
        raise InvalidValue(f"{name} must be {wanted}, got {value!r}")
    return value
