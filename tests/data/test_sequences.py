"""Independent sequences: padding, exactly-once evaluation, ignored targets, and line files."""

import itertools
import math
from pathlib import Path

import numpy as np
import pytest
import torch

from redthread.data import text_path
from redthread.data.sequences import SequenceData, load_lines, makemore_split
from redthread.errors import RedthreadError
from redthread.models.likelihoods import IGNORE_INDEX
from redthread.train.loop import evaluate

NAMES = text_path("names")
SEQS = [np.array([1, 2, 3]), np.array([4]), np.array([2, 2]), np.array([3, 1, 4, 1]), np.array([], dtype=np.int64)]


def test_sequence_data_end_token_pads_x_with_boundary_and_y_with_ignore():
    data = SequenceData(SEQS[:2], SEQS[2:], vocab_size=5, boundary=0, end_token=True)
    assert data.block_size == 5  # the longest sequence (4 tokens) plus its end
    x, y = next(data.eval_batches("train", 8))
    ig = IGNORE_INDEX
    assert x.tolist() == [[0, 1, 2, 3, 0], [0, 4, 0, 0, 0]]
    assert y.tolist() == [[1, 2, 3, 0, ig], [4, 0, ig, ig, ig]]
    x, y = next(data.eval_batches("val", 8))
    assert x.shape == y.shape == (3, 5) and x.dtype == y.dtype == torch.int64
    assert y.tolist() == [[2, 2, 0, ig, ig], [3, 1, 4, 1, 0], [0, ig, ig, ig, ig]]  # an empty sequence scores its end
    assert (x[:, 0] == 0).all()
    assert data.n_targets("val") == 2 + 4 + 0 + 3


def test_sequence_data_without_end_token_scores_every_token_and_no_end():
    data = SequenceData([np.array([1, 2, 3]), np.array([4, 1])], np.array([[2, 3, 4]]), vocab_size=5, boundary=0, end_token=False)
    assert data.block_size == 3
    x, y = next(data.eval_batches("train", 8))
    assert x.tolist() == [[0, 1, 2], [0, 4, 0]]
    assert y.tolist() == [[1, 2, 3], [4, 1, IGNORE_INDEX]]
    assert [s.tolist() for s in data.sequences("train")] == [[1, 2, 3], [4, 1]]
    assert data.tokens_per_char("train") is None


def test_sequence_data_eval_batches_cover_every_example_once_in_order():
    rng = np.random.default_rng(0)
    seqs = [rng.integers(1, 7, size=n) for n in rng.integers(0, 9, size=23)]
    data = SequenceData(seqs, seqs[:3], vocab_size=7, boundary=0)
    batches = list(data.eval_batches("train", 5))
    assert [len(x) for x, _ in batches] == [5, 5, 5, 5, 3]
    y = torch.cat([y for _, y in batches])
    rows = [row[row != IGNORE_INDEX][:-1].tolist() for row in y]  # drop padding and the end
    assert rows == [s.tolist() for s in seqs]
    assert sum(int((y != IGNORE_INDEX).sum()) for _, y in batches) == data.n_targets("train") == sum(map(len, seqs)) + 23


def test_sequence_data_batch_draws_rows_reproducibly():
    data = SequenceData(SEQS, SEQS[:2], vocab_size=5, boundary=0)
    x1, y1 = data.batch("train", 16, torch.Generator().manual_seed(3))
    x2, y2 = data.batch("train", 16, torch.Generator().manual_seed(3))
    assert x1.shape == y1.shape == (16, data.block_size)
    assert torch.equal(x1, x2) and torch.equal(y1, y2)
    all_x, all_y = next(data.eval_batches("train", 100))
    for xr, yr in zip(x1, y1):
        i = int(((all_x == xr).all(1) & (all_y == yr).all(1)).nonzero()[0])  # every row is an example
        assert torch.equal(all_y[i], yr)
    fixed = [torch.cat(b) for b in zip(*data.eval_batches("val", 4, max_batches=3))]
    again = [torch.cat(b) for b in zip(*data.eval_batches("val", 4, max_batches=3))]
    assert fixed[0].shape == (12, data.block_size) and all(torch.equal(a, b) for a, b in zip(fixed, again))


@pytest.mark.parametrize(
    "train, kwargs, match",
    [
        ([np.array([1, 0, 2])], {}, "boundary"),
        ([np.array([1, 5])], {}, "0..4"),
        ([], {}, "no sequences"),
        ([np.array([], dtype=np.int64)], {"end_token": False}, "empty sequence"),
        ([np.array([1.0])], {}, "integer"),
        ([np.array([1])], {"boundary": 5}, "boundary"),
    ],
)
def test_sequence_data_rejects_bad_sequences(train, kwargs, match):
    args = {"vocab_size": 5, "boundary": 0, **kwargs}
    with pytest.raises(RedthreadError, match=match):
        SequenceData(train, [np.array([1])], **args)


def test_sequence_data_unknown_split_is_an_error():
    data = SequenceData(SEQS, SEQS, vocab_size=5, boundary=0)
    with pytest.raises(RedthreadError, match="unknown split"):
        data.batch("test", 2, torch.Generator())


class Bigram(torch.nn.Module):
    """logits = a table row per input token: (B, T) -> (B, T, V)."""

    def __init__(self, vocab_size: int):
        super().__init__()
        self.table = torch.nn.Sequential(torch.nn.Embedding(vocab_size, vocab_size))

    def forward(self, idx):
        return self.table(idx)  # (B, T, V)


def test_evaluate_on_sequence_data_scores_only_real_targets():
    torch.manual_seed(0)
    V = 5
    data = SequenceData(SEQS, SEQS[:3], vocab_size=V, boundary=0, train_chars=20, val_chars=9)
    model = Bigram(V)
    log_probs = torch.log_softmax(model.table[0].weight.detach().double(), -1)  # (V, V): row = input token
    expected = []
    for s in SEQS[:3]:  # by hand: start -> s_0 -> ... -> s_{n-1} -> end
        path = [0, *s.tolist(), 0]
        expected += [-log_probs[a, b].item() for a, b in itertools.pairwise(path)]
    out = evaluate(model, data, "val", batch_size=2)
    assert out["tokens"] == len(expected) == data.n_targets("val") == 9
    assert out["nll"] == pytest.approx(sum(expected) / len(expected), rel=1e-6)
    assert out["bpc"] == pytest.approx(out["nll"] / math.log(2), rel=1e-9)  # 9 targets over 9 characters


def _write(tmp_path, content, name="lines.txt") -> Path:
    path = tmp_path / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
    return path


def test_load_lines_splits_shuffles_and_encodes(tmp_path):
    lines = [f"n{chr(97 + i % 26)}{'x' * (i % 5)}" for i in range(40)]
    path = _write(tmp_path, "\r\n".join(lines) + "\r\n\n\n")  # CRLF and trailing blank lines
    data, tok = load_lines(path, seed=1)
    assert (data.n_sequences("train"), data.n_sequences("val")) == (36, 4)
    assert tok.decode([0]) == "." and tok.vocab_size == len(set("".join(lines))) + 1
    assert data.vocab_size == tok.vocab_size and data.boundary == 0 and data.tokenizer is tok
    decoded = [tok.decode(s) for split in ("train", "val") for s in data.sequences(split)]
    assert sorted(decoded) == sorted(lines) and decoded != lines  # all of them, shuffled
    assert data.tokens_per_char("val") == 1.0  # a character per token, a newline per end
    again, _ = load_lines(path, seed=1)
    other, _ = load_lines(path, seed=2)
    assert [s.tolist() for s in again.sequences("val")] == [s.tolist() for s in data.sequences("val")]
    assert [s.tolist() for s in other.sequences("val")] != [s.tolist() for s in data.sequences("val")]
    small, _ = load_lines(path, test_fraction=0.5, max_test=3)
    assert small.n_sequences("val") == 3


def test_load_lines_boundary_is_a_newline_when_dots_are_data(tmp_path):
    data, tok = load_lines(_write(tmp_path, "a.b\ncd\n" * 10))
    assert tok.decode([0]) == "\n" and tok.decode(data.sequences("train")[0]) in ("a.b", "cd")


@pytest.mark.parametrize(
    "content, match",
    [
        ("", "no examples"),
        ("\n  \n\n", "no examples"),
        ("ann\nbob\n\ncid\n", r"line 3 is blank"),
        ("ann\nbob\n   \ncid\n", r"line 3 is blank"),
        (b"ann\nb\xffb\n", r"not UTF-8.*line 2"),
        ("ann\nbob\n", "too few"),
    ],
)
def test_load_lines_errors_name_the_problem(tmp_path, content, match):
    with pytest.raises(RedthreadError, match=match):
        load_lines(_write(tmp_path, content))


def test_load_lines_missing_file(tmp_path):
    with pytest.raises(RedthreadError, match="no such file"):
        load_lines(tmp_path / "absent.txt")


def _makemore_create_datasets(words: list[str], seed: int = 3407) -> tuple[list[str], list[str]]:
    """makemore.py's split, call for call: `torch.manual_seed(args.seed)` in main, nothing else drawing
    from the generator, then create_datasets' size, `torch.randperm` and last-n_test slice."""
    with torch.random.fork_rng(devices=[]):  # leave the test session's global RNG as it was
        torch.manual_seed(seed)
        test_set_size = min(1000, int(len(words) * 0.1))
        rp = torch.randperm(len(words)).tolist()
        return [words[i] for i in rp[:-test_set_size]], [words[i] for i in rp[-test_set_size:]]


def _word(i: int) -> str:
    """A distinct lowercase word per integer (base 26, at least two letters)."""
    letters = ""
    while True:
        i, r = divmod(i, 26)
        letters += chr(97 + r)
        if i == 0 and len(letters) >= 2:
            return letters


def _splits(data: SequenceData, tok) -> tuple[list[str], list[str]]:
    return tuple([tok.decode(s.tolist()) for s in data.sequences(split)] for split in ("train", "val"))


@pytest.mark.parametrize("n, seed", [(57, 3407), (250, 7), (12_345, 3407)])  # 12,345: the 1,000 cap applies
def test_load_lines_holds_out_makemores_test_split(tmp_path, n, seed):
    words = [_word(i) for i in range(n)]
    train, test = _makemore_create_datasets(words, seed)
    data, tok = load_lines(_write(tmp_path, "\n".join(words) + "\n"), seed=seed)
    assert _splits(data, tok) == (train, test)  # the same names, in the same order
    assert makemore_split(words, len(test), seed) == (train, test)
    assert len(test) == min(1000, n // 10)


@pytest.mark.skipif(not NAMES.is_file(), reason="names.txt is not present")
def test_load_lines_names_matches_makemore_split():
    data, tok = load_lines(NAMES)
    words = [w.strip() for w in NAMES.read_text().splitlines() if w.strip()]  # makemore's reading of the file
    assert _splits(data, tok) == _makemore_create_datasets(words)
    # 32,033 names: the last line has no newline, so `wc -l` counts 32,032; makemore also splits 31,033 / 1,000
    assert (data.n_sequences("train"), data.n_sequences("val")) == (31_033, 1_000)
    assert tok.vocab_size == data.vocab_size == 27 and tok.decode(range(27)) == ".abcdefghijklmnopqrstuvwxyz"
    assert data.block_size == 16  # the longest name has 15 letters
