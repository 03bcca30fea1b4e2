import math

import numpy as np
import pytest
import torch

import redthread as rt
from redthread.models.bigram import BigramConfig, BigramLM
from redthread.models.likelihoods import IGNORE_INDEX
from redthread.models.mlp import MLPLM, MLPConfig
from redthread.models.ngram import NGramConfig, NGramLM


def test_ngram_nll_matches_a_hand_computation():
    # stream "a b a b b" over V = 2 (a=0, b=1), bigram, add-k with k = 0.5
    tokens = np.array([0, 1, 0, 1, 1])
    model = NGramLM(NGramConfig(vocab_size=2, order=2, k=0.5)).fit_stream(tokens)
    # pairs: a->b, b->a, a->b, b->b.  P(b|a) = (2 + .5) / (2 + 1), P(a|b) = (1 + .5) / (2 + 1), P(b|b) = same
    p_b_a, p_a_b, p_b_b = 2.5 / 3, 1.5 / 3, 1.5 / 3
    expected = -(math.log(p_b_a) + math.log(p_a_b) + math.log(p_b_a) + math.log(p_b_b)) / 4
    assert model.nll_stream(tokens) == pytest.approx(expected, abs=1e-6)


def test_ngram_unigram_is_the_smoothed_frequency():
    tokens = np.array([2, 2, 1, 2, 0, 2])
    model = NGramLM(NGramConfig(vocab_size=3, order=1, k=1.0)).fit_stream(tokens)
    probs = model.distribution(torch.tensor([[0]])).probs[0, 0]
    counts = np.bincount(tokens[1:], minlength=3) + 1.0  # the first token is never a target
    assert torch.allclose(probs, torch.tensor(counts / counts.sum(), dtype=torch.float32))


def test_ngram_short_context_backs_off_to_a_lower_order():
    tokens = np.random.default_rng(0).integers(0, 4, 500)
    tri = NGramLM(NGramConfig(vocab_size=4, order=3)).fit_stream(tokens)
    bi = NGramLM(NGramConfig(vocab_size=4, order=2)).fit_stream(tokens)
    idx = torch.as_tensor(tokens[:10])[None]
    assert torch.allclose(tri(idx)[:, 0], bi(idx)[:, 0])  # one token of context: the bigram table
    assert not torch.allclose(tri(idx)[:, 5], bi(idx)[:, 5])


def test_ngram_count_skips_ignored_targets():
    model = NGramLM(NGramConfig(vocab_size=3, order=2))
    x = torch.tensor([[0, 1, 2]])
    model.count(x, torch.tensor([[1, IGNORE_INDEX, IGNORE_INDEX]]))
    assert model.counts(2).sum() == 1 and model.counts(2)[0, 1] == 1
    assert model.counts(1).sum() == 1


def test_ngram_rejects_a_table_too_large():
    with pytest.raises(rt.RedthreadError, match="entries"):
        NGramConfig(vocab_size=1024, order=4)


@pytest.mark.parametrize("make", [
    lambda: NGramLM(NGramConfig(vocab_size=5, order=3)).fit_stream(np.random.default_rng(0).integers(0, 5, 200)),
    lambda: BigramLM(BigramConfig(vocab_size=5)),
    lambda: MLPLM(MLPConfig(vocab_size=5, context=3, d_embed=4, d_hidden=8)),
])
def test_fixed_window_rungs_are_causal(make):
    torch.manual_seed(0)
    model = make()
    if isinstance(model, BigramLM):
        torch.nn.init.normal_(model.logits.weight)
    idx = torch.randint(0, 5, (2, 12))
    changed = idx.clone()
    changed[:, 7:] = (changed[:, 7:] + 1) % 5
    with torch.no_grad():
        a, b = model(idx), model(changed)
    assert torch.equal(a[:, :7], b[:, :7])
    assert not torch.equal(a[:, 7:], b[:, 7:])


def test_mlp_sees_only_its_window():
    torch.manual_seed(0)
    model = MLPLM(MLPConfig(vocab_size=5, context=3, d_embed=4, d_hidden=8))
    idx = torch.randint(0, 5, (1, 10))
    changed = idx.clone()
    changed[:, 2] = (changed[:, 2] + 1) % 5
    with torch.no_grad():
        a, b = model(idx), model(changed)
    assert torch.equal(a[:, 5:], b[:, 5:])  # position 5 sees tokens 3, 4, 5 only
    assert not torch.equal(a[:, 2:5], b[:, 2:5])


def test_mlp_parameter_count_matches_the_reference_size():
    # the reference MLP of the names benchmark: context 16, 64-d embeddings, 64 hidden units, 27 tokens: ~69k
    model = MLPLM(MLPConfig(vocab_size=27, context=16, d_embed=64, d_hidden=64))
    assert model.num_params() == 28 * 64 + (16 * 64 + 1) * 64 + (64 + 1) * 27


def test_bigram_trained_by_gradient_descent_approaches_the_counts():
    tokens = torch.as_tensor(np.random.default_rng(1).integers(0, 4, 2000))
    counts = NGramLM(NGramConfig(vocab_size=4, order=2, k=1e-3)).fit_stream(tokens.numpy())
    model = BigramLM(BigramConfig(vocab_size=4))
    opt = torch.optim.Adam(model.parameters(), lr=0.1)
    x, y = tokens[None, :-1], tokens[None, 1:]
    for _ in range(300):
        loss = model.nll(x, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert model.nll(x, y).item() == pytest.approx(counts.nll_stream(tokens.numpy()), abs=1e-3)


@pytest.mark.parametrize("name", ["unigram", "ngram", "bigram", "mlp", "rnn", "lstm", "gru", "transformer"])
def test_every_rung_generates_from_the_registry(name):
    torch.manual_seed(0)
    model = rt.build_model(name, vocab_size=6, block_size=8)
    out = rt.generate(model, torch.zeros(1, 3, dtype=torch.long), max_new_tokens=12, top_p=0.9, seed=0)
    assert out.shape == (1, 15) and out.max() < 6
    again = rt.generate(model, torch.zeros(1, 3, dtype=torch.long), max_new_tokens=12, top_p=0.9, seed=0)
    assert torch.equal(out, again)


def test_build_model_rejects_an_unknown_rung():
    with pytest.raises(rt.RedthreadError, match="unknown model 'lstmm'"):
        rt.build_model("lstmm")


def test_ngram_unseen_context_backs_off_to_the_lower_order():
    tokens = np.array([0, 1, 2, 2, 1, 0, 0, 1, 2])  # context (1, 1) never occurs
    tri = NGramLM(NGramConfig(vocab_size=3, order=3, k=0.5)).fit_stream(tokens)
    bi = NGramLM(NGramConfig(vocab_size=3, order=2, k=0.5)).fit_stream(tokens)
    idx = torch.tensor([[1, 1]])
    assert torch.allclose(tri(idx)[0, 1], bi(idx)[0, 1])  # P(. | 1 1) = P(. | 1)
    seen = torch.tensor([[0, 1]])
    assert not torch.allclose(tri(seen)[0, 1], bi(seen)[0, 1])
