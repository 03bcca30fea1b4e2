"""A tiny random-init Transformer run folder, for tests of the commands and the web app that read runs."""

from __future__ import annotations

from pathlib import Path

import torch

import redthread as rt
from redthread.data.tokenizers import CharTokenizer


def save_tiny_run(folder: Path, text: str, block_size: int = 32, seed: int = 0) -> CharTokenizer:
    """A 2-layer, 2-head, d_model 16 TransformerLM over the characters of `text`, saved with its tokenizer."""
    tok = CharTokenizer.from_text(text)
    torch.manual_seed(seed)
    cfg = rt.TransformerConfig(vocab_size=tok.vocab_size, block_size=block_size, n_layer=2, n_head=2, d_model=16)
    rt.save_checkpoint(folder, rt.TransformerLM(cfg), tokenizer=tok)
    return tok
