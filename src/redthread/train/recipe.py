"""The speedrun's recipe (benchmarks/speedrun.py, docs/benchmarks.md), the one the demo trains and
the real-model experiments reuse: on a CPU budget of minutes, a small model that takes many steps
learns most; Muon moves its matrices further per step, and the rsqrt schedule settles the weights
early while leaving the rest of the budget to learn.
"""

from __future__ import annotations

import torch

MODEL = dict(n_layer=2, n_head=4, d_model=64, block_size=128, dropout=0.0, pos="rope")  # TransformerConfig fields
TRAIN = dict(batch_size=24, lr=0.05, min_lr=2e-4, warmup_frac=0.005, schedule="rsqrt", cooldown_frac=0.2,
             optimizer="muon", eval_interval=10**9, eval_batches=10, log_interval=10)  # TrainConfig fields
ADAMW = dict(optimizer="adamw", lr=1e-2)  # where torch is older than 2.9 and has no torch.optim.Muon


def training_recipe() -> dict:
    """The recipe's TrainConfig fields, with AdamW where torch has no Muon."""
    return {**TRAIN, **({} if hasattr(torch.optim, "Muon") else ADAMW)}
