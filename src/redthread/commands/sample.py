"""`redthread sample` and `redthread eval`: use a trained run.

sample: load a checkpoint, encode a prompt, draw from P(next token | context) with the chosen
processors (claim C12), stream the text as it comes. eval: the exact validation NLL of a
run, every token scored once, in nats/token, perplexity and bits per character.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import torch

from redthread.data.lm import LMData, load_splits
from redthread.errors import RedthreadError
from redthread.generate.config import SampleConfig
from redthread.generate.sampler import generate_stream
from redthread.models.size import check_generation_memory
from redthread.train.checkpoint import read_checkpoint
from redthread.train.loop import evaluate, resolve_device


def read_prompt(prompt: str | None, prompt_file: str | None) -> str | None:
    """The prompt text; None when neither is given (then `sample_text` picks a default)."""
    if prompt is not None and prompt_file is not None:
        raise RedthreadError("give --prompt or --prompt-file, not both")
    if prompt_file is None:
        return prompt
    path = Path(prompt_file)
    if not path.is_file():
        raise RedthreadError(f"prompt file not found: {path}")
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise RedthreadError(f"prompt file {path} is not valid UTF-8 (byte {e.start})") from None


def load_run(checkpoint: str, device: str = "auto"):
    ckpt = read_checkpoint(checkpoint, map_location=resolve_device(device))
    if ckpt.model_class in ("ViT", "Captioner"):
        raise RedthreadError(f"{checkpoint} holds a {ckpt.model_class}, an image model: it reads images, not text "
                             "(see redthread attention --index/--image)")
    if ckpt.tokenizer is None:
        raise RedthreadError(f"the checkpoint {checkpoint} holds no tokenizer, so it cannot read text")
    return ckpt


def sample_text(
    checkpoint: str,
    prompt: str | None = None,
    max_new_tokens: int = 500,
    sampling: SampleConfig | None = None,
    num_samples: int = 1,
    use_cache: bool = True,
    unknown: str = "error",
    device: str = "auto",
    stream: Callable[[str], None] | None = None,
) -> list[str]:
    """Generate `num_samples` continuations of `prompt` with `sampling` (default: plain sampling at
    temperature 1); each returned text includes the prompt.

    Without a prompt the model starts from a newline, or from its first token where the
    tokenizer has no newline."""
    sampling = sampling or SampleConfig()  # its values were checked when it was made, before loading
    if unknown not in ("error", "replace"):
        raise RedthreadError(f"--unknown must be error or replace, got {unknown!r}")
    ckpt = load_run(checkpoint, device)
    tok, model = ckpt.tokenizer, ckpt.model
    if prompt is None:
        prompt = "\n" if tok.kind != "char" or "\n" in tok.decode(range(tok.vocab_size)) else tok.decode([0])
    if not prompt:
        raise RedthreadError("the prompt is empty: give at least one character")
    try:
        ids = tok.encode(prompt, errors="replace") if unknown == "replace" and tok.kind == "char" else tok.encode(prompt)
    except RedthreadError as e:
        raise RedthreadError(f"the prompt {str(e).removeprefix('text ')} (--unknown replace maps them to a space)") from None
    idx = torch.tensor([ids], dtype=torch.long)
    tokens = generate_stream(model, idx, max_new_tokens, use_cache=use_cache, num_samples=num_samples,
                             sampling=sampling)  # checks every argument before anything is printed
    check_generation_memory(model, num_samples, len(ids), max_new_tokens)  # before the first cache is allocated
    streaming = stream is not None and num_samples == 1
    if streaming:
        stream(prompt)

    new: list[torch.Tensor] = []
    printed = ""
    for nxt in tokens:  # (N, 1) each
        new.append(nxt)
        if streaming:  # the first sample, as it grows
            text = tok.decode(torch.cat(new, dim=1)[0])
            if not text.endswith("\ufffd"):  # a byte-level token may end inside a UTF-8 character
                stream(text[len(printed) :])
                printed = text
    rows = torch.cat(new, dim=1).tolist() if new else [[] for _ in range(num_samples)]
    if streaming and len(printed) < len(tok.decode(rows[0])):
        stream(tok.decode(rows[0])[len(printed) :])
    return [prompt + tok.decode(row) for row in rows]


def evaluate_run(checkpoint: str, data: str | None = None, split: str = "val", device: str = "auto") -> dict:
    """Exact NLL of a split under a run's model, with the run's own tokenizer."""
    ckpt = load_run(checkpoint, device)
    return evaluate(ckpt.model, run_data(ckpt, data), split, batch_size=64)


def run_data(ckpt, data: str | None = None):
    """The data a run is scored on: `data` (a text file or a shipped text's name), else the run's own as its
    metadata names it; read as a stream cut into windows of the model's context, or, for a run trained on
    one example per line (metadata `lines`, as the reference models on names.txt), as `redthread ladder
    --lines` reads it, with the same held-out lines."""
    data = data if data is not None else ckpt.extra.get("data")
    if ckpt.extra.get("lines"):
        from redthread.data.sequences import load_lines

        source, tokenizer = load_lines(data)
        if tokenizer.chars != ckpt.tokenizer.chars:
            raise RedthreadError(f"{data} does not have the characters the run was trained on: its lines would be "
                                 "other token ids (score a file of the same alphabet)")
        return source
    train_split, val_split, _ = load_splits(data, ckpt.tokenizer.kind, None, ckpt.tokenizer)
    return LMData(train_split, val_split, ckpt.model.cfg.block_size)
