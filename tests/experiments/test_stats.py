"""Verdicts with uncertainty: the 95% t-interval, the three outcomes, parts, and the report's schema."""

from __future__ import annotations

import json
import math

import pytest
import scipy.stats

from redthread.experiments import criteria
from redthread.experiments.criteria import Criterion
from redthread.experiments.report import Report
from redthread.experiments.stats import (
    ABOVE,
    BELOW,
    FAILS,
    HOLDS,
    INCONCLUSIVE,
    VERDICTS,
    estimate,
    t_quantile,
    verdict,
)


@pytest.mark.parametrize("df", [1, 2, 4, 9, 29, 30])
def test_the_t_quantiles_are_students(df):
    assert t_quantile(df) == pytest.approx(scipy.stats.t.ppf(0.975, df), abs=1e-3)


def test_the_interval_is_scipys_t_interval():
    values = [0.31, 0.27, 0.35, 0.22, 0.30]
    est = estimate(values)
    lo, hi = scipy.stats.t.interval(0.95, len(values) - 1, loc=sum(values) / 5, scale=scipy.stats.sem(values))
    assert (est.lo, est.hi) == (pytest.approx(lo, rel=1e-3), pytest.approx(hi, rel=1e-3)) and est.n == 5
    assert estimate(0.7).interval is None  # an exact quantity
    one = estimate([0.9])  # one seed: nothing can be decided on it
    assert verdict(one, 0.5, ABOVE) == INCONCLUSIVE and math.isinf(one.lo)


@pytest.mark.parametrize("values, threshold, direction, expected", [
    ([1.0, 1.1, 0.9, 1.05, 0.95], 0.5, ABOVE, HOLDS),
    ([1.0, 1.1, 0.9, 1.05, 0.95], 1.5, ABOVE, FAILS),
    ([1.0, 1.1, 0.9, 1.05, 0.95], 1.0, ABOVE, INCONCLUSIVE),
    ([1.0, 1.1, 0.9, 1.05, 0.95], 1.5, BELOW, HOLDS),
    ([1.0, 1.1, 0.9, 1.05, 0.95], 0.5, BELOW, FAILS),
    ([0.0, 2.0], 0.5, ABOVE, INCONCLUSIVE),  # two seeds far apart: t(0.975, 1) = 12.7 leaves it open
    (0.6, 0.5, ABOVE, HOLDS), (0.4, 0.5, ABOVE, FAILS), (0.5, 0.5, ABOVE, FAILS),  # exact: no interval
])
def test_three_outcomes(values, threshold, direction, expected):
    assert verdict(estimate(values), threshold, direction) == expected


@pytest.fixture
def toy_criteria(monkeypatch):
    monkeypatch.setitem(criteria.CRITERIA, "toy", {
        "gap": Criterion("C11", "residuals", "NLL gap, nats", 0.1, ABOVE, "a tenth of a nat: above the seed noise"),
        "cost": Criterion("C11", "LayerNorm", "NLL cost, nats", 0.0, ABOVE, "any cost"),
    })


def test_a_report_gives_each_part_its_verdict_and_hides_none(toy_criteria, tmp_path):
    r = Report("toy", "C11")
    assert r.check("gap", [0.5, 0.6, 0.55, 0.52, 0.58], seeds=[0, 1, 2, 3, 4]) == HOLDS
    assert r.check("cost", [0.05, -0.04, 0.01, 0.0, -0.02], seeds=[0, 1, 2, 3, 4]) == INCONCLUSIVE
    assert r.parts == {"residuals": HOLDS, "LayerNorm": INCONCLUSIVE} and r.verdict == INCONCLUSIVE
    r.write(tmp_path)
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["verdict"] == INCONCLUSIVE and report["parts"] == {"residuals": HOLDS, "LayerNorm": INCONCLUSIVE}
    gap = report["checks"][0]
    assert {k: gap[k] for k in ("name", "claim", "threshold", "direction", "seeds")} == {
        "name": "gap", "claim": "C11", "threshold": 0.1, "direction": "above", "seeds": [0, 1, 2, 3, 4]}
    assert gap["interval"][0] < gap["value"] < gap["interval"][1] and gap["verdict"] in VERDICTS
    md = (tmp_path / "report.md").read_text()
    assert "By part: residuals: holds; LayerNorm: inconclusive" in md and "a tenth of a nat" in md


def test_a_failing_part_fails_the_claim(toy_criteria):
    r = Report("toy", "C11")
    r.check("gap", [0.0, 0.01, -0.01], seeds=[0, 1, 2])
    r.check("cost", [1.0, 1.1, 0.9], seeds=[0, 1, 2])
    assert r.parts["residuals"] == FAILS and r.verdict == FAILS


def test_an_unknown_criterion_or_a_seed_mismatch_is_refused(toy_criteria):
    r = Report("toy", "C11")
    with pytest.raises(ValueError, match="no criterion 'nope'"):
        r.check("nope", [1.0, 2.0], [0, 1])
    with pytest.raises(ValueError, match="3 values for 2 seeds"):
        r.check("gap", [1.0, 2.0, 3.0], [0, 1])
