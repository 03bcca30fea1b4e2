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
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from safetensors import safe_open
from safetensors.torch import save_file
from torch import nn

from redthread.errors import RedthreadError
from redthread.files import atomic_write, atomic_write_text
from redthread.models.registry import MODELS, build_model, load_weights

FORMAT = "redthread-checkpoint/1"
FILENAME = "checkpoint.safetensors"


@dataclass
class Checkpoint:
    """Everything a checkpoint file holds, rebuilt."""

    model: nn.Module
    model_class: str
    config: dict
    step: int = 0
    tokenizer: Any = None
    train_config: dict | None = None
    optimizer_state: dict | None = None
    rng: dict[str, torch.Tensor] = field(default_factory=dict)
    extra: dict = field(default_factory=dict)


def checkpoint_path(path: str | os.PathLike) -> Path:
    """A run folder or a checkpoint file -> the checkpoint file."""
    path = Path(path)
    return path / FILENAME if path.is_dir() or not path.suffix else path


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
        raise RedthreadError(f"cannot checkpoint {model_class}: not in redthread.models.registry")
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

    Tensors are read on the CPU; the model then moves to `map_location`. RNG states stay on
    the CPU (torch.set_rng_state wants a CPU ByteTensor) and the optimizer moves its moments
    to its parameters' device when it loads them.
    """
    path = checkpoint_path(path)
    if not path.is_file():
        raise RedthreadError(f"no checkpoint at {path}")
    try:
        with safe_open(str(path), framework="pt", device="cpu") as f:
            meta = f.metadata() or {}
            tensors = {k: f.get_tensor(k) for k in f.keys()}
    except Exception as e:  # safetensors raises several types for truncated or garbled files
        raise RedthreadError(f"corrupt or truncated checkpoint {path}: {str(e).splitlines()[0]}") from None
    if meta.get("format") != FORMAT:
        raise RedthreadError(f"{path} is not a redthread checkpoint (format {meta.get('format')!r})")
    try:
        model_class = meta["model_class"]
        config = json.loads(meta["config"])
        if not isinstance(config, dict):
            raise ValueError("config is not a JSON object")
        aliases = json.loads(meta["aliases"])
        step = int(meta["step"])
        tokenizer_json = meta["tokenizer"]
        optim_meta = json.loads(meta["optimizer"]) if "optimizer" in meta else None
    except (KeyError, ValueError) as e:
        raise RedthreadError(f"corrupt checkpoint metadata in {path}: {e}") from None

    try:
        model = build_model(model_class, config)
    except RedthreadError as e:
        raise RedthreadError(f"{path}: {e}") from None
    state = {k[len("model.") :]: t for k, t in tensors.items() if k.startswith("model.")}
    for name, target in aliases.items():
        if target in state:
            state[name] = state[target]
    load_weights(model, state, source=str(path))
    model.to(map_location)

    tokenizer = None
    if tokenizer_json != "null":
        from redthread.data.tokenizers import tokenizer_from_json

        tokenizer = tokenizer_from_json(tokenizer_json)

    optimizer_state = None
    if optim_meta is not None:
        per_param: dict[int, dict] = {}
        for k, t in tensors.items():
            if k.startswith("optim."):
                _, i, name = k.split(".", 2)
                per_param.setdefault(int(i), {})[name] = t
        for k, v in optim_meta["scalars"].items():
            i, name = k.split(".", 1)
            per_param.setdefault(int(i), {})[name] = v
        optimizer_state = {"state": per_param, "param_groups": optim_meta["param_groups"]}

    return Checkpoint(
        model=model,
        model_class=model_class,
        config=config,
        step=step,
        tokenizer=tokenizer,
        train_config=json.loads(meta.get("train_config", "null")),
        optimizer_state=optimizer_state,
        rng={k[len("rng.") :]: t for k, t in tensors.items() if k.startswith("rng.")},
        extra=json.loads(meta.get("extra", "{}")),
    )


def load_checkpoint(path: str | os.PathLike, model: nn.Module | None = None, map_location="cpu") -> nn.Module:
    """The model in a checkpoint (a run folder or file). Given `model`, load the weights into it instead."""
    ckpt = read_checkpoint(path, map_location)
    if model is None:
        return ckpt.model
    load_weights(model, ckpt.model.state_dict(), source=str(checkpoint_path(path)))
    return model
