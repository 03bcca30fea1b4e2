from redthread.experiments.calibration import DISTORTIONS, ECE_MAX, T_RANGE
from redthread.experiments.report import HOLDS


def test_calibration_quick_verdict(quick_report):
    report, md, data, _ = quick_report("calibration")
    assert report.verdict == HOLDS, md
    n = data["numbers"]
    assert n["T=1"]["ece"] <= ECE_MAX
    assert T_RANGE[0] <= n["best_temperature"] <= T_RANGE[1]
    assert n["nll_at_best"] <= n["nll_at_1"] <= n["nll_at_best"] + 0.01
    assert all(n[f"T={t:g}"]["ece"] > 3 * n["T=1"]["ece"] for t in DISTORTIONS)
    assert sum(n["T=1"]["counts"]) == n["positions"] == 20 * 64 * 64
