"""Checkpoints: safetensors for every tensor, JSON for everything else, one file, never pickle.

A checkpoint file `checkpoint.safetensors` holds
- tensors: `model.<name>` (weights), `optim.<i>.<name>` (optimizer moments), `rng.<name>`
  (the generator states that make a resumed run identical to an uninterrupted one);
- metadata (JSON strings in the safetensors header): the format, the model class and its
  config, the tokenizer, the training config, the step, the optimizer's scalar state.
So one file is self-contained: `load_checkpoint` needs nothing else. Readable copies of the
config and tokenizer are written beside it (`config.json`, `tokenizer.json`) for people.

Writes are atomic: a temporary file in the same folder, flushed to disk, then renamed into
place, so an interrupted save never leaves a half-written checkpoint behind.

Reads trust nothing in the file: a missing, unreadable, irregular (a folder, a FIFO), truncated
or garbled file, a metadata value of the wrong kind, a tensor of the wrong name, dtype or shape,
NaN or infinite weights: each is one `RedthreadError` line naming the file and the key or tensor
at fault. A checkpoint good enough to sample from may still lack what resuming needs (optimizer
state, training config, run settings, RNG states): `Checkpoint.require_resumable` refuses it.
"""

from __future__ import annotations

import json
import math
import os
import types
import typing
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import torch
from safetensors import safe_open
from safetensors.torch import save_file
from torch import nn

from redthread.data.shipped_models import shipped_model_file, shipped_models
from redthread.errors import InvalidType, InvalidValue, MissingFile, RedthreadError
from redthread.files import atomic_write, atomic_write_text, irregular_kind
from redthread.models.config import expected_value, field_bounds, setting_problem
from redthread.models.registry import MODELS, build_model, load_weights

FORMAT = "redthread-checkpoint/1"
FILENAME = "checkpoint.safetensors"
REQUIRED_KEYS = ("format", "model_class", "config", "aliases", "step", "tokenizer")
OPTIONAL_KEYS = ("train_config", "extra", "optimizer")  # inference needs none of them; resuming needs all
CPU_RNG = ("torch", "data")  # the CPU generator states the training loop saves (train/loop.py)
_ABSENT = object()


@dataclass
class Checkpoint:
    """Everything a checkpoint file holds, rebuilt.

    `path` is the file it was read from; `absent` names the optional metadata keys the file
    lacks (OPTIONAL_KEYS): sampling and evaluating do without them, resuming does not.
    """

    model: nn.Module
    model_class: str
    config: dict
    step: int = 0
    tokenizer: Any = None
    train_config: dict | None = None
    optimizer_state: dict | None = None
    rng: dict[str, torch.Tensor] = field(default_factory=dict)
    extra: dict = field(default_factory=dict)
    path: Path | None = None
    absent: tuple[str, ...] = ()

    def require_resumable(self, optimizer: torch.optim.Optimizer | None = None) -> None:
        """Refuse, in one line, to resume from a checkpoint that cannot continue its run exactly.

        Resuming needs the optimizer's moments, the training config, the run settings (`extra`)
        and the RNG states: without one of them a resumed run would silently start from fresh
        state or defaults. Given the optimizer about to load the saved state, also check that the
        state fits it (torch checks the group count with a traceback, the moments' shapes never).
        """
        lacking = {
            "optimizer state": self.optimizer_state is None,
            "training config": self.train_config is None,
            "run settings (metadata 'extra')": "extra" in self.absent,
            "RNG state": not all(name in self.rng for name in CPU_RNG),
        }
        missing = [what for what, lacks in lacking.items() if lacks]
        if missing:
            raise InvalidValue(f"{self.path} has no {missing[0]}: it cannot be resumed exactly; start a new run "
                                 "(--overwrite), or sample and evaluate this one as it is")
        if optimizer is not None:
            _check_optimizer_fits(self.path, self.optimizer_state, optimizer)


def checkpoint_path(path: str | os.PathLike) -> Path:
    """A run folder or a checkpoint file -> the checkpoint file (a `.safetensors` path is always the file)."""
    path = Path(path)
    if path.suffix == ".safetensors":
        return path
    return path / FILENAME if path.is_dir() or not path.suffix else path


def run_file(path: str | os.PathLike) -> Path:
    """The checkpoint file to read for a run folder, a checkpoint file or a shipped reference model's name
    (`shakespeare-transformer`: data/shipped_models.py). A file or folder that exists is always what it is;
    a name is looked up among the shipped models only where nothing of that name exists, so a run of
    one's own is never shadowed. Reading only: every write goes to the path as given."""
    file = checkpoint_path(path)
    if not os.path.lexists(path) and not os.path.lexists(file):
        shipped = shipped_model_file(os.fspath(path))
        if shipped is not None:
            return shipped
    return file


def header_model_class(path: str | os.PathLike) -> str | None:
    """The model class a checkpoint's header names, read without its tensors (a catalogue of runs reads
    many); None for a safetensors file that names none. A truncated or garbled file raises what
    safetensors raises: the caller says which run is unavailable."""
    with safe_open(str(run_file(path)), framework="pt") as f:
        return (f.metadata() or {}).get("model_class")


def _model_tensors(model: nn.Module) -> tuple[dict[str, torch.Tensor], dict[str, str]]:
    """State dict with shared tensors (tied weights) stored once, plus the aliases to restore them."""
    tensors, aliases, seen = {}, {}, {}
    for name, t in model.state_dict().items():
        key = (t.untyped_storage().data_ptr(), t.storage_offset(), tuple(t.shape))
        if key in seen:
            aliases[name] = seen[key]
            continue
        seen[key] = name
        tensors[f"model.{name}"] = t.detach().contiguous().cpu()
    return tensors, aliases


def _optimizer_tensors(optimizer: torch.optim.Optimizer) -> tuple[dict[str, torch.Tensor], dict]:
    sd = optimizer.state_dict()
    tensors, scalars = {}, {}
    for i, state in sd["state"].items():
        for name, value in state.items():
            if isinstance(value, torch.Tensor):
                tensors[f"optim.{i}.{name}"] = value.detach().contiguous().cpu()
            else:
                scalars[f"{i}.{name}"] = value
    return tensors, {"param_groups": sd["param_groups"], "scalars": scalars}


def save_checkpoint(
    path: str | os.PathLike,
    model: nn.Module,
    optimizer: torch.optim.Optimizer | None = None,
    step: int = 0,
    tokenizer: Any = None,
    train_config: dict | None = None,
    rng: dict[str, torch.Tensor] | None = None,
    extra: dict | None = None,
) -> Path:
    """Write model (+ optimizer, tokenizer, RNG states) to `path` (a run folder or a .safetensors file)."""
    path = checkpoint_path(path)
    model_class = type(model).__name__
    if model_class not in MODELS:
        raise InvalidType(f"cannot checkpoint {model_class}: not in redthread.models.registry")
    tensors, aliases = _model_tensors(model)
    meta = {
        "format": FORMAT,
        "model_class": model_class,
        "config": json.dumps(model.cfg.to_dict()),
        "aliases": json.dumps(aliases),
        "step": str(step),
        "train_config": json.dumps(train_config),
        "extra": json.dumps(extra or {}),
        "tokenizer": tokenizer.to_json() if tokenizer is not None else "null",
    }
    if optimizer is not None:
        optim_tensors, optim_meta = _optimizer_tensors(optimizer)
        tensors.update(optim_tensors)
        meta["optimizer"] = json.dumps(optim_meta)
    for name, t in (rng or {}).items():
        tensors[f"rng.{name}"] = t.detach().contiguous().cpu()

    atomic_write(path, lambda tmp: save_file(tensors, tmp, metadata=meta))
    readable = {"model_class": model_class, "config": model.cfg.to_dict(), "train_config": train_config, "step": step}
    atomic_write_text(path.parent / "config.json", json.dumps(readable, indent=2))
    if tokenizer is not None:
        atomic_write_text(path.parent / "tokenizer.json", meta["tokenizer"])
    return path


def read_checkpoint(path: str | os.PathLike, map_location: str | torch.device = "cpu") -> Checkpoint:
    """Read and rebuild everything in a checkpoint; any defect is a one-line RedthreadError.

    The file is trusted in nothing: its kind and permissions are checked before it is opened,
    every metadata value is parsed and checked against what `save_checkpoint` writes, every
    tensor name parsed, every weight and optimizer moment checked finite, every RNG state
    checked loadable. The error names the file and the key or tensor at fault.

    Tensors are read on the CPU; the model then moves to `map_location`. RNG states stay on
    the CPU (torch.set_rng_state wants a CPU ByteTensor) and the optimizer moves its moments
    to its parameters' device when it loads them.
    """
    given, path = path, run_file(path)
    _check_file(path, given)
    meta, tensors = _read_file(path)
    for key in REQUIRED_KEYS:
        _text(path, meta, key)
    _check_tensors(path, tensors)
    model_class = _model_class(path, meta)
    config = _json_value(path, meta, "config", dict)
    step = _step(path, meta)
    train_config = _json_value(path, meta, "train_config", (dict, type(None)), default=None)
    extra = _json_value(path, meta, "extra", dict, default={})
    optimizer_state = _optimizer_state(path, meta, tensors)
    model = _build_model(path, model_class, config, _model_state(path, meta, tensors))
    tokenizer = _tokenizer(path, _text(path, meta, "tokenizer"), getattr(model.cfg, "vocab_size", None))
    model.to(map_location)
    return Checkpoint(
        model=model,
        model_class=model_class,
        config=config,
        step=step,
        tokenizer=tokenizer,
        train_config=train_config,
        optimizer_state=optimizer_state,
        rng={k[len("rng.") :]: t for k, t in tensors.items() if k.startswith("rng.")},
        extra=extra,
        path=path,
        absent=tuple(key for key in OPTIONAL_KEYS if key not in meta),
    )


def _corrupt(path: Path, what: str) -> InvalidValue:
    return InvalidValue(f"corrupt checkpoint {path}: {what}")


def _first_line(error: BaseException) -> str:
    return (str(error).strip().splitlines() or [type(error).__name__])[0]


def _show(value: Any, limit: int = 60) -> str:
    """A value for an error message: repr'd on one line, cut short."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


# --- the file ------------------------------------------------------------------------------------

def _runs_nearby(path: Path, shown: int = 8) -> str:
    """For a missing run: the runs that do exist beside it, the closest name first ("; did you mean ...")."""
    import difflib

    folder = path.parent if path.name == FILENAME else path
    try:
        runs = sorted(p.parent.name for p in folder.parent.glob(f"*/{FILENAME}"))
    except OSError:
        return ""
    if not runs:
        return f" (and no run beside it in {folder.parent})"
    close = [r for r in runs if r.startswith(folder.name)] or difflib.get_close_matches(folder.name, runs, n=1)
    more = f" and {len(runs) - shown} more" if len(runs) > shown else ""
    guess = f"; did you mean {folder.parent / close[-1]}?" if close else ""
    return f"{guess} (runs in {folder.parent}: {', '.join(runs[:shown])}{more})"


def _shipped_hint(name: str) -> str:
    """'; did you mean X? (shipped models: ...)' for a name that is no shipped model."""
    import difflib

    names = shipped_models()
    if not names:
        return " (this install ships none)"
    close = difflib.get_close_matches(name, names, n=1)
    return (f"; did you mean {close[0]}?" if close else "") + f" (shipped models: {', '.join(names)})"


def _check_file(path: Path, given: str | os.PathLike | None = None) -> None:
    """Stat before opening: a missing, unreadable or irregular file is refused with the real reason.

    A folder or a device is refused, and so is a FIFO, whose opening would block until a writer
    came; a file the process may not read says so instead of "No such file or directory".
    `given`: what the caller named (a bare name that is missing also gets the shipped models' names).
    """
    try:
        kind = irregular_kind(path)
    except FileNotFoundError:
        bare = given is not None and not os.path.dirname(os.fspath(given))  # a name, perhaps a shipped model's
        shipped = f", and no shipped model of that name{_shipped_hint(os.fspath(given))}" if bare else ""
        raise MissingFile(f"no checkpoint at {path}{_runs_nearby(path)}{shipped}") from None
    except OSError as e:
        raise RedthreadError(f"cannot read checkpoint {path}: {e.strerror or e}") from None
    if kind == "a folder":
        raise RedthreadError(f"cannot read checkpoint {path}: it is a folder, not a file")
    if kind is not None:
        raise RedthreadError(f"cannot read checkpoint {path}: it is {kind}, not a regular file")
    try:
        with open(path, "rb"):
            pass
    except OSError as e:
        raise RedthreadError(f"cannot read checkpoint {path}: {e.strerror or e}") from None


def _read_file(path: Path) -> tuple[dict[str, str], dict[str, torch.Tensor]]:
    """The metadata and every tensor; a file that safetensors cannot parse, or one that is not ours, is refused."""
    try:
        with safe_open(str(path), framework="pt", device="cpu") as f:
            meta = f.metadata() or {}
            if meta.get("format") != FORMAT:
                raise InvalidValue(f"{path} is not a redthread checkpoint "
                                     f"(metadata 'format' is {_show(meta.get('format'))}, not {FORMAT!r})")
            tensors = {k: f.get_tensor(k) for k in f.keys()}
    except RedthreadError:
        raise
    except Exception as e:  # safetensors raises several types for truncated or garbled files
        raise InvalidValue(f"corrupt or truncated checkpoint {path}: {_first_line(e)}") from None
    return meta, tensors


# --- metadata ------------------------------------------------------------------------------------

_KIND_NAMES = {dict: "a JSON object", list: "a JSON list", str: "a JSON string", type(None): "null",
               bool: "a JSON boolean", int: "a JSON number", float: "a JSON number"}


def _json_value(path: Path, meta: dict[str, str], key: str, kinds: type | tuple[type, ...], default: Any = _ABSENT) -> Any:
    """The JSON value under a metadata key, of one of `kinds`; a missing key is `default` (or an error when there is none)."""
    if key not in meta:
        if default is _ABSENT:
            raise _corrupt(path, f"metadata '{key}' is missing")
        return default
    try:
        value = json.loads(meta[key])
    except ValueError as e:
        raise _corrupt(path, f"metadata '{key}' is not JSON ({e})") from None
    kinds = kinds if isinstance(kinds, tuple) else (kinds,)
    if not isinstance(value, kinds):
        expected = " or ".join(_KIND_NAMES[k] for k in kinds)
        raise _corrupt(path, f"metadata '{key}' is {_KIND_NAMES.get(type(value), type(value).__name__)}, not {expected}")
    return value


def _text(path: Path, meta: dict[str, str], key: str) -> str:
    if key not in meta:
        raise _corrupt(path, f"metadata '{key}' is missing")
    return meta[key]


def _model_class(path: Path, meta: dict[str, str]) -> str:
    name = _text(path, meta, "model_class")
    if name not in MODELS:
        raise _corrupt(path, f"metadata 'model_class' is {_show(name)}, not a model class redthread knows ({', '.join(MODELS)})")
    return name


def _step(path: Path, meta: dict[str, str]) -> int:
    text = _text(path, meta, "step")
    if not (text.isascii() and text.isdigit() and len(text) <= 18):
        raise _corrupt(path, f"metadata 'step' is {_show(text)}, not a step count (a non-negative integer)")
    return int(text)


def _model_state(path: Path, meta: dict[str, str], tensors: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The model's state dict: its stored tensors, and the tied ones restored from `aliases`."""
    aliases = _json_value(path, meta, "aliases", dict)
    state = {k[len("model.") :]: t for k, t in tensors.items() if k.startswith("model.")}
    for name, target in aliases.items():
        if not isinstance(target, str) or target not in state:
            raise _corrupt(path, f"metadata 'aliases' ties {name} to {_show(target)}, which is no tensor in the file")
        if name in state:
            raise _corrupt(path, f"metadata 'aliases' ties {name} to {target}, but {name} is stored itself")
    return {**state, **{name: state[target] for name, target in aliases.items()}}


def _tokenizer(path: Path, text: str, vocab_size: int | None) -> Any:
    """The tokenizer, or None when the run has none ("null"); it must not outnumber the model's vocabulary."""
    if text == "null":
        return None
    from redthread.data.tokenizers import tokenizer_from_json

    try:
        tokenizer = tokenizer_from_json(text)
    except Exception as e:  # RedthreadError for what it recognises as corrupt, anything for what it does not
        raise _corrupt(path, f"metadata 'tokenizer': {_first_line(e)}") from None
    if vocab_size is not None and tokenizer.vocab_size > vocab_size:
        raise _corrupt(path, f"metadata 'tokenizer' has {tokenizer.vocab_size} tokens, the model only {vocab_size}")
    return tokenizer


# --- the model -----------------------------------------------------------------------------------


def _build_model(path: Path, model_class: str, config: dict, state: dict[str, torch.Tensor]) -> nn.Module:
    """The model of `config`, holding the stored weights; a config that does not build it, or
    weights that do not fit it, name the metadata key or the tensor."""
    _check_config_types(path, MODELS[model_class][1], config)
    try:
        model = build_model(model_class, config)
    except Exception as e:  # a config of the wrong shape reaches constructors that raise anything
        raise _corrupt(path, f"metadata 'config' does not build the 'model_class' {model_class}: {_first_line(e)}") from None
    _check_weights_fit(path, model.state_dict(), state)
    model.load_state_dict(state)
    return model


def _check_weights_fit(path: Path, own: dict[str, torch.Tensor], state: dict[str, torch.Tensor]) -> None:
    """The stored weights are the model's: the same names, shapes and kinds (floating point or not)."""
    def refuse(what: str) -> InvalidValue:
        return _corrupt(path, f"the tensors do not fit the model of metadata 'config': {what}")

    missing, unexpected = sorted(set(own) - set(state)), sorted(set(state) - set(own))
    if missing or unexpected:
        first = f"missing model.{missing[0]}" if missing else f"unexpected model.{unexpected[0]}"
        raise refuse(f"{first} ({len(missing)} missing, {len(unexpected)} unexpected)")
    for name, t in state.items():
        if t.shape != own[name].shape:
            raise refuse(f"model.{name} has shape {tuple(t.shape)}, the model's {tuple(own[name].shape)}")
        if t.is_floating_point() != own[name].is_floating_point():
            raise refuse(f"model.{name} is {t.dtype}, the model's {own[name].dtype}")


_SIMPLE_TYPES = (int, float, bool, str, type(None))
_TYPE_NAMES = {int: "an integer", float: "a finite number", bool: "true or false", str: "a string", type(None): "null"}


@cache
def _field_types(config_cls: type) -> dict[str, tuple[type, ...]]:
    """Config field -> the simple types its annotation allows (int, float, bool, str, None); other fields unchecked."""
    try:
        hints = typing.get_type_hints(config_cls)
    except Exception:  # an annotation that does not resolve: leave the checking to the constructor
        return {}
    allowed = {}
    for name, hint in hints.items():
        union = typing.get_origin(hint) in (typing.Union, types.UnionType)
        options = typing.get_args(hint) if union else (hint,)
        if all(option in _SIMPLE_TYPES for option in options):
            allowed[name] = options
    return allowed


def _is_of(value: Any, kind: type) -> bool:
    if kind is bool or kind is str or kind is type(None):
        return isinstance(value, kind)
    if isinstance(value, bool):
        return False
    if kind is int:
        return isinstance(value, int)
    return isinstance(value, (int, float)) and math.isfinite(value)  # float


def _check_config_types(path: Path, config_cls: type, config: dict) -> None:
    """Every config field of a simple annotated type holds a value of that type (and floats are finite),
    and every number setting one within the bounds its field declares (models/config.py's `setting`)."""
    bounded = field_bounds(config_cls)
    for name, value in config.items():
        kinds = _field_types(config_cls).get(name)
        if kinds is not None and not any(_is_of(value, kind) for kind in kinds):
            expected = " or ".join(_TYPE_NAMES[k] for k in kinds)
            raise _corrupt(path, f"metadata 'config' field {name} is {_show(value)}, not {expected}")
        if name in bounded and setting_problem(config_cls, name, value):
            raise _corrupt(path, f"metadata 'config' field {name} is {_show(value)}, not {expected_value(config_cls, name)}")


# --- tensors -------------------------------------------------------------------------------------


def _check_tensors(path: Path, tensors: dict[str, torch.Tensor]) -> None:
    """Every tensor name parses; weights and optimizer moments are finite; RNG states are loadable."""
    for key, t in tensors.items():
        if key.startswith("optim."):
            _optim_key(path, key)
        elif key.startswith("rng."):
            _check_rng(path, key, t)
        elif not key.startswith("model.") or key == "model.":
            raise _corrupt(path, f"tensor {key!r} is none of model.<name>, optim.<index>.<name>, rng.<name>")
        if not key.startswith("rng.") and t.is_floating_point() and not bool(torch.isfinite(t).all()):
            raise InvalidValue(f"{path}: tensor {key!r} holds NaN or infinite values (a diverged or damaged run); "
                                 "it cannot be used")


def _optim_key(path: Path, key: str) -> tuple[int, str]:
    """optim.<parameter index>.<state name> -> (index, name)."""
    parts = key.split(".", 2)
    if len(parts) != 3 or not (parts[1].isascii() and parts[1].isdigit()) or not parts[2]:
        raise _corrupt(path, f"tensor {key!r} is not named optim.<parameter index>.<state name>")
    return int(parts[1]), parts[2]


def _check_rng(path: Path, key: str, t: torch.Tensor) -> None:
    """A generator state is a 1-D uint8 tensor (the CPU ones must load); world_size is a process count."""
    name = key[len("rng.") :]
    if name == "world_size":
        if t.numel() != 1 or t.is_floating_point() or t.dtype == torch.bool or int(t.item()) < 1:
            raise _corrupt(path, f"tensor {key!r} is {_show(t.tolist())}, not a process count")
        return
    if t.dtype != torch.uint8 or t.dim() != 1:
        raise _corrupt(path, f"tensor {key!r} is {t.dtype} of shape {tuple(t.shape)}, not a generator state (1-D uint8)")
    if name.split(".")[0] in CPU_RNG:
        try:
            torch.Generator().set_state(t)
        except Exception as e:
            raise _corrupt(path, f"tensor {key!r} is not a CPU generator state ({_first_line(e)})") from None


# --- the optimizer -------------------------------------------------------------------------------


def _is_index(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _optimizer_state(path: Path, meta: dict[str, str], tensors: dict[str, torch.Tensor]) -> dict | None:
    """The optimizer's state dict from metadata 'optimizer' (param groups, scalar state) and the
    optim.* tensors, or None when the file has none; every state entry must belong to a group."""
    obj = _json_value(path, meta, "optimizer", dict, default=None)
    if obj is None:
        return None
    for key in ("param_groups", "scalars"):
        if key not in obj:
            raise _corrupt(path, f"metadata 'optimizer' has no {key!r}")
    groups, scalars = obj["param_groups"], obj["scalars"]
    if not isinstance(groups, list) or not all(isinstance(g, dict) for g in groups):
        raise _corrupt(path, f"metadata 'optimizer' param_groups is {_show(groups)}, not a list of objects")
    if not isinstance(scalars, dict):
        raise _corrupt(path, f"metadata 'optimizer' scalars is {_show(scalars)}, not an object")
    indices = []
    for n, group in enumerate(groups):
        params = group.get("params")
        if not isinstance(params, list) or not all(_is_index(i) for i in params):
            raise _corrupt(path, f"metadata 'optimizer' param group {n} has params {_show(params)}, not a list of indices")
        indices += params
    if len(set(indices)) != len(indices):
        raise _corrupt(path, "metadata 'optimizer' lists a parameter in two param groups")
    per_param: dict[int, dict] = {}
    for key, t in tensors.items():
        if key.startswith("optim."):
            i, name = _optim_key(path, key)
            per_param.setdefault(i, {})[name] = t
    for key, value in scalars.items():
        i, _, name = key.partition(".")
        if not (i.isascii() and i.isdigit() and name) or not isinstance(value, (int, float, bool, type(None))):
            raise _corrupt(path, f"metadata 'optimizer' scalar {_show(key)}: {_show(value)} is not <index>.<name>: <number>")
        per_param.setdefault(int(i), {})[name] = value
    orphans = sorted(set(per_param) - set(indices))
    if orphans:
        raise _corrupt(path, f"metadata 'optimizer' has state for parameter {orphans[0]}, which no param group lists")
    return {"state": per_param, "param_groups": groups}


def _check_optimizer_fits(path: Path | None, state: dict, optimizer: torch.optim.Optimizer) -> None:
    """The saved state fits `optimizer`: as many groups, as many parameters in each, hyperparameters
    of the same kinds, and every moment the shape of its parameter."""
    def refuse(what: str) -> InvalidValue:
        return InvalidValue(f"{path}: metadata 'optimizer' does not fit this optimizer: {what}")

    saved, live = state["param_groups"], optimizer.param_groups
    if len(saved) != len(live):
        raise refuse(f"{len(saved)} param group(s) saved, {len(live)} now")
    pairs = []
    for n, (s, g) in enumerate(zip(saved, live)):
        if len(s["params"]) != len(g["params"]):
            raise refuse(f"param group {n} has {len(s['params'])} parameters saved, {len(g['params'])} now")
        for key, value in g.items():
            if key != "params" and not _same_kind(s.get(key, _ABSENT), value):
                raise refuse(f"param group {n} {key} is {_show(s.get(key))}, not like {_show(value)}")
        pairs += zip(s["params"], g["params"])
    for index, param in pairs:
        for name, value in state["state"].get(index, {}).items():
            if isinstance(value, torch.Tensor) and value.dim() > 0 and value.shape != param.shape:
                raise refuse(f"tensor 'optim.{index}.{name}' has shape {tuple(value.shape)}, "
                             f"its parameter {tuple(param.shape)}")


def _same_kind(saved: Any, live: Any) -> bool:
    """A saved hyperparameter can stand for the live one: numbers for numbers (finite), tuples of
    the same length, booleans (or None) for booleans; anything else the optimizer sorts out."""
    if isinstance(live, bool):
        return saved is None or isinstance(saved, bool)
    if isinstance(live, (int, float)):
        return isinstance(saved, (int, float)) and not isinstance(saved, bool) and math.isfinite(saved)
    if isinstance(live, (tuple, list)):
        return isinstance(saved, (tuple, list)) and len(saved) == len(live) and all(map(_same_kind, saved, live))
    if isinstance(live, str):
        return isinstance(saved, str)
    return True


def load_checkpoint(path: str | os.PathLike, model: nn.Module | None = None, map_location="cpu") -> nn.Module:
    """The model in a checkpoint (a run folder or file, or a shipped model's name). Given `model`, load the weights into it instead."""
    ckpt = read_checkpoint(path, map_location)
    if model is None:
        return ckpt.model
    load_weights(model, ckpt.model.state_dict(), source=str(ckpt.path))
    return model


def pretrained(name: str, map_location: str | torch.device = "cpu") -> tuple[nn.Module, Any]:
    """A reference model shipped with redthread, by name: (the model, in eval mode, and its tokenizer).

        model, tok = rt.pretrained("shakespeare-transformer")
        rt.generate(model, torch.tensor([tok.encode("ROMEO:")]), 100, seed=0)

    The names: `rt.shipped_models()`. Each checkpoint's metadata, `rt.read_checkpoint(name).extra["reference"]`,
    holds its validation figure, its settings, steps and seed, the CPU seconds it took and the commit
    (docs/benchmarks.md). A run folder is read with `rt.read_checkpoint`, a Hugging Face folder with
    `rt.from_pretrained`."""
    path = shipped_model_file(name)
    if path is None:
        raise MissingFile(f"no shipped model named {name!r}{_shipped_hint(name if isinstance(name, str) else '')}")
    ckpt = read_checkpoint(path, map_location)
    return ckpt.model.eval(), ckpt.tokenizer
