"""Interpolated Kneser–Ney: a distribution at every position, equal to the textbook formula computed by hand."""

from collections import Counter, defaultdict

import numpy as np
import pytest
import torch

from redthread.data import text_path
from redthread.errors import InvalidValue
from redthread.models.kneser_ney import KneserNeyConfig, KneserNeyLM
from redthread.models.ngram import NGramConfig, NGramLM


def reference_kn(stream: list[int], V: int, n: int):
    """The formula of models/kneser_ney.py written with dictionaries, one probability at a time."""
    counts = [Counter() for _ in range(n + 1)]  # counts[j][tuple of j tokens]
    for j in range(1, n + 1):
        for i in range(j - 1, len(stream)):
            counts[j][tuple(stream[i - j + 1 : i + 1])] += 1
    a = [None] * (n + 1)
    a[n] = dict(counts[n])
    for j in range(1, n):  # continuation counts: distinct tokens before the j-gram
        left = defaultdict(set)
        for g in counts[j + 1]:
            left[g[1:]].add(g[0])
        a[j] = {g: len(s) for g, s in left.items()}
    D, total, types = {}, {}, {}
    for j in range(1, n + 1):
        values = list(a[j].values())
        n1, n2 = values.count(1), values.count(2)
        D[j] = n1 / (n1 + 2 * n2) if n1 and n2 else 0.5
        total[j], types[j] = Counter(), Counter()
        for g, c in a[j].items():
            total[j][g[:-1]] += c
            types[j][g[:-1]] += 1

    def prob(history: tuple, w: int, j: int) -> float:
        if j == 0:
            return 1.0 / V
        lower = prob(history[1:] if j > 1 else (), w, j - 1)
        h = history[len(history) - (j - 1) :] if j > 1 else ()
        if total[j][h] == 0:
            return lower
        return max(a[j].get(h + (w,), 0) - D[j], 0) / total[j][h] + D[j] * types[j][h] / total[j][h] * lower

    return prob


def test_equals_the_formula_computed_by_hand():
    rng = np.random.default_rng(0)
    V, n = 5, 3
    stream = rng.choice(V, size=400, p=[0.4, 0.3, 0.15, 0.1, 0.05]).tolist()
    model = KneserNeyLM(KneserNeyConfig(vocab_size=V, order=n)).fit_stream(stream)
    prob = reference_kn(stream, V, n)
    idx = torch.tensor([[0, 1, 2, 4, 4, 3, 0]])
    got = model(idx)[0].double().exp()
    for t in range(idx.size(1)):
        history = tuple(idx[0, : t + 1].tolist())
        j = min(n, t + 2)
        for w in range(V):
            assert got[t, w].item() == pytest.approx(prob(history[-(j - 1) :] if j > 1 else (), w, j), rel=1e-6)


def test_a_distribution_at_every_position_and_unseen_contexts_back_off():
    text = text_path("tinyshakespeare").read_text()[:20_000]
    chars = sorted(set(text))
    stream = [chars.index(c) for c in text]
    model = KneserNeyLM(KneserNeyConfig(vocab_size=len(chars) + 3, order=4)).fit_stream(stream)
    idx = torch.tensor([stream[:50], [len(chars) + 2] * 3 + stream[3:50]])  # the second starts with a never-seen token
    logp = model(idx)
    assert torch.allclose(logp.logsumexp(-1), torch.zeros(2, 50), atol=1e-5)
    assert (logp > -30).all()  # no token has probability zero


def test_longer_contexts_help_on_real_text_and_beat_add_k():
    text = text_path("tinyshakespeare").read_text()[:300_000]
    chars = sorted(set(text))
    ids = np.array([chars.index(c) for c in text])
    train, val = ids[:270_000], torch.as_tensor(ids[270_000:])
    nll = {}
    for n in (1, 2, 4):
        model = KneserNeyLM(KneserNeyConfig(vocab_size=len(chars), order=n)).fit_stream(train)
        nll[n] = model.nll(val[None, :-1], val[None, 1:]).item()
    add_k = NGramLM(NGramConfig(vocab_size=len(chars), order=4, k=0.1)).fit_stream(train)
    assert nll[4] < nll[2] < nll[1]
    assert nll[4] < add_k.nll(val[None, :-1], val[None, 1:]).item()


def test_counting_in_batches_and_a_saved_model_give_the_same_numbers(tmp_path):
    rng = np.random.default_rng(1)
    stream = torch.as_tensor(rng.integers(0, 7, size=(6, 33)))
    whole = KneserNeyLM(KneserNeyConfig(vocab_size=7, order=3))
    whole.count(stream[:, :-1], stream[:, 1:])
    parts = KneserNeyLM(KneserNeyConfig(vocab_size=7, order=3))
    for k in range(3):
        parts.count(stream[2 * k : 2 * k + 2, :-1], stream[2 * k : 2 * k + 2, 1:])
    idx = stream[:2, :-1]
    assert torch.equal(whole(idx), parts(idx))
    torch.save(parts.state_dict(), tmp_path / "kn.pt")
    loaded = KneserNeyLM(KneserNeyConfig(vocab_size=7, order=3))
    loaded.load_state_dict(torch.load(tmp_path / "kn.pt"))
    assert torch.equal(loaded(idx), whole(idx))
    assert loaded.num_params() == whole.num_params() > 0


def test_an_order_too_long_for_a_key_is_refused():
    with pytest.raises(InvalidValue, match="order 4 or lower"):
        KneserNeyConfig(vocab_size=16384, order=5)
