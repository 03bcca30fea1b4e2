"""Shared pieces of the side-by-side benchmarks: the two peers built from one config, the
optimizer both use, a measured fp32 matmul peak (the MFU denominator), and the timing helpers.

The peers:
- redthread `TransformerLM` (pre-norm, GELU, tied embeddings; positions from its config);
- Hugging Face `GPT2LMHeadModel`, random init, built offline from a `GPT2Config` of the same
  sizes, dropout off, attention implementation "sdpa" (its default) or "eager".

Both are timed on the same batches, with the same thread count and the same AdamW, with the
loss computed outside the model from the logits with `F.cross_entropy`. The machine is shared
and noisy, so the scripts alternate the peers round by round and report medians.
"""

from __future__ import annotations

import json
import statistics
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from redthread.models.transformer import TransformerConfig, TransformerLM

ADAMW = dict(lr=1e-3, betas=(0.9, 0.99))
WEIGHT_DECAY = 0.1


@dataclass(frozen=True)
class ModelSize:
    """The sizes shared by both peers (redthread field names)."""

    name: str
    vocab_size: int
    block_size: int
    n_layer: int
    n_head: int
    d_model: int


CONFIG_A = ModelSize("a", vocab_size=65, block_size=64, n_layer=4, n_head=4, d_model=128)
CONFIG_B = ModelSize("b", vocab_size=65, block_size=256, n_layer=6, n_head=6, d_model=384)


def make_redthread(size: ModelSize) -> TransformerLM:
    cfg = TransformerConfig(
        vocab_size=size.vocab_size,
        block_size=size.block_size,
        n_layer=size.n_layer,
        n_head=size.n_head,
        d_model=size.d_model,
        dropout=0.0,
    )
    return TransformerLM(cfg)


def make_hf_gpt2(size: ModelSize, attn_implementation: str = "sdpa") -> nn.Module:
    """GPT-2 of the same sizes, random init, no download. bos/eos unset: GPT-2's 50256 is outside this vocab."""
    from transformers import GPT2Config, GPT2LMHeadModel

    cfg = GPT2Config(
        vocab_size=size.vocab_size,
        n_positions=size.block_size,
        n_embd=size.d_model,
        n_layer=size.n_layer,
        n_head=size.n_head,
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
        bos_token_id=None,
        eos_token_id=None,
        attn_implementation=attn_implementation,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = GPT2LMHeadModel(cfg)
    if model.config._attn_implementation != attn_implementation:
        raise RuntimeError(f"asked for {attn_implementation!r} attention, got {model.config._attn_implementation!r}")
    return model


def hf_logits(model: nn.Module):
    """A callable idx -> logits for GPT-2 (no labels: the loss is computed outside, as for redthread)."""

    def forward(idx: torch.Tensor) -> torch.Tensor:
        return model(input_ids=idx, use_cache=False).logits

    return forward


def unique_params(model: nn.Module) -> list[nn.Parameter]:
    return list({id(p): p for p in model.parameters() if p.requires_grad}.values())  # tied weights once


def count_params(model: nn.Module) -> int:
    return sum(p.numel() for p in unique_params(model))


def adamw(model: nn.Module, fused: bool) -> torch.optim.AdamW:
    """The optimizer of both peers: AdamW, weight decay on >= 2-D parameters only.

    The same groups as `redthread.train.loop.make_optimizer` (which always sets fused=True on CPU).
    """
    params = unique_params(model)
    groups = [
        {"params": [p for p in params if p.dim() >= 2], "weight_decay": WEIGHT_DECAY},
        {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0},
    ]
    return torch.optim.AdamW(groups, **ADAMW, fused=fused)


def matmul_peak_flops(n: int = 2048, repeats: int = 7, inner: int = 3) -> float:
    """Best-of-`repeats` fp32 FLOP/s of an (n, n) @ (n, n) matmul: the MFU denominator."""
    gen = torch.Generator().manual_seed(0)
    a = torch.randn(n, n, generator=gen)
    b = torch.randn(n, n, generator=gen)
    out = torch.empty(n, n)
    torch.mm(a, b, out=out)  # warm-up
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(inner):
            torch.mm(a, b, out=out)
        best = min(best, (time.perf_counter() - t0) / inner)
    return 2 * n**3 / best


def median(xs: list[float]) -> float:
    return statistics.median(xs)


def spread(xs: list[float]) -> str:
    """min..max of a list of rates, for the tables."""
    return f"{min(xs):,.0f}..{max(xs):,.0f}"


def verdict(ratio: float, target: float) -> str:
    return f"{'MET' if ratio >= target else 'MISSED'} (target >= {target:.2f}x)"


def write_json(path: str | None, payload: dict) -> None:
    if path:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(json.dumps(payload, indent=2))


def environment() -> dict:
    """The versions, the threads and the processor a figure was measured on: the hosts of this project differ in
    instruction sets (AVX2 on some days, AVX-512 with bf16 on others), and the kernels dispatch on them."""
    import platform

    import transformers

    from redthread.commands.experiment import environment as machine

    cpu = machine()
    return {
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "threads": torch.get_num_threads(),
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpu": cpu["cpu"],
        "cpu_capability": cpu["cpu_capability"],
        "cpu_flags": cpu["cpu_flags"],
    }
