"""Tiny random-init run folders (a Transformer LM, a captioner, a ViT), for tests of the commands and the web app that read runs."""

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


def save_tiny_captioner_run(folder: Path, seed: int = 0) -> None:
    """A captioner (1 + 1 layers, d_model 16) on caption-shapes with 64 training and 16 test scenes,
    saved as `redthread train --task caption-shapes` saves one (the scenes' settings and vocabulary)."""
    from redthread.data.captions import load_caption_data
    from redthread.models.captioner import Captioner, captioner_config

    settings = {"n_train": 64, "n_test": 16, "seed": 0, "patch_size": 4, "colours": None, "shapes": None}
    data = load_caption_data("caption-shapes", **settings)
    torch.manual_seed(seed)
    cfg = captioner_config(data, {"n_layer_encoder": 1, "n_layer_decoder": 1, "d_model": 16, "n_head": 2})
    extra = {"task": "caption-shapes", "scenes": settings, "vocab": data.vocab.to_list(), "test_kept": data.test_kept}
    rt.save_checkpoint(folder, Captioner(cfg), extra=extra)


def save_tiny_vit_run(folder: Path, seed: int = 0) -> None:
    """A ViT (1 layer, d_model 16) for scikit-learn's digits, saved as `redthread train --task vit-digits` saves one."""
    from redthread.commands.images import vit_config
    from redthread.data.images import load_digits
    from redthread.models.vit import ViT

    torch.manual_seed(seed)
    cfg = vit_config(load_digits(), 1, {"n_layer": 1, "n_head": 2, "d_model": 16})
    rt.save_checkpoint(folder, ViT(cfg), extra={"task": "vit-digits", "upscale": 1})
