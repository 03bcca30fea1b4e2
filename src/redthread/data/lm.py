"""Language-model data for the training loop: two token splits, windows of block_size tokens.

`LMData` is the data source `redthread.train.loop.train` expects: random training windows,
validation either as a fixed sample of windows (a quick estimate during training) or as every
token once (`max_batches=None`, the exact NLL of the split).
"""

from __future__ import annotations

from collections.abc import Iterator

import torch

from redthread.data.dataset import TokenSplit, get_batch, iter_eval_windows
from redthread.errors import RedthreadError

EVAL_SEED = 0  # the periodic estimate scores the same windows every time, and draws nothing from the training RNG


class LMData:
    def __init__(self, train: TokenSplit, val: TokenSplit, block_size: int = 256):
        self.splits = {"train": train, "val": val}
        self.block_size = block_size

    def split(self, name: str) -> TokenSplit:
        if name not in self.splits:
            raise RedthreadError(f"unknown split {name!r}; use train or val")
        return self.splits[name]

    def check_lengths(self) -> None:
        """Fail early, with the numbers, when a split cannot fill one context window."""
        for split in self.splits.values():
            if len(split.tokens) < self.block_size + 1:
                raise RedthreadError(
                    f"corpus too short for the context: {len(split.tokens)} tokens in the {split.name} split, "
                    f"need at least block_size + 1 = {self.block_size + 1}"
                )

    def batch(self, split: str, batch_size: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        return get_batch(self.split(split), batch_size, self.block_size, generator)  # (B, T), (B, T)

    def eval_batches(self, split: str, batch_size: int, max_batches: int | None = None) -> Iterator:
        if max_batches is None:
            yield from iter_eval_windows(self.split(split), self.block_size, batch_size)
            return
        generator = torch.Generator().manual_seed(EVAL_SEED)
        for _ in range(max_batches):
            yield self.batch(split, batch_size, generator)

    def tokens_per_char(self, split: str) -> float:
        s = self.split(split)
        return len(s.tokens) / max(1, s.n_chars)
