from redthread.experiments.report import HOLDS


def test_long_range_quick_verdict(quick_report):
    report, md, data, _ = quick_report("long-range")
    assert report.verdict == HOLDS, md
    n = data["numbers"]
    acc = n["recall_accuracy"]
    assert min(acc["Transformer"]) >= 0.9
    for name in ("RNN", "LSTM"):
        assert acc[name][0] >= 0.5 and acc[name][-1] <= 0.2
    params = n["parameters"]
    assert max(params.values()) <= 1.2 * min(params.values())  # matched sizes
    assert n["excess_nll"]["Transformer"][-1] < n["excess_nll"]["LSTM"][-1]
