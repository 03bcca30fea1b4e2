import math

import numpy as np

from redthread.experiments.regression import log_log_slope


def test_log_log_slope_matches_polyfit():
    sizes = [10, 30, 100, 1000]
    errors = [3.0 / n**0.9 * (1 + 0.1 * i) for i, n in enumerate(sizes)]
    expected = np.polyfit(np.log(sizes), np.log(errors), 1)[0]
    assert math.isclose(log_log_slope(sizes, errors), expected, rel_tol=1e-9)


def test_regression_quick_report(quick_report):
    report, md, data, out = quick_report("regression")
    checks = {c["name"]: c for c in data["checks"]}
    assert set(checks) == {"slope_above", "slope_below", "coef_gap"}
    assert {c["part"] for c in data["checks"]} == {"E[y|x]", "MSE = Gaussian likelihood"}
    assert all(len(c["seeds"]) >= 2 for c in data["checks"])
    n = data["numbers"]
    assert len(n["slopes"]) == len(n["coef_gaps"]) == len(n["seeds"]) >= 2
    assert all(-3 < s < 1 for s in n["slopes"]) and all(g >= 0 for g in n["coef_gaps"])
    assert len(n["error_vs_true_mean"]) == len(n["sizes"]) == len(n["theory"])
    assert (out / "error_vs_n.png").exists()
