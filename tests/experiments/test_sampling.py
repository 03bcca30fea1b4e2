import math

from redthread.experiments.sampling import STRATEGIES, TOP_P, UNCHANGED, closest_margin, sampler_chi2


def _rows(nll: dict, gaps: dict) -> dict:
    rows = {"real data": {"nll_model": nll["real data"]}}
    for s in STRATEGIES:
        rows[s] = {"nll_model": nll[s]}
        if s != "greedy":
            rows[s] |= {"sampler_gap": gaps[s], "sampler_se": 0.01}
    return rows


def test_sampler_chi2_and_margin_by_hand():
    nll = {"real data": 1.0, **{s: 1.0 + 0.1 * i for i, s in enumerate(STRATEGIES)}}
    nll[UNCHANGED] = 1.02
    gaps = {s: 0.01 * (i % 3) for i, s in enumerate(STRATEGIES)}
    rows = _rows(nll, gaps)
    drawn = [s for s in STRATEGIES if s != "greedy"]
    assert math.isclose(sampler_chi2(rows), sum((gaps[s] / 0.01) ** 2 for s in drawn) / len(drawn))
    others = [abs(nll[s] - 1.0) for s in STRATEGIES if s != UNCHANGED]
    assert math.isclose(closest_margin(rows), min(others) - 0.02)


def test_sampling_quick_report(quick_report):
    report, md, data, out = quick_report("sampling")
    checks = {c["name"]: c for c in data["checks"]}
    assert set(checks) == {"sampler_chi2", "temperature_one_closest", "top_p_mass"}
    assert len(checks["sampler_chi2"]["seeds"]) >= 2 and len(checks["temperature_one_closest"]["seeds"]) >= 2
    assert checks["top_p_mass"]["interval"] is None  # exact
    n = data["numbers"]
    assert len(n["sampler_chi2"]) == len(n["seeds"]) >= 2 and all(c >= 0 for c in n["sampler_chi2"])
    assert n[f"top-p {TOP_P}.kept_mass_min"] >= TOP_P - 1e-6 and n["top-k 4.kept_max"] <= 4
    assert n["greedy.kept"] == 1
    assert "A property, not a criterion" in md
    assert (out / "sampling.png").exists()
