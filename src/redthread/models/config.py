"""What every model config shares: a frozen dataclass, validated, to and from a plain dict."""

from __future__ import annotations

from dataclasses import asdict, fields
from typing import ClassVar

from redthread.errors import InvalidType, InvalidValue, check_int


class ConfigMixin:
    RENAMED: ClassVar[dict[str, str]] = {}  # an old field name -> its name now: checkpoints saved before still load

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict):
        d = {cls.RENAMED.get(k, k): v for k, v in d.items()}
        unknown = sorted(set(d) - {f.name for f in fields(cls)})
        if unknown:
            raise InvalidValue(f"unknown {cls.__name__} field(s): {', '.join(unknown)}")
        return cls(**d)


def check_positive_ints(cfg, *names: str) -> None:
    for name in names:
        check_int(name, getattr(cfg, name))


def check_dropout(value) -> None:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise InvalidType(f"dropout must be a number in [0, 1), got {value!r}")
    if not 0.0 <= value < 1.0:
        raise InvalidValue(f"dropout must be a number in [0, 1), got {value!r}")


def field_help(cls) -> dict[str, str]:
    """Each field's meaning, read from the comment on its line in the class's source: the one place
    it is written, shown by `--help` (`field: int = 4  # attention heads per block` -> "attention heads per block")."""
    import inspect
    import io
    import tokenize

    source = inspect.getsource(cls)
    comments = {t.start[0]: t.string.lstrip("#").strip()
                for t in tokenize.generate_tokens(io.StringIO(source).readline) if t.type == tokenize.COMMENT}
    lines = source.splitlines()
    names = {f.name for f in fields(cls)}
    out = {}
    for number, line in enumerate(lines, start=1):
        name = line.strip().split(":", 1)[0]
        if line.startswith("    ") and not line.startswith("     ") and name in names and number in comments:
            out[name] = comments[number]
    return out
