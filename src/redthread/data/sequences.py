"""Independent sequences as language-model data: names, words, synthetic chains (claims C2, C12).

The text rungs of `lm.py` read one long stream in windows; here every example is its own
sequence, as makemore reads names. One `boundary` token marks both the start and the end
(makemore's '.'), so the model estimates P(s_t | boundary, s_<t) for every position and,
for data whose examples end, P(end | s) as well:

    end_token=True   x = [b, s_0, ..., s_{n-1}]      y = [s_0, ..., s_{n-1}, b]
    end_token=False  x = [b, s_0, ..., s_{n-2}]      y = [s_0, ..., s_{n-1}]

Every example is right-padded to the longest in the data (`block_size`, fixed for both
splits): x with the boundary id, y with IGNORE_INDEX, which the likelihood skips. So the
summed loss over the scored targets of a split is its exact negative log-likelihood, and
`eval_batches(split, B, None)` scores every example exactly once.

`load_lines` reads a text file of one example per line (names.txt) into a `SequenceData` and
its character tokenizer. Legend: B batch, T block_size, N examples in a split.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import torch
from torch import Tensor

from redthread.data.corpus import check_regular_file, text_path
from redthread.data.lm import EVAL_SEED
from redthread.data.targets import IGNORE_INDEX
from redthread.data.tokenizers import CharTokenizer, Tokenizer
from redthread.errors import InvalidType, InvalidValue, MissingFile, RedthreadError, check_int

SPLITS = ("train", "val")
BOUNDARY_CHARS = (".", "\n")  # the boundary's character: makemore's '.', or a newline when '.' is data


class SequenceData:
    """Two splits of independent token sequences, pre-padded into (N, T) int64 arrays.

    `train` and `val` are lists of 1-D integer arrays (or 2-D arrays, one sequence a row) with
    ids in [0, vocab_size) other than `boundary`; `vocab_size` counts the boundary too (it is
    the model's vocabulary). `train_chars` / `val_chars` are the characters of text behind a
    split, for bits per character; leave them None when the data are not text.
    """

    def __init__(
        self,
        train: Sequence[np.ndarray] | np.ndarray,
        val: Sequence[np.ndarray] | np.ndarray,
        vocab_size: int,
        boundary: int,
        end_token: bool = True,
        tokenizer: Tokenizer | None = None,
        train_chars: int | None = None,
        val_chars: int | None = None,
    ):
        if not isinstance(vocab_size, int):
            raise InvalidType(f"vocab_size must be an integer >= 2 (the boundary and one token), got {vocab_size!r}")
        if vocab_size < 2:
            raise InvalidValue(f"vocab_size must be an integer >= 2 (the boundary and one token), got {vocab_size!r}")
        if not isinstance(boundary, int):
            raise InvalidType(f"boundary must be a token id in 0..{vocab_size - 1}, got {boundary!r}")
        if not 0 <= boundary < vocab_size:
            raise InvalidValue(f"boundary must be a token id in 0..{vocab_size - 1}, got {boundary!r}")
        self.vocab_size = vocab_size
        self.boundary = boundary
        self.end_token = bool(end_token)
        self.tokenizer = tokenizer
        flat = {name: _flatten(seqs, name, vocab_size, boundary, self.end_token) for name, seqs in zip(SPLITS, (train, val))}
        self.block_size = max(int(lengths.max()) for _, lengths in flat.values()) + (1 if self.end_token else 0)
        self._x, self._y, self._lengths = {}, {}, {}
        for name, (tokens, lengths) in flat.items():
            x, y = self._pad(tokens, lengths)
            self._x[name], self._y[name] = torch.from_numpy(x), torch.from_numpy(y)  # (N, T), (N, T)
            self._lengths[name] = lengths
        self._chars = {"train": train_chars, "val": val_chars}

    def _pad(self, tokens: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Inputs and targets of every example at once: rows of (N, T), right-padded."""
        n, T = len(lengths), self.block_size
        x = np.full((n, T), self.boundary, dtype=np.int64)  # (N, T); column 0 stays the start boundary
        y = np.full((n, T), IGNORE_INDEX, dtype=np.int64)  # (N, T)
        row = np.repeat(np.arange(n), lengths)  # (sum of lengths,): the example of each token
        col = np.arange(len(tokens)) - np.repeat(np.cumsum(lengths) - lengths, lengths)  # position within it
        y[row, col] = tokens  # y_t = s_t
        if self.end_token:
            x[row, col + 1] = tokens  # x_{t+1} = s_t, up to x_n = s_{n-1}
            y[np.arange(n), lengths] = self.boundary  # y_n = end
        else:
            keep = col + 1 < lengths[row]  # the last token of a sequence is never an input
            x[row[keep], col[keep] + 1] = tokens[keep]
        return x, y

    def _split(self, name: str) -> str:
        if name not in SPLITS:
            raise InvalidValue(f"unknown split {name!r}; use train or val")
        return name

    def n_sequences(self, split: str) -> int:
        return len(self._lengths[self._split(split)])

    def n_targets(self, split: str) -> int:
        """How many targets the split scores: each token, plus one end per sequence when end_token."""
        lengths = self._lengths[self._split(split)]
        return int(lengths.sum()) + (len(lengths) if self.end_token else 0)

    def sequences(self, split: str) -> list[np.ndarray]:
        """The split's sequences as given (views of the padded targets), e.g. for a source's bayes_nll."""
        y = self._y[self._split(split)].numpy()
        return [y[i, :n] for i, n in enumerate(self._lengths[split].tolist())]

    def batch(self, split: str, batch_size: int, generator: torch.Generator) -> tuple[Tensor, Tensor]:
        """B examples drawn uniformly with replacement, as a function of the generator's state."""
        x, y = self._x[self._split(split)], self._y[split]
        _check_batch_size(batch_size)
        idx = torch.randint(len(x), (batch_size,), generator=generator, device=generator.device).cpu()  # (B,)
        return x[idx], y[idx]  # (B, T), (B, T)

    def eval_batches(self, split: str, batch_size: int, max_batches: int | None = None) -> Iterator[tuple[Tensor, Tensor]]:
        """Every example once, in order (`max_batches=None`), or a fixed sample of `max_batches` batches."""
        x, y = self._x[self._split(split)], self._y[split]
        _check_batch_size(batch_size)
        if max_batches is None:
            for start in range(0, len(x), batch_size):
                yield x[start : start + batch_size], y[start : start + batch_size]  # (B, T), (B, T)
            return
        generator = torch.Generator().manual_seed(EVAL_SEED)  # the same sample every time, apart from the training RNG
        for _ in range(max_batches):
            yield self.batch(split, batch_size, generator)

    def tokens_per_char(self, split: str) -> float | None:
        """Scored targets per character of the split's text; None when the data are not text."""
        chars = self._chars[self._split(split)]
        return self.n_targets(split) / chars if chars else None


def load_lines(
    path: str | Path, seed: int = 3407, test_fraction: float = 0.1, max_test: int = 1000
) -> tuple[SequenceData, CharTokenizer]:
    """A text file of one example per line (or a shipped one by name: `names`) -> (SequenceData with end_token=True, its tokenizer).

    Lines lose trailing whitespace (so CRLF files read the same); blank lines at the end of
    the file are ignored, a blank line before the last example is an error. The vocabulary is
    the file's distinct characters in code-point order, after the boundary at id 0, which
    decodes as '.' (makemore's convention) unless '.' occurs in the data, then as '\\n' (never
    in a line). The split is makemore's (`create_datasets` after `torch.manual_seed(seed)`):
    the lines are permuted by `torch.randperm(n)` from a generator seeded with `seed`, the LAST
    min(max_test, int(test_fraction * n)) of the permutation become the val split and the rest,
    in permutation order, the train split; with the default seed 3407, exactly makemore's test
    names of names.txt. Each line counts its characters plus its newline for bits per
    character, so a character model has 1 token/char.
    """
    path = text_path(path)  # a shipped text by name (names), else a path
    if path.exists() and not path.is_dir():
        check_regular_file(path, "lines file")  # a FIFO or a device would block or never end
    if not 0 < test_fraction < 1:
        raise InvalidValue(f"test_fraction must lie strictly between 0 and 1, got {test_fraction!r}")
    try:
        text = path.read_bytes().decode("utf-8-sig")  # -sig: a byte-order mark is not a character of line 1
    except FileNotFoundError:
        raise MissingFile(f"no such file: {path}") from None
    except IsADirectoryError:
        raise RedthreadError(f"{path} is a folder, not a text file") from None
    except UnicodeDecodeError as e:
        line = _line_of(e.object, e.start)
        raise InvalidValue(f"{path} is not UTF-8 text: invalid byte 0x{e.object[e.start]:02x} on line {line}") from None
    except OSError as e:
        raise RedthreadError(f"cannot read {path}: {e.strerror or e}") from None
    lines = [line.rstrip() for line in text.split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    if not lines:
        raise InvalidValue(f"{path} holds no examples: it is empty or blank")
    if "" in lines:
        raise InvalidValue(f"{path} line {lines.index('') + 1} is blank: every line before the last example must hold one")
    n = len(lines)
    n_test = min(max_test, int(test_fraction * n))  # makemore's size: 10% rounded down, at most 1,000
    if not 1 <= n_test < n:
        raise InvalidValue(
            f"{path} has {n} lines: too few to hold out a validation split with test_fraction={test_fraction}, max_test={max_test}"
        )
    chars = sorted(set("".join(lines)))
    boundary_char = next(c for c in BOUNDARY_CHARS if c not in chars)
    tokenizer = CharTokenizer(boundary_char + "".join(chars))  # boundary at id 0
    train, val = makemore_split(lines, n_test, seed)
    lengths = np.array([len(line) for line in train + val])
    ids = tokenizer.encode_array("".join(train + val)).astype(np.int64)
    seqs = np.split(ids, np.cumsum(lengths)[:-1])
    data = SequenceData(
        seqs[: len(train)],
        seqs[len(train) :],
        vocab_size=tokenizer.vocab_size,
        boundary=0,
        end_token=True,
        tokenizer=tokenizer,
        train_chars=int(lengths[: len(train)].sum()) + len(train),
        val_chars=int(lengths[len(train) :].sum()) + len(val),
    )
    return data, tokenizer


def makemore_split(lines: Sequence[str], n_test: int, seed: int) -> tuple[list[str], list[str]]:
    """(train, test) as makemore splits: `rp = torch.randperm(n)` after seeding, test the last n_test.

    makemore seeds the global generator (`torch.manual_seed(3407)`) and nothing draws from it
    before `create_datasets` calls `torch.randperm(len(words))`; a fresh generator seeded the
    same gives the same permutation without touching the global RNG.
    """
    order = torch.randperm(len(lines), generator=torch.Generator().manual_seed(seed)).tolist()
    return [lines[i] for i in order[: len(lines) - n_test]], [lines[i] for i in order[len(lines) - n_test :]]


def _line_of(data: bytes, offset: int) -> int:
    """1-based line number of byte `offset` in `data`."""
    return data.count(b"\n", 0, offset) + 1


def _flatten(
    seqs: Sequence[np.ndarray] | np.ndarray, split: str, vocab_size: int, boundary: int, end_token: bool
) -> tuple[np.ndarray, np.ndarray]:
    """All of a split's tokens in one int64 array, and each sequence's length; checks the ids."""
    if isinstance(seqs, np.ndarray) and seqs.ndim == 2:
        tokens, lengths = seqs.reshape(-1), np.full(len(seqs), seqs.shape[1], dtype=np.int64)
    else:
        arrays = [np.asarray(s) for s in seqs]
        if any(a.ndim != 1 for a in arrays):
            raise InvalidValue(f"every {split} sequence must be a 1-D array of token ids")
        lengths = np.array([len(a) for a in arrays], dtype=np.int64)
        tokens = np.concatenate(arrays) if arrays else np.zeros(0, dtype=np.int64)
    if len(lengths) == 0:
        raise InvalidValue(f"the {split} split holds no sequences")
    if not end_token and lengths.min() == 0:
        raise InvalidValue(f"the {split} split has an empty sequence: nothing to score without an end token")
    if tokens.size and not np.issubdtype(tokens.dtype, np.integer):
        raise InvalidValue(f"{split} sequences must hold integer token ids, got {tokens.dtype}")
    tokens = tokens.astype(np.int64)
    if tokens.size and (tokens.min() < 0 or tokens.max() >= vocab_size):
        raise InvalidValue(f"{split} token ids must lie in 0..{vocab_size - 1}, got {tokens.min()}..{tokens.max()}")
    if (tokens == boundary).any():
        raise InvalidValue(f"a {split} sequence contains the boundary id {boundary}, which only marks start and end")
    return tokens, lengths


def _check_batch_size(batch_size: int) -> None:
    check_int("batch_size", batch_size)
