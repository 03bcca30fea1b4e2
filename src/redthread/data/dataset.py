"""Token streams for language modelling: cached on disk, sampled in windows, scored exactly once.

Every text model on the ladder learns p(x_{t+1} | x_{<=t}) by maximum likelihood on the
same data: a 1-D stream of token ids, cut into windows of block_size + 1 tokens, where
the inputs are the first T tokens and the targets the same window shifted by one (as
nanoGPT's `get_batch`). Evaluation walks the stream in non-overlapping windows so every
token after the first is scored exactly once, which makes the summed loss over
`count_eval_tokens(split)` targets an exact negative log-likelihood of the split, and
`n_chars` turns it into bits per character.

Token ids are computed once per (tokenizer, text) and kept as raw arrays in a cache
folder, memory-mapped on later runs. Legend: B batch, T block_size.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from redthread.data.tokenizers import Tokenizer
from redthread.errors import RedthreadError

CACHE_ENV = "REDTHREAD_CACHE"
DEFAULT_CACHE_DIR = Path("~/.cache/redthread/tokens")
TRAIN, VALIDATION = "train", "validation"


@dataclass
class TokenSplit:
    """One split's token ids (1-D, usually a read-only memmap) and the characters they encode."""

    tokens: np.ndarray  # (N,) uint16 if vocab_size <= 65536 else uint32
    n_chars: int  # characters of text behind `tokens`, for bits per character
    name: str  # "train" or "validation", for messages


def prepare_splits(
    train_text: str,
    val_text: str,
    tokenizer: Tokenizer,
    cache_dir: str | os.PathLike | None = None,
) -> tuple[TokenSplit, TokenSplit]:
    """Tokenize both texts, or reuse the ids cached by an earlier call; return memmapped splits.

    The cache folder is `cache_dir`, else `$REDTHREAD_CACHE`, else
    `~/.cache/redthread/tokens`. Each split is one file named by the sha256 of the
    tokenizer's JSON and the text, written to a temporary file and renamed into place, so
    an interrupted run never leaves a partial file under the final name.
    """
    folder = _cache_folder(cache_dir)
    train = TokenSplit(_cached_tokens(train_text, tokenizer, folder), len(train_text), TRAIN)
    val = TokenSplit(_cached_tokens(val_text, tokenizer, folder), len(val_text), VALIDATION)
    return train, val


def get_batch(
    split: TokenSplit, batch_size: int, block_size: int, generator: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """B random windows: inputs x (B, T) and targets y = x shifted left by one, int64 on CPU.

    Window starts are drawn with `torch.randint(..., generator=generator)`, so a batch is
    a function of the generator's state.
    """
    _check_positive(batch_size=batch_size, block_size=block_size)
    n = len(split.tokens)
    if n < block_size + 1:
        raise RedthreadError(
            f"corpus too short: {n} tokens in the {split.name} split, "
            f"need at least block_size + 1 = {block_size + 1}"
        )
    starts = torch.randint(n - block_size, (batch_size,), generator=generator, device=generator.device)
    starts = starts.cpu().numpy()  # (B,)
    windows = split.tokens[starts[:, None] + np.arange(block_size + 1)]  # (B, T+1)
    windows = torch.from_numpy(windows.astype(np.int64))
    return windows[:, :-1].contiguous(), windows[:, 1:].contiguous()  # (B, T), (B, T)


def iter_eval_windows(
    split: TokenSplit, block_size: int, batch_size: int
) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """Non-overlapping windows that score every token after the first exactly once.

    Window i holds tokens [i*T, i*T + T + 1): inputs its first T tokens, targets the last
    T. Full windows come in batches of up to `batch_size`; the final partial window (if
    the stream does not divide evenly) comes alone as a (1, T') batch with T' < T.
    """
    _check_positive(batch_size=batch_size, block_size=block_size)
    n = len(split.tokens)
    if n < 2:
        raise RedthreadError(f"corpus too short: {n} tokens in the {split.name} split, need at least 2 to score one")
    n_full = (n - 1) // block_size
    offsets = np.arange(block_size + 1)
    for first in range(0, n_full, batch_size):
        starts = np.arange(first, min(first + batch_size, n_full)) * block_size  # (B,)
        windows = torch.from_numpy(split.tokens[starts[:, None] + offsets].astype(np.int64))  # (B, T+1)
        yield windows[:, :-1].contiguous(), windows[:, 1:].contiguous()
    tail_start = n_full * block_size
    if tail_start < n - 1:
        window = torch.from_numpy(np.asarray(split.tokens[tail_start:], dtype=np.int64))[None]  # (1, T'+1)
        yield window[:, :-1].contiguous(), window[:, 1:].contiguous()


def count_eval_tokens(split: TokenSplit) -> int:
    """How many targets `iter_eval_windows` scores: every token but the first."""
    return max(len(split.tokens) - 1, 0)


def _cache_folder(cache_dir: str | os.PathLike | None) -> Path:
    if cache_dir is None:
        cache_dir = os.environ.get(CACHE_ENV) or DEFAULT_CACHE_DIR
    folder = Path(cache_dir).expanduser()
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise RedthreadError(f"cannot create the token cache folder {folder}: {e.strerror or e}") from None
    return folder


def _cached_tokens(text: str, tokenizer: Tokenizer, folder: Path) -> np.ndarray:
    dtype = np.dtype(np.uint16 if tokenizer.vocab_size <= 65536 else np.uint32)
    path = folder / f"{_cache_key(text, tokenizer)}.{dtype.name}.bin"
    if not (path.is_file() and path.stat().st_size % dtype.itemsize == 0):
        ids = np.asarray(tokenizer.encode_array(text)).astype(dtype)
        _write_atomic(path, ids)
    if path.stat().st_size == 0:  # np.memmap cannot map an empty file
        return np.zeros(0, dtype=dtype)
    return np.memmap(path, dtype=dtype, mode="r")


def _cache_key(text: str, tokenizer: Tokenizer) -> str:
    h = hashlib.sha256()
    for part in (tokenizer.to_json(), text):
        data = part.encode("utf-8", errors="surrogatepass")
        h.update(len(data).to_bytes(8, "little"))  # length-prefixed, so parts cannot run together
        h.update(data)
    return h.hexdigest()


def _write_atomic(path: Path, ids: np.ndarray) -> None:
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(ids.tobytes())
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError as e:
        raise RedthreadError(f"cannot write the token cache file {path}: {e.strerror or e}") from None


def _check_positive(**values: int) -> None:
    for name, value in values.items():
        if not isinstance(value, int) or value < 1:
            raise RedthreadError(f"{name} must be a positive integer, got {value!r}")
