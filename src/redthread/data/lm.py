"""Language-model data for the training loop: two token splits, windows of block_size tokens.

`load_splits` turns a corpus (the default plays, or a file, streamed) into (train, validation)
token splits and the tokenizer; `LMData` is the data source `redthread.train.loop.train` expects,
made once with the context it serves: random training windows, validation either as a fixed
sample of windows (a quick estimate during training) or as every token once
(`max_batches=None`, the exact NLL of the split).
"""

from __future__ import annotations

from collections.abc import Iterator

import torch

from redthread.data.corpus import DEFAULT_CORPUS, load_corpus, split_corpus, text_path
from redthread.data.dataset import TokenSplit, get_batch, iter_eval_windows, prepare_file_splits, prepare_splits
from redthread.data.tokenizers import Tokenizer, train_tokenizer
from redthread.errors import InvalidValue, check_int

EVAL_SEED = 0  # the periodic estimate scores the same windows every time, and draws nothing from the training RNG


def load_splits(
    data: str | None, tokenizer_kind: str = "char", vocab_size: int | None = None, tokenizer: Tokenizer | None = None
) -> tuple[TokenSplit, TokenSplit, Tokenizer]:
    """A corpus -> its (train, validation) token splits and the tokenizer (trained unless given).

    Characters: the alphabet of the whole corpus, so validation has no unknown symbols; BPE:
    merges learned from the training split only (any byte stays encodable). The default corpus
    (`data=None` or `"shakespeare"`: 37 plays, ~5 MB) is read whole; a file, or a shipped text by name (`"tang300"`), is
    streamed, never held (`prepare_file_splits`)."""
    if data not in (None, DEFAULT_CORPUS):
        return prepare_file_splits(text_path(data), tokenizer_kind, vocab_size, tokenizer)
    corpus = load_corpus(data)
    train_text, val_text = split_corpus(corpus)
    if tokenizer is None:
        tokenizer = train_tokenizer(tokenizer_kind, corpus.text if tokenizer_kind == "char" else train_text, vocab_size)
    train_split, val_split = prepare_splits(train_text, val_text, tokenizer)
    return train_split, val_split, tokenizer


class LMData:
    def __init__(self, train: TokenSplit, val: TokenSplit, block_size: int):
        check_int("block_size", block_size)
        self.splits = {"train": train, "val": val}
        self.block_size = block_size

    def split(self, name: str) -> TokenSplit:
        if name not in self.splits:
            raise InvalidValue(f"unknown split {name!r}; use train or val")
        return self.splits[name]

    def check_lengths(self) -> None:
        """Fail early, with the numbers, when a split cannot fill one context window."""
        for split in self.splits.values():
            if len(split.tokens) < self.block_size + 1:
                raise InvalidValue(
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
