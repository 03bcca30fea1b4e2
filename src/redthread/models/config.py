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
