from redthread.experiments.report import HOLDS
from redthread.experiments.sampling import STRATEGIES, TOP_P


def test_sampling_quick_verdict(quick_report):
    report, md, data, _ = quick_report("sampling")
    assert report.verdict == HOLDS, md
    n = data["numbers"]
    # temperature 1 is as surprising to the model as real text; greedy far less, temperature 1.5 far more
    assert abs(n["temperature 1.nll_model"] - n["real data.nll_model"]) < 0.05
    assert n["greedy.nll_model"] < n["real data.nll_model"] - 0.3
    assert n["temperature 1.5.nll_model"] > n["real data.nll_model"] + 0.3
    assert n["greedy.repetition"] > 2 * n["real data.repetition"]
    assert n[f"top-p {TOP_P}.kept_mass_min"] >= TOP_P and n["top-k 4.kept_max"] == 4
    assert n["greedy.kept"] == 1
    for s in STRATEGIES:
        if s != "greedy":
            assert abs(n[f"{s}.sampler_gap"]) <= 4 * n[f"{s}.sampler_se"]
