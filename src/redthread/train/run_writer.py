"""Where a training run writes: its folder, its checkpoints and the loss curve, and what a resume reads back.

`RunWriter` is the one object the loop (`train/loop.py`) hands its saves to. It holds what a
checkpoint is made of (the model, the optimizer, the fp16 loss scale, the batches' generator, the
config, the tokenizer) and the run folder, where only rank 0 writes: `metrics.jsonl`,
`checkpoint.safetensors` (`train/checkpoint.py`), `loss.png` and, with `tensorboard`, event files.
A run that replaces another trains in a folder beside it and `publish`es it at its first save
(`train/run_folder.py`); from then on it writes in the published folder. Weights that are not
finite are never written: the last good checkpoint is kept.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn

from redthread.errors import RedthreadError
from redthread.files import atomic_write_text
from redthread.train import distributed, events
from redthread.train.checkpoint import Checkpoint, save_checkpoint
from redthread.train.config import TrainConfig
from redthread.train.metrics import plot_loss_curve, read_metrics, truncate_metrics


def rng_state(generator: torch.Generator) -> dict[str, Tensor]:
    """The random state a step starts from: torch's (dropout), the batches' generator's, CUDA's."""
    state = {"torch": torch.get_rng_state(), "data": generator.get_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state()
    return state


def restore_rng(rng: dict[str, Tensor], generator: torch.Generator) -> None:
    torch.set_rng_state(rng["torch"])
    generator.set_state(rng["data"])
    if "cuda" in rng and torch.cuda.is_available():
        torch.cuda.set_rng_state(rng["cuda"])


def all_finite(model: nn.Module) -> bool:
    """Whether every parameter is finite, in one host-device sync."""
    params = [p.detach() for p in model.parameters()]
    return not params or bool(torch.stack([torch.isfinite(p).all() for p in params]).all())


class RunWriter:
    """A run's folder (None: nothing is written) and its saves; every rank calls it, rank 0 (`main`) writes."""

    def __init__(self, run_dir: str | Path | None, cfg: TrainConfig, model: nn.Module, optimizer, scaler,
                 generator: torch.Generator, tokenizer: Any = None, extra: dict | None = None,
                 publish: Callable[[], Path] | None = None, main: bool = True):
        self.dir = Path(run_dir) if run_dir is not None else None
        self.metrics = self.dir / "metrics.jsonl" if self.dir and main else None  # only rank 0 writes
        self.cfg, self.model, self.optimizer, self.scaler, self.generator = cfg, model, optimizer, scaler, generator
        self.tokenizer, self.publish, self.main = tokenizer, publish, main
        self.extra = {k: v for k, v in (extra or {}).items() if k != "grad_scaler"}  # the scaler's own is saved
        self.saved_step: int | None = None  # the last step saved (or resumed from)

    def start(self, ckpt: Checkpoint | None, log: Callable[[str], None] | None = None) -> tuple[int, float]:
        """Resume from `ckpt` (model, optimizer, loss scale, random state; metrics logged after it dropped)
        or start afresh with an empty metrics.jsonl; the step and the seconds of training to go on from."""
        if ckpt is None:
            if self.metrics is not None:
                self.dir.mkdir(parents=True, exist_ok=True)
                atomic_write_text(self.metrics, "")
            return 0, 0.0
        ckpt.require_resumable(self.optimizer)  # a checkpoint without its optimizer or RNG state would resume inexactly
        self.model.load_state_dict(ckpt.model.state_dict())
        self.optimizer.load_state_dict(ckpt.optimizer_state)
        if self.scaler.is_enabled() and "grad_scaler" in ckpt.extra:
            self.scaler.load_state_dict(ckpt.extra["grad_scaler"])
        restore_rng(distributed.own_rng(ckpt.rng), self.generator)
        truncate_metrics(self.metrics, ckpt.step, log)
        self.saved_step = ckpt.step
        return ckpt.step, float(ckpt.extra.get("elapsed", 0.0))  # a time budget goes on from the seconds spent

    def check_finite(self, step: int, diverged_at: Tensor) -> None:
        """Stop, naming the step, once the loss, a gradient norm or a weight is not finite.

        `diverged_at`: the first step whose loss or gradient norm was not finite (-1: none), on the device."""
        bad = int(distributed.maximum(diverged_at).item())
        if bad < 0 and all_finite(self.model):
            return
        where = f"at step {bad}" if bad >= 0 else f"by step {step}"
        kept = f"the last good checkpoint (step {self.saved_step}) is kept" if self.saved_step is not None else "nothing was saved"
        raise RedthreadError(f"training diverged {where}: the loss or a gradient is not finite, most likely because "
                             f"the learning rate ({self.cfg.lr:g}) is too high; {kept}")

    def save(self, step: int, elapsed: float, diverged_at: Tensor, stop: distributed.StopSignals,
             rng: dict[str, Tensor] | None = None) -> None:
        """Checkpoint `step`, `elapsed` seconds into training, and redraw the loss curve; the first save of
        a replacing run then publishes it. `rng`: the random state to save (None: the current one)."""
        with stop.deferred():  # a stop signal waits until the save is whole
            if self.dir is not None:
                self.check_finite(step, diverged_at)  # never write weights that are not finite
                rng = distributed.gather_rng(rng or rng_state(self.generator))  # every rank takes part
                if self.main:
                    self._write(step, rng, {**self.extra, "elapsed": elapsed})
            self.saved_step = step
            if self.publish is not None:  # the first save: a replacing run swaps in for the old one, and writes there from now
                self.dir, self.publish = self.publish(), None
                self.metrics = self.dir / "metrics.jsonl" if self.main else None

    def _write(self, step: int, rng: dict[str, Tensor], state: dict) -> None:
        if self.scaler.is_enabled():
            state["grad_scaler"] = self.scaler.state_dict()
        try:
            save_checkpoint(self.dir, self.model, self.optimizer, step, self.tokenizer, self.cfg.to_dict(), rng, state)
        except RedthreadError as e:
            kept = f"; the last good checkpoint (step {self.saved_step}) is kept" if self.saved_step is not None else ""
            raise RedthreadError(f"{e}{kept}") from None
        if self.metrics is not None and self.metrics.exists():
            rows = read_metrics(self.metrics)  # read once: the loss curve and the event files show the same rows
            plot_loss_curve(rows, self.dir / "loss.png")
            if self.cfg.tensorboard:
                events.write_events(rows, self.dir / events.FOLDER)
