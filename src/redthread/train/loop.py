"""The one training loop: maximum likelihood for every rung of the ladder (claim C12).

    for step in range(max_iters):
        x, y = data.batch("train")                  # a minibatch of (context, target) pairs
        loss = objective(model(x), y)               # mean negative log-likelihood, nats
        loss.backward(); clip; AdamW step           # a stochastic step towards the MLE

Around that core: AdamW with weight decay on matrices only (Loshchilov & Hutter 2019), or Muon
for the hidden matrices (`train/optimizers.py`), a linear warm-up then cosine decay of the
learning rate, on steps or on the clock of a time budget, gradient clipping, gradient
accumulation, periodic validation NLL (nats/token, perplexity, bits per character), a live
progress bar, metrics in `metrics.jsonl`, a loss-curve PNG, and atomic checkpoints from which
`resume=True` continues exactly as if the run had never stopped (a run on a time budget goes on
from the seconds it had spent, though its learning rates follow a clock no rerun repeats exactly).
Under torchrun the same loop trains data-parallel over processes (`train/distributed.py`).

Speed and memory, each its own module: the precision (fp32, bf16 or fp16 autocast with a loss
scale, chosen from what the device can do; TF32 matmuls on Ampere+: `train/precision.py`),
`torch.compile` of the training forward (`train/compiler.py`), activation checkpointing
(`train/memory.py`), and tokens/s with the model FLOPs utilisation in the progress line and
the metrics (`train/flops.py`).

A data source is anything with
    batch(split: str, batch_size: int, generator) -> (x, y)
    eval_batches(split: str, batch_size: int, max_batches: int | None) -> iterator of (x, y)
    tokens_per_char(split) -> float | None   (for bits per character; None where text has no characters)
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, ClassVar, Protocol

import torch
from torch import Tensor, nn

from redthread.errors import InvalidValue, RedthreadError
from redthread.files import atomic_write, atomic_write_text
from redthread.models.base import model_device, resolve_device
from redthread.models.config import check_settings, setting
from redthread.models.likelihoods import perplexity, scored, token_nll
from redthread.train import distributed, events
from redthread.train.checkpoint import FILENAME, Checkpoint, read_checkpoint, save_checkpoint
from redthread.train.compiler import compile_model
from redthread.train.flops import mfu, model_flops_per_token, peak_flops
from redthread.train.memory import checkpoint_blocks
from redthread.train.optimizers import OPTIMIZERS, make_optimizer
from redthread.train.precision import PRECISIONS, choose_precision, enable_tf32

SCHEDULES = ("cosine", "rsqrt")  # the learning rate's decay after the warm-up (lr_at)


class DataSource(Protocol):
    def batch(self, split: str, batch_size: int, generator: torch.Generator) -> tuple[Tensor, Tensor]: ...
    def eval_batches(self, split: str, batch_size: int, max_batches: int | None = None) -> Iterable: ...
    def tokens_per_char(self, split: str) -> float | None: ...


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


@dataclass
class TrainResult:
    step: int
    train_loss: float
    val_nll: float | None
    elapsed: float
    tokens_per_s: float
    evals: list[tuple[int, float]] = field(default_factory=list)  # (step, validation NLL) of each estimate


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


def objective_of(model: nn.Module, objective: Callable | None = None) -> Callable:
    """The likelihood to minimise: the one given, else the model's own, else cross-entropy (a plain module of logits)."""
    return objective or getattr(model, "objective", None) or token_nll


@torch.no_grad()
def evaluate(
    model: nn.Module,
    data: DataSource,
    split: str = "val",
    batch_size: int = 32,
    max_batches: int | None = None,
    objective: Callable | None = None,
) -> dict[str, float]:
    """Validation NLL over `max_batches` batches, or the whole split in non-overlapping windows.

    `objective`: the likelihood of the model's output; None: the model's own (`model.objective`)."""
    objective = objective_of(model, objective)
    was_training = model.training
    model.eval()
    device = model_device(model)
    total = torch.zeros((), dtype=torch.float64, device=device)
    count = torch.zeros((), dtype=torch.int64, device=device)
    for x, y in data.eval_batches(split, batch_size, max_batches):
        x, y = x.to(device), y.to(device)
        total += objective(model(x), y, reduction="sum").double()  # summed on the device: no sync per batch
        count += scored(y)
    model.train(was_training)
    total, count = total.item(), int(count.item())
    if count == 0:
        raise InvalidValue(f"the {split} split is empty")
    nll = total / count
    out = {"nll": nll, "ppl": perplexity(nll), "tokens": count}
    ratio = data.tokens_per_char(split)
    if ratio:
        out["bpc"] = nll * ratio / math.log(2)  # nats/token * tokens/char -> bits/char
    return out


@torch.no_grad()
def classifier_score(model: nn.Module, data, split: str = "val", batch_size: int = 256) -> dict:
    """Accuracy and NLL (nats per image) over every image of a split, once."""
    model.eval()
    nll = evaluate(model, data, split, batch_size=batch_size)["nll"]
    device = next(model.parameters()).device
    correct = total = 0
    for x, y in data.eval_batches(split, batch_size):
        correct += int((model(x.to(device)).argmax(-1).cpu() == y).sum())
        total += y.numel()
    return {"accuracy": correct / total, "nll": nll, "images": total}


def _rng_state(generator: torch.Generator) -> dict[str, Tensor]:
    state = {"torch": torch.get_rng_state(), "data": generator.get_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state()
    return state


def _restore_rng(rng: dict[str, Tensor], generator: torch.Generator) -> None:
    torch.set_rng_state(rng["torch"])
    generator.set_state(rng["data"])
    if "cuda" in rng and torch.cuda.is_available():
        torch.cuda.set_rng_state(rng["cuda"])


class Progress:
    """How a run shows its progress: a rich bar (loss, tokens/s, ETA) on a terminal (enabled=True);
    plain lines through `log` for logs and CI (enabled="plain": one line every ~2.5% of the run,
    so a run prints about 40); nothing (enabled=False).

    With a time budget (`budget` seconds, `spent` of them before a resume) the run is as far along as
    its steps or its clock, whichever is further: it ends at max_iters or when the time is spent."""

    LINES = 40  # about how many plain lines a run prints

    def __init__(self, total: int, start: int, enabled: bool | str, log: Callable[[str], None] | None = None,
                 budget: float | None = None, spent: float = 0.0):
        self.bar = None
        self.total, self.start, self.budget, self.spent, self.t0 = total, start, budget, spent, time.perf_counter()
        self.log = log if enabled == "plain" else None
        self.next_line = 1  # print when the run is this many LINES-ths done
        if enabled is True:
            from rich.progress import BarColumn, TextColumn, TimeRemainingColumn
            from rich.progress import Progress as Bar

            steps = "step {task.fields[step]}" + ("" if budget else f"/{total}")
            self.bar = Bar(
                TextColumn("[bold]train"), BarColumn(), TextColumn(steps),
                TextColumn("{task.fields[info]}"), TimeRemainingColumn(), transient=False,
            )
            self.bar.start()
            self.task = self.bar.add_task("train", total=1.0, completed=self.done(start)[0], info="", step=start)

    def done(self, step: int) -> tuple[float, float]:
        """How far along the run is (0 to 1), overall and since this process started (for the ETA)."""
        elapsed = time.perf_counter() - self.t0
        overall, here = step / self.total, (step - self.start) / max(1, self.total - self.start)
        if self.budget:
            overall = max(overall, (self.spent + elapsed) / self.budget)
            here = max(here, elapsed / max(1e-9, self.budget - self.spent))
        return min(1.0, overall), min(1.0, here)

    def update(self, step: int, info: str) -> None:
        overall, here = self.done(step)
        if self.bar is not None:
            self.bar.update(self.task, completed=overall, info=info, step=step)
        if self.log is not None and (overall * self.LINES >= self.next_line or step == self.total):
            self.next_line = int(overall * self.LINES) + 1
            elapsed = time.perf_counter() - self.t0
            eta = elapsed * (1 - here) / here if here > 0 else float("nan")
            where = f"step {step} ({overall:.0%} of {_duration(self.budget)})" if self.budget else f"step {step}/{self.total} ({overall:.0%})"
            self.log(f"{where}: {info}, {_duration(elapsed)} elapsed, ~{_duration(eta)} left")

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()


def _duration(seconds: float) -> str:
    if not math.isfinite(seconds):
        return "?"
    minutes, s = divmod(int(round(seconds)), 60)
    return f"{minutes}m{s:02d}s" if minutes else f"{s}s"


def train(
    model: nn.Module,
    data: DataSource,
    cfg: TrainConfig,
    run_dir: str | Path | None = None,
    objective: Callable | None = None,
    tokenizer: Any = None,
    resume: bool | Checkpoint = False,
    progress: Any = True,
    log: Callable[[str], None] | None = None,
    extra: dict | None = None,
    publish: Callable[[], Path] | None = None,
    monitor: Callable[[int, float, nn.Module], bool] | None = None,
) -> TrainResult:
    """Train `model` by maximum likelihood on `data`; write metrics and checkpoints to `run_dir`.

    `objective(output, y, reduction="mean")` is the negative log-likelihood minimised; None: the
    model's own (`model.objective`, see `models/base.py`), or cross-entropy for a plain module.

    Count rungs (a `count(x, y)` method and no trainable parameters) have their maximum-likelihood
    estimate in closed form: they are fitted by counting every training example once instead.

    `resume`: True continues from the checkpoint in `run_dir`; a `Checkpoint` the caller has already
    read (to rebuild the model and data it describes) continues from that one, read only once.

    `publish`, when given, is called once right after the first checkpoint is saved and returns
    the folder to write to from then on: a run that replaces another trains in a folder beside
    it and swaps it in only then (`train/run_folder.py`), so the old run survives any earlier error.

    `monitor(step, seconds, model)`, when given, is called after every step with the seconds of
    training so far; its own time is left out of the clock (and of max_time), and it returns True to
    stop the run there (a benchmark's full-split score at fixed intervals, say). Under torchrun every
    rank calls it, and all must answer alike.

    A loss or gradient norm that is not finite stops training with a one-line error naming the
    step; weights that are not finite are never saved, so the last good checkpoint is kept.
    """
    objective = objective_of(model, objective)
    if cfg.tensorboard:
        events.check_available()  # before any compute
    if hasattr(model, "count") and not any(p.requires_grad for p in model.parameters()):
        return _fit_by_counting(model, data, cfg, run_dir, objective, tokenizer, log, extra)
    device = distributed.setup(resolve_device(cfg.device))
    rank, world, main = distributed.rank(), distributed.world_size(), distributed.is_main()
    torch.manual_seed(cfg.seed + rank)
    generator = torch.Generator().manual_seed(cfg.seed + rank)  # rank r's shard of the batches
    model.to(device).train()
    optimizer = make_optimizer(model, cfg, device)
    precision = choose_precision(cfg.precision, device)
    if cfg.optimizer == "muon" and precision.name == "fp16":
        if cfg.precision != "auto":
            raise InvalidValue("optimizer muon does not train in fp16 (its loss scaling is AdamW's only): use bf16 or fp32")
        precision = choose_precision("fp32", device)  # auto on a GPU without bf16: the best Muon can train in
    tf32 = enable_tf32(device)
    scaler = precision.make_scaler()  # a pass-through unless fp16
    run_dir = Path(run_dir) if run_dir is not None else None
    metrics_path = run_dir / "metrics.jsonl" if run_dir and main else None  # only rank 0 writes
    log = log if main else None
    extra = {k: v for k, v in (extra or {}).items() if k != "grad_scaler"}  # a resumed run's is replaced below

    step, spent = 0, 0.0  # spent: seconds of training before this process, carried across a resume
    resuming = isinstance(resume, Checkpoint) or bool(resume)
    if resuming:
        if isinstance(resume, Checkpoint):
            ckpt = resume
        elif run_dir is None or not (run_dir / FILENAME).is_file():
            raise RedthreadError(f"nothing to resume: no {FILENAME} in {run_dir}")
        else:
            ckpt = read_checkpoint(run_dir, map_location=device)
        ckpt.require_resumable(optimizer)  # a checkpoint without its optimizer or RNG state would resume inexactly
        model.load_state_dict(ckpt.model.state_dict())
        optimizer.load_state_dict(ckpt.optimizer_state)
        if scaler.is_enabled() and "grad_scaler" in ckpt.extra:
            scaler.load_state_dict(ckpt.extra["grad_scaler"])
        _restore_rng(distributed.own_rng(ckpt.rng), generator)
        step, spent = ckpt.step, float(ckpt.extra.get("elapsed", 0.0))
        _truncate_metrics(metrics_path, step, log)
    elif metrics_path is not None:
        run_dir.mkdir(parents=True, exist_ok=True)
        atomic_write_text(metrics_path, "")

    forward_model, compile_message = compile_model(model, device) if cfg.compile else (model, None)
    if log:
        for line in _speed_report(precision.name, device, tf32, cfg, compile_message):
            log(line)
    # MFU: the model's FLOPs per token against the device's peak, on the rank that reports
    counts_flops = main and callable(getattr(model, "flops_per_token", None))
    peak, peak_source = peak_flops(device, precision.name, cfg.peak_flops) if counts_flops else (None, "")
    if counts_flops and peak is None and log:
        log(f"MFU not shown: {peak_source}")
    flops_per_token = None  # known at the first batch, from its length

    # progress: True for a bar of its own, "plain" for log lines, or any object with update(step, info) (the ladder's)
    bar = progress if hasattr(progress, "update") else Progress(cfg.max_iters, step, progress if main else False, log,
                                                                cfg.max_time, spent)
    ddp_model = distributed.wrap(forward_model, device)  # averages gradients over ranks; `model` is what is saved
    t0 = t_log = time.perf_counter()
    paused = 0.0  # seconds spent in the monitor: not training

    def clock() -> float:
        """Seconds of training so far, validation estimates and saves included (and before a resume)."""
        return spent + time.perf_counter() - t0 - paused

    elapsed = spent  # the clock as every rank agreed on it after the last step: the budget and the learning rate read it
    tokens_since_log, tokens_total, steps_since_log = 0, 0, 0
    loss_acc = torch.zeros((), device=device)
    last_loss, val_nll, evals = float("nan"), None, []
    # the first step whose loss or gradient norm was not finite (-1: none yet), kept on the device so
    # that watching costs no host-device sync; read where the loop syncs anyway
    diverged_at = torch.full((), -1, dtype=torch.int64, device=device)
    saved_step = step if resuming else None

    def check_finite() -> None:
        """Stop, naming the step, once the loss, a gradient norm or a weight is not finite."""
        bad = int(distributed.maximum(diverged_at).item())
        if bad < 0 and _all_finite(model):
            return
        where = f"at step {bad}" if bad >= 0 else f"by step {step}"
        kept = f"the last good checkpoint (step {saved_step}) is kept" if saved_step is not None else "nothing was saved"
        raise RedthreadError(f"training diverged {where}: the loss or a gradient is not finite, most likely because "
                             f"the learning rate ({cfg.lr:g}) is too high; {kept}")

    def checkpoint(rng: dict[str, Tensor] | None = None) -> None:
        with stop.deferred():  # a stop signal waits until the save is whole
            save(rng)

    def save(rng: dict[str, Tensor] | None) -> None:
        nonlocal run_dir, metrics_path, saved_step, publish
        if run_dir is not None:
            check_finite()  # never write weights that are not finite
            rng = distributed.gather_rng(rng or _rng_state(generator))  # every rank takes part
            if main:
                state = {**extra, "elapsed": clock()}  # a resumed run's time budget goes on from here
                if scaler.is_enabled():
                    state["grad_scaler"] = scaler.state_dict()
                try:
                    save_checkpoint(run_dir, model, optimizer, step, tokenizer, cfg.to_dict(), rng, state)
                except RedthreadError as e:
                    kept = f"; the last good checkpoint (step {saved_step}) is kept" if saved_step is not None else ""
                    raise RedthreadError(f"{e}{kept}") from None
                if metrics_path is not None and metrics_path.exists():
                    rows = read_metrics(metrics_path)  # read once: the loss curve and the event files show the same rows
                    plot_loss_curve(rows, run_dir / "loss.png")
                    if cfg.tensorboard:
                        events.write_events(rows, run_dir / events.FOLDER)
            saved_step = step
            if publish is not None:  # the first save: a replacing run swaps in for the old one, and writes there from now
                run_dir, publish = publish(), None
                metrics_path = run_dir / "metrics.jsonl" if main else None

    restore_blocks = checkpoint_blocks(model) if cfg.activation_checkpointing else None  # before the first (traced) forward
    stop = distributed.StopSignals()  # SIGINT/SIGTERM: stop after the step, saved (under torchrun: every rank)
    try:
        while step < cfg.max_iters:
            # the random state this step starts from: an interrupted step is redone from here on --resume
            rng_at_step, updating = _rng_state(generator), False
            lr = lr_at(step, cfg, elapsed if cfg.max_time is not None else None)
            for group in optimizer.param_groups:
                group["lr"] = lr
            for micro in range(cfg.grad_accum):
                x, y = data.batch("train", cfg.batch_size, generator)
                x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
                with distributed.sync_gradients(ddp_model, micro == cfg.grad_accum - 1):
                    with precision.autocast():
                        loss = objective(ddp_model(x), y) / cfg.grad_accum
                    scaler.scale(loss).backward()
                loss_acc += loss.detach()
                tokens_since_log += y.numel() * world
            if peak is not None and flops_per_token is None:
                flops_per_token = model_flops_per_token(model, x.shape[-1])
            updating = True
            finite = torch.isfinite(loss_acc)  # the loss summed since the last log: stays non-finite once it is
            if cfg.grad_clip > 0:
                scaler.unscale_(optimizer)  # clip the true gradients, not the scaled ones
                norm = torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
                if not scaler.is_enabled():  # fp16: an overflowed gradient is the loss scale's to handle (step skipped)
                    finite = finite & torch.isfinite(norm)
            diverged_at = torch.where(finite | (diverged_at >= 0), diverged_at, step + 1)  # no sync
            scaler.step(optimizer)  # fp16: skipped when a gradient overflowed, and the scale backs off
            scaler.update()
            optimizer.zero_grad(set_to_none=True)
            step += 1
            updating, rng_at_step = False, None  # from here on the current random state is the next step's
            steps_since_log += 1

            if step % cfg.log_interval == 0 or step == cfg.max_iters:
                last_loss = distributed.average(loss_acc).item() / steps_since_log  # the only host-device sync of a step
                if not math.isfinite(last_loss):  # averaged over ranks: every rank decides the same
                    check_finite()  # a finite loss with a bad gradient shows at the next step, or at the save
                loss_acc.zero_()
                steps_since_log = 0
                now = time.perf_counter()
                tok_s = tokens_since_log / max(now - t_log, 1e-9)
                tokens_total += tokens_since_log
                t_log, tokens_since_log = now, 0
                row = {"step": step, "loss": last_loss, "lr": lr, "tokens_per_s": tok_s, "elapsed": clock()}
                info = f"loss {last_loss:.3f}  {tok_s:,.0f} tok/s"
                if flops_per_token is not None:
                    row["mfu"] = mfu(tok_s / world, flops_per_token, peak)  # per device
                    info += f"  MFU {row['mfu']:.1%}"
                _write_metrics(metrics_path, row)
                bar.update(step, info)
            if step % cfg.eval_interval == 0 or step == cfg.max_iters:
                ev = evaluate(model, data, "val", cfg.batch_size, cfg.eval_batches, objective)
                val_nll = ev["nll"]
                evals.append((step, val_nll))
                _write_metrics(metrics_path, {"step": step, **{f"val_{k}": v for k, v in ev.items() if k != "tokens"}})
                if log:
                    log(f"step {step}: train loss {last_loss:.4f}, val nll {val_nll:.4f} nats/token")
                checkpoint()
            if monitor is not None:
                t_monitor = time.perf_counter()
                stop_here = monitor(step, clock(), model)
                paused += time.perf_counter() - t_monitor
                t_log += time.perf_counter() - t_monitor  # nor of the tokens/s
                if stop_here:
                    break
            elapsed, signalled = distributed.agree(clock(), stop.seen)  # one all-reduce under torchrun
            over_time = cfg.max_time is not None and elapsed > cfg.max_time
            if signalled and step < cfg.max_iters:  # Ctrl-C under torchrun: save this step, then stop
                if step % cfg.eval_interval != 0:  # else saved just above
                    checkpoint()
                if log and run_dir is not None:
                    log(f"interrupted: checkpoint saved at step {step}; continue with --resume")
                raise KeyboardInterrupt
            if over_time:
                if log:
                    log(f"time budget of {cfg.max_time:.0f}s spent at step {step}")
                break
    except KeyboardInterrupt:
        if not updating and world == 1:  # parameters of the last completed step: save them, then stop
            optimizer.zero_grad(set_to_none=True)
            checkpoint(rng_at_step)
            if log and run_dir is not None:
                log(f"interrupted: checkpoint saved at step {step}; continue with --resume")
        raise
    finally:
        stop.restore()
        if isinstance(bar, Progress):
            bar.close()
        if restore_blocks is not None:
            restore_blocks()
    if step % cfg.eval_interval != 0 and step != cfg.max_iters:
        checkpoint()  # stopped by the time budget between evaluations
    elapsed = time.perf_counter() - t0 - paused  # training time: the monitor's is not
    return TrainResult(step, last_loss, val_nll, elapsed, tokens_total / max(elapsed, 1e-9), evals)


def _fit_by_counting(model, data, cfg, run_dir, objective, tokenizer, log, extra) -> TrainResult:
    """The closed-form MLE of a count model: one pass over the training split, then validation."""
    device = resolve_device(cfg.device)
    model.to(device)
    run_dir = Path(run_dir) if run_dir is not None else None
    t0, tokens = time.perf_counter(), 0
    for x, y in data.eval_batches("train", max(cfg.batch_size, 1024), None):  # every training example once
        model.count(x.to(device), y.to(device))
        tokens += int(scored(y))
    ev = evaluate(model, data, "val", cfg.batch_size, cfg.eval_batches, objective)
    train_nll = evaluate(model, data, "train", cfg.batch_size, cfg.eval_batches, objective)["nll"]
    elapsed = time.perf_counter() - t0
    if log:
        log(f"counted {tokens:,} training tokens: train nll {train_nll:.4f}, val nll {ev['nll']:.4f} nats/token")
    if run_dir is not None:
        run_dir.mkdir(parents=True, exist_ok=True)
        metrics_path = run_dir / "metrics.jsonl"
        metrics_path.write_text("")
        _write_metrics(metrics_path, {"step": 1, "loss": train_nll, "tokens_per_s": tokens / max(elapsed, 1e-9), "elapsed": elapsed})
        _write_metrics(metrics_path, {"step": 1, **{f"val_{k}": v for k, v in ev.items() if k != "tokens"}})
        save_checkpoint(run_dir, model, None, 1, tokenizer, cfg.to_dict(), None, extra)
    return TrainResult(1, train_nll, ev["nll"], elapsed, tokens / max(elapsed, 1e-9))


def _speed_report(precision: str, device: torch.device, tf32: bool, cfg: TrainConfig, compile_message: str | None) -> list[str]:
    """One line on how the step computes, when that is anything but plain fp32 (and the compile message)."""
    parts = [f"{precision} autocast" if precision != "fp32" else "fp32"]
    parts += ["TF32 matmuls"] * tf32 + ["compiled"] * (cfg.compile and compile_message is None)
    parts += ["activation checkpointing"] * cfg.activation_checkpointing
    lines = [f"training on {device}: {', '.join(parts)}"] if len(parts) > 1 or precision != "fp32" else []
    return lines + [compile_message] * (compile_message is not None)


def _write_metrics(path: Path | None, row: dict) -> None:
    """Append one row: opened, written and closed per row, so a crash loses at most the row being written."""
    if path is not None:
        try:
            with open(path, "a", encoding="utf-8") as f:
                f.write(json.dumps(row) + "\n")
        except OSError as e:
            raise RedthreadError(f"cannot append to {path}: {e.strerror or e}") from None


def _truncate_metrics(path: Path | None, step: int, log: Callable[[str], None] | None = None) -> None:
    """On resume, drop rows logged after the checkpoint (they will be logged again) and a torn last row."""
    if path is None or not path.exists():
        return
    rows, torn = _parse_metrics(path)
    if torn and log:
        log(f"{path}: dropped its last line, cut short by an interrupted write; the rows before it are kept")
    kept = [json.dumps(r) + "\n" for r in rows if r["step"] <= step]
    atomic_write_text(path, "".join(kept))


def _parse_metrics(path: Path) -> tuple[list[dict], bool]:
    """The rows of a metrics file, and whether its last line was torn (no newline, not a whole row).

    A torn last line is what a crash or a full disk leaves mid-append; anything else that is not a
    row (bytes that are not UTF-8, a bad line before the last) is a one-line error naming the file.
    """
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise RedthreadError(f"cannot read {path}: {e.strerror or e}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InvalidValue(f"{path} is not UTF-8 text (bad byte at offset {e.start}): move it aside to go on "
                             f"without the old metrics") from None
    lines = text.split("\n")  # the last item is "" when the file ends with a newline
    rows, torn = [], False
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        row = _metrics_row(line)
        if row is None and number == len(lines):  # no newline after it: cut short
            torn = True
        elif row is None:
            raise InvalidValue(f"{path}, line {number}: not a metrics row (a JSON object with an integer step): "
                                 f"move the file aside to go on without the old metrics")
        else:
            rows.append(row)
    return rows, torn


def _metrics_row(line: str) -> dict | None:
    try:
        row = json.loads(line)
    except ValueError:
        return None
    ok = isinstance(row, dict) and isinstance(row.get("step"), int) and not isinstance(row["step"], bool)
    return row if ok else None


def _all_finite(model: nn.Module) -> bool:
    """Whether every parameter is finite, in one host-device sync."""
    params = [p.detach() for p in model.parameters()]
    return not params or bool(torch.stack([torch.isfinite(p).all() for p in params]).all())


def read_metrics(path: str | Path) -> list[dict]:
    """The rows of a run's metrics.jsonl (a torn last line, left by an interrupted write, is skipped)."""
    return _parse_metrics(Path(path))[0]


def plot_loss_curve(rows: list[dict], out: Path) -> None:
    """Training loss and validation NLL against step (the rows of metrics.jsonl), as a PNG."""
    from redthread.plotting import pyplot

    plt = pyplot()

    train_rows = [r for r in rows if "loss" in r]
    val_rows = [r for r in rows if "val_nll" in r]
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot([r["step"] for r in train_rows], [r["loss"] for r in train_rows], label="train NLL", lw=1)
    if val_rows:  # a run stopped before its first evaluation has no validation points to show
        ax.plot([r["step"] for r in val_rows], [r["val_nll"] for r in val_rows], "o-", label="validation NLL", ms=3)
    ax.set_xlabel("step")
    ax.set_ylabel("nats / token")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    atomic_write(out, lambda tmp: fig.savefig(tmp, format="png", dpi=120))
    plt.close(fig)

