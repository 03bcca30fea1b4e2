"""TensorBoard event files written from a run's metrics.jsonl (`TrainConfig.tensorboard`).

metrics.jsonl stays the one record of a run; the event files are a view of it, rewritten whole at
every checkpoint (the folder's old event files are replaced), so a resumed run, whose metrics drop
the rows after its checkpoint, never shows a step twice. `tensorboard --logdir RUN/tensorboard`.
"""

from __future__ import annotations

from pathlib import Path

from redthread.errors import InvalidValue, RedthreadError
from redthread.files import reason

FOLDER = "tensorboard"
TAGS = {  # metrics.jsonl key -> TensorBoard tag
    "loss": "train/loss", "lr": "train/lr", "tokens_per_s": "train/tokens_per_s", "mfu": "train/mfu",
    "val_nll": "val/nll", "val_ppl": "val/perplexity", "val_bpc": "val/bits_per_char",
}


def check_available() -> None:
    """Refuse, in one line and before training, --tensorboard without the tensorboard package."""
    try:
        from torch.utils.tensorboard import SummaryWriter  # noqa: F401
    except ImportError:
        raise InvalidValue("--tensorboard needs the tensorboard package: pip install tensorboard") from None


def write_events(rows: list[dict], folder: Path) -> Path:
    """Every numeric metric of `rows` as a scalar at its step, in a fresh event file under `folder`."""
    from torch.utils.tensorboard import SummaryWriter

    try:
        folder.mkdir(parents=True, exist_ok=True)
        for old in folder.glob("events.out.tfevents.*"):
            old.unlink()
    except OSError as e:
        raise RedthreadError(f"cannot write TensorBoard events in {folder}: {reason(e)}") from None
    writer = SummaryWriter(log_dir=str(folder))
    try:
        for row in rows:
            for key, tag in TAGS.items():
                if isinstance(row.get(key), (int, float)):
                    writer.add_scalar(tag, row[key], global_step=row["step"])
    finally:
        writer.close()
    return folder
