"""Corpora: the default Shakespeare corpus, user files and their errors, the train/validation split."""

import os
import socket

import pytest

from redthread.data import Corpus, load_corpus, split_corpus
from redthread.data import corpus as corpus_module
from redthread.data.corpus import scan_corpus, split_point
from redthread.errors import RedthreadError

# \r\n pairs, a lone \r, 2-, 3- and 4-byte characters: every kind of border a block can cut
AWKWARD = "\ufeffline one\r\nzwei — drei\r\n\r\nvier\rfünf 東京 🎉🚀 𝔘𝔫𝔦\r\n\tend\r\n"


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


@pytest.mark.parametrize("block", [1, 2, 3, 5, 7, 64])
def test_scan_and_chunks_stream_the_same_text_as_load_corpus(tmp_path, monkeypatch, block):
    path = tmp_path / "awkward.txt"
    path.write_bytes((AWKWARD + AWKWARD.removeprefix("\ufeff") * 3).encode())
    text = load_corpus(path).text
    assert text.startswith("line one\n") and "\r\n" not in text and "\r" in text  # BOM gone, pairs folded
    monkeypatch.setattr(corpus_module, "READ_BYTES", block)
    scanned = scan_corpus(path)
    assert scanned.n_chars == len(text) and scanned.alphabet == "".join(sorted(set(text)))
    assert scanned.name == "awkward" and len(scanned.marks) > 1
    assert "".join(scanned.chunks()) == text
    for start, stop in ((0, 5), (3, 40), (17, len(text)), (len(text) - 1, None), (10, 10), (50, 20)):
        assert "".join(scanned.chunks(start, stop)) == text[start:stop], (start, stop)
    cut = split_point(len(text))
    assert ("".join(scanned.chunks(0, cut)), "".join(scanned.chunks(cut))) == split_corpus(Corpus("x", (text,)))


def test_scan_checksum_is_of_the_file_bytes(tmp_path):
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text("same text\n")
    b.write_text("same text\n")
    assert scan_corpus(a).digest == scan_corpus(b).digest
    b.write_text("other text\n")
    assert scan_corpus(a).digest != scan_corpus(b).digest


@pytest.mark.parametrize("block", [3, 4096])
def test_scan_non_utf8_names_the_absolute_byte_offset(tmp_path, monkeypatch, block):
    path = tmp_path / "late.txt"
    path.write_bytes("é".encode() * 20 + b"abc\xff" + b"more\n")  # the bad byte at offset 43
    monkeypatch.setattr(corpus_module, "READ_BYTES", block)
    for read in (scan_corpus, load_corpus):
        with pytest.raises(RedthreadError, match="offset 43") as info:
            read(path)
        assert str(path) in str(info.value)


@pytest.mark.parametrize("content", [b"", b"  \n\t\n", b"\xef\xbb\xbf \r\n"])
def test_scan_empty_file_names_path(tmp_path, content):
    path = tmp_path / "empty.txt"
    path.write_bytes(content)
    with pytest.raises(RedthreadError, match="empty"):
        scan_corpus(path)


def test_scan_missing_file_and_directory(tmp_path):
    with pytest.raises(RedthreadError, match="not found"):
        scan_corpus(tmp_path / "nope.txt")
    with pytest.raises(RedthreadError, match="directory"):
        scan_corpus(tmp_path)


def test_fifo_is_refused_without_opening_it(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)  # opening it for reading would block until a writer comes
    for read in (scan_corpus, load_corpus):
        with pytest.raises(RedthreadError, match="FIFO") as info:
            read(fifo)
        assert str(fifo) in str(info.value) and "\n" not in str(info.value)


def test_devices_and_sockets_are_refused(tmp_path):
    with pytest.raises(RedthreadError, match="character device"):
        scan_corpus("/dev/zero")
    with pytest.raises(RedthreadError, match="character device"):
        load_corpus("/dev/urandom")
    path = tmp_path / "sock"
    with socket.socket(socket.AF_UNIX) as s:
        s.bind(str(path))
        with pytest.raises(RedthreadError, match="socket"):
            scan_corpus(path)


def test_a_symlink_to_a_device_is_refused(tmp_path):
    link = tmp_path / "data.txt"
    link.symlink_to("/dev/zero")
    with pytest.raises(RedthreadError, match="character device"):
        scan_corpus(link)
