"""Logits processors against Hugging Face's, plus the invariants generation relies on."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from transformers.generation.logits_process import (
    MinPLogitsWarper,
    RepetitionPenaltyLogitsProcessor,
    TemperatureLogitsWarper,
    TopKLogitsWarper,
    TopPLogitsWarper,
)

from redthread.errors import RedthreadError
from redthread.generate.processors import (
    MinP,
    RepetitionPenalty,
    Temperature,
    TopK,
    TopP,
    build_processors,
    process,
    sample_next,
)

FEW = settings(max_examples=30, deadline=None)


@st.composite
def batches(draw):
    """Random (logits (B, V), idx (B, T)); sometimes logits with many exact ties."""
    seed = draw(st.integers(0, 2**31 - 1))
    B = draw(st.integers(2, 4))
    V = draw(st.integers(50, 1000))
    T = draw(st.integers(1, 40))
    ties = draw(st.booleans())
    g = torch.Generator().manual_seed(seed)
    if ties:  # a handful of distinct values, each repeated many times
        logits = torch.randint(-3, 4, (B, V), generator=g).float() * 0.75
    else:
        logits = torch.randn(B, V, generator=g) * draw(st.sampled_from([0.5, 2.0, 8.0]))
    idx = torch.randint(0, V, (B, T), generator=g)
    return logits, idx


def assert_same_filter(ours, ref):
    """Exactly the same tokens removed; the kept logits equal to 1e-6."""
    assert ours.shape == ref.shape
    assert torch.equal(torch.isneginf(ours), torch.isneginf(ref))
    kept = ~torch.isneginf(ref)
    torch.testing.assert_close(ours[kept], ref[kept], atol=1e-6, rtol=0)


def assert_same_up_to_shift(ours, ref):
    """Exactly the same tokens removed; the kept logits equal to HF's less each row's top (the same softmax)."""
    assert torch.equal(torch.isneginf(ours), torch.isneginf(ref))
    kept = ~torch.isneginf(ref)
    shifted = ref - ref.amax(dim=-1, keepdim=True)
    torch.testing.assert_close(ours[kept], shifted[kept], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(ours.softmax(-1), ref.softmax(-1), atol=1e-6, rtol=1e-5)


@FEW
@given(batches(), st.floats(0.05, 5.0))
def test_temperature_matches_hf(batch, t):
    logits, idx = batch
    assert_same_up_to_shift(Temperature(t)(logits, idx), TemperatureLogitsWarper(t)(idx, logits.clone()))


@pytest.mark.parametrize("t", [1e-308, 5e-324, 1e-45, 1e-30])
def test_a_tiny_temperature_is_greedy_not_nan(t):
    # logits / t overflows to inf and softmax(inf - inf) is NaN; the limit as t -> 0 is the argmax
    g = torch.Generator().manual_seed(4)
    logits, idx = torch.randn(6, 300, generator=g) * 5, torch.zeros(6, 1, dtype=torch.long)
    logits[0, :3] = logits[0].max() + 1  # a three-way tie at the top shares the mass
    probs = Temperature(t)(logits, idx).softmax(-1)
    assert torch.isfinite(probs).all()
    top = logits == logits.amax(dim=-1, keepdim=True)
    torch.testing.assert_close(probs, top.float() / top.sum(-1, keepdim=True))
    processors, greedy = build_processors(temperature=t)
    assert not greedy
    picked = sample_next(logits[1:], idx[1:], processors, greedy, torch.Generator().manual_seed(0))
    assert torch.equal(picked, logits[1:].argmax(dim=-1, keepdim=True))


def test_a_huge_temperature_is_uniform_over_the_kept_tokens():
    logits = torch.tensor([[2.0, -1.0, float("-inf"), 0.5]])
    probs = Temperature(1e308)(logits, torch.zeros(1, 1, dtype=torch.long)).softmax(-1)
    torch.testing.assert_close(probs, torch.tensor([[1 / 3, 1 / 3, 0.0, 1 / 3]]))


@FEW
@given(batches(), st.integers(1, 1200))
def test_topk_matches_hf(batch, k):
    logits, idx = batch
    assert_same_filter(TopK(k)(logits, idx), TopKLogitsWarper(k)(idx, logits.clone()))


@FEW
@given(batches(), st.floats(0.01, 1.0))
def test_topp_matches_hf(batch, p):
    logits, idx = batch
    assert_same_filter(TopP(p)(logits, idx), TopPLogitsWarper(p)(idx, logits.clone()))


@FEW
@given(batches(), st.floats(0.001, 1.0))
def test_minp_matches_hf(batch, p):
    logits, idx = batch
    assert_same_filter(MinP(p)(logits, idx), MinPLogitsWarper(p)(idx, logits.clone()))


@FEW
@given(batches(), st.floats(0.1, 3.0))
def test_repetition_penalty_matches_hf(batch, penalty):
    logits, idx = batch
    ref = RepetitionPenaltyLogitsProcessor(penalty)(idx, logits.clone())
    assert_same_filter(RepetitionPenalty(penalty)(logits, idx), ref)


@pytest.mark.parametrize("penalty", [1e-308, 1e-40, 1e38, 1e308])
def test_an_extreme_repetition_penalty_keeps_a_distribution(penalty):
    """Dividing by 1e-308 (or multiplying by 1e308) overflows to inf, and softmax of inf is NaN: the
    penalised logits stay finite, at the limit the penalty tends to (found by the CLI fuzz)."""
    logits = torch.tensor([[2.0, -1.0, 0.5, -3.0]])
    idx = torch.tensor([[0, 1, 2, 3]])  # every token seen
    out = RepetitionPenalty(penalty)(logits, idx)
    probs = out.softmax(-1)
    assert torch.isfinite(probs).all() and torch.allclose(probs.sum(), torch.tensor(1.0))
    if penalty < 1:  # boosts what was seen: the largest positive logit wins
        assert probs.argmax().item() == 0


def test_processors_leave_inputs_untouched():
    g = torch.Generator().manual_seed(0)
    logits, idx = torch.randn(3, 100, generator=g), torch.randint(0, 100, (3, 7), generator=g)
    logits0, idx0 = logits.clone(), idx.clone()
    for proc in [RepetitionPenalty(1.3), Temperature(0.7), TopK(5), TopP(0.9), MinP(0.1)]:
        proc(logits, idx)
    assert torch.equal(logits, logits0) and torch.equal(idx, idx0)


def test_processors_upcast_half_to_float32():
    logits = torch.randn(2, 64).half()
    idx = torch.zeros(2, 1, dtype=torch.long)
    processors, _ = build_processors(temperature=0.8, top_k=10, top_p=0.9, min_p=0.05)
    assert process(logits, idx, processors).dtype == torch.float32


def test_topk_1_equals_greedy_argmax():
    g = torch.Generator().manual_seed(1)
    logits = torch.randn(8, 500, generator=g)
    idx = torch.zeros(8, 1, dtype=torch.long)
    argmax = logits.argmax(dim=-1, keepdim=True)
    kept = ~torch.isneginf(TopK(1)(logits, idx))
    assert torch.equal(kept.sum(dim=-1), torch.ones(8, dtype=torch.long))
    processors, greedy = build_processors(top_k=1)
    assert not greedy
    for seed in range(5):
        picked = sample_next(logits, idx, processors, greedy, torch.Generator().manual_seed(seed))
        assert torch.equal(picked, argmax)
    processors, greedy = build_processors(temperature=0)
    assert greedy and torch.equal(sample_next(logits, idx, processors, greedy), argmax)


def test_topp_1_keeps_everything():
    g = torch.Generator().manual_seed(2)
    logits = torch.randn(4, 300, generator=g) * 3
    idx = torch.zeros(4, 1, dtype=torch.long)
    assert torch.equal(TopP(1.0)(logits, idx), logits)
    assert build_processors(top_p=1.0) == ([], False)


def test_topp_keeps_smallest_set_reaching_p():
    logits = torch.tensor([[0.4, 0.3, 0.2, 0.1]]).log()
    idx = torch.zeros(1, 1, dtype=torch.long)
    kept = lambda p: (~torch.isneginf(TopP(p)(logits, idx))).nonzero()[:, 1].tolist()  # noqa: E731
    assert kept(0.35) == [0]
    assert kept(0.5) == [0, 1]
    assert kept(0.85) == [0, 1, 2]


def test_topp_stops_when_mass_exactly_reaches_p():
    # probs 0.5, 0.25, 0.25 are exact in float32: the top token alone reaches p = 0.5
    logits = torch.tensor([[0.5, 0.25, 0.25], [0.25, 0.5, 0.25]]).log()
    idx = torch.zeros(2, 1, dtype=torch.long)
    ours = TopP(0.5)(logits, idx)
    assert torch.isneginf(ours).tolist() == [[False, True, True], [True, False, True]]
    assert_same_filter(ours, TopPLogitsWarper(0.5)(idx, logits.clone()))


def test_build_processors_fixed_order():
    processors, greedy = build_processors(
        temperature=0.7, top_k=50, top_p=0.9, min_p=0.05, repetition_penalty=1.2
    )
    assert not greedy
    assert [type(p) for p in processors] == [RepetitionPenalty, Temperature, TopK, TopP, MinP]


def test_build_processors_topk_before_topp():
    # probs 0.4, 0.3, 0.2, 0.1. top-k=2 then top-p=0.5: renormalised 0.57 > 0.5 keeps one token.
    # top-p=0.5 first keeps {0.4, 0.3}, and top-k=2 then keeps both: the order matters.
    logits = torch.tensor([[0.4, 0.3, 0.2, 0.1]]).log()
    idx = torch.zeros(1, 1, dtype=torch.long)
    k_then_p = TopP(0.5)(TopK(2)(logits, idx), idx)
    p_then_k = TopK(2)(TopP(0.5)(logits, idx), idx)
    assert not torch.equal(torch.isneginf(k_then_p), torch.isneginf(p_then_k))
    processors, _ = build_processors(top_k=2, top_p=0.5)
    assert torch.equal(process(logits, idx, processors), k_then_p)
    assert torch.isneginf(k_then_p).tolist() == [[False, True, True, True]]


def test_build_processors_skips_noops_and_greedy_keeps_penalty():
    assert build_processors() == ([], False)
    assert build_processors(temperature=1.0, repetition_penalty=1.0) == ([], False)
    processors, greedy = build_processors(temperature=0, top_k=5, top_p=0.5, repetition_penalty=1.5)
    assert greedy and [type(p) for p in processors] == [RepetitionPenalty]


@pytest.mark.parametrize(
    "kwargs, name, shown",
    [
        ({"top_p": 0}, "top_p", "got 0"),
        ({"top_p": 1.5}, "top_p", "got 1.5"),
        ({"top_p": -0.1}, "top_p", "got -0.1"),
        ({"top_p": "0.9"}, "top_p", "got '0.9'"),
        ({"top_k": 0}, "top_k", "got 0"),
        ({"top_k": -3}, "top_k", "got -3"),
        ({"top_k": 2.5}, "top_k", "got 2.5"),
        ({"top_k": True}, "top_k", "got True"),
        ({"temperature": -1}, "temperature", "got -1"),
        ({"temperature": float("nan")}, "temperature", "got nan"),
        ({"temperature": float("inf")}, "temperature", "got inf"),
        ({"min_p": -0.1}, "min_p", "got -0.1"),
        ({"min_p": 1.5}, "min_p", "got 1.5"),
        ({"repetition_penalty": 0}, "repetition_penalty", "got 0"),
        ({"repetition_penalty": -1.2}, "repetition_penalty", "got -1.2"),
        # validated even when greedy makes the filter irrelevant
        ({"temperature": 0, "top_k": 0}, "top_k", "got 0"),
    ],
)
def test_build_processors_rejects_bad_values(kwargs, name, shown):
    with pytest.raises(RedthreadError) as excinfo:
        build_processors(**kwargs)
    message = str(excinfo.value)
    assert name in message and shown in message and "\n" not in message


@pytest.mark.parametrize(
    "make, bad", [(Temperature, 0), (TopK, 0), (TopP, 0), (MinP, -0.0001), (MinP, 1.0001), (RepetitionPenalty, 0)]
)
def test_processor_init_rejects_bad_values(make, bad):
    with pytest.raises(RedthreadError, match=f"got {bad}"):
        make(bad)


def test_min_p_zero_is_off_as_top_p_one_is():
    # min_p = 0 keeps every token (HF's MinPLogitsWarper takes it too): no processor, like top_p = 1
    logits = torch.randn(3, 10, generator=torch.Generator().manual_seed(0))
    idx = torch.zeros(3, 1, dtype=torch.long)
    assert torch.equal(MinP(0)(logits, idx), logits)
    assert build_processors(min_p=0) == build_processors(top_p=1) == ([], False)


def test_sample_next_reproducible_with_seeded_generator():
    g = torch.Generator().manual_seed(3)
    logits = torch.randn(16, 200, generator=g)
    idx = torch.randint(0, 200, (16, 10), generator=g)
    processors, greedy = build_processors(temperature=1.3, top_k=100, top_p=0.95, repetition_penalty=1.1)
    draw = lambda seed: sample_next(logits, idx, processors, greedy, torch.Generator().manual_seed(seed))  # noqa: E731
    first = draw(123)
    assert first.shape == (16, 1) and first.dtype == torch.long
    assert torch.equal(first, draw(123))
    assert not torch.equal(first, draw(456))
    # every draw is a token the filters kept
    kept = ~torch.isneginf(process(logits, idx, processors))
    assert kept.gather(1, first).all()
