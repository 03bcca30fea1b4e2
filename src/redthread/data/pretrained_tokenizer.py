"""Tokenizers in Hugging Face's `tokenizer.json` format, read and written.

- `load_pretrained_tokenizer(folder)`: the tokenizer a pretrained model was trained with (for
  BERT, WordPiece with [CLS] ... [SEP] around every text), with padding and truncation
  switched off: all-MiniLM-L6-v2's file pads every input to 128 tokens, which would hand the
  model 120 [PAD] tokens it must then be told to ignore.
- `hf_tokenizer_json(tokenizer)`: redthread's own tokenizers as a `tokenizer.json`, so a model
  exported to GPT-2's format (`redthread.interop.huggingface.export_gpt2`) carries its tokenizer.
  A character tokenizer becomes a word-level vocabulary over single characters.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from tokenizers import Regex, decoders, models, pre_tokenizers
from tokenizers import Tokenizer as HFTokenizer

from redthread.data.tokenizers import BPETokenizer, CharTokenizer, Tokenizer
from redthread.errors import InvalidType, InvalidValue, MissingFile

FILENAME = "tokenizer.json"


class PretrainedTokenizer:
    """A `tokenizers.Tokenizer` that encodes one text at a time, special tokens included, unpadded."""

    def __init__(self, hf_tokenizer: HFTokenizer):
        hf_tokenizer.no_padding()
        hf_tokenizer.no_truncation()
        self.hf_tokenizer = hf_tokenizer

    @property
    def vocab_size(self) -> int:
        return self.hf_tokenizer.get_vocab_size()

    def encode(self, text: str) -> tuple[list[int], list[str]]:
        """Ids and token strings of `text`, with the special tokens the model expects ([CLS] ... [SEP])."""
        enc = self.hf_tokenizer.encode(text)
        return enc.ids, enc.tokens

    def decode(self, ids: Any, skip_special_tokens: bool = True) -> str:
        return self.hf_tokenizer.decode([int(i) for i in ids], skip_special_tokens=skip_special_tokens)


def load_pretrained_tokenizer(folder: str | os.PathLike) -> PretrainedTokenizer:
    path = Path(folder) / FILENAME
    if not path.is_file():
        raise MissingFile(f"no {FILENAME} in {folder}")
    try:
        return PretrainedTokenizer(HFTokenizer.from_file(str(path)))
    except Exception as e:  # noqa: BLE001 - the Rust side raises a bare Exception on bad JSON
        raise InvalidValue(f"corrupt {path}: {(str(e).splitlines() or [type(e).__name__])[0]}") from None


def hf_tokenizer_json(tokenizer: Tokenizer) -> str:
    """`tokenizer` as a Hugging Face tokenizer.json string that maps every text to the same ids."""
    if isinstance(tokenizer, BPETokenizer):
        return tokenizer.hf_tokenizer.to_str()
    if not isinstance(tokenizer, CharTokenizer):
        raise InvalidType(f"cannot write a {type(tokenizer).__name__} as tokenizer.json: expected a char or BPE tokenizer")
    vocab = {c: i for i, c in enumerate(tokenizer.chars)}
    # unseen characters become the replacement, as CharTokenizer.encode(errors="replace")
    hf = HFTokenizer(models.WordLevel(vocab, unk_token=tokenizer.chars[tokenizer.replacement_id]))
    hf.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\s\S]"), behavior="isolated")  # every character its own token
    hf.decoder = decoders.Fuse()  # join the characters back without separators
    return hf.to_str()
