"""Verdicts with uncertainty: the interval maths against scipy and statsmodels, the three outcomes, TOST,
Holm, replication over two seed sets and budgets, parts, and the smoke rule of --quick."""

from __future__ import annotations

import json
import math

import pytest
import scipy.stats
from hypothesis import given, settings
from hypothesis import strategies as st
from statsmodels.stats.multitest import multipletests

from redthread.errors import InvalidValue
from redthread.experiments import criteria
from redthread.experiments.criteria import Criterion
from redthread.experiments.replication import merge
from redthread.experiments.report import Report
from redthread.experiments.stats import (
    ABOVE,
    BELOW,
    FAILS,
    HOLDS,
    INCONCLUSIVE,
    NOT_REPLICATED,
    SMOKE,
    WITHIN,
    across_budgets,
    estimate,
    holm,
    holm_adjusted,
    proportion,
    replicate,
    t_quantile,
    verdict,
)
from tests.experiments.conftest import assert_verdicts_are_computed


@pytest.mark.parametrize("df", [1, 2, 4, 9, 29, 30, 31, 40, 99, 1000])
def test_the_t_quantile_is_students_at_every_df(df):
    assert t_quantile(df) == pytest.approx(scipy.stats.t.ppf(0.975, df), rel=1e-9)


def test_the_interval_is_scipys_t_interval():
    values = [0.31, 0.27, 0.35, 0.22, 0.30]
    est = estimate(values)
    lo, hi = scipy.stats.t.interval(0.95, len(values) - 1, loc=sum(values) / 5, scale=scipy.stats.sem(values))
    assert (est.lo, est.hi) == (pytest.approx(lo, rel=1e-9), pytest.approx(hi, rel=1e-9)) and est.n == 5
    many = [math.sin(i) for i in range(45)]  # beyond 30 degrees of freedom: still Student's t, not the normal
    lo, hi = scipy.stats.t.interval(0.95, 44, loc=sum(many) / 45, scale=scipy.stats.sem(many))
    assert (estimate(many).lo, estimate(many).hi) == (pytest.approx(lo, rel=1e-9), pytest.approx(hi, rel=1e-9))
    assert estimate(0.7).interval is None  # an exact quantity
    one = estimate([0.9])  # one seed: nothing can be decided on it
    assert verdict(one, 0.5, ABOVE) == INCONCLUSIVE and math.isinf(one.lo)


def test_a_bounded_quantity_keeps_its_interval_in_range():
    est = estimate([1.0, 1.0, 1.0, 0.0625, 1.0], bounds=(0.0, 1.0))  # one seed at chance: a t-interval leaves [0, 1]
    assert 0.0 <= est.lo and est.hi == 1.0


@pytest.mark.parametrize("k, n", [(0, 10), (3, 10), (10, 10), (16, 32), (1, 64), (31, 32)])
@pytest.mark.parametrize("method, scipy_method", [("wilson", "wilson"), ("clopper-pearson", "exact")])
def test_proportions_are_scipys(k, n, method, scipy_method):
    est = proportion(k, n, method)
    ref = scipy.stats.binomtest(k, n).proportion_ci(0.95, method=scipy_method)
    assert (est.lo, est.hi) == (pytest.approx(ref.low, abs=1e-9), pytest.approx(ref.high, abs=1e-9))
    assert 0.0 <= est.lo <= est.mean <= est.hi <= 1.0


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 80).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))),
       st.floats(0.02, 0.98), st.sampled_from(["wilson", "clopper-pearson"]))
def test_a_proportions_verdict_agrees_with_its_interval(kn, threshold, method):
    k, n = kn
    est = proportion(k, n, method)
    v = verdict(est, threshold, ABOVE)
    if est.lo > threshold + 1e-9:
        assert v == HOLDS
    if est.hi < threshold - 1e-9:
        assert v == FAILS
    if est.lo < threshold - 1e-9 < threshold + 1e-9 < est.hi:
        assert v == INCONCLUSIVE


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(1e-6, 1.0), min_size=1, max_size=12))
@pytest.mark.slow  # 30 s
def test_holm_is_statsmodels(p_values):
    rejected, adjusted, _, _ = multipletests(p_values, alpha=0.025, method="holm")
    assert holm(p_values) == rejected.tolist()
    assert holm_adjusted(p_values) == pytest.approx(adjusted.tolist(), rel=1e-12)


@pytest.mark.parametrize("values, threshold, direction, expected", [
    ([1.0, 1.1, 0.9, 1.05, 0.95], 0.5, ABOVE, HOLDS),
    ([1.0, 1.1, 0.9, 1.05, 0.95], 1.5, ABOVE, FAILS),
    ([1.0, 1.1, 0.9, 1.05, 0.95], 1.0, ABOVE, INCONCLUSIVE),
    ([1.0, 1.1, 0.9, 1.05, 0.95], 1.5, BELOW, HOLDS),
    ([1.0, 1.1, 0.9, 1.05, 0.95], 0.5, BELOW, FAILS),
    ([0.0, 2.0], 0.5, ABOVE, INCONCLUSIVE),  # two seeds far apart: t(0.975, 1) = 12.7 leaves it open
    ([0.01, -0.01, 0.005, 0.0, -0.004], 0.1, WITHIN, HOLDS),  # TOST: the interval inside ±0.1
    ([0.5, 0.52, 0.49, 0.51, 0.5], 0.1, WITHIN, FAILS),  # wholly outside the band
    ([0.05, 0.15, 0.0, 0.12, 0.08], 0.1, WITHIN, INCONCLUSIVE),
    (0.6, 0.5, ABOVE, HOLDS), (0.4, 0.5, ABOVE, FAILS), (0.5, 0.5, ABOVE, FAILS),  # exact: no interval
])
def test_three_outcomes(values, threshold, direction, expected):
    assert verdict(estimate(values), threshold, direction) == expected


def test_the_verdict_is_where_the_interval_lies():
    """holds exactly when the 95% interval is wholly on the claim's side (a one-sided test at 2.5%)."""
    for values in ([0.2, 0.3, 0.25, 0.28, 0.22], [0.1, -0.1, 0.3, 0.0, 0.2], [-0.3, -0.2, -0.25, -0.4, -0.1]):
        est = estimate(values)
        for t in (-0.5, -0.2, 0.0, 0.1, 0.21, 0.5):
            v = verdict(est, t, ABOVE)
            assert (v == HOLDS) == (est.lo > t) and (v == FAILS) == (est.hi < t)


def test_replication_and_budgets():
    assert replicate(HOLDS, HOLDS) == HOLDS and replicate(FAILS, FAILS) == FAILS
    assert replicate(HOLDS, INCONCLUSIVE) == NOT_REPLICATED and replicate(HOLDS, FAILS) == NOT_REPLICATED
    assert across_budgets([HOLDS, HOLDS, HOLDS]) == HOLDS and across_budgets([HOLDS, FAILS, HOLDS]) == INCONCLUSIVE


def test_a_floor_of_zero_is_only_for_an_identity():
    with pytest.raises(InvalidValue, match="only for an exact identity"):
        Criterion("C1", "", "a gap, nats", 0.0, ABOVE, "any gap")
    with pytest.raises(InvalidValue, match="needs its reason"):
        Criterion("C1", "", "a gap, nats", 0.1, ABOVE, " ")
    assert Criterion("C8", "", "max |error|", 0.0, BELOW, "exact in real arithmetic", identity=True).floor == 0


@pytest.fixture
def toy_criteria(monkeypatch):
    monkeypatch.setitem(criteria.CRITERIA, "toy", {
        "gap": Criterion("C11", "residuals", "NLL gap, nats", 0.1, ABOVE, "a tenth of a nat: above the seed noise"),
        "cost": Criterion("C11", "LayerNorm", "NLL cost, nats", 0.05, ABOVE, "5% of a known gap"),
    })


def test_a_report_gives_each_part_its_verdict_and_hides_none(toy_criteria, tmp_path):
    r = Report("toy", "C11")
    r.check("gap", [0.5, 0.6, 0.55, 0.52, 0.58], seeds=[0, 1, 2, 3, 4])
    r.check("cost", [0.05, -0.04, 0.01, 0.0, 0.09], seeds=[0, 1, 2, 3, 4])
    assert r.parts == {"residuals": HOLDS, "LayerNorm": INCONCLUSIVE} and r.verdict == INCONCLUSIVE
    r.write(tmp_path)
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["verdict"] == INCONCLUSIVE and report["parts"] == {"residuals": HOLDS, "LayerNorm": INCONCLUSIVE}
    gap = report["checks"][0]
    assert {k: gap[k] for k in ("name", "claim", "floor", "direction")} == {
        "name": "gap", "claim": "C11", "floor": 0.1, "direction": "above"}
    assert gap["sets"][0]["seeds"] == [0, 1, 2, 3, 4] and report["history"] == [] and "criteria_commit" in report
    md = (tmp_path / "report.md").read_text()
    assert "By part: residuals: holds; LayerNorm: inconclusive" in md and "a tenth of a nat" in md


def test_a_failing_part_fails_the_claim_after_holm(toy_criteria):
    r = Report("toy", "C11")
    r.check("gap", [0.0, 0.01, -0.01], seeds=[0, 1, 2])
    r.check("cost", [1.0, 1.1, 0.9], seeds=[0, 1, 2])
    assert r.parts["residuals"] == FAILS and r.verdict == FAILS
    # a check that fails alone at 2.5% but not after Holm's correction over two checks stays open
    r = Report("toy", "C11")
    r.check("gap", [0.0, 0.11, 0.03, 0.06, 0.02], seeds=[0, 1, 2, 3, 4])  # p_fails between 0.0125 and 0.025
    r.check("cost", [0.04, 0.1, 0.02, 0.08, 0.06], seeds=[0, 1, 2, 3, 4])
    r.settle()
    p = r.checks[0].sets[0].p_fails
    assert 0.0125 < p <= 0.025, p
    assert r.checks[0].verdict == INCONCLUSIVE and verdict(r.checks[0].sets[0].estimate, 0.1, ABOVE) == FAILS


def test_an_unknown_criterion_or_a_seed_mismatch_is_refused(toy_criteria):
    r = Report("toy", "C11")
    with pytest.raises(ValueError, match="no criterion 'nope'"):
        r.check("nope", [1.0, 2.0], [0, 1])
    with pytest.raises(ValueError, match="3 values for 2 seeds"):
        r.check("gap", [1.0, 2.0, 3.0], [0, 1])


def _run(gap, cost, seed, quick=False):
    r = Report("toy", "C11", quick=quick)
    r.check("gap", gap, [seed + i for i in range(len(gap))])
    r.check("cost", cost, [seed + i for i in range(len(cost))])
    r.settle()
    return r


def test_two_seed_sets_decide_only_where_they_agree(toy_criteria, tmp_path):
    a = _run([0.5, 0.6, 0.55, 0.52, 0.58], [0.3, 0.35, 0.32, 0.31, 0.33], 0)
    b = _run([0.5, 0.6, 0.55, 0.52, 0.58], [0.0, 0.1, 0.05, -0.05, 0.3], 100)  # cost: holds in A, open in B
    merged = merge({(1.0, 0): a, (1.0, 100): b}, (1.0,), [0, 100])
    assert [c.verdict for c in merged.checks] == [HOLDS, NOT_REPLICATED]
    assert merged.parts == {"residuals": HOLDS, "LayerNorm": NOT_REPLICATED} and merged.verdict == NOT_REPLICATED
    merged.write(tmp_path)
    data = json.loads((tmp_path / "report.json").read_text())
    assert_verdicts_are_computed(data)
    assert [m["seeds"][0] for m in data["checks"][1]["sets"]] == [0, 100]


def test_a_comparative_claim_holds_only_at_every_budget(toy_criteria, tmp_path):
    good, weak = [0.5, 0.6, 0.55, 0.52, 0.58], [-0.2, -0.25, -0.3, -0.22, -0.21]
    runs = {(b, s): _run(weak if b == 0.5 else good, good, s) for b in (0.5, 1.0, 2.0) for s in (0, 100)}
    merged = merge(runs, (0.5, 1.0, 2.0), [0, 100])
    gap = merged.checks[0]
    assert gap.budgets["0.5"]["verdict"] == FAILS and gap.budgets["1"]["verdict"] == HOLDS
    assert gap.verdict == INCONCLUSIVE and merged.checks[1].verdict == HOLDS
    merged.write(tmp_path)
    assert_verdicts_are_computed(json.loads((tmp_path / "report.json").read_text()))
    assert "budget ×0.5" in (tmp_path / "report.md").read_text()


def test_a_tuning_pick_on_the_edge_leaves_the_run_open(toy_criteria):
    r = Report("toy", "C11")
    r.check("gap", [0.5, 0.6, 0.55, 0.52, 0.58], [0, 1, 2, 3, 4])
    r.tuning("lr", [1e-3, 3e-3, 1e-2], [2.0, 1.9, 1.8], 1e-2)
    assert r.tunings[0]["edge"] and r.verdict != HOLDS


def test_quick_reports_carry_no_verdict(toy_criteria, tmp_path):
    r = _run([0.5, 0.6], [0.3, 0.35], 0, quick=True)
    assert r.verdict == SMOKE and set(r.parts.values()) == {SMOKE} and {c.verdict for c in r.checks} == {SMOKE}
    r.write(tmp_path)
    md = (tmp_path / "report.md").read_text()
    assert md.splitlines()[0].startswith("**Smoke test (--quick)") and "holds" not in md.split("## Results")[0]


def test_a_seedless_experiment_says_its_two_sets_are_no_replication(toy_criteria):
    same = [_run([0.5, 0.6, 0.55], [0.3, 0.35, 0.32], 0) for _ in range(2)]
    text = " ".join(merge({(1.0, 0): same[0], (1.0, 100): same[1]}, (1.0,), [0, 100]).replication)
    assert "no replication" in text
    a, b = _run([0.5, 0.6, 0.55], [0.3, 0.35, 0.32], 0), _run([0.5, 0.61, 0.55], [0.3, 0.35, 0.32], 100)
    assert "no replication" not in " ".join(merge({(1.0, 0): a, (1.0, 100): b}, (1.0,), [0, 100]).replication)
