from redthread.experiments.report import HOLDS


def test_attention_regression_quick_verdict(quick_report):
    report, md, data, _ = quick_report("attention-as-regression")
    assert report.verdict == HOLDS, md
    numbers = data["numbers"]
    assert numbers["rmse_learned"][0] < 0.25 * numbers["rmse_linear"][0]
    assert numbers["h_learned"][0] < numbers["h_silverman"][0]  # Silverman's width over-smooths sin(2x)
    assert numbers["row_sum_error"][0] < 1e-6 and numbers["min_weight"][0] >= 0
    assert numbers["local_attention"][0] > 0.9
    assert numbers["local_linear"][0] < 0.5
    assert len(numbers["rmse_by_width"]) == len(numbers["widths"])
