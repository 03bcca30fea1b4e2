"""The settings of a training run (`TrainConfig`) and the learning-rate schedule they describe (`lr_at`).

The schedule: a linear warm-up to the peak rate, then a decay to min_lr, cosine (Loshchilov & Hutter
2017, "SGDR") or the original Transformer's inverse square root (Vaswani et al. 2017, eq. 3) with a
linear cool-down; on steps, or on the clock of a time budget (`max_time`). The one loop that reads
them is `train/loop.py`.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields
from typing import ClassVar

from redthread.errors import InvalidValue
from redthread.models.config import check_settings, setting
from redthread.train.optimizers import OPTIMIZERS
from redthread.train.precision import PRECISIONS

SCHEDULES = ("cosine", "rsqrt")  # the learning rate's decay after the warm-up (lr_at)
MAX_SEED = 2**63 - 2**16  # torch seeds are 64-bit; rank r seeds its generator with seed + r


def _is_finite(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


@dataclass(frozen=True)
class TrainConfig:
    max_iters: int = setting(2000, "optimizer steps", ge=1)
    batch_size: int = setting(12, "sequences per step (per process under torchrun)", ge=1)
    lr: float = setting(1e-3, "the peak learning rate, reached after the warm-up", gt=0)
    min_lr: float = setting(1e-4, "the learning rate at the end of the decay", ge=0)
    warmup_iters: int = setting(100, "steps of linear warm-up from 0 to lr", ge=0)
    schedule: str = setting("cosine", "after the warm-up, cosine: cosine decay to min_lr at the end; rsqrt: lr x sqrt(warm-up / time), "
                                      "the original Transformer's decay, then a linear cool-down to min_lr over the last cooldown_frac")
    cooldown_frac: float = setting(
        0.2, "with schedule rsqrt: the share of the run (steps, or the time budget) spent cooling down to min_lr", ge=0, lt=1)
    optimizer: str = setting("adamw", "adamw: AdamW for every parameter; muon: Muon for the hidden matrices, AdamW for the rest "
                                      "(train/optimizers.py)")
    momentum: float = setting(0.95, "Muon's momentum (with optimizer muon)", ge=0, lt=1)
    weight_decay: float = setting(0.1, "decoupled weight decay, on matrices only", ge=0)
    beta1: float = setting(0.9, "AdamW's decay rate of the gradient's mean", ge=0, lt=1)
    beta2: float = setting(0.99, "AdamW's decay rate of the gradient's second moment", ge=0, lt=1)
    grad_clip: float = setting(1.0, "clip the gradient's global norm to this; 0 switches clipping off", ge=0)
    grad_accum: int = setting(1, "micro-batches per optimizer step", ge=1)
    eval_interval: int = setting(250, "steps between validation estimates and checkpoints", ge=1)
    eval_batches: int = setting(20, "batches of the periodic validation estimate; the final one scores the whole split", ge=1)
    log_interval: int = setting(10, "steps between loss lines in metrics.jsonl", ge=1)
    seed: int = setting(1337, "the initial weights and the batches", ge=0, lt=MAX_SEED)
    device: str = setting("auto", "auto (a GPU when there is one), cpu, cuda, cuda:N or mps")
    max_time: float | None = setting(
        None, "seconds of training, validation estimates included; the run ends at max_iters or when they are spent, and the "
              "schedule follows whichever comes first (on the clock: warmup_frac, then decay to min_lr)", gt=0)
    warmup_frac: float = setting(
        0.05, "with max_time: the share of the time budget spent warming up (warmup_iters counts steps otherwise)", ge=0, lt=1)
    precision: str = setting("auto", "auto (the best the device can do), fp32, bf16 or fp16 (train/precision.py)")
    compile: bool = setting(False, "torch.compile the training forward")
    activation_checkpointing: bool = setting(False, "recompute each block in backward instead of storing it")
    peak_flops: float | None = setting(
        None, "FLOP/s per device for MFU; None: the card's table entry or a CPU measurement", gt=0)
    tensorboard: bool = setting(False, "also write TensorBoard event files (RUN/tensorboard/) from the metrics; needs tensorboard")

    CHOICES: ClassVar[dict[str, tuple[str, ...]]] = {"precision": PRECISIONS, "optimizer": OPTIMIZERS, "schedule": SCHEDULES}

    def __post_init__(self):
        if _is_finite(self.lr) and _is_finite(self.min_lr) and not (self.lr > 0 and 0 <= self.min_lr <= self.lr):
            raise InvalidValue(f"need lr > 0 and 0 <= min_lr <= lr, got lr={self.lr}, min_lr={self.min_lr}")
        check_settings(self)  # the bounds, switches and choices declared above
        if self.schedule == "rsqrt" and not (self.warmup_iters > 0 and self.warmup_frac > 0):
            raise InvalidValue("schedule rsqrt decays relative to the warm-up: it needs warmup_iters > 0 and warmup_frac > 0")
        if not isinstance(self.device, str):
            raise InvalidValue(f"device must be a name (auto, cpu, cuda, cuda:N), got {self.device!r}")

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> TrainConfig:
        unknown = sorted(set(d) - {f.name for f in fields(cls)})
        if unknown:
            raise InvalidValue(f"unknown TrainConfig field(s): {', '.join(unknown)}")
        return cls(**d)


def lr_at(step: int, cfg: TrainConfig, elapsed: float | None = None) -> float:
    """Linear warm-up to lr, then the schedule's decay to min_lr (cosine, or rsqrt and a cool-down).

    On steps: warm-up for warmup_iters steps, decay until max_iters. With a time budget (max_time)
    and `elapsed` seconds of it spent, on whichever clock is further along, since the run ends when
    the first one runs out: on the seconds, warm-up for the budget's first warmup_frac and decay until
    it is spent; so a run that gets fewer steps than hoped still completes its schedule, and one that
    reaches max_iters first still decays on its steps.
    """
    on_steps = cfg.max_time is None or elapsed is None or (step + 1) / cfg.max_iters >= elapsed / cfg.max_time
    if on_steps:
        if step < cfg.warmup_iters:
            return cfg.lr * (step + 1) / cfg.warmup_iters
        spent, warm = min(1.0, step / cfg.max_iters), cfg.warmup_iters / cfg.max_iters
    else:
        spent, warm = min(1.0, max(0.0, elapsed / cfg.max_time)), cfg.warmup_frac
        if spent < warm:  # the first step gets lr/100, as the first of 100 warm-up steps would
            return cfg.lr * max(spent / warm, 0.01)
    return decayed_lr(spent, warm, cfg)


def decayed_lr(spent: float, warm: float, cfg: TrainConfig) -> float:
    """The learning rate after the warm-up, with `spent` of the run gone and `warm` of it the warm-up
    (fractions of the steps or of the time budget).

    cosine: half a cosine from lr to min_lr. rsqrt: lr x sqrt(warm / spent), the decay of the
    original Transformer's schedule (Vaswani et al. 2017): fast at first, so the weights settle
    early, then slow, so learning goes on; and, since it never reaches min_lr by itself, a linear
    cool-down over the run's last cooldown_frac (as in Hägele et al. 2024, "Scaling laws and
    compute-optimal training beyond fixed training durations").
    """
    if cfg.schedule == "cosine":
        progress = min(1.0, (spent - warm) / (1.0 - warm)) if warm < 1 else 1.0
        return cfg.min_lr + 0.5 * (1.0 + math.cos(math.pi * progress)) * (cfg.lr - cfg.min_lr)
    lr = max(cfg.min_lr, cfg.lr * math.sqrt(warm / max(spent, warm)))
    if spent > 1.0 - cfg.cooldown_frac:
        lr = cfg.min_lr + (lr - cfg.min_lr) * (1.0 - spent) / cfg.cooldown_frac
    return lr
