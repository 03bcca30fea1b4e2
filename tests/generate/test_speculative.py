"""Speculative sampling (generate/speculative.py): its output has the target's distribution whatever the draft,
tested by total variation against the exact distribution enumerated from the target; the test fails a sampler
that keeps every draft; greedy decoding gives the target's greedy tokens; caches equal recomputation."""

from __future__ import annotations

import math
from collections import Counter

import pytest
import torch

import redthread as rt
from redthread.errors import InvalidType, InvalidValue
from redthread.generate import speculative
from redthread.generate.sampler import window_start
from redthread.generate.speculative import (
    Round,
    accept_or_resample,
    probabilities,
    speculative_generate,
    speculative_rounds,
    tokens_read,
)

DELTA = 1e-6  # the chance that a correct sampler fails a TV test below


# -- the models -------------------------------------------------------------------------------------------


def spread_target(block_size: int = 8, vocab_size: int = 3, seed: int = 0) -> rt.TransformerLM:
    """A 1-layer Transformer with its matrices scaled by 8: next-token distributions far from uniform
    and different for each context (at init they are all near uniform)."""
    torch.manual_seed(seed)
    cfg = rt.TransformerConfig(vocab_size=vocab_size, block_size=block_size, n_layer=1, n_head=2, d_model=16)
    model = rt.TransformerLM(cfg)
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() > 1:
                p.mul_(8)
    return model.eval()


def contrary_bigram(block_size: int = 8) -> rt.BigramLM:
    """A bigram over 3 tokens that disagrees with spread_target: after [0, 1] it proposes token 2 with
    probability 0.84 where the target gives it 0.38, and token 1 with 0.04 where the target gives 0.48."""
    model = rt.BigramLM(rt.BigramConfig(vocab_size=3, block_size=block_size))
    with torch.no_grad():
        model.logits.weight.copy_(torch.tensor([[2.0, 0.0, -1.0], [0.0, -1.0, 2.0], [-1.0, 2.0, 0.0]]))
    return model


def drafts(vocab_size: int, block_size: int) -> dict[str, torch.nn.Module]:
    """One draft of each rung, random init (the n-gram counted on a random stream)."""
    torch.manual_seed(1)
    V, W = vocab_size, block_size
    bigram = rt.BigramLM(rt.BigramConfig(vocab_size=V, block_size=W))
    torch.nn.init.normal_(bigram.logits.weight)
    ngram = rt.NGramLM(rt.NGramConfig(vocab_size=V, block_size=W, order=3)).fit_stream(torch.randint(V, (500,)))
    return {
        "bigram": bigram,
        "ngram": ngram,
        "mlp": rt.MLPLM(rt.MLPConfig(vocab_size=V, block_size=W, context=3, d_embed=8, d_hidden=16)),
        "lstm": rt.RecurrentLM(rt.RecurrentConfig(vocab_size=V, block_size=W, cell="lstm", d_embed=8, d_hidden=16)),
        "gru": rt.RecurrentLM(rt.RecurrentConfig(vocab_size=V, block_size=W // 2, cell="gru", d_embed=8, d_hidden=16)),
        "transformer": rt.TransformerLM(rt.TransformerConfig(vocab_size=V, block_size=W - 3, n_layer=1, n_head=1,
                                                             d_model=8)),
    }


# -- exact distributions and the total-variation test -------------------------------------------------------


def exact_distribution(model, prompt: list[int], new: int, sampling: rt.SampleConfig) -> dict[tuple, float]:
    """P(the first `new` tokens) of generate(model, prompt, sampling), by enumerating every continuation:
    each step the model reads generate's window (window_start) and the processors see the whole sequence."""
    W = model.block_size
    dist = {(): (1.0, max(0, len(prompt) - W))}  # continuation -> (probability, window start)
    for _ in range(new):
        grown = {}
        for tail, (prob, start) in dist.items():
            seq = prompt + list(tail)
            start = window_start(len(seq), start, W)
            with torch.no_grad():
                logits = model(torch.tensor([seq[start:]]))[:, -1].float()  # (1, V)
            probs = sampling.probabilities(logits, torch.tensor([seq]))[0].tolist()
            grown.update({tail + (x,): (prob * px, start) for x, px in enumerate(probs) if px > 0})
        dist = grown
    return {tail: prob for tail, (prob, _) in dist.items()}


def total_variation(counts: Counter, exact: dict[tuple, float]) -> float:
    n = sum(counts.values())
    return 0.5 * sum(abs(counts.get(x, 0) / n - exact.get(x, 0.0)) for x in set(counts) | set(exact))


def tv_bound(exact: dict[tuple, float], n: int, delta: float = DELTA) -> float:
    """What n draws from `exact` exceed in total variation with probability < delta.

    E[TV] <= 1/2 sum_x E|count_x / n - p_x| <= 1/2 sum_x sqrt(p_x (1 - p_x) / n) (Jensen, outcome by
    outcome); one draw moves TV by at most 1/n, so McDiarmid's inequality adds sqrt(ln(1/delta) / (2n))."""
    mean = 0.5 * sum(math.sqrt(p * (1 - p) / n) for p in exact.values())
    return mean + math.sqrt(math.log(1 / delta) / (2 * n))


def speculative_draws(target, draft, prompt, new: int, n: int, seed: int = 0, **settings) -> Counter:
    """n continuations, one speculative_generate call each, on one stream of torch's global generator."""
    counts: Counter = Counter()
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        for _ in range(n):
            out = speculative_generate(target, draft, torch.tensor(prompt), new, **settings)
            counts[tuple(out[0, len(prompt):].tolist())] += 1
    return counts


def generate_draws(model, prompt, new: int, n: int, seed: int = 0, **settings) -> Counter:
    out = rt.generate(model, torch.tensor([prompt]), new, num_samples=n, seed=seed, **settings)
    return Counter(tuple(row) for row in out[:, len(prompt):].tolist())


PROMPT, NEW = [0, 1], 3  # 3 new tokens over 3 symbols: 27 outcomes; k = 4 drafts 2 in the first round, then a bonus


def test_speculative_sampling_has_the_target_distribution_by_total_variation():
    target, draft = spread_target(), contrary_bigram()
    exact = exact_distribution(target, PROMPT, NEW, rt.SampleConfig())
    n = 3000
    tv = total_variation(speculative_draws(target, draft, PROMPT, NEW, n, k=4), exact)
    # 3000 draws: below 0.090 unless a 1-in-a-million event; the draft alone is 0.69 away
    assert tv < tv_bound(exact, n), (tv, tv_bound(exact, n))


def test_the_total_variation_test_fails_a_sampler_that_keeps_every_draft(monkeypatch):
    target, draft = spread_target(), contrary_bigram()
    exact = exact_distribution(target, PROMPT, NEW, rt.SampleConfig())

    def keep_all(p, q, drafted, generator=None):  # no rejection: tokens from q, then a bonus token from p
        return drafted.numel(), torch.multinomial(p[-1], 1, generator=generator)

    monkeypatch.setattr(speculative, "accept_or_resample", keep_all)
    n = 1000
    tv = total_variation(speculative_draws(target, draft, PROMPT, NEW, n, k=4), exact)
    assert tv > tv_bound(exact, n) + 0.2, (tv, tv_bound(exact, n))  # 0.17 is the bound; q then p is ~0.6 away


def test_plain_generate_passes_the_same_total_variation_test():
    """The enumeration and the bound hold for the sampler they describe: generate itself, 20000 draws at once."""
    target = spread_target()
    exact = exact_distribution(target, PROMPT, NEW, rt.SampleConfig())
    assert abs(sum(exact.values()) - 1) < 1e-5 and len(exact) == 27
    n = 20000
    assert total_variation(generate_draws(target, PROMPT, NEW, n), exact) < tv_bound(exact, n)


def test_accept_or_resample_draws_from_p_and_accepts_with_probability_sum_of_min():
    """The rule alone, one drafted position: the token it leaves has law p, for a q missing a token of p and
    a p missing a token of q; the draft is kept with probability sum_x min(p(x), q(x))."""
    p = torch.tensor([0.5, 0.3, 0.15, 0.05, 0.0])
    q = torch.tensor([0.0, 0.1, 0.2, 0.3, 0.4])
    bonus = torch.tensor([0.2, 0.2, 0.2, 0.2, 0.2])
    g = torch.Generator().manual_seed(0)
    n = 10000
    counts, kept = Counter(), 0
    for _ in range(n):
        x = torch.multinomial(q, 1, generator=g)  # (1,)
        accepted, token = accept_or_resample(torch.stack([p, bonus]), q[None], x, g)
        counts[(x if accepted else token).item(),] += 1
        kept += accepted
    exact = {(i,): v for i, v in enumerate(p.tolist()) if v > 0}
    assert total_variation(counts, exact) < tv_bound(exact, n)
    hoeffding = math.sqrt(math.log(2 / DELTA) / (2 * n))
    assert abs(kept / n - torch.minimum(p, q).sum().item()) < hoeffding  # 0.35


def test_a_round_with_every_draft_kept_adds_a_bonus_token_from_p():
    p = torch.tensor([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    q = torch.tensor([[0.0, 1.0, 0.0]])
    assert accept_or_resample(p, q, torch.tensor([1])) == (1, torch.tensor([2]))
    assert accept_or_resample(p[1:], q[:0], torch.tensor([], dtype=torch.long)) == (0, torch.tensor([2]))  # K = 0


# -- greedy, caches, seeds ----------------------------------------------------------------------------------


V, W = 11, 12  # the rungs' tests: 30 new tokens after a prompt of 3 slide a window of 12 (and the drafts' smaller ones)


@pytest.mark.parametrize("name", ["bigram", "ngram", "mlp", "lstm", "gru", "transformer", "itself"])
@pytest.mark.parametrize("k", [1, 3, 6])
def test_greedy_speculative_decoding_gives_the_targets_greedy_tokens(name, k):
    target = spread_target(block_size=W, vocab_size=V)
    draft = target if name == "itself" else drafts(V, W)[name]
    prompt = torch.tensor([[3, 1, 4]])
    expected = rt.generate(target, prompt, 30, temperature=0)
    assert torch.equal(speculative_generate(target, draft, prompt, 30, k=k, temperature=0), expected)
    assert torch.equal(speculative_generate(target, draft, prompt, 30, k=k, temperature=0, repetition_penalty=1.3),
                       rt.generate(target, prompt, 30, temperature=0, repetition_penalty=1.3))


@pytest.mark.parametrize("target_name, name", [("transformer", "lstm"), ("transformer", "transformer"),
                                               ("transformer", "bigram"), ("lstm", "transformer"), ("lstm", "gru")])
def test_the_caches_rewound_after_rejections_equal_recomputation(target_name, name):
    """With the same seed, the same draws: the KV cache truncated and the recurrent state restored after each
    rejection give the logits of recomputing the window, so the tokens agree to the last one."""
    if target_name == "lstm":
        torch.manual_seed(2)
        target = rt.RecurrentLM(rt.RecurrentConfig(vocab_size=V, block_size=W, cell="lstm", d_embed=8, d_hidden=16))
    else:
        target = spread_target(block_size=W, vocab_size=V)
    draft = drafts(V, W)[name]
    rounds: list[Round] = []
    cached = speculative_generate(target, draft, torch.tensor([5, 2]), 40, k=3, seed=7, on_round=rounds.append)
    assert any(r.accepted < r.drafted for r in rounds) and any(r.accepted > 0 for r in rounds)  # both happen
    assert torch.equal(cached, speculative_generate(target, draft, torch.tensor([5, 2]), 40, k=3, seed=7,
                                                    use_cache=False))


@pytest.mark.parametrize("target_name", ["transformer", "gru"])
def test_a_draft_equal_to_the_target_is_always_kept(target_name):
    if target_name == "gru":
        torch.manual_seed(3)
        target = rt.RecurrentLM(rt.RecurrentConfig(vocab_size=V, block_size=W, cell="gru", d_embed=8, d_hidden=16))
    else:
        target = spread_target(block_size=W, vocab_size=V)
    rounds: list[Round] = []
    speculative_generate(target, target, torch.tensor([1]), 40, k=4, seed=0, on_round=rounds.append)
    assert all(r.accepted == r.drafted for r in rounds) and sum(r.drafted for r in rounds) > 20


def test_rounds_account_for_every_token():
    target, draft = spread_target(block_size=W, vocab_size=V), drafts(V, W)["mlp"]
    rounds = list(speculative_rounds(target, draft, torch.tensor([1, 2]), 25, k=5, seed=0))
    assert sum(r.tokens.size(1) for r in rounds) == 25
    assert all(0 <= r.accepted <= r.drafted <= 5 and r.tokens.size(1) == r.accepted + 1 for r in rounds)
    out = speculative_generate(target, draft, torch.tensor([1, 2]), 25, k=5, seed=0)
    assert torch.equal(out[:, 2:], torch.cat([r.tokens for r in rounds], dim=1))
    assert speculative_generate(target, draft, torch.tensor([1, 2]), 0).tolist() == [[1, 2]]


def test_seeded_draws_are_reproducible():
    target, draft = spread_target(block_size=W, vocab_size=V), drafts(V, W)["lstm"]
    settings = dict(k=3, temperature=0.9, top_k=6, top_p=0.95, min_p=0.01)
    first = speculative_generate(target, draft, torch.tensor([1]), 30, seed=11, **settings)
    assert torch.equal(first, speculative_generate(target, draft, torch.tensor([1]), 30, seed=11, **settings))
    assert not torch.equal(first, speculative_generate(target, draft, torch.tensor([1]), 30, seed=12, **settings))
    sampling = rt.SampleConfig(temperature=0.9, top_k=6, top_p=0.95, min_p=0.01, seed=11)
    assert torch.equal(first, speculative_generate(target, draft, torch.tensor([1]), 30, k=3, sampling=sampling))


def test_models_are_left_in_the_mode_they_were_in():
    target, draft = spread_target(block_size=W, vocab_size=V), drafts(V, W)["lstm"]
    target.train(), draft.eval()
    speculative_generate(target, draft, torch.tensor([1]), 5, seed=0)
    assert target.training and not draft.training
    target.eval(), draft.train()
    speculative_generate(target, draft, torch.tensor([1]), 5, seed=0)
    assert not target.training and draft.training


# -- the pieces ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["bigram", "ngram", "mlp"])
def test_the_rungs_without_a_cache_read_only_their_last_tokens(name):
    model = drafts(V, W)[name]
    seq = torch.randint(V, (1, W), generator=torch.Generator().manual_seed(0))
    r = tokens_read(model)
    assert r < W
    torch.testing.assert_close(model(seq[:, -r:])[:, -1], model(seq)[:, -1], rtol=0, atol=1e-6)


def test_each_row_of_probabilities_sees_its_own_prefix():
    """The target's K + 1 rows are processed as generate processes each: the repetition penalty reads the
    tokens before that row's position only."""
    seq = torch.tensor([[0, 1, 2, 3, 4]])
    logits = torch.randn(3, 6, generator=torch.Generator().manual_seed(0))
    sampling = rt.SampleConfig(repetition_penalty=2.0, temperature=0.7, top_k=4)
    processors, greedy = sampling.build_processors()
    rows = probabilities(logits, seq, processors, greedy)
    for j in range(3):
        torch.testing.assert_close(rows[j], sampling.probabilities(logits[j : j + 1], seq[:, : 3 + j])[0])


@pytest.mark.parametrize("call, error, message", [
    (lambda t, d, p: speculative_generate(t, d, p, 5, k=0), InvalidValue, "k must be a positive integer, got 0"),
    (lambda t, d, p: speculative_generate(t, d, p, 5, k=2.5), InvalidType, "k must be a positive integer, got 2.5"),
    (lambda t, d, p: speculative_generate(t, rt.BigramLM(rt.BigramConfig(vocab_size=4)), p, 5), InvalidValue,
     "the draft's vocabulary (4 tokens) is not the target's (11)"),
    (lambda t, d, p: speculative_generate(t, d, p.repeat(2, 1), 5), InvalidValue, "one prompt at a time (batch 1), got 2"),
    (lambda t, d, p: speculative_generate(t, d, p[:, :0], 5), InvalidValue, "at least one token"),
    (lambda t, d, p: speculative_generate(t, d, p + 20, 5), InvalidValue, "must be in [0, 11)"),
    (lambda t, d, p: speculative_generate(t, d, p, -1), InvalidValue, "max_new_tokens must be an integer >= 0"),
    (lambda t, d, p: speculative_generate(t, d, p, 5, top_p=0.5, sampling=rt.SampleConfig()), InvalidValue,
     "top_p= and sampling= are both given"),
    (lambda t, d, p: speculative_generate(t, d, p, 5, top_p=0), InvalidValue, "top_p must be in (0, 1]"),
])
def test_bad_arguments_are_refused_in_one_line(call, error, message):
    target, draft = spread_target(block_size=W, vocab_size=V), drafts(V, W)["bigram"]
    with pytest.raises(error) as e:
        call(target, draft, torch.tensor([[1, 2]]))
    assert message in str(e.value) and len(str(e.value).splitlines()) == 1


def test_exported_beside_generate():
    from redthread.generate import speculative_generate as from_package

    assert rt.speculative_generate is from_package is speculative_generate
    assert rt.speculative_rounds is speculative_rounds


# -- many draws, several rungs and settings ---------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("draft_name, block_size, prompt, settings", [
    ("lstm", 8, [0, 1], dict(temperature=0.8, top_k=2)),
    ("transformer", 8, [2], dict(repetition_penalty=1.5, top_p=0.9)),
    ("ngram", 4, [0, 1, 2], dict(min_p=0.2, k=1)),  # the target's window of 4 slides inside the 3 new tokens
])
def test_twenty_thousand_draws_have_the_target_distribution(draft_name, block_size, prompt, settings):
    target = spread_target(block_size=block_size)
    draft = drafts(3, block_size)[draft_name]
    k = settings.pop("k", 3)
    exact = exact_distribution(target, prompt, NEW, rt.SampleConfig(**settings))
    n = 20000
    tv = total_variation(speculative_draws(target, draft, prompt, NEW, n, k=k, **settings), exact)
    assert tv < tv_bound(exact, n), (tv, tv_bound(exact, n))  # about 0.04
