"""Data for the text rungs of the ladder: corpora, tokenizers, and token streams to train and score on."""

from redthread.data.corpus import SHIPPED_TEXTS, Corpus, load_corpus, split_corpus, text_path
from redthread.data.dataset import TokenSplit, count_eval_tokens, get_batch, iter_eval_windows, prepare_splits
from redthread.data.tokenizers import (
    BPETokenizer,
    CharTokenizer,
    Tokenizer,
    tokenizer_from_json,
    train_tokenizer,
)

__all__ = [
    "BPETokenizer",
    "CharTokenizer",
    "Corpus",
    "TokenSplit",
    "Tokenizer",
    "count_eval_tokens",
    "get_batch",
    "iter_eval_windows",
    "load_corpus",
    "prepare_splits",
    "split_corpus",
    "SHIPPED_TEXTS",
    "text_path",
    "tokenizer_from_json",
    "train_tokenizer",
]
