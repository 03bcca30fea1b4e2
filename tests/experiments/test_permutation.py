from redthread.experiments.report import HOLDS


def test_permutation_quick_verdict(quick_report):
    report, md, data, _ = quick_report("permutation")
    assert report.verdict == HOLDS, md
    numbers = data["numbers"]
    assert max(numbers["error_attention"] + numbers["error_encoder_none"]) < 1e-5
    assert min(numbers["error_encoder_sinusoidal"]) > 1e-2
    assert min(numbers["error_causal_none"]) > 1e-2  # the causal mask alone is an order
    assert numbers["accuracy_none"][0] <= numbers["bound"][0] + 0.03 < 0.5
    assert numbers["accuracy_sinusoidal"][0] > 0.95
