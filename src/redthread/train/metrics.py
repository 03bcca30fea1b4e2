"""The metrics of a training run: measured between log lines (`Meter`), read back from `metrics.jsonl`, plotted.

metrics.jsonl holds one JSON object per line, each with its step: the training rows (loss in
nats/token, learning rate, tokens/s, seconds of training, MFU where the model counts its FLOPs)
and the validation rows (val_nll, val_ppl, val_bpc). The loop (`train/loop.py`) appends them one
at a time; a resumed run drops the rows logged after its checkpoint; `plot_loss_curve` draws
loss.png from them.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import torch
from torch import Tensor, nn

from redthread.errors import InvalidValue, RedthreadError
from redthread.files import atomic_write, atomic_write_text
from redthread.train import distributed
from redthread.train.flops import mfu, model_flops_per_token


class Meter:
    """The training loss, tokens/s and MFU of the steps since the last log line.

    The loss is summed on the device, so a step costs no host-device sync; `read` syncs once per line.
    `peak`: the device's FLOP/s for MFU (None: no MFU)."""

    def __init__(self, model: nn.Module, device: torch.device, world: int, peak: float | None, step: int, seconds: float):
        self.model, self.world, self.peak, self.flops_per_token = model, world, peak, None
        self.loss = torch.zeros((), device=device)  # summed over the steps since the last line
        self.tokens = self.tokens_total = 0  # over every rank
        self.step, self.seconds = step, seconds  # where the last line was
        self.length = None

    def add(self, loss: Tensor, x: Tensor, y: Tensor) -> None:
        """One micro-batch's loss (already divided by the micro-batches of its step)."""
        self.loss += loss.detach()
        self.tokens += y.numel() * self.world
        if self.peak is not None and self.length is None:  # MFU needs the sequence length (x may be no tensor: a captioner's)
            self.length = x.shape[-1]

    def read(self, step: int, lr: float, seconds: float) -> tuple[dict, str]:
        """The metrics row of the steps since the last line and its progress text; starts the next line.
        `seconds`: of training so far (the loop's clock)."""
        loss = distributed.average(self.loss).item() / (step - self.step)  # averaged over ranks, per step
        tok_s = self.tokens / max(seconds - self.seconds, 1e-9)
        self.tokens_total += self.tokens
        self.loss.zero_()
        self.tokens, self.step, self.seconds = 0, step, seconds
        row = {"step": step, "loss": loss, "lr": lr, "tokens_per_s": tok_s, "elapsed": seconds}
        info = f"loss {loss:.3f}  {tok_s:,.0f} tok/s"
        if self.peak is not None and self.flops_per_token is None:
            self.flops_per_token = model_flops_per_token(self.model, self.length)  # known from the first batch
        if self.flops_per_token is not None:
            row["mfu"] = mfu(tok_s / self.world, self.flops_per_token, self.peak)  # per device
            info += f"  MFU {row['mfu']:.1%}"
        return row, info


def truncate_metrics(path: Path | None, step: int, log: Callable[[str], None] | None = None) -> None:
    """On resume, drop rows logged after the checkpoint (they will be logged again) and a torn last row."""
    if path is None or not path.exists():
        return
    rows, torn = parse_metrics(path)
    if torn and log:
        log(f"{path}: dropped its last line, cut short by an interrupted write; the rows before it are kept")
    kept = [json.dumps(r) + "\n" for r in rows if r["step"] <= step]
    atomic_write_text(path, "".join(kept))


def parse_metrics(path: Path) -> tuple[list[dict], bool]:
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


def read_metrics(path: str | Path) -> list[dict]:
    """The rows of a run's metrics.jsonl (a torn last line, left by an interrupted write, is skipped)."""
    return parse_metrics(Path(path))[0]


def plot_loss_curve(rows: list[dict], out: Path) -> None:
    """Training loss and validation NLL against step (the rows of metrics.jsonl), as a PNG."""
    from redthread.lang import chinese, figure_fonts
    from redthread.plotting import pyplot

    plt = pyplot()

    def words(en: str, zh: str) -> str:  # a file holds one language, even where `say` keeps both (the tour's kernel)
        return zh if chinese() else en

    train_rows = [r for r in rows if "loss" in r]
    val_rows = [r for r in rows if "val_nll" in r]
    with figure_fonts():  # the words in the language chosen (redthread.lang); Chinese in a CJK font
        fig, ax = plt.subplots(figsize=(6, 4))
        ax.plot([r["step"] for r in train_rows], [r["loss"] for r in train_rows], lw=1,
                label=words("train NLL", "训练集 NLL"))
        if val_rows:  # a run stopped before its first evaluation has no validation points to show
            ax.plot([r["step"] for r in val_rows], [r["val_nll"] for r in val_rows], "o-", ms=3,
                    label=words("validation NLL", "验证集 NLL"))
        ax.set_xlabel(words("step", "训练步"))
        ax.set_ylabel(words("nats / token", "奈特/词元"))
        ax.grid(alpha=0.3)
        ax.legend()
        fig.tight_layout()

    atomic_write(out, lambda tmp: fig.savefig(tmp, format="png", dpi=120))
    plt.close(fig)
