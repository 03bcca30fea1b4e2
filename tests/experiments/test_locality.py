import math

import numpy as np
import pytest
import torch

from redthread.data.dataset import TokenSplit
from redthread.data.synthetic import MarkovSource
from redthread.experiments.locality import (
    CHECKED,
    NEAR,
    POSITIONS,
    markov_data,
    offset_profile,
    shuffled_split,
    uniform_near_mass,
)


def test_offset_profile_matches_a_loop():
    att = torch.softmax(torch.randn(3, 2, 8, 8).masked_fill(torch.ones(8, 8).triu(1).bool(), -math.inf), -1)
    first = 4
    got = offset_profile(att, first)
    for o in range(first + 1):
        values = [att[b, h, i, i - o].item() for b in range(3) for h in range(2) for i in range(first, 8)]
        assert math.isclose(got[o].item(), sum(values) / len(values), rel_tol=1e-6)


def test_uniform_attention_gives_the_uniform_near_mass():
    T, first, k = 10, 5, 3
    att = torch.tril(torch.ones(T, T))
    att = (att / att.sum(-1, keepdim=True))[None, None]  # (1, 1, T, T): uniform causal attention
    near = offset_profile(att, first)[:k].sum().item()
    assert math.isclose(near, uniform_near_mass(k, first, T), rel_tol=1e-6)
    assert math.isclose(uniform_near_mass(k, first, T), np.mean([k / (i + 1) for i in range(first, T)]))


def test_shuffles_keep_the_tokens_and_lose_the_order():
    split = TokenSplit(np.arange(1000, dtype=np.uint16) % 7, 1000, "train")
    mixed = shuffled_split(split, seed=3)
    assert mixed.n_chars == split.n_chars and mixed.name == split.name
    assert sorted(mixed.tokens.tolist()) == sorted(split.tokens.tolist())
    assert not np.array_equal(mixed.tokens, split.tokens)
    ordered, shuffled = markov_data(MarkovSource(order=2, vocab_size=4, hierarchy=1.0), 50, 10, 12, seed=1)
    xo, _ = next(ordered.eval_batches("val", 10, None))
    xs, _ = next(shuffled.eval_batches("val", 10, None))
    assert torch.equal(xo, xs)  # the same held-out text
    a, b = ordered.sequences("train"), shuffled.sequences("train")
    assert sorted(np.concatenate(a).tolist()) == sorted(np.concatenate(b).tolist())


def test_locality_quick_report_structure(quick_report):
    report, md, data, folder = quick_report("locality")
    checks = {c["name"]: c for c in data["checks"]}
    assert set(checks) == {f"near_{c}_{p}" for c in NEAR for p in CHECKED}
    assert {c["part"] for c in data["checks"]} == {"sinusoidal (the paper)", "learned", "rotary"}
    assert all(len(c["seeds"]) >= 2 and c["floor"] > 0 for c in data["checks"])
    n = data["numbers"]
    for corpus in NEAR:
        assert 0 < n["uniform_near_mass"][corpus] < 1
        for pos in POSITIONS:  # every kind of position, "none" (the control) included
            assert all(0 <= v <= 1 for layers in n[f"near_{corpus}_{pos}"] for v in layers)
        for pos in CHECKED:  # the check's value per seed: near mass minus the no-positions model's
            excess = n[f"excess_{corpus}_{pos}"]
            assert len(excess) == len(n["seeds"]) >= 2
            assert excess == pytest.approx([sum(a) / len(a) - sum(b) / len(b) for a, b in zip(
                n[f"near_{corpus}_{pos}"], n[f"near_{corpus}_none"])], abs=1e-6)
    assert (folder / "profiles.png").exists()
