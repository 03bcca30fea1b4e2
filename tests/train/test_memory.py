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
from redthread.train.memory import (
    check_training_memory,
    checkpoint_blocks,
    count_parameters,
    estimate_memory,
    training_bytes,
)

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


def test_count_parameters_builds_nothing():
    cfg = TransformerConfig(n_layer=10**9)  # building even on the meta device would never finish
    assert count_parameters(cfg) > 10**9 * 12 * 128**2


def with_limit(monkeypatch, gib: float, said: str = "the test's device has"):
    limit = int(gib * 2**30)
    monkeypatch.setattr("redthread.train.memory.memory_limit", lambda device=None: (limit, f"{said} {gib} GiB"))


@pytest.mark.parametrize("model, train, needle", [
    (dict(n_layer=1, n_head=2, d_model=32, block_size=32), dict(batch_size=10**8), "batch_size=100000000"),
    (dict(n_layer=1, n_head=2, d_model=10**6, block_size=32), {}, "d_model=1000000"),
    (dict(n_layer=10**9), {}, "n_layer=1000000000"),
    (dict(block_size=10**12, pos="none"), {}, "block_size=1000000000000"),
    (dict(vocab_size=10**9), {}, "vocab_size=1000000000"),
])
def test_check_training_memory_refuses_in_one_line_naming_the_size(model, train, needle):
    with pytest.raises(RedthreadError) as info:
        check_training_memory(TransformerConfig(**model), TrainConfig(**{"device": "cpu", **train}))
    message = str(info.value)
    assert message.startswith(needle + " needs ~") and "to train" in message and "\n" not in message


def test_check_training_memory_passes_legitimate_runs(monkeypatch):
    demo = TransformerConfig(vocab_size=65, n_layer=4, n_head=4, d_model=128, block_size=128, pos="rope")
    check_training_memory(demo, TrainConfig(device="cpu", batch_size=32))
    gpt2 = TransformerConfig(vocab_size=50304, block_size=1024, n_layer=12, n_head=12, d_model=768, pos="learned")
    with_limit(monkeypatch, 139.8)  # an H200
    for batch, precision in ((16, "bf16"), (16, "fp32"), (32, "bf16")):
        check_training_memory(gpt2, TrainConfig(device="cpu", batch_size=batch, precision=precision))
    with_limit(monkeypatch, 8)
    with pytest.raises(RedthreadError, match="the test's device has 8 GiB"):
        check_training_memory(gpt2, TrainConfig(device="cpu", batch_size=16))


def test_training_bytes_counts_the_step_and_the_final_evaluation():
    cfg = TransformerConfig(vocab_size=50304, block_size=1024, n_layer=12, n_head=12, d_model=768)
    step = estimate_memory(cfg, 16, "bf16").total
    assert training_bytes(cfg, 16, "bf16") >= step
    # a batch of 1 trains in little, but the final evaluation scores 64 windows at once: its logits count
    assert training_bytes(cfg, 1, "fp32") >= 64 * 1024 * 50304 * 8
