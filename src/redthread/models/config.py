"""What every model config shares: a frozen dataclass, validated, to and from a plain dict."""

from __future__ import annotations

from dataclasses import asdict, fields

from redthread.errors import InvalidType, InvalidValue


class ConfigMixin:
    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict):
        unknown = sorted(set(d) - {f.name for f in fields(cls)})
        if unknown:
            raise InvalidValue(f"unknown {cls.__name__} field(s): {', '.join(unknown)}")
        return cls(**d)


def check_positive_ints(cfg, *names: str) -> None:
    for name in names:
        value = getattr(cfg, name)
        if not isinstance(value, int) or isinstance(value, bool):
            raise InvalidType(f"{name} must be a positive integer, got {value!r}")
        if value < 1:
            raise InvalidValue(f"{name} must be a positive integer, got {value!r}")


def check_dropout(value) -> None:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise InvalidType(f"dropout must be a number in [0, 1), got {value!r}")
    if not 0.0 <= value < 1.0:
        raise InvalidValue(f"dropout must be a number in [0, 1), got {value!r}")
