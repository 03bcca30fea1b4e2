"""The recurrent models: each cell and the stacked network against torch's own (float64), causality,
cache = recompute through `generate` (window sliding included), config validation, a tiny overfit."""

import functools

import pytest
import torch
from torch import nn

from redthread.errors import RedthreadError
from redthread.generate.sampler import generate
from redthread.models.likelihoods import token_nll
from redthread.models.recurrent import CELLS, RecurrentConfig, RecurrentLM, RecurrentState

ATOL64 = 1e-12
V, W = 11, 8  # vocab size, block size
KINDS = list(CELLS)
TORCH_CELLS = {"rnn": nn.RNNCell, "lstm": nn.LSTMCell, "gru": nn.GRUCell}
TORCH_LAYERS = {"rnn": nn.RNN, "lstm": nn.LSTM, "gru": nn.GRU}


def tiny_cfg(**overrides) -> RecurrentConfig:
    kw = dict(vocab_size=V, block_size=W, n_layer=2, d_embed=6, d_hidden=10)
    return RecurrentConfig(**{**kw, **overrides})


@functools.cache  # shared, read-only: no test trains or mutates these
def lm(cell: str, seed: int = 0) -> RecurrentLM:
    torch.manual_seed(seed)
    return RecurrentLM(tiny_cfg(cell=cell)).double().eval()


def tokens(shape, seed, vocab=V):
    return torch.randint(0, vocab, shape, generator=torch.Generator().manual_seed(seed))


def copy_weights(ours: nn.Module, ref: nn.Module, suffix: str = "") -> None:
    with torch.no_grad():
        for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
            getattr(ref, name + suffix).copy_(getattr(ours, name))


# --- cells and layers against torch ----------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_cell_matches_torch_cell(kind):
    torch.manual_seed(1)
    ours, ref = CELLS[kind](5, 7).double(), TORCH_CELLS[kind](5, 7).double()
    copy_weights(ours, ref)
    x = torch.randn(6, 4, 5, dtype=torch.float64)  # (B, T, I): run several steps, so the state matters
    state, ref_state = None, None
    for t in range(x.size(1)):
        state = ours(x[:, t], state)
        ref_state = ref(x[:, t], ref_state)
        expected = ref_state if kind == "lstm" else (ref_state,)
        for a, b in zip(state, expected, strict=True):
            torch.testing.assert_close(a, b, atol=ATOL64, rtol=0)


@pytest.mark.parametrize("kind", KINDS)
def test_cell_init_matches_torch_range(kind):
    cell = CELLS[kind](5, 16)
    assert cell.weight_ih.shape == TORCH_CELLS[kind](5, 16).weight_ih.shape
    for p in cell.parameters():
        assert p.abs().max() <= 16**-0.5
        assert p.std() > 0.1 * 16**-0.5


@pytest.mark.parametrize("kind", KINDS)
def test_recurrent_lm_hidden_matches_torch_stack(kind):
    model = lm(kind)
    extra = dict(nonlinearity="tanh") if kind == "rnn" else {}
    ref = TORCH_LAYERS[kind](6, 10, num_layers=2, batch_first=True, **extra).double()
    for k, cell in enumerate(model.cells):
        copy_weights(cell, ref, suffix=f"_l{k}")
    idx = tokens((3, 9), seed=2)
    with torch.no_grad():
        expected, _ = ref(model.tok_emb(idx))  # (B, T, H)
        torch.testing.assert_close(model.hidden(idx), expected, atol=ATOL64, rtol=0)


# --- causality and the cache -----------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("t", [1, 4, 11])
def test_recurrent_lm_future_tokens_do_not_change_past_logits(kind, t):
    model = lm(kind)
    idx = tokens((2, 12), seed=t)
    idx2 = idx.clone()
    idx2[:, t:] = (idx[:, t:] + 1 + tokens(idx[:, t:].shape, seed=t + 1, vocab=V - 1)) % V  # every later token differs
    with torch.no_grad():
        a, b = model(idx), model(idx2)
    torch.testing.assert_close(a[:, :t], b[:, :t], atol=ATOL64, rtol=0)
    assert not torch.allclose(a[:, t:], b[:, t:], atol=1e-6)  # the change is visible where it may be


@pytest.mark.parametrize("kind", KINDS)
def test_recurrent_lm_cache_matches_recompute(kind):
    model = lm(kind)
    chunks = [3, 1, 4, 2, 2]
    idx = tokens((3, sum(chunks)), seed=4)
    with torch.no_grad():
        full = model(idx)
        cache = model.make_cache(3)
        assert isinstance(cache, RecurrentState)
        parts, start = [], 0
        for n in chunks:
            parts.append(model(idx[:, start : start + n], cache=cache))
            start += n
    assert cache.length == sum(chunks)
    torch.testing.assert_close(torch.cat(parts, dim=1), full, atol=ATOL64, rtol=0)


GENERATION_CASES = {
    "greedy": dict(prompt_len=3, temperature=0.0),
    "sampled": dict(prompt_len=3, temperature=1.0, seed=5),
    "long_prompt": dict(prompt_len=W + 3, temperature=1.0, seed=2),  # the prompt alone overflows the window
    "num_samples": dict(prompt_len=2, temperature=1.0, seed=9, num_samples=3),
}


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("case", GENERATION_CASES)
def test_generate_with_cache_matches_without(kind, case):
    kw = dict(GENERATION_CASES[case])
    prompt = tokens((2, kw.pop("prompt_len")), seed=7)
    model, new = lm(kind), 20  # prompt + 20 tokens > block_size 8: the window slides
    cached = generate(model, prompt, new, use_cache=True, **kw)
    uncached = generate(model, prompt, new, use_cache=False, **kw)
    assert cached.shape == (2 * kw.get("num_samples", 1), prompt.size(1) + new)
    assert torch.equal(cached, uncached)


# --- config ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "bad",
    [dict(cell="transformer"), dict(n_layer=0), dict(d_hidden=-1), dict(vocab_size=2.5), dict(dropout=1.0)],
)
def test_recurrent_config_rejects_bad_values(bad):
    with pytest.raises(RedthreadError, match=next(iter(bad))):
        tiny_cfg(**bad)


def test_recurrent_config_round_trips_through_dict():
    cfg = tiny_cfg(cell="gru", dropout=0.1)
    assert RecurrentConfig.from_dict(cfg.to_dict()) == cfg
    with pytest.raises(RedthreadError, match="n_head"):
        RecurrentConfig.from_dict({**cfg.to_dict(), "n_head": 4})


# --- training --------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_recurrent_lm_overfits_a_repeated_sequence(kind):
    """The cycle 0 1 0 2 0 3: what follows a 0 depends on the token before it, so a model that sees
    only the current token cannot go below 0.5 * log 3 = 0.55 nats; the state has to carry the past."""
    torch.manual_seed(0)
    model = RecurrentLM(tiny_cfg(cell=kind, vocab_size=4, block_size=24, n_layer=1, d_embed=8, d_hidden=16))
    cycle = torch.tensor([0, 1, 0, 2, 0, 3])
    data = cycle[(torch.arange(25) + torch.tensor([1, 3, 5])[:, None]) % 6]  # (3, 25): rows start past a 0
    idx, targets = data[:, :-1], data[:, 1:]
    opt = torch.optim.Adam(model.parameters(), lr=3e-2)
    for _ in range(150):
        loss = token_nll(model(idx), targets)
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert loss.item() < 0.02  # from ~log 4 = 1.4 nats


# --- the loop over time: one backward node for the input slices (issue 13, item 7) -----------


def sliced_hidden(model: RecurrentLM, idx: torch.Tensor) -> torch.Tensor:
    """The loop as it was, xp[:, t] at every step: an independent reference for the gradients."""
    x = model.tok_emb(idx)  # (B, T, E)
    for cell in model.cells:
        xp, state, hs = cell.project(x), cell.init_state(idx.size(0), x), []
        for t in range(idx.size(1)):
            state = cell.step(xp[:, t], state)
            hs.append(state[0])
        x = torch.stack(hs, dim=1)  # (B, T, H)
    return x


def graph_nodes(t: torch.Tensor) -> list[str]:
    """The names of every node in t's autograd graph, each node once."""
    seen, stack = set(), [t.grad_fn]
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        stack.extend(n for n, _ in node.next_functions)
    return [type(n).__name__ for n in seen]


@pytest.mark.parametrize("kind", KINDS)
def test_hidden_gradients_match_the_sliced_loop(kind):
    torch.manual_seed(3)
    model = RecurrentLM(tiny_cfg(cell=kind)).double()
    idx = tokens((2, 7), seed=4)
    params = [*model.tok_emb.parameters(), *model.cells.parameters()]  # the head is not in hidden()
    grads = []
    for hidden in (model.hidden, functools.partial(sliced_hidden, model)):
        model.zero_grad(set_to_none=True)
        (hidden(idx) ** 2).sum().backward()
        grads.append([p.grad.clone() for p in params])
    for a, b in zip(*grads, strict=True):
        torch.testing.assert_close(a, b, atol=ATOL64, rtol=0)


@pytest.mark.parametrize("T", [4, 32])
def test_hidden_slices_its_input_once_per_layer_whatever_the_length(T):
    """A slice xp[:, t] back-propagates by writing into a zero tensor of all of xp's size, so T of them
    cost O(T^2); the loop must take its T inputs with one node (unbind) per layer, not T."""
    torch.manual_seed(0)
    model = RecurrentLM(tiny_cfg(cell="rnn"))
    names = graph_nodes(model.hidden(tokens((2, T), seed=5)).sum())
    assert sum("Select" in n or "Slice" in n for n in names) == 0
    assert sum("Unbind" in n for n in names) == model.cfg.n_layer
    assert sum("Select" in n for n in graph_nodes(sliced_hidden(model, tokens((2, T), seed=5)).sum())) == 2 * T
