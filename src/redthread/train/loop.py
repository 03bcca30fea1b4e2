"""The one training loop: maximum likelihood for every rung of the ladder (claim C12).

    for step in range(max_iters):
        lr = lr_at(step)                            # the schedule: warm-up, then decay
        x, y = data.batch("train")                  # a minibatch of (context, target) pairs
        loss = objective(model(x), y)               # mean negative log-likelihood, nats
        loss.backward(); clip; AdamW step           # a stochastic step towards the MLE
        every eval_interval steps: evaluate, save   # validation NLL, a checkpoint

`train()` reads in that order: build (device, seeds, optimizer, precision, run folder), then the
loop (schedule, batch, step, log, evaluate, save), then finish. The device and the precision come
resolved (`Placement`, from `resolve_placement`, called once where a command starts); `train`
resolves them from its config only when called without one. Beside it: the settings and the
schedule (`train/config.py`), the run folder and its checkpoints (`train/run_writer.py`), the
metrics and the loss curve (`train/metrics.py`), the clock and the progress bar (`train/progress.py`).

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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import torch
from torch import Tensor, nn

from redthread.errors import InvalidValue, RedthreadError
from redthread.models.base import model_device, resolve_device
from redthread.models.likelihoods import perplexity, scored, token_nll
from redthread.train import distributed, events
from redthread.train.checkpoint import FILENAME, Checkpoint, read_checkpoint, save_checkpoint
from redthread.train.compiler import compile_model
from redthread.train.config import TrainConfig, lr_at
from redthread.train.flops import peak_flops
from redthread.train.memory import checkpoint_blocks
from redthread.train.metrics import Meter, plot_loss_curve, read_metrics
from redthread.train.optimizers import make_optimizer
from redthread.train.precision import Precision, choose_precision, enable_tf32
from redthread.train.progress import Clock, Progress
from redthread.train.run_writer import RunWriter, rng_state

__all__ = [  # what callers import from here (TrainConfig and lr_at live in train/config.py, the metrics in train/metrics.py)
    "DataSource", "Placement", "Progress", "TrainConfig", "TrainResult", "classifier_score", "evaluate", "lr_at",
    "make_optimizer", "objective_of", "plot_loss_curve", "read_metrics", "resolve_device", "resolve_placement", "train",
]


class DataSource(Protocol):
    def batch(self, split: str, batch_size: int, generator: torch.Generator) -> tuple[Tensor, Tensor]: ...
    def eval_batches(self, split: str, batch_size: int, max_batches: int | None = None) -> Iterable: ...
    def tokens_per_char(self, split: str) -> float | None: ...


@dataclass
class TrainResult:
    step: int
    train_loss: float
    val_nll: float | None
    elapsed: float
    tokens_per_s: float
    evals: list[tuple[int, float]] = field(default_factory=list)  # (step, validation NLL) of each estimate


@dataclass(frozen=True)
class Placement:
    """Where and in what precision a run computes: a TrainConfig's `device` and `precision` as this
    machine resolves them ("auto" -> cuda or cpu; "auto" -> bf16, fp16 or fp32). The config keeps the
    names as given, so a checkpoint resumed on another machine resolves them there."""

    device: torch.device
    precision: Precision


def resolve_placement(cfg: TrainConfig, device: torch.device | None = None) -> Placement:
    """`cfg.device` and `cfg.precision` resolved, once, where a command starts; the result is passed
    down as a value. `device`: cfg.device already resolved by the caller (None: resolved here)."""
    device = resolve_device(cfg.device) if device is None else device
    return Placement(device, _choose_precision(cfg, device))


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
    placement: Placement | None = None,
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

    `placement`: cfg.device and cfg.precision as the command that started the run resolved them
    (`resolve_placement`); None: resolved here, once.

    A loss or gradient norm that is not finite stops training with a one-line error naming the
    step; weights that are not finite are never saved, so the last good checkpoint is kept.
    """
    objective = objective_of(model, objective)
    if cfg.tensorboard:
        events.check_available()  # before any compute
    if hasattr(model, "count") and not any(p.requires_grad for p in model.parameters()):
        device = placement.device if placement is not None else resolve_device(cfg.device)  # counting has no precision
        return _fit_by_counting(model, data, cfg, device, run_dir, objective, tokenizer, log, extra)

    # build: the device (and the process group under torchrun), the seeds, the optimizer, the precision, the run folder
    placement = placement if placement is not None else resolve_placement(cfg)
    device = distributed.setup(placement.device)
    rank, world, main = distributed.rank(), distributed.world_size(), distributed.is_main()
    log = log if main else None  # only rank 0 speaks and writes
    torch.manual_seed(cfg.seed + rank)
    generator = torch.Generator().manual_seed(cfg.seed + rank)  # rank r's shard of the batches
    model.to(device).train()
    optimizer = make_optimizer(model, cfg, device)
    precision, tf32 = placement.precision, enable_tf32(device)
    scaler = precision.make_scaler()  # a pass-through unless fp16
    run = RunWriter(run_dir, cfg, model, optimizer, scaler, generator, tokenizer, extra, publish, main)
    step, spent = run.start(_checkpoint_to_resume(resume, run.dir, device), log)  # 0, 0.0 unless resumed
    forward_model, peak = _speed_paths(model, cfg, device, precision.name, tf32, log, main)  # torch.compile; the peak for MFU
    # progress: True for a bar of its own, "plain" for log lines, or any object with update(step, info) (the ladder's)
    bar = progress if hasattr(progress, "update") else Progress(cfg.max_iters, step, progress if main else False, log,
                                                                cfg.max_time, spent, time.perf_counter)
    ddp_model = distributed.wrap(forward_model, device)  # averages gradients over ranks; `model` is what is saved
    clock = Clock(spent, time.perf_counter)  # seconds of training, validation and saves included
    meter = Meter(model, device, world, peak, step, clock())  # loss, tokens/s and MFU between log lines
    elapsed = spent  # the clock as every rank agreed on it after the last step: the budget and the learning rate read it
    last_loss, val_nll, evals = float("nan"), None, []
    # the first step whose loss or gradient norm was not finite (-1: none yet): on the device, read where the loop syncs anyway
    diverged_at = torch.full((), -1, dtype=torch.int64, device=device)
    restore_blocks = checkpoint_blocks(model) if cfg.activation_checkpointing else None  # before the first (traced) forward
    stop = distributed.StopSignals()  # SIGINT/SIGTERM: stop after the step, saved (under torchrun: every rank)
    try:
        while step < cfg.max_iters:
            # the random state this step starts from: an interrupted step is redone from here on --resume
            rng_at_step, updating = rng_state(generator), False
            lr = lr_at(step, cfg, elapsed if cfg.max_time is not None else None)
            for group in optimizer.param_groups:
                group["lr"] = lr
            # the maximum-likelihood step: the mean NLL of a batch, its gradient, one step of the optimizer
            for micro in range(cfg.grad_accum):
                x, y = data.batch("train", cfg.batch_size, generator)
                x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
                with distributed.sync_gradients(ddp_model, micro == cfg.grad_accum - 1):
                    with precision.autocast():
                        loss = objective(ddp_model(x), y) / cfg.grad_accum
                    scaler.scale(loss).backward()
                meter.add(loss, x, y)
            updating = True
            finite = torch.isfinite(meter.loss)  # the loss summed since the last log: stays non-finite once it is
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

            if step % cfg.log_interval == 0 or step == cfg.max_iters:
                row, info = meter.read(step, lr, clock())  # the only host-device sync of a step
                last_loss = row["loss"]
                if not math.isfinite(last_loss):  # averaged over ranks: every rank decides the same
                    run.check_finite(step, diverged_at)  # a finite loss with a bad gradient shows at the next step, or at the save
                _write_metrics(run.metrics, row)
                bar.update(step, info)
            if step % cfg.eval_interval == 0 or step == cfg.max_iters:
                ev = evaluate(model, data, "val", cfg.batch_size, cfg.eval_batches, objective)
                val_nll = ev["nll"]
                evals.append((step, val_nll))
                _write_metrics(run.metrics, {"step": step, **{f"val_{k}": v for k, v in ev.items() if k != "tokens"}})
                if log:
                    log(f"step {step}: train loss {last_loss:.4f}, val nll {val_nll:.4f} nats/token")
                run.save(step, clock(), diverged_at, stop)
            if monitor is not None:
                with clock.pause():  # the monitor's time is not training time, nor in the tokens/s
                    stop_here = monitor(step, clock(), model)
                if stop_here:
                    break
            elapsed, signalled = distributed.agree(clock(), stop.seen)  # one all-reduce under torchrun
            if signalled and step < cfg.max_iters:  # Ctrl-C under torchrun: save this step, then stop
                if step % cfg.eval_interval != 0:  # else saved just above
                    run.save(step, clock(), diverged_at, stop)
                _say_interrupted(log, run, step)
                raise KeyboardInterrupt
            if cfg.max_time is not None and elapsed > cfg.max_time:
                if log:
                    log(f"time budget of {cfg.max_time:.0f}s spent at step {step}")
                break
    except KeyboardInterrupt:
        if not updating and world == 1:  # parameters of the last completed step: save them, then stop
            optimizer.zero_grad(set_to_none=True)
            run.save(step, clock(), diverged_at, stop, rng_at_step)
            _say_interrupted(log, run, step)
        raise
    finally:
        stop.restore()
        if isinstance(bar, Progress):
            bar.close()
        if restore_blocks is not None:
            restore_blocks()
    if step % cfg.eval_interval != 0 and step != cfg.max_iters:
        run.save(step, clock(), diverged_at, stop)  # stopped by the time budget between evaluations
    seconds = clock() - spent  # this process's training time: the monitor's is not
    return TrainResult(step, last_loss, val_nll, seconds, meter.tokens_total / max(seconds, 1e-9), evals)


def _checkpoint_to_resume(resume: bool | Checkpoint, run_dir: Path | None, device: torch.device) -> Checkpoint | None:
    """The checkpoint a run goes on from: the one given, the one in run_dir (resume=True), or None (a fresh run)."""
    if isinstance(resume, Checkpoint):
        return resume
    if not resume:
        return None
    if run_dir is None or not (run_dir / FILENAME).is_file():
        raise RedthreadError(f"nothing to resume: no {FILENAME} in {run_dir}")
    return read_checkpoint(run_dir, map_location=device)


def _choose_precision(cfg: TrainConfig, device: torch.device) -> Precision:
    """The precision of the step (train/precision.py): the one asked for, or the best the device can do."""
    precision = choose_precision(cfg.precision, device)
    if cfg.optimizer == "muon" and precision.name == "fp16":
        if cfg.precision != "auto":
            raise InvalidValue("optimizer muon does not train in fp16 (its loss scaling is AdamW's only): use bf16 or fp32")
        precision = choose_precision("fp32", device)  # auto on a GPU without bf16: the best Muon can train in
    return precision


def _speed_paths(model: nn.Module, cfg: TrainConfig, device: torch.device, precision: str, tf32: bool,
                 log: Callable[[str], None] | None, main: bool) -> tuple[nn.Module, float | None]:
    """The model the step calls forward on (compiled with cfg.compile), having said how the step computes,
    and the device's peak FLOP/s for the MFU, on the rank that reports, when the model counts its FLOPs."""
    forward_model, compile_message = compile_model(model, device) if cfg.compile else (model, None)
    for line in _speed_report(precision, device, tf32, cfg, compile_message) if log else []:
        log(line)
    if not (main and callable(getattr(model, "flops_per_token", None))):
        return forward_model, None
    peak, source = peak_flops(device, precision, cfg.peak_flops)
    if peak is None and log:
        log(f"MFU not shown: {source}")
    return forward_model, peak


def _say_interrupted(log: Callable[[str], None] | None, run: RunWriter, step: int) -> None:
    if log and run.dir is not None:
        log(f"interrupted: checkpoint saved at step {step}; continue with --resume")


def _fit_by_counting(model, data, cfg, device, run_dir, objective, tokenizer, log, extra) -> TrainResult:
    """The closed-form MLE of a count model: one pass over the training split, then validation."""
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
