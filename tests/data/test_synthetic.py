"""Synthetic sources: exact conditionals checked against brute-force enumeration of tiny sources."""

import itertools
import math

import numpy as np
import pytest

from redthread.data.synthetic import HMMSource, MarkovSource, RecallSource
from redthread.errors import RedthreadError
from redthread.models.likelihoods import IGNORE_INDEX


def _stationary_by_eig(M: np.ndarray) -> np.ndarray:
    """The left eigenvector of a dense stochastic matrix for eigenvalue 1, summing to 1."""
    w, vecs = np.linalg.eig(M.T)
    v = np.real(vecs[:, np.argmin(np.abs(w - 1))])
    return v / v.sum()


def _markov_joint(m: MarkovSource, length: int) -> np.ndarray:
    """P(s_0 .. s_{length-1}) for every sequence, as a (V,) * length array, by the chain rule."""
    V, k = m.vocab_size, m.order
    dense = np.zeros((m.n_states, m.n_states))  # the chain on k-grams, built independently of the source
    for state, v in itertools.product(range(m.n_states), range(V)):
        dense[state, state % (m.n_states // V) * V + v] += m.transition[state, v]
    pi = _stationary_by_eig(dense)
    joint = np.zeros((V,) * length)
    for seq in itertools.product(range(V), repeat=length):
        state = sum(s * V ** (k - 1 - i) for i, s in enumerate(seq[:k]))
        p = pi[state]
        for t in range(k, length):
            p *= m.transition[state, seq[t]]
            state = state % (m.n_states // V) * V + seq[t]
        joint[seq] = p
    return joint


def _hmm_joint(h: HMMSource, length: int) -> np.ndarray:
    """P(s_0 .. s_{length-1}) by summing over every hidden path."""
    pi = _stationary_by_eig(h.transition)
    joint = np.zeros((h.vocab_size,) * length)
    for seq in itertools.product(range(h.vocab_size), repeat=length):
        for z in itertools.product(range(h.n_states), repeat=length):
            p = pi[z[0]] * h.emission[z[0], seq[0]]
            for t in range(1, length):
                p *= h.transition[z[t - 1], z[t]] * h.emission[z[t], seq[t]]
            joint[seq] += p
    return joint


def _conditional_log_probs(joint: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every sequence (N, L) and its log P(s_t | s_<t) (N, L), from the joint by marginalising."""
    L = joint.ndim
    seqs = np.array(list(itertools.product(range(joint.shape[0]), repeat=L)))  # (N, L)
    marginals = [joint.sum(axis=tuple(range(j, L))) for j in range(L + 1)]  # marginals[j]: first j tokens
    log_p = np.stack(
        [np.log(marginals[t + 1][tuple(seqs[:, : t + 1].T)]) - np.log(marginals[t][tuple(seqs[:, :t].T)]) for t in range(L)],
        axis=1,
    )
    return seqs, log_p


@pytest.mark.parametrize("order", [1, 2])
def test_markov_bayes_nll_matches_enumeration(order):
    m = MarkovSource(order=order, vocab_size=3, seed=4)
    seqs, log_p = _conditional_log_probs(_markov_joint(m, 4))
    np.testing.assert_allclose(m.log_probs(seqs), log_p, rtol=0, atol=1e-9)
    assert m.bayes_nll(seqs) == pytest.approx(-log_p.mean(), abs=1e-10)
    assert m.bayes_nll(seqs[:5]) == pytest.approx(-log_p[:5].mean(), abs=1e-10)


@pytest.mark.parametrize("order", [1, 2])
def test_markov_entropy_rate_matches_enumeration(order):
    m = MarkovSource(order=order, vocab_size=3, seed=7)
    L = order + 2  # H(s_n | s_<n) is the entropy rate for every n >= order of a stationary chain
    joints = [_markov_joint(m, n) for n in (L - 1, L)]
    entropies = [-(j * np.log(j)).sum() for j in joints]
    assert m.entropy_rate() == pytest.approx(entropies[1] - entropies[0], abs=1e-10)


def test_markov_stationary_is_stationary():
    m = MarkovSource(order=3, vocab_size=16, seed=0)
    V, S = m.vocab_size, m.n_states
    moved = np.zeros(S)
    np.add.at(moved, (np.arange(S)[:, None] % (S // V) * V + np.arange(V)).ravel(), (m.stationary[:, None] * m.transition).ravel())
    np.testing.assert_allclose(moved, m.stationary, rtol=1e-9, atol=1e-15)
    assert m.stationary.sum() == pytest.approx(1.0)


def test_hmm_bayes_nll_matches_enumeration():
    h = HMMSource(n_states=3, vocab_size=3, seed=2)
    seqs, log_p = _conditional_log_probs(_hmm_joint(h, 4))
    np.testing.assert_allclose(h.log_probs(seqs), log_p, rtol=0, atol=1e-9)
    assert h.bayes_nll(seqs) == pytest.approx(-log_p.mean(), abs=1e-10)
    assert h.entropy_rate() is None  # no closed form for a hidden Markov process


def test_markov_long_sample_nll_is_close_to_entropy_rate():
    m = MarkovSource(order=2, vocab_size=8, seed=1)
    seqs = m.sample(40, 5000, seed=0)  # 200,000 tokens: sampling error about 0.005 nats
    assert m.bayes_nll(seqs) == pytest.approx(m.entropy_rate(), abs=0.02)


def test_recall_long_sample_nll_is_close_to_entropy_rate():
    r = RecallSource(distance=4, p=0.8, vocab_size=8)
    seqs = r.sample(50, 4000, seed=0)
    assert r.bayes_nll(seqs[:, 4:]) > r.bayes_nll(seqs)  # re-scoring a cut treats its first tokens as unpredictable
    assert -r.log_probs(seqs)[:, 4:].mean() == pytest.approx(r.entropy_rate(), abs=0.02)
    assert np.mean(seqs[:, 4:] == seqs[:, :-4]) == pytest.approx(0.8 + 0.2 / 8, abs=0.01)


def test_hmm_sample_has_the_stationary_emission_marginal():
    h = HMMSource(n_states=4, vocab_size=6, seed=3)
    seqs = h.sample(2000, 50, seed=1)
    counts = np.bincount(seqs.ravel(), minlength=6) / seqs.size
    np.testing.assert_allclose(counts, h.stationary @ h.emission, atol=0.01)


def test_recall_bayes_nll_matches_formula_on_hand_example():
    r = RecallSource(distance=2, p=0.9, vocab_size=4)
    seq = np.array([[0, 1, 0, 2, 0]])  # t=2 copies s_0; t=3 does not copy s_1; t=4 copies s_2
    hit, miss = 0.9 + 0.1 / 4, 0.1 / 4
    expected = [math.log(0.25), math.log(0.25), math.log(hit), math.log(miss), math.log(hit)]
    np.testing.assert_allclose(r.log_probs(seq)[0], expected)
    assert r.bayes_nll(seq) == pytest.approx(-sum(expected) / 5)
    assert r.entropy_rate() == pytest.approx(-hit * math.log(hit) - 3 * miss * math.log(miss))


@pytest.mark.parametrize(
    "source", [MarkovSource(order=2, vocab_size=5, seed=0), HMMSource(n_states=3, vocab_size=5, seed=0), RecallSource(3, 0.9, 5)]
)
def test_sample_is_reproducible_and_data_scores_the_sample(source):
    a, b, c = source.sample(20, 12, seed=5), source.sample(20, 12, seed=5), source.sample(20, 12, seed=6)
    assert a.shape == (20, 12) and a.min() >= 0 and a.max() < 5
    assert np.array_equal(a, b) and not np.array_equal(a, c)
    data = source.data(n_train=15, n_val=5, length=12, seed=5)
    assert (data.vocab_size, data.boundary, data.block_size, data.end_token) == (6, 5, 12, False)
    x, y = next(data.eval_batches("val", 100))
    assert np.array_equal(y.numpy(), a[15:]) and (y != IGNORE_INDEX).all()  # every position is scored
    assert (x[:, 0] == 5).all() and np.array_equal(x[:, 1:].numpy(), a[15:, :-1])
    assert source.bayes_nll(data.sequences("val")) == pytest.approx(source.bayes_nll(a[15:]))


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: MarkovSource(order=0), "order"),
        (lambda: MarkovSource(order=6, vocab_size=32), "too large"),
        (lambda: HMMSource(concentration=0), "concentration"),
        (lambda: RecallSource(distance=4, p=1.5), "p <= 1"),
        (lambda: RecallSource().bayes_nll(np.array([[0, 16]])), "0..15"),
        (lambda: RecallSource().sample(0, 5), "n_sequences"),
    ],
)
def test_bad_arguments_raise_one_line_errors(make, match):
    with pytest.raises(RedthreadError, match=match):
        make()


def test_markov_hierarchy_makes_shorter_contexts_informative():
    """Independent rows: the last token alone says almost nothing; a hierarchical table: it says a lot."""
    from redthread.models.ngram import NGramConfig, NGramLM

    def gain(source):  # NLL of unigram counts minus bigram counts, on fresh data
        train, test = source.sample(400, 64, seed=1).ravel(), source.sample(100, 64, seed=2).ravel()
        nll = [NGramLM(NGramConfig(vocab_size=16, order=o, k=0.1)).fit_stream(train).nll_stream(test) for o in (1, 2)]
        return nll[0] - nll[1]

    flat = MarkovSource(order=3, vocab_size=16, seed=0)
    nested = MarkovSource(order=3, vocab_size=16, concentration=2.0, hierarchy=10.0, seed=0)
    assert np.allclose(nested.transition.sum(1), 1.0)
    assert gain(flat) < 0.05 < 0.3 < gain(nested)
