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
Rust encoding for BPE); `encode` wraps it for prompts.
"""

from __future__ import annotations

import json
import re
from abc import ABC, abstractmethod
from typing import Any

import numpy as np
from tokenizers import Tokenizer as HFTokenizer
from tokenizers import decoders, models, pre_tokenizers, trainers

from redthread.errors import RedthreadError

KINDS = ("char", "bpe")
DEFAULT_BPE_VOCAB_SIZE = 1024
N_BYTES = 256  # the byte-level alphabet every BPE vocabulary starts from
BPE_CHUNK_CHARS = 1 << 16  # corpus chunk size for batched (multi-threaded) BPE encoding
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


class CharTokenizer(Tokenizer):
    """One token per character; id i is `chars[i]`."""

    kind = "char"

    def __init__(self, chars: str):
        chars = "".join(chars)
        if not chars:
            raise RedthreadError("a character tokenizer needs at least one character")
        if len(set(chars)) != len(chars):
            raise RedthreadError("a character tokenizer's characters must be distinct")
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
            raise RedthreadError("cannot build a character tokenizer from empty text")
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
            raise RedthreadError(f"errors must be 'strict' or 'replace', got {errors!r}")
        codes = _utf32_codes(text)
        ids = self._lookup[np.minimum(codes, len(self._lookup) - 1)]
        known = ids >= 0
        if not known.all():
            if errors == "strict":
                raise RedthreadError(_unseen_message(codes[~known]))
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
        if not isinstance(vocab_size, int) or vocab_size < N_BYTES:
            raise RedthreadError(f"a byte-level BPE vocab_size must be an integer >= {N_BYTES}, got {vocab_size!r}")
        if not text:
            raise RedthreadError("cannot train a BPE tokenizer on empty text")
        hf = HFTokenizer(models.BPE())
        hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        hf.decoder = decoders.ByteLevel()
        trainer = trainers.BpeTrainer(
            vocab_size=vocab_size,
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
            special_tokens=[],
            show_progress=False,
        )
        hf.train_from_iterator(_safe_chunks(text), trainer=trainer)
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

    def decode(self, ids: Any) -> str:
        ids = _as_id_array(ids, self.vocab_size)
        return self.hf_tokenizer.decode(ids.tolist(), skip_special_tokens=False)

    def to_json(self) -> str:
        return json.dumps({"kind": self.kind, "tokenizer": self.hf_tokenizer.to_str()})


def train_tokenizer(kind: str, text: str, vocab_size: int | None = None) -> Tokenizer:
    """Build a tokenizer of `kind` ("char" or "bpe") from `text`.

    For "char" the vocabulary is the text's distinct characters and `vocab_size` is not
    used; for "bpe" it defaults to 1024.
    """
    if kind == "char":
        return CharTokenizer.from_text(text)
    if kind == "bpe":
        return BPETokenizer.train(text, DEFAULT_BPE_VOCAB_SIZE if vocab_size is None else vocab_size)
    raise RedthreadError(f"unknown tokenizer kind {kind!r}: expected one of {', '.join(KINDS)}")


def tokenizer_from_json(s: str) -> Tokenizer:
    """The tokenizer that `Tokenizer.to_json` wrote; a corrupt string raises RedthreadError."""
    try:
        obj = json.loads(s)
    except (json.JSONDecodeError, TypeError) as e:
        raise RedthreadError(f"tokenizer JSON is corrupt: {e}") from None
    kind = obj.get("kind") if isinstance(obj, dict) else None
    if kind == "char" and isinstance(obj.get("chars"), str):
        return CharTokenizer(obj["chars"])
    if kind == "bpe" and isinstance(obj.get("tokenizer"), str):
        try:
            return BPETokenizer(HFTokenizer.from_str(obj["tokenizer"]))
        except Exception as e:  # the Rust side raises a bare Exception on bad JSON
            raise RedthreadError(f"tokenizer JSON is corrupt: bad BPE tokenizer ({e})") from None
    raise RedthreadError(f"tokenizer JSON is corrupt: expected kind 'char' with 'chars' or 'bpe' with 'tokenizer', got kind {kind!r}")


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
        raise RedthreadError(f"decode needs a 1-D sequence of integer ids, got shape {arr.shape} of {arr.dtype}")
    if arr.min() < 0 or arr.max() >= vocab_size:
        raise RedthreadError(f"token id out of range: ids must lie in 0..{vocab_size - 1}, got {arr.min()}..{arr.max()}")
    return arr.astype(np.int64)


def _safe_chunks(text: str):
    """Yield pieces of about BPE_CHUNK_CHARS that join to `text`, cut only at _SAFE_CUT."""
    start = 0
    while len(text) - start > BPE_CHUNK_CHARS:
        match = _SAFE_CUT.search(text, start + BPE_CHUNK_CHARS)
        if match is None:
            break
        yield text[start : match.end()]
        start = match.end()
    if start < len(text) or not text:
        yield text[start:]
