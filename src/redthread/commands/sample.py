"""`redthread sample` and `redthread eval`: use a trained run.

sample: load a checkpoint, encode a prompt, draw from P(next token | context) with the chosen
processors (claim C12), stream the text as it comes. eval: the exact validation NLL of a
run, every token scored once, in nats/token, perplexity and bits per character.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import torch

from redthread.commands.train import load_data
from redthread.errors import RedthreadError
from redthread.generate.processors import build_processors
from redthread.generate.sampler import generate
from redthread.train.checkpoint import read_checkpoint
from redthread.train.loop import evaluate, resolve_device


def read_prompt(prompt: str | None, prompt_file: str | None) -> str:
    if prompt is not None and prompt_file is not None:
        raise RedthreadError("give --prompt or --prompt-file, not both")
    if prompt_file is None:
        return "\n" if prompt is None else prompt
    path = Path(prompt_file)
    if not path.is_file():
        raise RedthreadError(f"prompt file not found: {path}")
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise RedthreadError(f"prompt file {path} is not valid UTF-8 (byte {e.start})") from None


def load_run(checkpoint: str, device: str = "auto"):
    ckpt = read_checkpoint(checkpoint, map_location=resolve_device(device))
    if ckpt.tokenizer is None:
        raise RedthreadError(f"the checkpoint {checkpoint} holds no tokenizer, so it cannot read text")
    return ckpt


def sample_text(
    checkpoint: str,
    prompt: str = "\n",
    max_new_tokens: int = 500,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    min_p: float | None = None,
    repetition_penalty: float | None = None,
    num_samples: int = 1,
    seed: int | None = None,
    use_cache: bool = True,
    unknown: str = "error",
    device: str = "auto",
    stream: Callable[[str], None] | None = None,
) -> list[str]:
    """Generate `num_samples` continuations of `prompt`; each returned text includes the prompt."""
    build_processors(temperature, top_k, top_p, min_p, repetition_penalty)  # bad values fail before loading
    if unknown not in ("error", "replace"):
        raise RedthreadError(f"--unknown must be error or replace, got {unknown!r}")
    ckpt = load_run(checkpoint, device)
    tok, model = ckpt.tokenizer, ckpt.model
    if not prompt:
        raise RedthreadError("the prompt is empty: give at least one character")
    try:
        ids = tok.encode(prompt, errors="replace") if unknown == "replace" and tok.kind == "char" else tok.encode(prompt)
    except RedthreadError as e:
        raise RedthreadError(f"the prompt {str(e).removeprefix('text ')} (--unknown replace maps them to a space)") from None
    idx = torch.tensor([ids], dtype=torch.long)
    if stream and num_samples == 1:
        stream(prompt)  # echo the prompt only once it is known to be readable

    new_ids: list[int] = []
    printed = [""]

    def on_token(nxt: torch.Tensor) -> None:  # stream the first sample as it grows
        new_ids.append(int(nxt[0, 0]))
        text = tok.decode(new_ids)
        if not text.endswith("\ufffd"):  # a byte-level token may end inside a UTF-8 character
            stream(text[len(printed[0]) :])
            printed[0] = text

    out = generate(model, idx, max_new_tokens, temperature, top_k, top_p, min_p, repetition_penalty,
                   seed, use_cache, num_samples, on_token=on_token if stream and num_samples == 1 else None)
    if stream and num_samples == 1 and len(printed[0]) < len(tok.decode(new_ids)):
        stream(tok.decode(new_ids)[len(printed[0]) :])
    return [prompt + tok.decode(row[len(ids) :].tolist()) for row in out]


def evaluate_run(checkpoint: str, data: str | None = None, split: str = "val", device: str = "auto") -> dict:
    """Exact NLL of a split under a run's model, with the run's own tokenizer."""
    ckpt = load_run(checkpoint, device)
    data = data if data is not None else ckpt.extra.get("data")
    lm_data, _ = load_data(data, ckpt.tokenizer.kind, None, ckpt.tokenizer)
    lm_data.block_size = ckpt.model.cfg.block_size
    return evaluate(ckpt.model, lm_data, split, batch_size=64)
