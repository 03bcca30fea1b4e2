"""Tokenizers: text <-> token ids, for every model on the ladder that reads text.

Two kinds share one interface (`Tokenizer`):
- `CharTokenizer`: one id per distinct character, ids in sorted character order (as
  nanoGPT's shakespeare_char and makemore). Characters outside the vocabulary are an
  error, or mapped to a replacement with `errors="replace"`.
- `BPETokenizer`: byte-level byte-pair encoding (Sennrich et al. 2016; the GPT-2 byte
  alphabet, Radford et al. 2019) trained with the Hugging Face `tokenizers` library. It
  starts from all 256 bytes, so it round-trips any text and has no unknown characters.

Both serialise to a JSON wrapper `{"kind": ..., ...}` read back by `tokenizer_from_json`.
`encode_array` is the fast path for whole corpora (numpy lookup for characters, batched
Rust encoding for BPE); `encode` wraps it for prompts; `encode_stream` encodes a text given
in pieces (a corpus streamed from disk) in flat memory, to the same ids as the joined text.

A BPE vocabulary has `N_BYTES` (256) <= vocab_size <= `MAX_BPE_VOCAB_SIZE` (2**20, eight times
the largest vocabularies in use, ~256 k): `tokenizers` reserves memory by the requested size, and
at 10**9 it aborts the whole process. `check_tokenizer_request` refuses a bad request, and a
vocab_size given to the character tokenizer (whose vocabulary is the corpus's alphabet), before
any text is read.
"""

from __future__ import annotations

import json
import re
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np
from tokenizers import Tokenizer as HFTokenizer
from tokenizers import decoders, models, pre_tokenizers, trainers

from redthread.errors import InvalidType, InvalidValue

KINDS = ("char", "bpe")
DEFAULT_BPE_VOCAB_SIZE = 1024
N_BYTES = 256  # the byte-level alphabet every BPE vocabulary starts from
MAX_BPE_VOCAB_SIZE = 1 << 20  # the largest BPE vocabulary accepted (see the module docstring)
BPE_CHUNK_CHARS = 1 << 16  # corpus chunk size for batched (multi-threaded) BPE encoding
BPE_BATCH_PIECES = 64  # pieces per encode_batch call when encoding a stream (~4 M characters)
BPE_MAX_CARRY = 1 << 22  # characters a stream may run without a safe cut before it is cut anyway
MAX_NAMED_UNSEEN = 10  # how many unseen characters an error message lists

# A word character or common punctuation followed by a newline: GPT-2's split pattern
# ends every pre-token holding a letter, digit or symbol before a newline, and a
# whitespace run that starts after such a character splits the same way whatever precedes
# it, so a corpus cut between the two encodes to exactly the ids of the whole text. (A cut
# after a newline would not: a whitespace run at the end of a piece stays one pre-token.)
# The class avoids characters that one regex engine counts as space and another does not.
_SAFE_CUT = re.compile(r"[\w.,;:!?'\")\]](?=\n)")


class Tokenizer(ABC):
    """The interface every tokenizer offers."""

    kind: str

    @property
    @abstractmethod
    def vocab_size(self) -> int:
        """Number of distinct token ids, V; ids are 0 .. V-1."""

    @abstractmethod
    def encode_array(self, text: str) -> np.ndarray:
        """Token ids of `text` as a 1-D array of the smallest unsigned dtype that fits V."""

    @abstractmethod
    def decode(self, ids: Any) -> str:
        """Text of a 1-D sequence of ids (list, tuple, numpy array or torch tensor)."""

    @abstractmethod
    def to_json(self) -> str:
        """A JSON string that `tokenizer_from_json` turns back into an equal tokenizer."""

    def encode(self, text: str) -> list[int]:
        """Token ids of `text` as a list of ints."""
        return self.encode_array(text).tolist()

    def encode_stream(self, pieces: Iterable[str]) -> Iterator[np.ndarray]:
        """Token ids of the text that `pieces` join to, as a stream of arrays (a corpus read in chunks)."""
        for piece in pieces:
            yield self.encode_array(piece)


class CharTokenizer(Tokenizer):
    """One token per character; id i is `chars[i]`."""

    kind = "char"

    def __init__(self, chars: str):
        chars = "".join(chars)
        if not chars:
            raise InvalidValue("a character tokenizer needs at least one character")
        if len(set(chars)) != len(chars):
            raise InvalidValue("a character tokenizer's characters must be distinct")
        self.chars = chars
        codes = _utf32_codes(chars)
        # code point -> id, -1 for characters outside the vocabulary; the last entry stands
        # for every code point above the largest one in the vocabulary.
        self._lookup = np.full(int(codes.max()) + 2, -1, dtype=np.int64)
        self._lookup[codes] = np.arange(len(codes))
        self._char_array = np.array(list(chars))
        self.replacement_id = chars.index(" ") if " " in chars else 0

    @classmethod
    def from_text(cls, text: str) -> CharTokenizer:
        """The vocabulary of `text`: its distinct characters, sorted by code point."""
        if not text:
            raise InvalidValue("cannot build a character tokenizer from empty text")
        return cls("".join(sorted(set(text))))

    @property
    def vocab_size(self) -> int:
        return len(self.chars)

    def encode_array(self, text: str, errors: str = "strict") -> np.ndarray:
        """Ids of `text`, by a vectorised lookup of its code points.

        `errors="strict"` raises `RedthreadError` naming characters outside the vocabulary;
        `errors="replace"` maps each of them to `replacement_id` (the space character's id
        if space is in the vocabulary, else id 0).
        """
        if errors not in ("strict", "replace"):
            raise InvalidValue(f"errors must be 'strict' or 'replace', got {errors!r}")
        codes = _utf32_codes(text)
        ids = self._lookup[np.minimum(codes, len(self._lookup) - 1)]
        known = ids >= 0
        if not known.all():
            if errors == "strict":
                raise InvalidValue(_unseen_message(codes[~known]))
            ids[~known] = self.replacement_id
        return ids.astype(_id_dtype(self.vocab_size))

    def encode(self, text: str, errors: str = "strict") -> list[int]:
        """Ids of `text` as a list; see `encode_array` for `errors`."""
        return self.encode_array(text, errors=errors).tolist()

    def decode(self, ids: Any) -> str:
        ids = _as_id_array(ids, self.vocab_size)
        return "".join(self._char_array[ids].tolist())

    def to_json(self) -> str:
        return json.dumps({"kind": self.kind, "chars": self.chars})


class BPETokenizer(Tokenizer):
    """Byte-level BPE: a Hugging Face `tokenizers.Tokenizer` behind the shared interface."""

    kind = "bpe"

    def __init__(self, hf_tokenizer: HFTokenizer):
        self.hf_tokenizer = hf_tokenizer

    @classmethod
    def train(cls, text: str, vocab_size: int = DEFAULT_BPE_VOCAB_SIZE) -> BPETokenizer:
        """Learn up to `vocab_size - 256` merges on `text`, on top of the 256 byte tokens."""
        if not text:
            raise InvalidValue("cannot train a BPE tokenizer on empty text")
        return cls.train_from_pieces([text], vocab_size)

    @classmethod
    def train_from_pieces(cls, pieces: Iterable[str], vocab_size: int = DEFAULT_BPE_VOCAB_SIZE) -> BPETokenizer:
        """`train` on the text that `pieces` join to, read lazily: a corpus streamed from disk."""
        check_bpe_vocab_size(vocab_size)
        hf = HFTokenizer(models.BPE())
        hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        hf.decoder = decoders.ByteLevel()
        trainer = trainers.BpeTrainer(
            vocab_size=vocab_size,
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
            special_tokens=[],
            show_progress=False,
        )
        hf.train_from_iterator(_stream_pieces(pieces), trainer=trainer)
        return cls(hf)

    @property
    def vocab_size(self) -> int:
        return self.hf_tokenizer.get_vocab_size()

    def encode_array(self, text: str) -> np.ndarray:
        """Ids of `text`; long texts are cut at safe points and encoded in parallel."""
        chunks = list(_safe_chunks(text))
        encodings = self.hf_tokenizer.encode_batch(chunks, add_special_tokens=False)
        ids = [np.asarray(e.ids, dtype=np.int64) for e in encodings]
        out = np.concatenate(ids) if ids else np.zeros(0, dtype=np.int64)
        return out.astype(_id_dtype(self.vocab_size))

    def encode_stream(self, pieces: Iterable[str]) -> Iterator[np.ndarray]:
        """Ids of the joined text, cut at the same safe points as `encode_array`, encoded in batches."""
        dtype = _id_dtype(self.vocab_size)
        batch: list[str] = []
        for piece in _stream_pieces(pieces):
            batch.append(piece)
            if len(batch) == BPE_BATCH_PIECES:
                yield self._encode_batch(batch, dtype)
                batch = []
        if batch:
            yield self._encode_batch(batch, dtype)

    def _encode_batch(self, pieces: list[str], dtype: np.dtype) -> np.ndarray:
        encodings = self.hf_tokenizer.encode_batch(pieces, add_special_tokens=False)
        return np.concatenate([np.asarray(e.ids, dtype=dtype) for e in encodings])

    def decode(self, ids: Any) -> str:
        ids = _as_id_array(ids, self.vocab_size)
        return self.hf_tokenizer.decode(ids.tolist(), skip_special_tokens=False)

    def to_json(self) -> str:
        return json.dumps({"kind": self.kind, "tokenizer": self.hf_tokenizer.to_str()})


def check_bpe_vocab_size(vocab_size) -> None:
    message = (f"a byte-level BPE vocab_size must be an integer from {N_BYTES} (the bytes) "
               f"to {MAX_BPE_VOCAB_SIZE:,} (2**20), got {vocab_size!r}")
    if not isinstance(vocab_size, int) or isinstance(vocab_size, bool):
        raise InvalidType(message)
    if not N_BYTES <= vocab_size <= MAX_BPE_VOCAB_SIZE:
        raise InvalidValue(message)


def check_tokenizer_request(kind: str, vocab_size: int | None = None) -> None:
    """Refuse what `train_tokenizer(kind, ..., vocab_size)` would refuse, before any text is read."""
    if kind not in KINDS:
        raise InvalidValue(f"unknown tokenizer kind {kind!r}: expected one of {', '.join(KINDS)}")
    if kind == "char" and vocab_size is not None:
        raise InvalidValue(f"a vocab_size ({vocab_size}) is a BPE setting: the character tokenizer's vocabulary "
                             "is the corpus's alphabet (use --tokenizer bpe, or drop --vocab-size)")
    if kind == "bpe" and vocab_size is not None:
        check_bpe_vocab_size(vocab_size)


def train_tokenizer(kind: str, text: str, vocab_size: int | None = None) -> Tokenizer:
    """Build a tokenizer of `kind` ("char" or "bpe") from `text`.

    For "char" the vocabulary is the text's distinct characters (a `vocab_size` is an error);
    for "bpe" `vocab_size` defaults to 1024.
    """
    check_tokenizer_request(kind, vocab_size)
    if kind == "char":
        return CharTokenizer.from_text(text)
    if kind == "bpe":
        return BPETokenizer.train(text, DEFAULT_BPE_VOCAB_SIZE if vocab_size is None else vocab_size)
    raise InvalidValue(f"unknown tokenizer kind {kind!r}: expected one of {', '.join(KINDS)}")


def tokenizer_from_json(s: str) -> Tokenizer:
    """The tokenizer that `Tokenizer.to_json` wrote; a corrupt string raises RedthreadError."""
    try:
        obj = json.loads(s)
    except (json.JSONDecodeError, TypeError) as e:
        raise InvalidValue(f"tokenizer JSON is corrupt: {e}") from None
    kind = obj.get("kind") if isinstance(obj, dict) else None
    if kind == "char" and isinstance(obj.get("chars"), str):
        return CharTokenizer(obj["chars"])
    if kind == "bpe" and isinstance(obj.get("tokenizer"), str):
        try:
            return BPETokenizer(HFTokenizer.from_str(obj["tokenizer"]))
        except Exception as e:  # the Rust side raises a bare Exception on bad JSON
            raise InvalidValue(f"tokenizer JSON is corrupt: bad BPE tokenizer ({e})") from None
    raise InvalidValue(f"tokenizer JSON is corrupt: expected kind 'char' with 'chars' or 'bpe' with 'tokenizer', got kind {kind!r}")


def _utf32_codes(text: str) -> np.ndarray:
    # One uint32 code point per character; surrogatepass keeps lone surrogates encodable.
    return np.frombuffer(text.encode("utf-32-le", errors="surrogatepass"), dtype=np.uint32)


def _id_dtype(vocab_size: int) -> np.dtype:
    for dtype in (np.uint8, np.uint16, np.uint32):
        if vocab_size <= np.iinfo(dtype).max + 1:
            return np.dtype(dtype)
    return np.dtype(np.int64)


def _unseen_message(unseen_codes: np.ndarray) -> str:
    unique, first = np.unique(unseen_codes, return_index=True)
    in_order = unique[np.argsort(first)]  # as they first appear in the text
    names = ", ".join(repr(chr(c)) for c in in_order[:MAX_NAMED_UNSEEN].tolist())
    more = f" (and {len(in_order) - MAX_NAMED_UNSEEN} more)" if len(in_order) > MAX_NAMED_UNSEEN else ""
    return f"text contains characters the tokenizer has never seen: {names}{more}"


def _as_id_array(ids: Any, vocab_size: int) -> np.ndarray:
    if hasattr(ids, "detach"):  # a torch tensor, possibly on an accelerator
        ids = ids.detach().cpu().numpy()
    arr = np.asarray(ids)
    if arr.size == 0:
        return np.zeros(0, dtype=np.int64)
    if arr.ndim != 1 or not np.issubdtype(arr.dtype, np.integer):
        raise InvalidValue(f"decode needs a 1-D sequence of integer ids, got shape {arr.shape} of {arr.dtype}")
    if arr.min() < 0 or arr.max() >= vocab_size:
        raise InvalidValue(f"token id out of range: ids must lie in 0..{vocab_size - 1}, got {arr.min()}..{arr.max()}")
    return arr.astype(np.int64)


def _stream_pieces(parts: Iterable[str]) -> Iterator[str]:
    """The pieces `_safe_chunks` cuts the joined text into, from the text given in parts.

    The cuts are the same as on the whole text (the first safe point at least BPE_CHUNK_CHARS on),
    unless BPE_MAX_CARRY characters pass without one (a file with no line breaks): the text is then
    cut where it stands, which keeps memory flat and still round-trips, though the ids next to that
    cut may differ from the whole text's."""
    carry, emitted = "", False
    for part in parts:
        pieces, carry = _cut_safely(carry + part)
        yield from pieces
        emitted = emitted or bool(pieces)
        if len(carry) > BPE_MAX_CARRY:
            yield carry
            emitted, carry = True, ""
    if carry or not emitted:
        yield carry


def _safe_chunks(text: str):
    """Yield pieces of about BPE_CHUNK_CHARS that join to `text`, cut only at _SAFE_CUT."""
    pieces, rest = _cut_safely(text)
    yield from pieces
    if rest or not text:
        yield rest


def _cut_safely(text: str) -> tuple[list[str], str]:
    """The pieces of at least BPE_CHUNK_CHARS that `text` cuts into at _SAFE_CUT, and the rest after the last cut."""
    pieces, start = [], 0
    while len(text) - start > BPE_CHUNK_CHARS:
        match = _SAFE_CUT.search(text, start + BPE_CHUNK_CHARS)
        if match is None:
            break
        pieces.append(text[start : match.end()])
        start = match.end()
    return pieces, text[start:]
