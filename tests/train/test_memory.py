"""Activation checkpointing changes memory, not gradients; the memory estimate counts what autograd
actually saves (measured with torch's saved-tensor hooks, exact where RSS would be noise)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from redthread.errors import RedthreadError
from redthread.models.mlp import MLPLM, MLPConfig
from redthread.models.transformer import TransformerConfig, TransformerLM
from redthread.train.loop import TrainConfig, train
from redthread.train.memory import checkpoint_blocks, count_parameters, estimate_memory

from .test_loop import fresh_model, make_data


def gradients(model: TransformerLM, idx: torch.Tensor) -> dict[str, torch.Tensor]:
    torch.manual_seed(1)  # the same dropout masks in both runs (checkpointing replays the RNG)
    model.zero_grad()
    F.cross_entropy(model(idx[:, :-1]).flatten(0, 1), idx[:, 1:].flatten()).backward()
    return {name: p.grad.clone() for name, p in model.named_parameters()}


def test_checkpointed_blocks_give_the_same_gradients_and_keep_the_state_dict_keys():
    model = fresh_model().train()  # dropout 0.1: the recomputation must draw the same masks
    idx = torch.randint(0, 11, (4, 9), generator=torch.Generator().manual_seed(0))
    plain, keys = gradients(model, idx), list(model.state_dict())
    restore = checkpoint_blocks(model)
    checkpointed = gradients(model, idx)
    assert list(model.state_dict()) == keys
    restore()
    assert all("forward" not in block.__dict__ for block in model.blocks)
    for name, g in plain.items():
        torch.testing.assert_close(checkpointed[name], g, rtol=0, atol=1e-6, msg=name)


def test_training_with_activation_checkpointing_follows_the_same_path():
    a, b = fresh_model(), fresh_model()
    cfg = TrainConfig(max_iters=3, batch_size=4, eval_interval=3, eval_batches=1, warmup_iters=1)
    train(a, make_data(), cfg, progress=False)
    train(b, make_data(), TrainConfig(**{**cfg.to_dict(), "activation_checkpointing": True}), progress=False)
    for (name, p), q in zip(a.named_parameters(), b.parameters()):
        torch.testing.assert_close(q, p, rtol=0, atol=1e-6, msg=name)
    assert all("forward" not in block.__dict__ for block in b.blocks)  # the loop restored the plain blocks


def test_activation_checkpointing_needs_blocks():
    model = MLPLM(MLPConfig(vocab_size=11, block_size=8, context=3, d_embed=4, d_hidden=8))
    with pytest.raises(RedthreadError, match="activation checkpointing needs a model with blocks"):
        train(model, make_data(), TrainConfig(max_iters=1, activation_checkpointing=True), progress=False)


def saved_bytes(model: torch.nn.Module, idx: torch.Tensor, targets: torch.Tensor, dtype: torch.dtype | None) -> int:
    """Bytes autograd keeps for backward (each storage once), without the parameters and autocast's
    copies of them (whether those are cached and shared depends on torch's global autocast state)."""
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    shapes = {s for p in model.parameters() for s in (tuple(p.shape), tuple(p.shape)[::-1])}  # mm saves W.t()
    kept: dict[int, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        weight_copy = t.dtype != torch.float32 and tuple(t.shape) in shapes
        if t.untyped_storage().data_ptr() not in params and not weight_copy:
            kept[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        with torch.autocast("cpu", dtype=dtype or torch.float32, enabled=dtype is not None):
            F.cross_entropy(model(idx).flatten(0, 1).float(), targets.flatten())
    return sum(kept.values())


@pytest.mark.parametrize("precision, dtype", [("fp32", None), ("bf16", torch.bfloat16)])
def test_activation_estimate_matches_what_autograd_saves(precision, dtype):
    cfg = TransformerConfig(vocab_size=65, block_size=64, n_layer=3, n_head=4, d_model=64, dropout=0.0)
    torch.manual_seed(0)
    model = TransformerLM(cfg).train()
    idx = torch.randint(0, 65, (6, 64))
    measured = saved_bytes(model, idx, idx, dtype)
    weight_copies = 2 * count_parameters(cfg) if dtype is not None else 0
    estimate = estimate_memory(cfg, batch_size=6, precision=precision).activations - weight_copies
    assert estimate == pytest.approx(measured, rel=0.05)


def test_parameter_memory_is_16_bytes_per_parameter_and_checkpointing_saves_activations():
    cfg = TransformerConfig(vocab_size=65, block_size=256, n_layer=6, n_head=6, d_model=384)
    n = sum(p.numel() for p in TransformerLM(cfg).parameters())
    assert count_parameters(cfg) == n
    plain = estimate_memory(cfg, batch_size=8)
    assert plain.parameters + plain.gradients + plain.optimizer == 16 * n
    recomputed = estimate_memory(cfg, batch_size=8, activation_checkpointing=True)
    assert recomputed.parameters == plain.parameters and recomputed.activations < plain.activations / 3
    assert estimate_memory(cfg, batch_size=8, precision="bf16").activations < plain.activations
    with pytest.raises(RedthreadError, match="precision"):
        estimate_memory(cfg, batch_size=8, precision="int8")
