from redthread.experiments.report import HOLDS


def test_regression_quick_verdict(quick_report):
    report, md, data, _ = quick_report("regression")
    assert report.verdict == HOLDS, md
    assert -1.2 <= data["numbers"]["slope"] <= -0.8
    assert data["numbers"]["max_coef_gap"] < 1e-3
