"""Memory of a training step: activation checkpointing, and an estimate of the bytes a config needs.

Activation checkpointing (Chen et al. 2016, "Training deep nets with sublinear memory cost")
keeps only each block's input during the forward pass and recomputes the block's inside during
backward: about one more forward pass of compute (~33% more FLOPs) for activation memory that
no longer grows with depth times width, which is what long contexts need. `checkpoint_blocks`
applies it to every block of `model.blocks` by giving each block an instance `forward` that runs
the class's through `torch.utils.checkpoint`: the state-dict keys, and so the checkpoints, are
untouched, and the function it returns restores the plain blocks (the loop calls it at the end).

The estimate (`estimate_memory`), for a pre-norm `TransformerConfig` with GELU FFN, counted from
what autograd saves (checked against torch's saved-tensor hooks in tests/train/test_memory.py):

    weights + gradients + AdamW m and v      16 bytes per parameter (all float32, in every precision)
    autocast's weight copies                 2 bytes per parameter under bf16/fp16
    per block, saved for backward            B T (8 C + e (6 C + 2 F))  bytes
        the two LayerNorm inputs (float32, 4 bytes), and in the compute dtype (e bytes: 4 fp32,
        2 bf16/fp16) the first LayerNorm's output, q, k, v, the attention output, the second
        LayerNorm's output, the FFN's hidden pre-activation and its GELU (F = d_ff)
      + 2 B T C bytes with dropout (the residual dropouts' boolean masks)
      + B H T^2 (2 e + 1) where attention runs the explicit path (weights kept) instead of a
        fused kernel: softmax output, its dropout mask and result (Korthikanti et al. 2022)
    after the blocks                         B T C (4 + e) + 2 x 4 B T V
        final LayerNorm in/out, the float32 log-probabilities of the loss and their gradient

With checkpointing a block keeps only its float32 input, 4 B T C bytes, and one block's full
activations are alive again while it is recomputed. Not counted: the allocator's fragmentation,
the CUDA context (~0.5 GiB), compiled kernels' workspaces, the data batch.

`check_training_memory` refuses, in one line and before anything is allocated, a run whose
estimate exceeds the memory of its device (`models/size.py`: physical RAM, `ulimit -v`, a
cgroup limit, or the GPU's memory), naming the size that matters most: `--batch-size 100000000`
or `--d-model 1000000` fail at once instead of in the allocator. It also counts the final
evaluation (batches of 64 windows, no gradients), which can be the larger of the two when the
training batch is small and the vocabulary large.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn
from torch.utils.checkpoint import checkpoint

from redthread.errors import InvalidValue
from redthread.models.base import resolve_device
from redthread.models.size import (
    FP32,
    FP64,
    GATES,
    check_fits,
    check_model_fits,
    config_sizes,
    counts,
    culprit,
    knows,
    memory_limit,
    model_bytes,
    parameter_count,
)
from redthread.models.transformer import TransformerConfig
from redthread.train.precision import choose_precision

BATCH_BYTES = 32  # per token of a batch: the int64 windows, the inputs and targets cut from them, their indices

COMPUTE_BYTES = {"fp32": 4, "bf16": 2, "fp16": 2}


def _recompute(forward, *args, **kwargs):
    """One block's forward, recomputed in backward when gradients are being taken; plain otherwise."""
    if not torch.is_grad_enabled():
        return forward(*args, **kwargs)  # evaluation: nothing to save, nothing to recompute
    return checkpoint(forward, *args, use_reentrant=False, **kwargs)  # the RNG state is replayed: same dropout


def checkpoint_blocks(model: nn.Module) -> Callable[[], None]:
    """Make every block of `model.blocks` save only its input for backward; return the undo."""
    blocks = getattr(model, "blocks", None)
    if not isinstance(blocks, nn.ModuleList) or len(blocks) == 0:
        raise InvalidValue(f"activation checkpointing needs a model with blocks (a Transformer); {type(model).__name__} has none")
    own = [block.__dict__.get("forward") for block in blocks]  # a forward already set on the instance, if any
    for block in blocks:
        block.forward = functools.partial(_recompute, block.forward)

    def restore() -> None:
        for block, forward in zip(blocks, own):
            if forward is None:
                del block.forward
            else:
                block.forward = forward

    return restore


@dataclass(frozen=True)
class MemoryEstimate:
    """Bytes of one training step, by part (see the module docstring for the formulas)."""

    parameters: int  # float32 weights
    gradients: int
    optimizer: int  # AdamW's two moments
    activations: int  # saved for backward, autocast's weight copies included
    logits_grad: int  # the loss gradient w.r.t. the log-probabilities, alive at the start of backward

    @property
    def total(self) -> int:
        return self.parameters + self.gradients + self.optimizer + self.activations + self.logits_grad


def count_parameters(cfg: TransformerConfig) -> int:
    """Parameters of a TransformerLM with this config (a tied matrix once), counted from the config: nothing is built."""
    return parameter_count("TransformerLM", cfg)


def estimate_memory(
    cfg: TransformerConfig,
    batch_size: int,
    precision: str = "fp32",
    activation_checkpointing: bool = False,
    T: int | None = None,
    fused_attention: bool = True,
) -> MemoryEstimate:
    """Bytes needed to train a TransformerLM with `cfg` on batches of `batch_size` x T (default block_size)."""
    if precision not in COMPUTE_BYTES:
        raise InvalidValue(f"precision must be one of {', '.join(COMPUTE_BYTES)}; got {precision!r}")
    B, T, C, F, H, V = batch_size, T or cfg.block_size, cfg.d_model, cfg.ffn_size, cfg.n_head, cfg.vocab_size
    e, n = COMPUTE_BYTES[precision], count_parameters(cfg)
    block = B * T * (8 * C + e * (6 * C + 2 * F))  # saved by one block
    if cfg.dropout > 0:
        block += 2 * B * T * C
    if not fused_attention:
        block += B * H * T * T * (2 * e + 1)
    blocks = cfg.n_layer * (4 * B * T * C) + block if activation_checkpointing else cfg.n_layer * block
    head = B * T * C * (4 + e) + 4 * B * T * V
    weight_copies = 2 * n if precision != "fp32" else 0
    return MemoryEstimate(4 * n, 4 * n, 8 * n, blocks + head + weight_copies, 4 * B * T * V)


EVAL_BATCH_SIZE = 64  # the final evaluation's batch (train/language_model.py)
TRAIN_DEFAULTS = {"batch_size": 12}  # TrainConfig's default, what a refusal compares with


def training_bytes(
    cfg: TransformerConfig,
    batch_size: int,
    precision: str = "fp32",
    activation_checkpointing: bool = False,
    eval_batch_size: int = EVAL_BATCH_SIZE,
) -> int:
    """Bytes of a training run of a TransformerLM: the larger of a training step (`estimate_memory`)
    and an evaluation batch without gradients, plus the fixed tables the model keeps as buffers and
    the batch of token ids itself."""
    step = estimate_memory(cfg, batch_size, precision, activation_checkpointing).total
    n = count_parameters(cfg)
    # evaluation (float32, no gradients): the weights; per token one block's widest tensors, the logits and
    # their log-probabilities
    evaluation = 4 * n + eval_batch_size * cfg.block_size * 4 * (4 * cfg.d_model + cfg.ffn_size + 2 * cfg.vocab_size)
    batch = BATCH_BYTES * max(batch_size, eval_batch_size) * (cfg.block_size + 1)
    return max(step, evaluation) + model_bytes("TransformerLM", cfg) - 4 * n + batch


def check_training_memory(cfg: TransformerConfig, train_cfg, device=None, precision: str | None = None) -> None:
    """Refuse, in one line, a TransformerLM run (`train_cfg`: a TrainConfig) that cannot fit on its device.

    Call it before the model is built. `device` and `precision` ("fp32", "bf16" or "fp16"): the run's,
    as the command resolved them (`train/loop.py`'s `Placement`); None: resolved here from `train_cfg`."""

    device = resolve_device(train_cfg.device) if device is None else torch.device(device)
    if device.type != "cpu":  # the model is built on the CPU first, then moved
        check_model_fits("TransformerLM", cfg)
    precision = choose_precision(train_cfg.precision, device).name if precision is None else precision
    checkpointing = bool(train_cfg.activation_checkpointing)

    def needed(v: dict) -> int:
        batch = v.pop("batch_size")
        return training_bytes(dataclasses.replace(cfg, **v), batch, precision, checkpointing)

    sizes, defaults = config_sizes(cfg)
    values = {**sizes, "batch_size": train_cfg.batch_size}
    limit = memory_limit(device)
    total = needed(dict(values))
    if total <= limit[0]:
        return
    name = culprit(lambda v: needed(dict(v)), values, {**defaults, **TRAIN_DEFAULTS})
    check_fits(total, name, " to train and evaluate (weights, gradients, AdamW moments, activations)", limit=limit)


# -- any class models/size.py counts: a cheap bound ---------------------------------------------------



def training_bytes_bound(class_name: str, cfg, batch_size: int) -> int:
    """Bytes to train `class_name(cfg)` with AdamW on batches of `batch_size`, never more than it needs.

    A TransformerLM gets the full estimate (`train/memory.py`); the other classes a lower bound: 16
    bytes per parameter (float32 weights, gradients, AdamW's two moments), the buffers, the batch,
    and the activations no model of the class can do without (the logits and their gradient, the
    recurrent gates, the ViT's token vectors per layer). Cheap, and it never refuses a run that fits."""
    B = batch_size
    if class_name == "TransformerLM":
        return training_bytes(cfg, B)
    params, buffers = counts(class_name, cfg)
    static = 16 * params + buffers
    if class_name == "ViT":
        tokens = cfg.n_patches + (cfg.pool == "cls")
        images = B * cfg.channels * cfg.image_size**2 * FP32
        return static + images + B * tokens * cfg.d_model * FP32 * 4 * cfg.n_layer + 2 * B * cfg.n_classes * FP32
    if class_name == "Captioner":
        enc = cfg.encoder_config()
        images = B * cfg.channels * cfg.image_size**2 * FP32
        encoder = B * enc.n_patches * cfg.d_model * FP32 * 4 * cfg.n_layer_encoder
        decoder = B * cfg.block_size * (cfg.d_model * FP32 * 4 * cfg.n_layer_decoder + 2 * FP32 * cfg.vocab_size)
        return static + images + encoder + decoder + BATCH_BYTES * B * (cfg.block_size + 1)
    T, V = cfg.block_size, cfg.vocab_size
    per_token = 2 * FP32 * V  # the logits and their gradient
    if class_name == "NGramLM":
        per_token = FP64 * V  # counting needs no gradient; scoring makes float64 log-probabilities
    elif class_name == "RecurrentLM":
        per_token += FP32 * (cfg.d_embed + cfg.n_layer * (GATES[cfg.cell] + 1) * cfg.d_hidden)
    elif class_name == "MLPLM":
        per_token += FP32 * (cfg.context * cfg.d_embed + cfg.d_hidden)
    return static + B * T * per_token + BATCH_BYTES * B * (T + 1)


def check_training_fits(class_name: str, cfg, batch_size: int, device=None) -> None:
    """Refuse, in one line, training `class_name(cfg)` on batches of `batch_size` where it cannot fit.

    For the ladder's rungs, the image models and any class this module knows; call it before the
    first batch is drawn. `device`: where the run trains (None: the CPU; "auto" as the loop resolves it)."""
    if not knows(class_name):
        return
    if isinstance(device, str) and device == "auto":
        device = resolve_device(device)
    sizes, defaults = config_sizes(cfg)

    def needed(v: dict) -> int:
        v = dict(v)
        batch = v.pop("batch_size")
        return training_bytes_bound(class_name, dataclasses.replace(cfg, **v), batch)

    values = {**sizes, "batch_size": batch_size}
    limit = memory_limit(device)
    total = needed(values)
    if total <= limit[0]:
        return
    name = culprit(needed, values, {**defaults, **TRAIN_DEFAULTS})
    check_fits(total, name, f" to train this {class_name} (weights, gradients, AdamW moments, activations)", limit=limit)
