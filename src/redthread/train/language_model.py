"""A Transformer language model on a corpus, from data to a run folder (what `redthread train` runs).

corpus -> split (no leakage) -> tokenizer -> token ids (cached, memory-mapped) -> model ->
the training loop -> a run folder holding checkpoint.safetensors, config.json,
tokenizer.json, metrics.jsonl and loss.png. A folder that already holds a run is never
touched unless asked: `resume=True` continues it, `overwrite=True` replaces it, and then only
once the new run has saved its first checkpoint (`train/run_folder.py`): every input is checked
and the model built before anything saved is touched. Started by torchrun, every process runs
this; only rank 0 logs and writes (`train/distributed.py`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from redthread.data.lm import LMData, load_splits
from redthread.errors import InvalidValue
from redthread.files import check_free_space
from redthread.models.transformer import TransformerConfig, TransformerLM
from redthread.train import distributed
from redthread.train.checkpoint import read_checkpoint
from redthread.train.loop import TrainConfig, TrainResult, evaluate, resolve_placement, train
from redthread.train.memory import check_training_memory
from redthread.train.run_folder import RunFolder
from redthread.words import plural


@dataclass
class TrainedRun:
    run_dir: Path
    model: TransformerLM
    tokenizer: object
    data: LMData
    result: TrainResult
    final: dict  # full-split validation: nll, ppl, bpc, tokens, and the seconds it took
    train_cfg: TrainConfig | None = None  # the training settings the run used


def settings_line(cfg) -> str:
    """A config as one line of name=value, the way the flags spell them."""
    return ", ".join(f"{k}={v}" for k, v in asdict(cfg).items())


def check_disk(folder: Path, model: torch.nn.Module) -> None:
    """Room for a checkpoint: weights and AdamW's two moments, written beside the old file before it is replaced."""
    nbytes = 3 * sum(p.numel() * p.element_size() for p in model.parameters())
    if distributed.is_main():
        check_free_space(folder, int(nbytes * 1.1) + 2**20, "a checkpoint of this model")


def resolve_model_config(requested: dict, vocab_size: int, saved: dict | None) -> TransformerConfig:
    """The model config: requested fields over defaults, or the checkpoint's, which requests must not contradict."""
    if saved is None:
        return TransformerConfig(**{**requested, "vocab_size": vocab_size})
    for name, value in requested.items():
        if name in saved and saved[name] != value:
            raise InvalidValue(f"the checkpoint does not fit the requested model: {name} is {saved[name]!r} in the checkpoint, {value!r} requested")
    return TransformerConfig.from_dict(saved)


def train_language_model(
    out: str | Path,
    data: str | None = None,
    tokenizer_kind: str = "char",
    vocab_size: int | None = None,
    model_overrides: dict | None = None,
    train_overrides: dict | None = None,
    resume: bool = False,
    overwrite: bool = False,
    progress: bool = True,
    log: Callable[[str], None] = lambda s: None,
    score: bool = True,
    announce: bool = True,
    device: torch.device | None = None,
) -> TrainedRun:
    """`score`: end with the NLL of every validation token (`final`; empty when False, for a caller
    that scores a part itself); `announce`: log the model and the settings before training.

    The device and the precision are resolved here, once, and passed down (`resolve_placement`);
    `device`: the training settings' device already resolved by the caller (None: resolved here)."""
    out = Path(out)
    with RunFolder(out, resume, overwrite) as folder:  # a failure before the first checkpoint leaves an old run as it was
        return _train(folder, data, tokenizer_kind, vocab_size, model_overrides, train_overrides, resume, progress, log,
                      score, announce, device)


def _train(folder: RunFolder, data, tokenizer_kind, vocab_size, model_overrides, train_overrides, resume, progress, log,
           score, announce, device) -> TrainedRun:
    out = folder.out
    log = log if distributed.is_main() else lambda s: None
    model_overrides, train_overrides = dict(model_overrides or {}), dict(train_overrides or {})

    saved_model_cfg, tokenizer, extra = None, None, {"data": data, "tokenizer_kind": tokenizer_kind}
    train_cfg = TrainConfig(**train_overrides)
    ckpt = None
    if resume:
        ckpt = read_checkpoint(out)
        ckpt.require_resumable()  # refused before the data are read
        saved_model_cfg, tokenizer = ckpt.config, ckpt.tokenizer
        saved_data = ckpt.extra.get("data")
        if data is not None and data != saved_data:
            raise InvalidValue(f"the run in {out} was trained on {saved_data or 'the default corpus'}, not {data}")
        data, extra = saved_data, ckpt.extra
        train_cfg = TrainConfig.from_dict({**(ckpt.train_config or {}), **train_overrides})

    placement = resolve_placement(train_cfg, device)  # an unusable device or precision fails before the data are read
    train_split, val_split, tokenizer = load_splits(data, tokenizer_kind, vocab_size, tokenizer)
    cfg = resolve_model_config(model_overrides, tokenizer.vocab_size, saved_model_cfg)
    # before anything is allocated, and before the lengths (block_size 1e12)
    check_training_memory(cfg, train_cfg, placement.device, placement.precision.name)
    lm_data = LMData(train_split, val_split, cfg.block_size)
    lm_data.check_lengths()
    torch.manual_seed(train_cfg.seed)  # the initial weights are part of what --seed reproduces
    model = TransformerLM(cfg)
    check_disk(folder.write_dir, model)
    if announce:
        log(f"model: {model.num_params():,} parameters (without embeddings); {plural(cfg.n_layer, 'layer')}, "
            f"{plural(cfg.n_head, 'head')}, d_model {cfg.d_model}, context {cfg.block_size}, vocab {cfg.vocab_size}")
        log(f"model settings: {settings_line(cfg)}")
        log(f"training settings: {settings_line(train_cfg)}")

    result = train(model, lm_data, train_cfg, run_dir=folder.write_dir, tokenizer=tokenizer, resume=ckpt if resume else False,
                   progress=progress, log=log, extra=extra, publish=folder.publish, placement=placement)
    final = {}
    if score:  # every validation token, once: timed apart, since it is no part of the training (or its time budget)
        log(f"scoring the whole validation split: {len(lm_data.split('val').tokens):,} tokens, each once")
        t = time.perf_counter()
        final = evaluate(model, lm_data, "val", batch_size=64)
        final["seconds"] = time.perf_counter() - t
    return TrainedRun(out, model, tokenizer, lm_data, result, final, train_cfg)
