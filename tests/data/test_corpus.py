"""Corpora: the default Shakespeare corpus, user files and their errors, the train/validation split."""

import pytest

from redthread.data import Corpus, load_corpus, split_corpus
from redthread.errors import RedthreadError


@pytest.fixture(scope="module")
def shakespeare():
    return load_corpus()


def test_load_corpus_default_has_37_plays(shakespeare):
    assert shakespeare.name == "shakespeare"
    assert len(shakespeare.documents) == 37
    assert 4_800_000 < len(shakespeare.text) < 5_000_000
    assert 80 <= len(set(shakespeare.text)) <= 90
    assert all("\r" not in d for d in shakespeare.documents)


def test_load_corpus_cymbeline_has_folio_acts_iii_iv(shakespeare):
    (cymbeline,) = [d for d in shakespeare.documents if d.startswith("CYMBELINE")]
    tertius = cymbeline.index("Actus Tertius. Scena Prima.")
    quartus = cymbeline.index("Actus Quartus. Scena Prima.")
    fifth = cymbeline.index("ACT FIFTH. SCENE I.")
    assert cymbeline.index("ACT II. SCENE I.") < tertius < quartus < fifth
    assert "Actus Quintus" not in cymbeline


def test_split_corpus_is_deterministic_and_disjoint(shakespeare):
    train, val = split_corpus(shakespeare)
    assert (train, val) == split_corpus(shakespeare)
    val_docs = val.split("\n\n")
    held_out = [shakespeare.documents[i] for i in (5, 15, 25, 35)]
    assert val == "\n\n".join(held_out)
    for play in held_out:
        assert play[:2000] not in train
    assert 0.05 < len(val) / len(shakespeare.text) < 0.15
    assert len(val_docs) >= 4


def test_split_corpus_single_document_is_90_10_tail():
    corpus = Corpus("one", ("abcdefghij" * 10,))
    train, val = split_corpus(corpus, 0.1)
    assert train + val == corpus.text
    assert len(train) == 90 and len(val) == 10


def test_split_corpus_too_few_documents_falls_back_to_tail():
    corpus = Corpus("two", ("a" * 50, "b" * 50))
    train, val = split_corpus(corpus, 0.1)
    assert train + val == corpus.text
    assert val == "b" * (len(corpus.text) - int(len(corpus.text) * 0.9))


@pytest.mark.parametrize("val_fraction", [0, 1, -0.1, 1.5])
def test_split_corpus_rejects_bad_fraction(val_fraction):
    with pytest.raises(RedthreadError, match="val_fraction"):
        split_corpus(Corpus("x", ("abc",)), val_fraction)


def test_load_corpus_reads_utf8_file_as_one_document(tmp_path):
    path = tmp_path / "poem.txt"
    path.write_bytes("first line\r\nsecond — ünïcode 🎉\r\n".encode())
    corpus = load_corpus(path)
    assert corpus.name == "poem"
    assert corpus.documents == ("first line\nsecond — ünïcode 🎉\n",)


def test_load_corpus_missing_file_names_path(tmp_path):
    path = tmp_path / "nope.txt"
    with pytest.raises(RedthreadError, match="not found") as info:
        load_corpus(path)
    assert str(path) in str(info.value)


def test_load_corpus_directory_names_path(tmp_path):
    with pytest.raises(RedthreadError, match="directory") as info:
        load_corpus(tmp_path)
    assert str(tmp_path) in str(info.value)


@pytest.mark.parametrize("content", [b"", b"  \n\t\n"])
def test_load_corpus_empty_file_names_path(tmp_path, content):
    path = tmp_path / "empty.txt"
    path.write_bytes(content)
    with pytest.raises(RedthreadError, match="empty") as info:
        load_corpus(path)
    assert str(path) in str(info.value)


def test_load_corpus_non_utf8_names_path_and_offset(tmp_path):
    path = tmp_path / "latin1.txt"
    path.write_bytes("abc café".encode("latin-1"))
    with pytest.raises(RedthreadError, match="UTF-8") as info:
        load_corpus(path)
    message = str(info.value)
    assert str(path) in message and "offset 7" in message and "\n" not in message
