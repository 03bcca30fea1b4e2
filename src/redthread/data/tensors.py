"""Fixed (inputs, targets) tensors per split as a data source for the training loop: what a
synthetic task built in memory needs (`batch`, `eval_batches`, `tokens_per_char`) and no more.

    class MyTask(TensorSplits):
        def __init__(self, n, seed):
            self.splits = {"train": (x_train, y_train), "val": (x_val, y_val)}  # (N, T) inputs, their targets
"""

from __future__ import annotations

from collections.abc import Iterator

import torch
from torch import Tensor


class TensorSplits:
    splits: dict[str, tuple[Tensor, Tensor]]  # split name -> (inputs (N, ...), targets (N, ...))

    def batch(self, split: str, batch_size: int, generator: torch.Generator) -> tuple[Tensor, Tensor]:
        """A random batch of rows, drawn with replacement."""
        x, y = self.splits[split]
        i = torch.randint(len(x), (batch_size,), generator=generator)  # (B,)
        return x[i], y[i]

    def eval_batches(self, split: str, batch_size: int, max_batches: int | None = None) -> Iterator[tuple[Tensor, Tensor]]:
        """The split's rows in order, batch_size at a time (at most max_batches batches)."""
        x, y = self.splits[split]
        for b, start in enumerate(range(0, len(x), batch_size)):
            if max_batches is not None and b >= max_batches:
                return
            yield x[start : start + batch_size], y[start : start + batch_size]

    def tokens_per_char(self, split: str) -> None:
        return None  # no text behind these tokens: no bits per character
