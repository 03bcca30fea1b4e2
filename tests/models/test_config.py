"""One source for every setting: each config field declares its default, meaning and bounds once
(models/config.py's `setting`), and the CLI help, the validation, the checkpoint's config check and
the web app's OpenAPI schema all agree with it, field by field."""

from __future__ import annotations

import inspect
import json
from dataclasses import fields
from pathlib import Path

import pytest
from safetensors import safe_open
from safetensors.torch import load_file, save_file

import redthread as rt
from redthread.cli import build_parser
from redthread.errors import RedthreadError
from redthread.generate.config import SampleConfig
from redthread.models.config import expected_value, field_bounds, field_help, setting_problem
from redthread.models.transformer import TransformerConfig
from redthread.train.loop import TrainConfig

SRC = Path(__file__).resolve().parents[2] / "src" / "redthread"
CONFIGS = (TransformerConfig, TrainConfig, SampleConfig)
SMALL = dict(vocab_size=11, block_size=8, n_layer=1, n_head=1, d_model=8)  # n_head 1: any d_model divides


def outside(kind: type, bounds: dict) -> list:
    """Values just outside each bound, and one of the wrong kind."""
    step = 1 if kind is int else 1e-6
    below = {"ge": lambda v: v - step, "gt": lambda v: v, "le": lambda v: v + step, "lt": lambda v: v}
    return [below[k](v) for k, v in bounds.items()] + ["1"]


def cases(cls) -> list:
    kinds = {f.name: (int if "int" in str(f.type) else float) for f in fields(cls)}
    return [pytest.param(cls, name, value, id=f"{cls.__name__}.{name}={value!r}")
            for name, bounds in field_bounds(cls).items() for value in outside(kinds[name], bounds)]


def build(cls, **change):
    base = SMALL if cls is TransformerConfig else {}
    if cls is TrainConfig and "lr" in change:  # lr must stay >= min_lr
        base = {"min_lr": 0.0}
    return cls(**{**base, **change})


def flag_help(parser, command: str) -> dict[str, str]:
    sub = next(a for a in parser._actions if a.dest == "command").choices[command]
    return {a.dest: a.help for a in sub._actions if a.help}


def test_every_setting_declares_its_meaning_and_the_cli_shows_it():
    parser = build_parser()
    shown = {TransformerConfig: flag_help(parser, "train"), TrainConfig: flag_help(parser, "train"),
             SampleConfig: flag_help(parser, "sample")}
    for cls in CONFIGS:
        helps = field_help(cls)
        assert set(helps) == {f.name for f in fields(cls)}, cls  # every field says what it is
        for name, text in helps.items():
            if name not in ("vocab_size", "src_vocab_size"):  # set by the tokenizer, not by a flag
                assert shown[cls][name].startswith(text), (cls, name)
        assert all(getattr(cls(), f.name) == f.default == getattr(cls, f.name) for f in fields(cls))


@pytest.mark.parametrize("cls, name, value", [*cases(TransformerConfig), *cases(TrainConfig), *cases(SampleConfig)])
def test_the_validation_refuses_what_the_bounds_refuse(cls, name, value):
    assert setting_problem(cls, name, value) is not None
    with pytest.raises(RedthreadError) as e:
        build(cls, **{name: value})
    message = str(e.value)
    assert name in message and "\n" not in message
    if cls is TrainConfig and name in ("lr", "min_lr") and not isinstance(value, str):
        assert message.startswith("need lr > 0 and 0 <= min_lr <= lr")  # the two in one line, as before
    elif cls is not SampleConfig:  # the processors say it in their words: checked against the bounds below
        assert message == f"{name} must be {expected_value(cls, name)}, got {value!r}"


@pytest.mark.parametrize("cls", [TransformerConfig, TrainConfig, SampleConfig])
def test_the_validation_takes_every_value_the_bounds_take(cls):
    for name, bounds in field_bounds(cls).items():
        for limit in (v for k, v in bounds.items() if k in ("ge", "le")):
            if cls is TrainConfig and name == "lr":
                continue  # lr has gt only
            assert setting_problem(cls, name, limit) is None
            assert getattr(build(cls, **{name: limit}), name) == limit


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    path = tmp_path_factory.mktemp("run") / "checkpoint.safetensors"
    rt.save_checkpoint(path, rt.TransformerLM(TransformerConfig(**SMALL)))
    with safe_open(str(path), "pt") as f:
        meta = f.metadata()
    return path, meta, load_file(path)


@pytest.mark.parametrize("name, value", [(c.values[1], c.values[2]) for c in cases(TransformerConfig)
                                         if not isinstance(c.values[2], str)])
def test_the_checkpoint_check_refuses_what_the_bounds_refuse(saved, tmp_path, name, value):
    path, meta, tensors = saved
    config = {**json.loads(meta["config"]), name: value}
    bad = tmp_path / "checkpoint.safetensors"
    save_file(tensors, bad, metadata={**meta, "config": json.dumps(config)})
    with pytest.raises(RedthreadError) as e:
        rt.load_checkpoint(bad)
    assert str(e.value) == (f"corrupt checkpoint {bad}: metadata 'config' field {name} is {value!r}, "
                            f"not {expected_value(TransformerConfig, name)}")


OPENAPI = {"minimum": "ge", "exclusiveMinimum": "gt", "maximum": "le", "exclusiveMaximum": "lt"}


def schema_bounds(prop: dict) -> dict:
    number = next((p for p in prop.get("anyOf", [prop]) if p.get("type") in ("integer", "number")), {})
    return {OPENAPI[k]: v for k, v in number.items() if k in OPENAPI}


def test_the_openapi_schema_has_the_validations_bounds_for_every_sampling_field(tmp_path):
    from redthread.serve.app import create_app

    schemas = create_app(tmp_path).openapi()["components"]["schemas"]
    step = schemas["StepRequest"]["properties"]
    assert set(field_bounds(SampleConfig)) <= set(step)
    for name, bounds in field_bounds(SampleConfig).items():
        # FastAPI's OpenAPI models hold bounds as floats: the seed's 2**64 - 1 is written 1.8446744073709552e19
        assert schema_bounds(step[name]) == {k: float(v) for k, v in bounds.items()}, name
        assert step[name]["description"] == field_help(SampleConfig)[name]
        assert step[name].get("default") == getattr(SampleConfig, name)
        for key, limit in bounds.items():  # at each bound the schema and the validation say the same
            inclusive = key in ("ge", "le")
            try:
                SampleConfig(**{name: limit})
                taken = True
            except RedthreadError:
                taken = False
            assert taken == inclusive, (name, key, limit)
    for name, prop in schemas["NextRequest"]["properties"].items():
        if name in field_bounds(SampleConfig):
            assert schema_bounds(prop) == schema_bounds(step[name]), name


def test_min_p_zero_is_taken_everywhere_as_off():
    from redthread.serve.requests import StepRequest, sampling

    assert field_bounds(SampleConfig)["min_p"] == {"ge": 0, "le": 1}
    request = StepRequest.model_validate({"model": "lm", "text": "to be", "min_p": 0})  # the web app takes it
    assert sampling(request).build_processors() == SampleConfig(min_p=0).build_processors() == ([], False)


def test_no_source_is_read_at_run_time(monkeypatch):
    calls = []

    def refuse(*args, **kwargs):
        calls.append(args)
        raise OSError("could not get source code")  # an unreadable checkout, a zipped app, .pyc only

    for name in ("getsource", "getsourcelines", "findsource"):
        monkeypatch.setattr(inspect, name, refuse)
    for cls in CONFIGS:
        assert field_help(cls)
    parser = build_parser()
    for command in ("train", "sample"):
        assert flag_help(parser, command)
    assert calls == []
    readers = [str(p.relative_to(SRC)) for p in SRC.rglob("*.py") if "getsource" in p.read_text(encoding="utf-8")]
    assert readers == []
