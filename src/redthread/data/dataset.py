"""Token streams for language modelling: cached on disk, sampled in windows, scored exactly once.

Every text model on the ladder learns p(x_{t+1} | x_{<=t}) by maximum likelihood on the
same data: a 1-D stream of token ids, cut into windows of block_size + 1 tokens, where
the inputs are the first T tokens and the targets the same window shifted by one (as
nanoGPT's `get_batch`). Evaluation walks the stream in non-overlapping windows so every
token after the first is scored exactly once, which makes the summed loss over
`count_eval_tokens(split)` targets an exact negative log-likelihood of the split, and
`n_chars` turns it into bits per character.

Token ids are computed once per (tokenizer, text) and kept as raw arrays in a cache
folder, memory-mapped on later runs. A corpus file goes through `prepare_file_splits`, which
never holds its text: the file is scanned once (`data/corpus.py`), the tokenizer is trained on
the stream (the alphabet for characters, the training part for BPE), and each split is
tokenised chunk by chunk into its cache file, so memory stays flat with the file's size. A
cache file is used only when its size agrees with the count of ids in the `.len` file written
after it; a file cut short is rebuilt.
Legend: B batch, T block_size.
"""

from __future__ import annotations

import functools
import hashlib
import mmap
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from redthread.data.corpus import CorpusFile, scan_corpus, split_point
from redthread.data.tokenizers import (
    DEFAULT_BPE_VOCAB_SIZE,
    BPETokenizer,
    CharTokenizer,
    Tokenizer,
    check_tokenizer_request,
)
from redthread.errors import InvalidValue, RedthreadError, check_int
from redthread.files import atomic_write_text

RELEASE_EVERY = 32  # batches between releases of the pages of a memory-mapped split that a process has touched
CACHE_ENV = "REDTHREAD_CACHE"
STREAM_KEY = "redthread-stream-1"  # the cache keys of streamed splits (a file's checksum and a character range)
DEFAULT_CACHE_DIR = Path("~/.cache/redthread/tokens")
TRAIN, VALIDATION = "train", "validation"


@dataclass
class TokenSplit:
    """One split's token ids (1-D, usually a read-only memmap) and the characters they encode."""

    tokens: np.ndarray  # (N,) uint16 if vocab_size <= 65536 else uint32
    n_chars: int  # characters of text behind `tokens`, for bits per character
    name: str  # "train" or "validation", for messages
    draws: int = field(default=0, repr=False, compare=False)  # batches read since the mapped pages were last released


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


def prepare_file_splits(
    path: str | os.PathLike | CorpusFile,
    tokenizer_kind: str = "char",
    vocab_size: int | None = None,
    tokenizer: Tokenizer | None = None,
    cache_dir: str | os.PathLike | None = None,
    val_fraction: float = 0.1,
) -> tuple[TokenSplit, TokenSplit, Tokenizer]:
    """A corpus file's (train, validation) splits and the tokenizer, in memory that does not grow with the file.

    The split is `split_corpus`'s for one document (the first `split_point(n_chars)` characters
    train); without `tokenizer` one of `tokenizer_kind` is trained: characters from the file's
    alphabet, BPE on the training part. Each split's cache file is named by the sha256 of the
    tokenizer's JSON, the file's checksum and the split's character range."""
    if tokenizer is None:
        check_tokenizer_request(tokenizer_kind, vocab_size)  # before reading anything
    corpus = path if isinstance(path, CorpusFile) else scan_corpus(path)
    folder = _cache_folder(cache_dir)
    cut = split_point(corpus.n_chars, val_fraction)
    if tokenizer is None:
        tokenizer = train_file_tokenizer(corpus, tokenizer_kind, vocab_size, cut)
    splits = []
    for name, start, stop in ((TRAIN, 0, cut), (VALIDATION, cut, corpus.n_chars)):
        key = _key(STREAM_KEY, tokenizer.to_json(), corpus.digest, f"{start}:{stop}")
        encode = functools.partial(_encode_range, tokenizer, corpus, start, stop)
        splits.append(TokenSplit(_cached(folder, key, tokenizer, encode), stop - start, name))
    return splits[0], splits[1], tokenizer


def _encode_range(tokenizer: Tokenizer, corpus: CorpusFile, start: int, stop: int) -> Iterator[np.ndarray]:
    return tokenizer.encode_stream(corpus.chunks(start, stop))


def train_file_tokenizer(corpus: CorpusFile, kind: str, vocab_size: int | None, cut: int) -> Tokenizer:
    """A tokenizer for a scanned file: its whole alphabet ("char"), or BPE merges from characters [0, cut)."""
    check_tokenizer_request(kind, vocab_size)
    if kind == "char":
        return CharTokenizer(corpus.alphabet)
    if cut == 0:
        raise InvalidValue("cannot train a BPE tokenizer on empty text")
    return BPETokenizer.train_from_pieces(corpus.chunks(0, cut), vocab_size or DEFAULT_BPE_VOCAB_SIZE)


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
        raise InvalidValue(
            f"corpus too short: {n} tokens in the {split.name} split, "
            f"need at least block_size + 1 = {block_size + 1}"
        )
    starts = torch.randint(n - block_size, (batch_size,), generator=generator, device=generator.device)
    starts = starts.cpu().numpy()  # (B,)
    windows = split.tokens[starts[:, None] + np.arange(block_size + 1)]  # (B, T+1)
    windows = torch.from_numpy(windows.astype(np.int64))
    _count_draw(split)
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
        raise InvalidValue(f"corpus too short: {n} tokens in the {split.name} split, need at least 2 to score one")
    n_full = (n - 1) // block_size
    offsets = np.arange(block_size + 1)
    _advise(split.tokens, getattr(mmap, "MADV_SEQUENTIAL", None))  # one pass, front to back: read ahead
    try:
        for first in range(0, n_full, batch_size):
            starts = np.arange(first, min(first + batch_size, n_full)) * block_size  # (B,)
            windows = torch.from_numpy(split.tokens[starts[:, None] + offsets].astype(np.int64))  # (B, T+1)
            _count_draw(split)
            yield windows[:, :-1].contiguous(), windows[:, 1:].contiguous()
        tail_start = n_full * block_size
        if tail_start < n - 1:
            window = torch.from_numpy(np.asarray(split.tokens[tail_start:], dtype=np.int64))[None]  # (1, T'+1)
            yield window[:, :-1].contiguous(), window[:, 1:].contiguous()
    finally:
        _advise(split.tokens, getattr(mmap, "MADV_RANDOM", None))


def count_eval_tokens(split: TokenSplit) -> int:
    """How many targets `iter_eval_windows` scores: every token but the first."""
    return max(len(split.tokens) - 1, 0)


def _count_draw(split: TokenSplit) -> None:
    """Every RELEASE_EVERY batches, drop the split's pages from this process's memory map.

    A memory-mapped split's pages count in the process's resident memory once touched, and random
    windows touch pages all over the file: without a release, resident memory would grow towards
    the size of the token file. Released pages stay in the page cache, so a later read is cheap."""
    split.draws += 1
    if split.draws >= RELEASE_EVERY:
        split.draws = 0
        _advise(split.tokens, getattr(mmap, "MADV_DONTNEED", None))


def _advise(tokens: np.ndarray, advice: int | None) -> None:
    """madvise the memory map behind `tokens` (nothing for an in-memory array, or where unsupported)."""
    mapping = getattr(tokens, "_mmap", None)  # np.memmap's mmap.mmap
    if mapping is None or advice is None or not hasattr(mapping, "madvise"):
        return
    try:
        mapping.madvise(advice)
    except (OSError, ValueError):
        pass


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
    return _cached(folder, _cache_key(text, tokenizer), tokenizer, lambda: [tokenizer.encode_array(text)])


def _cached(folder: Path, key: str, tokenizer: Tokenizer, encode: Callable[[], Iterable[np.ndarray]]) -> np.ndarray:
    """The ids cached under `key`, after writing them from `encode()` (arrays, in order) on a miss; memmapped."""
    dtype = np.dtype(np.uint16 if tokenizer.vocab_size <= 65536 else np.uint32)
    path = folder / f"{key}.{dtype.name}.bin"
    if not _intact(path, dtype):
        n = _write_atomic(path, (np.asarray(ids).astype(dtype, copy=False) for ids in encode()))
        _write_length(path, n)
    if path.stat().st_size == 0:  # np.memmap cannot map an empty file
        return np.zeros(0, dtype=dtype)
    tokens = np.memmap(path, dtype=dtype, mode="r")
    _advise(tokens, getattr(mmap, "MADV_RANDOM", None))  # training reads random windows: no read-ahead around them
    return tokens


def _length_path(path: Path) -> Path:
    return path.with_name(path.name + ".len")


def _intact(path: Path, dtype: np.dtype) -> bool:
    """Whether a cache file holds all the ids its `.len` file, written after it, says it holds: a file
    cut short (a full disk, a crash of the file system, a copy stopped half-way) is rebuilt, not used."""
    try:
        n = int(_length_path(path).read_text(encoding="ascii"))
        return path.stat().st_size == n * dtype.itemsize
    except (OSError, ValueError):
        return False


def _write_length(path: Path, n: int) -> None:
    try:
        atomic_write_text(_length_path(path), str(n))
    except RedthreadError as e:
        raise RedthreadError(f"cannot write the token cache: {e}") from None


def _cache_key(text: str, tokenizer: Tokenizer) -> str:
    return _key(tokenizer.to_json(), text)


def _key(*parts: str) -> str:
    h = hashlib.sha256()
    for part in parts:
        data = part.encode("utf-8", errors="surrogatepass")
        h.update(len(data).to_bytes(8, "little"))  # length-prefixed, so parts cannot run together
        h.update(data)
    return h.hexdigest()


def _write_atomic(path: Path, arrays: Iterable[np.ndarray]) -> int:
    """Write the arrays one after another to a temporary file, then rename it to `path`: never a partial
    file. Returns how many ids were written."""
    n = 0
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                for ids in arrays:
                    f.write(ids.tobytes())
                    n += len(ids)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except RedthreadError:  # from reading the text (a MissingFile is an OSError too): not a failed write
        raise
    except OSError as e:
        raise RedthreadError(f"cannot write the token cache file {path}: {e.strerror or e}") from None
    return n


def _check_positive(**values: int) -> None:
    for name, value in values.items():
        check_int(name, value)
