"""Token streams: the on-disk cache, random training windows, exactly-once evaluation windows."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from redthread.data import CharTokenizer, TokenSplit, count_eval_tokens, get_batch, iter_eval_windows, prepare_splits
from redthread.errors import RedthreadError

TRAIN_TEXT = "the quick brown fox jumps over the lazy dog\n" * 20
VAL_TEXT = "a lazy dog naps\n" * 5


def test_prepare_splits_second_call_reuses_cache(tmp_path, monkeypatch):
    tok = CharTokenizer.from_text(TRAIN_TEXT + VAL_TEXT)
    train, val = prepare_splits(TRAIN_TEXT, VAL_TEXT, tok, cache_dir=tmp_path)
    assert isinstance(train.tokens, np.memmap) and train.tokens.dtype == np.uint16
    assert tok.decode(train.tokens) == TRAIN_TEXT and tok.decode(val.tokens) == VAL_TEXT
    assert (train.name, val.name) == ("train", "validation")
    assert (train.n_chars, val.n_chars) == (len(TRAIN_TEXT), len(VAL_TEXT))
    assert not list(tmp_path.glob("*.tmp"))

    def fail(text):
        raise AssertionError("re-encoded a cached split")

    monkeypatch.setattr(tok, "encode_array", fail)
    train2, val2 = prepare_splits(TRAIN_TEXT, VAL_TEXT, tok, cache_dir=tmp_path)
    np.testing.assert_array_equal(train2.tokens, train.tokens)
    np.testing.assert_array_equal(val2.tokens, val.tokens)


def test_prepare_splits_cache_dir_from_env(tmp_path, monkeypatch):
    monkeypatch.setenv("REDTHREAD_CACHE", str(tmp_path / "cache"))
    tok = CharTokenizer.from_text(TRAIN_TEXT + VAL_TEXT)
    prepare_splits(TRAIN_TEXT, VAL_TEXT, tok)
    assert len(list((tmp_path / "cache").glob("*.bin"))) == 2


def test_prepare_splits_other_tokenizer_misses_cache(tmp_path):
    a = CharTokenizer.from_text(TRAIN_TEXT + VAL_TEXT)
    b = CharTokenizer("".join(reversed(a.chars)))
    train_a, _ = prepare_splits(TRAIN_TEXT, VAL_TEXT, a, cache_dir=tmp_path)
    train_b, _ = prepare_splits(TRAIN_TEXT, VAL_TEXT, b, cache_dir=tmp_path)
    assert b.decode(train_b.tokens) == TRAIN_TEXT
    assert not np.array_equal(train_a.tokens, train_b.tokens)


def split_of(n, name="train"):
    return TokenSplit(tokens=np.arange(n, dtype=np.uint16), n_chars=n, name=name)


def test_get_batch_targets_are_inputs_shifted():
    x, y = get_batch(split_of(100), batch_size=8, block_size=16, generator=torch.Generator().manual_seed(0))
    assert x.shape == y.shape == (8, 16) and x.dtype == y.dtype == torch.int64
    # tokens are 0..99, so a window is consecutive integers
    assert torch.equal(y[:, :-1], x[:, 1:]) and torch.equal(y[:, -1], x[:, -1] + 1)
    assert int(y.max()) <= 99


def test_get_batch_is_deterministic_under_seed():
    split = split_of(1000)
    a = get_batch(split, 4, 8, torch.Generator().manual_seed(123))
    b = get_batch(split, 4, 8, torch.Generator().manual_seed(123))
    c = get_batch(split, 4, 8, torch.Generator().manual_seed(124))
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
    assert not torch.equal(a[0], c[0])


def test_get_batch_too_short_names_split():
    split = split_of(8, name="validation")
    with pytest.raises(RedthreadError, match=r"corpus too short: 8 tokens in the validation split, need at least block_size \+ 1 = 9"):
        get_batch(split, 2, 8, torch.Generator().manual_seed(0))
    x, _ = get_batch(split_of(9), 2, 8, torch.Generator().manual_seed(0))
    assert torch.equal(x[0], torch.arange(8))


@settings(max_examples=60, deadline=None)
@given(n=st.integers(2, 300), block_size=st.integers(1, 40), batch_size=st.integers(1, 7))
def test_iter_eval_windows_scores_every_token_once(n, block_size, batch_size):
    split = split_of(n)
    targets, shapes = [], []
    for x, y in iter_eval_windows(split, block_size, batch_size):
        assert x.shape == y.shape and x.shape[1] <= block_size and x.shape[0] <= batch_size
        assert torch.equal(y, x + 1)  # each target is the token after its input
        targets.extend(y.flatten().tolist())
        shapes.append(tuple(x.shape))
    assert sorted(targets) == list(range(1, n)) == targets
    assert len(targets) == count_eval_tokens(split)
    partial = [s for s in shapes if s[1] < block_size]
    assert len(partial) <= 1 and (not partial or partial[0][0] == 1 and shapes[-1] == partial[0])


FILE_TEXT = "First Citizen:\r\nBefore we proceed — any further, hear me speak. 東京 🎉\r\n\r\nAll:\nSpeak, speak.\n" * 40


@pytest.fixture()
def small_blocks(monkeypatch):
    from redthread.data import corpus as corpus_module
    from redthread.data import tokenizers as tokenizers_module

    monkeypatch.setattr(corpus_module, "READ_BYTES", 97)  # many blocks, borders inside characters and \r\n pairs
    monkeypatch.setattr(tokenizers_module, "BPE_CHUNK_CHARS", 50)
    monkeypatch.setattr(tokenizers_module, "BPE_BATCH_PIECES", 3)


@pytest.mark.parametrize("kind, vocab_size", [("char", None), ("bpe", 300)])
def test_prepare_file_splits_streams_to_the_same_splits_as_the_text(tmp_path, small_blocks, kind, vocab_size):
    from redthread.data import load_corpus, split_corpus, train_tokenizer
    from redthread.data.dataset import prepare_file_splits

    path = tmp_path / "play.txt"
    path.write_bytes(FILE_TEXT.encode())
    corpus = load_corpus(path)
    train_text, val_text = split_corpus(corpus)
    expected_tok = train_tokenizer(kind, corpus.text if kind == "char" else train_text, vocab_size)

    train, val, tok = prepare_file_splits(path, kind, vocab_size, cache_dir=tmp_path / "cache")
    assert tok.to_json() == expected_tok.to_json()
    assert isinstance(train.tokens, np.memmap)
    np.testing.assert_array_equal(train.tokens, tok.encode_array(train_text))
    np.testing.assert_array_equal(val.tokens, tok.encode_array(val_text))
    assert (train.n_chars, val.n_chars, train.name, val.name) == (len(train_text), len(val_text), "train", "validation")
    assert not list((tmp_path / "cache").glob("*.tmp"))

    # a second run reuses both cache files: nothing is encoded again
    def fail(pieces):
        raise AssertionError("re-encoded a cached split")

    tok.encode_stream = fail
    train2, val2, _ = prepare_file_splits(path, kind, vocab_size, tokenizer=tok, cache_dir=tmp_path / "cache")
    np.testing.assert_array_equal(train2.tokens, train.tokens)
    np.testing.assert_array_equal(val2.tokens, val.tokens)


def test_prepare_file_splits_checks_the_request_before_reading(tmp_path):
    from redthread.data.dataset import prepare_file_splits

    for kind, vocab_size, needle in (("char", 300, "BPE setting"), ("bpe", 10**9, "2\\*\\*20"), ("word", None, "unknown")):
        with pytest.raises(RedthreadError, match=needle):
            prepare_file_splits(tmp_path / "missing.txt", kind, vocab_size, cache_dir=tmp_path)


def test_prepare_file_splits_with_a_foreign_tokenizer_names_unseen_characters(tmp_path):
    from redthread.data.dataset import prepare_file_splits

    path = tmp_path / "other.txt"
    path.write_text("xyz\n" * 50)
    with pytest.raises(RedthreadError, match="never seen"):
        prepare_file_splits(path, tokenizer=CharTokenizer("abc\n"), cache_dir=tmp_path / "cache")
    assert not list((tmp_path / "cache").glob("*"))  # no partial cache file left behind


def test_reading_windows_releases_the_mapped_pages(tmp_path, monkeypatch):
    import redthread.data.dataset as dataset

    released = []
    monkeypatch.setattr(dataset, "_advise", lambda tokens, advice: released.append(advice))
    tok = CharTokenizer.from_text(TRAIN_TEXT + VAL_TEXT)
    train, val = prepare_splits(TRAIN_TEXT, VAL_TEXT, tok, cache_dir=tmp_path)
    released.clear()
    generator = torch.Generator().manual_seed(0)
    for _ in range(dataset.RELEASE_EVERY):
        get_batch(train, 2, 8, generator)
    assert released == [dataset.mmap.MADV_DONTNEED] and train.draws == 0
    list(iter_eval_windows(val, 4, 1))
    assert released[1] == dataset.mmap.MADV_SEQUENTIAL and released[-1] == dataset.mmap.MADV_RANDOM


def test_releasing_pages_keeps_the_data(tmp_path):
    import redthread.data.dataset as dataset

    tok = CharTokenizer.from_text(TRAIN_TEXT + VAL_TEXT)
    train, _ = prepare_splits(TRAIN_TEXT, VAL_TEXT, tok, cache_dir=tmp_path)
    before = np.array(train.tokens)
    dataset._advise(train.tokens, dataset.mmap.MADV_DONTNEED)
    np.testing.assert_array_equal(train.tokens, before)
    dataset._advise(np.zeros(3), dataset.mmap.MADV_DONTNEED)  # an in-memory array: nothing to do
