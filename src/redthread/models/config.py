"""What every model config shares: a frozen dataclass, validated, to and from a plain dict.

A setting is declared once, on its field, by `setting(default, help, **bounds)`:

    n_head: int = setting(4, "attention heads per block (must divide d_model)", ge=1)

Everything else is read from that line: the command line's flag and its `--help` (`field_help`),
the validation (`check_settings`, called by the config's `__post_init__`), the checkpoint reader's
check of a stored config (`setting_problem`) and the web app's request schemas (the bounds are
named as pydantic and JSON Schema name them: ge >=, gt >, le <=, lt <). Nothing reads source code.
"""

from __future__ import annotations

import math
import numbers
import operator
import typing
from dataclasses import asdict, field, fields
from functools import cache
from typing import ClassVar

from redthread.errors import InvalidType, InvalidValue, check_int

SIGNS = {"ge": ">=", "gt": ">", "le": "<=", "lt": "<"}  # the bounds, by pydantic's names for them
COMPARE = {"ge": operator.ge, "gt": operator.gt, "le": operator.le, "lt": operator.lt}


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


def setting(default, help: str, **bounds):
    """A config field with its default, its one-line meaning and its bounds (ge, gt, le, lt), written once."""
    unknown = sorted(set(bounds) - set(SIGNS))
    if unknown:  # a misspelt bound would bound nothing
        raise InvalidType(f"setting() takes the bounds {', '.join(SIGNS)}, not {', '.join(unknown)}")
    return field(default=default, metadata={"help": help, "bounds": bounds})


def field_help(cls) -> dict[str, str]:
    """Each setting's meaning, as declared on its field: what `--help` shows for its flag."""
    return {f.name: f.metadata["help"] for f in fields(cls) if "help" in f.metadata}


def field_bounds(cls) -> dict[str, dict]:
    """Each number setting's declared bounds ({} when it has none): {"dropout": {"ge": 0, "lt": 1}, ...}."""
    return {f.name: f.metadata["bounds"] for f in fields(cls)
            if "bounds" in f.metadata and _kinds(cls)[f.name][0] in (int, float)}


@cache
def _kinds(cls) -> dict[str, tuple[type, bool]]:
    """Field -> (bool, int, float or str: what its annotation holds, whether None is allowed too)."""
    out = {}
    for name, hint in typing.get_type_hints(cls).items():
        options = typing.get_args(hint) or (hint,)
        kind = next((k for k in (bool, int, float, str) if k in options), None)
        out[name] = (kind, type(None) in options)
    return out


def _interval(bounds: dict) -> str:
    """{"ge": 0, "lt": 1} -> "in [0, 1)"; {"ge": 0} -> ">= 0"."""
    low = [k for k in ("ge", "gt") if k in bounds]
    high = [k for k in ("le", "lt") if k in bounds]
    if low and high:
        opening, closing = "[" if low[0] == "ge" else "(", "]" if high[0] == "le" else ")"
        return f"in {opening}{bounds[low[0]]}, {bounds[high[0]]}{closing}"
    return " and ".join(f"{SIGNS[k]} {v}" for k, v in bounds.items())


def expected_value(cls, name: str) -> str:
    """What setting `name` of `cls` takes, in words: "a positive integer", "a number in [0, 1)"."""
    kind, optional = _kinds(cls)[name]
    bounds = field_bounds(cls)[name]
    if kind is int and set(bounds) == {"ge"}:
        text = "a positive integer" if bounds["ge"] == 1 else f"an integer >= {bounds['ge']}"
    elif kind is float and bounds == {"gt": 0}:
        text = "a positive number"
    else:
        text = ("an integer" if kind is int else "a finite number" if not bounds else "a number") + (
            f" {_interval(bounds)}" if bounds else "")
    return text + (" (or none)" if optional else "")


def _within(value, bounds: dict) -> bool:
    return all(COMPARE[k](value, limit) for k, limit in bounds.items())


def setting_problem(cls, name: str, value) -> str | None:
    """None if `value` is one that number setting `name` of `cls` takes; else "type" (an integer
    setting given something else, bools included) or "value" (out of bounds; for a float setting also
    a bool, a string, NaN or an infinity, as the processors count them)."""
    kind, optional = _kinds(cls)[name]
    if value is None and optional:
        return None
    if kind is int and (not isinstance(value, numbers.Integral) or isinstance(value, bool)):
        return "type"
    if kind is float and (isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value)):
        return "value"
    return None if _within(value, field_bounds(cls)[name]) else "value"


def check_settings(cfg, wrong_type: type[Exception] = InvalidType) -> None:
    """Every number setting within its declared bounds, every switch true or false, every choice among
    `CHOICES`; else a one-line error naming the setting: `wrong_type` for an integer setting given
    something else (InvalidType, as `check_int`), InvalidValue for the rest."""
    cls = type(cfg)
    for name in field_bounds(cls):
        value = getattr(cfg, name)
        problem = setting_problem(cls, name, value)
        if problem is not None:
            error = wrong_type if problem == "type" else InvalidValue
            raise error(f"{name} must be {expected_value(cls, name)}, got {value!r}")
    for f in fields(cls):
        if "help" in f.metadata and _kinds(cls)[f.name][0] is bool and not isinstance(getattr(cfg, f.name), bool):
            raise InvalidValue(f"{f.name} must be true or false, got {getattr(cfg, f.name)!r}")
    for name, allowed in getattr(cls, "CHOICES", {}).items():
        if getattr(cfg, name) not in allowed:
            raise InvalidValue(f"{name} must be one of {', '.join(allowed)}; got {getattr(cfg, name)!r}")


def check_positive_ints(cfg, *names: str) -> None:
    for name in names:
        check_int(name, getattr(cfg, name))


def check_dropout(value) -> None:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise InvalidType(f"dropout must be a number in [0, 1), got {value!r}")
    if not 0.0 <= value < 1.0:
        raise InvalidValue(f"dropout must be a number in [0, 1), got {value!r}")
