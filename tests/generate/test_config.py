"""SampleConfig: the sampling settings validated once, and the same draws as the keyword arguments."""

from __future__ import annotations

import pytest
import torch

import redthread as rt
from redthread.generate.config import SampleConfig


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    return rt.TransformerLM(rt.TransformerConfig(vocab_size=11, block_size=8, n_layer=1, n_head=2, d_model=16))


@pytest.mark.parametrize("kwargs", [{"top_p": 0}, {"top_k": 0}, {"temperature": -1}, {"min_p": 1.5},
                                    {"repetition_penalty": 0}, {"seed": -1}, {"seed": 2**64}, {"seed": True}])
def test_bad_settings_are_refused_when_made(kwargs):
    with pytest.raises(ValueError):
        SampleConfig(**kwargs)


def test_sampling_config_gives_the_same_draws_as_the_keywords(model):
    idx = torch.tensor([[1, 2, 3]])
    settings = dict(temperature=0.7, top_k=5, top_p=0.9, repetition_penalty=1.2, seed=3)
    by_keywords = rt.generate(model, idx, 12, **settings, num_samples=2)
    by_config = rt.generate(model, idx, 12, sampling=SampleConfig(**settings), num_samples=2)
    assert torch.equal(by_keywords, by_config)


def test_probabilities_follow_the_processors():
    logits = torch.tensor([[2.0, 1.0, 0.0, -1.0]])
    idx = torch.tensor([[0]])
    greedy = SampleConfig(temperature=0).probabilities(logits, idx)
    assert torch.equal(greedy, torch.tensor([[1.0, 0.0, 0.0, 0.0]]))
    top2 = SampleConfig(top_k=2).probabilities(logits, idx)
    assert torch.allclose(top2, torch.tensor([[0.7311, 0.2689, 0.0, 0.0]]), atol=1e-4)
    assert SampleConfig(seed=5).generator().initial_seed() == 5 and SampleConfig().generator() is None


@pytest.mark.parametrize("keywords", [{"temperature": 0.5}, {"top_k": 3}, {"seed": 0}, {"min_p": 0.1}])
def test_keywords_and_a_sampling_config_together_are_refused(model, keywords):
    idx = torch.tensor([[1, 2, 3]])
    with pytest.raises(ValueError) as e:  # one of them would be silently ignored
        rt.generate(model, idx, 4, sampling=SampleConfig(top_p=0.9), **keywords)
    assert f"{next(iter(keywords))}= and sampling= are both given" in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(ValueError, match="both given"):
        rt.generate_stream(model, idx, 4, sampling=SampleConfig(), **keywords)
