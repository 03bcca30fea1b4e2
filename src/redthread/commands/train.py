"""`redthread train`: a Transformer language model on a corpus, from data to a run folder.

corpus -> split (no leakage) -> tokenizer -> token ids (cached, memory-mapped) -> model ->
the training loop -> a run folder holding checkpoint.safetensors, config.json,
tokenizer.json, metrics.jsonl and loss.png. A folder that already holds a run is never
touched unless asked: `resume=True` continues it, `overwrite=True` replaces it. Started by
torchrun, every process runs this; only rank 0 logs and writes (`train/distributed.py`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch

from redthread.data.corpus import load_corpus, split_corpus
from redthread.data.dataset import prepare_splits
from redthread.data.lm import LMData
from redthread.data.tokenizers import train_tokenizer
from redthread.errors import RedthreadError
from redthread.models.transformer import TransformerConfig, TransformerLM
from redthread.train import distributed
from redthread.train.checkpoint import FILENAME, read_checkpoint
from redthread.train.loop import TrainConfig, TrainResult, evaluate, train

RUN_FILES = (FILENAME, "config.json", "tokenizer.json", "metrics.jsonl", "loss.png", "summary.json")


@dataclass
class TrainedRun:
    run_dir: Path
    model: TransformerLM
    tokenizer: object
    data: LMData
    result: TrainResult
    final: dict  # full-split validation: nll, ppl, bpc


def check_run_dir(out: Path, resume: bool, overwrite: bool) -> None:
    """Refuse to clobber a run; remove the old one only when `overwrite` says so."""
    if resume and overwrite:
        raise RedthreadError("--resume and --overwrite contradict each other: pick one")
    if out.exists() and not out.is_dir():
        raise RedthreadError(f"output path {out} exists and is not a folder")
    holds_run = out.is_dir() and any((out / f).exists() for f in RUN_FILES)
    if resume and not (out / FILENAME).is_file():
        raise RedthreadError(f"nothing to resume: no {FILENAME} in {out}")
    if holds_run and not resume:
        if not overwrite:
            raise RedthreadError(f"output folder {out} already holds a run: pass --resume to continue it or --overwrite to replace it")
        for f in RUN_FILES if distributed.is_main() else ():  # under torchrun, rank 0 alone clears the folder
            (out / f).unlink(missing_ok=True)


def load_data(data: str | None, tokenizer_kind: str, vocab_size: int | None, tokenizer=None) -> tuple[LMData, object]:
    """Corpus -> (train, validation) token splits and the tokenizer (trained unless given)."""
    corpus = load_corpus(data)
    train_text, val_text = split_corpus(corpus)
    if tokenizer is None:
        # characters: the alphabet of the whole corpus, so validation has no unknown symbols;
        # BPE: merges learned from the training split only (any byte stays encodable)
        tokenizer = train_tokenizer(tokenizer_kind, corpus.text if tokenizer_kind == "char" else train_text, vocab_size)
    train_split, val_split = prepare_splits(train_text, val_text, tokenizer)
    return LMData(train_split, val_split), tokenizer


def resolve_model_config(requested: dict, vocab_size: int, saved: dict | None) -> TransformerConfig:
    """The model config: requested fields over defaults, or the checkpoint's, which requests must not contradict."""
    if saved is None:
        return TransformerConfig(**{**requested, "vocab_size": vocab_size})
    for name, value in requested.items():
        if name in saved and saved[name] != value:
            raise RedthreadError(f"the checkpoint does not fit the requested model: {name} is {saved[name]!r} in the checkpoint, {value!r} requested")
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
) -> TrainedRun:
    out = Path(out)
    check_run_dir(out, resume, overwrite)
    log = log if distributed.is_main() else lambda s: None
    model_overrides, train_overrides = dict(model_overrides or {}), dict(train_overrides or {})

    saved_model_cfg, tokenizer, extra = None, None, {"data": data, "tokenizer_kind": tokenizer_kind}
    train_cfg = TrainConfig(**train_overrides)
    if resume:
        ckpt = read_checkpoint(out)
        saved_model_cfg, tokenizer = ckpt.config, ckpt.tokenizer
        saved_data = ckpt.extra.get("data")
        if data is not None and data != saved_data:
            raise RedthreadError(f"the run in {out} was trained on {saved_data or 'the default corpus'}, not {data}")
        data, extra = saved_data, ckpt.extra
        train_cfg = TrainConfig.from_dict({**(ckpt.train_config or {}), **train_overrides})

    lm_data, tokenizer = load_data(data, tokenizer_kind, vocab_size, tokenizer)
    cfg = resolve_model_config(model_overrides, tokenizer.vocab_size, saved_model_cfg)
    lm_data.block_size = cfg.block_size
    lm_data.check_lengths()
    torch.manual_seed(train_cfg.seed)  # the initial weights are part of what --seed reproduces
    model = TransformerLM(cfg)
    log(f"model: {model.num_params():,} parameters (without embeddings); {cfg.n_layer} layers, "
        f"{cfg.n_head} heads, d_model {cfg.d_model}, context {cfg.block_size}, vocab {cfg.vocab_size}")

    result = train(model, lm_data, train_cfg, run_dir=out, tokenizer=tokenizer, resume=resume,
                   progress=progress, log=log, extra=extra)
    final = evaluate(model, lm_data, "val", batch_size=64)  # every validation token, once
    return TrainedRun(out, model, tokenizer, lm_data, result, final)
