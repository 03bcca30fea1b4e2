"""Tokenizers: round trips, unseen characters, BPE on any text, JSON serialisation."""

import numpy as np
import pytest
import torch

from redthread.data import BPETokenizer, CharTokenizer, tokenizer_from_json, train_tokenizer
from redthread.data import tokenizers as tokenizers_module
from redthread.errors import RedthreadError

TEXT = "To be, or not to be: that is the question.\nWhether 'tis nobler in the mind to suffer\n"
UNICODE = "Ünïcödé — naïve café, 東京 🎉🚀 emoji\n\n  spaced\tout\r\n’quotes’ 𝔘𝔫𝔦"


@pytest.fixture(scope="module")
def bpe():
    return BPETokenizer.train((TEXT + UNICODE) * 20, vocab_size=300)


def test_char_tokenizer_round_trips():
    tok = CharTokenizer.from_text(TEXT)
    assert tok.chars == "".join(sorted(set(TEXT)))
    ids = tok.encode(TEXT)
    assert max(ids) < tok.vocab_size
    assert tok.decode(ids) == TEXT
    assert tok.decode(torch.tensor(ids)) == TEXT
    assert tok.decode(np.array(ids)) == TEXT
    assert tok.encode_array(TEXT).tolist() == ids


def test_char_tokenizer_unsorted_chars_keep_their_ids():
    tok = CharTokenizer("cab")
    assert tok.encode("abc") == [1, 2, 0]
    assert tok.decode([0, 1, 2]) == "cab"


def test_char_tokenizer_unseen_char_error_names_it():
    tok = CharTokenizer.from_text(TEXT)
    with pytest.raises(RedthreadError, match="never seen: 'é', '€'"):
        tok.encode("tea é at € é")


def test_char_tokenizer_replace_mode_uses_space():
    tok = CharTokenizer.from_text(TEXT)
    assert tok.decode(tok.encode("tea é€", errors="replace")) == "tea   "
    no_space = CharTokenizer("ab")
    assert no_space.encode("aXb", errors="replace") == [0, 0, 1]


def test_char_tokenizer_decode_rejects_bad_ids():
    tok = CharTokenizer("ab")
    with pytest.raises(RedthreadError, match="out of range"):
        tok.decode([0, 2])


def test_bpe_tokenizer_round_trips_unicode_and_emoji(bpe):
    for text in (UNICODE, TEXT, "never seen before: Ωmega ∑ 🦄", ""):
        assert bpe.decode(bpe.encode(text)) == text


def test_bpe_tokenizer_respects_vocab_size(bpe):
    assert 256 < bpe.vocab_size <= 300
    assert max(bpe.encode(UNICODE * 3)) < bpe.vocab_size
    with pytest.raises(RedthreadError, match="vocab_size"):
        BPETokenizer.train(TEXT, vocab_size=100)


def test_bpe_tokenizer_chunked_encoding_matches_whole(bpe, monkeypatch):
    monkeypatch.setattr(tokenizers_module, "BPE_CHUNK_CHARS", 16)
    text = (TEXT + UNICODE + "\n\n\nEnd.\n   indented\n\tTab. \n") * 5
    assert bpe.encode(text) == bpe.hf_tokenizer.encode(text).ids


@pytest.mark.parametrize("kind", ["char", "bpe"])
def test_tokenizer_from_json_round_trips(kind):
    tok = train_tokenizer(kind, (TEXT + UNICODE) * 5, vocab_size=280 if kind == "bpe" else None)
    again = tokenizer_from_json(tok.to_json())
    assert type(again) is type(tok) and again.kind == kind
    assert again.vocab_size == tok.vocab_size
    assert again.encode(TEXT + UNICODE) == tok.encode(TEXT + UNICODE)


@pytest.mark.parametrize("s", ["{not json", "[]", '{"kind": "wordpiece"}', '{"kind": "bpe", "tokenizer": "{}"}'])
def test_tokenizer_from_json_rejects_corrupt(s):
    with pytest.raises(RedthreadError, match="corrupt"):
        tokenizer_from_json(s)


def test_train_tokenizer_rejects_unknown_kind():
    with pytest.raises(RedthreadError, match="unknown tokenizer kind 'word'"):
        train_tokenizer("word", TEXT)


def test_encode_array_uses_smallest_dtype(bpe):
    assert CharTokenizer.from_text(TEXT).encode_array(TEXT).dtype == np.uint8
    assert bpe.encode_array(TEXT).dtype == np.uint16


@pytest.mark.parametrize("vocab_size", [255, 2**20 + 1, 10**9, True, 300.0])
def test_bpe_vocab_size_out_of_bounds_is_refused_before_training(vocab_size, monkeypatch):
    monkeypatch.setattr(tokenizers_module.HFTokenizer, "train_from_iterator", None)  # never reached
    with pytest.raises(RedthreadError, match=r"from 256 \(the bytes\) to 1,048,576"):
        BPETokenizer.train(TEXT, vocab_size=vocab_size)
    with pytest.raises(RedthreadError, match="1,048,576"):
        train_tokenizer("bpe", TEXT, vocab_size)


def test_vocab_size_for_the_char_tokenizer_is_refused():
    with pytest.raises(RedthreadError, match="BPE setting"):
        train_tokenizer("char", TEXT, 300)
    tokenizers_module.check_tokenizer_request("char")
    tokenizers_module.check_tokenizer_request("bpe", 2**20)
    with pytest.raises(RedthreadError, match="unknown tokenizer kind"):
        tokenizers_module.check_tokenizer_request("word")


def split_randomly(text: str, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    cuts = sorted(rng.choice(len(text), size=min(len(text), 25), replace=False).tolist())
    return [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)])]


@pytest.mark.parametrize("seed", range(3))
def test_encode_stream_gives_the_ids_of_the_joined_text(bpe, monkeypatch, seed):
    monkeypatch.setattr(tokenizers_module, "BPE_CHUNK_CHARS", 16)
    monkeypatch.setattr(tokenizers_module, "BPE_BATCH_PIECES", 2)
    text = (TEXT + UNICODE + "\n\n\nEnd.\n   indented\n\tTab. \n") * 5
    parts = split_randomly(text, seed)
    assert "".join(parts) == text
    assert np.concatenate(list(bpe.encode_stream(parts))).tolist() == bpe.encode(text)
    char = CharTokenizer.from_text(text)
    assert np.concatenate(list(char.encode_stream(parts))).tolist() == char.encode(text)
    assert np.concatenate(list(bpe.encode_stream([""]))).tolist() == []


def test_stream_pieces_cut_where_the_whole_text_is_cut(monkeypatch):
    monkeypatch.setattr(tokenizers_module, "BPE_CHUNK_CHARS", 10)
    text = (TEXT + UNICODE) * 4
    whole = list(tokenizers_module._safe_chunks(text))
    assert len(whole) > 5
    assert list(tokenizers_module._stream_pieces(split_randomly(text, 0))) == whole


def test_stream_without_safe_cuts_is_cut_anyway_and_round_trips(bpe, monkeypatch):
    monkeypatch.setattr(tokenizers_module, "BPE_CHUNK_CHARS", 8)
    monkeypatch.setattr(tokenizers_module, "BPE_MAX_CARRY", 40)
    text = "no line breaks at all, " * 30  # no safe cut: memory must not grow with the text
    pieces = list(tokenizers_module._stream_pieces([text[i : i + 7] for i in range(0, len(text), 7)]))
    assert "".join(pieces) == text and max(map(len, pieces)) <= 40 + 7
    assert bpe.decode(np.concatenate(list(bpe.encode_stream([text])))) == text


def test_train_from_pieces_learns_the_same_merges_as_train():
    text = (TEXT + UNICODE) * 20
    whole = BPETokenizer.train(text, vocab_size=300)
    streamed = BPETokenizer.train_from_pieces(split_randomly(text, 1), vocab_size=300)
    assert streamed.to_json() == whole.to_json()
