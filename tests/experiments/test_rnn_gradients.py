import math

from redthread.experiments.report import HOLDS


def test_rnn_gradients_quick_verdict(quick_report):
    report, md, data, _ = quick_report("rnn-gradients")
    assert report.verdict == HOLDS, md
    n = data["numbers"]
    retention = n["retention"]
    assert retention["tanh RNN, ρ = 0.5"] < 1e-3  # vanishes: at most 0.5^100 with tanh' <= 1
    assert retention["tanh RNN, ρ = 2"] > 1e3  # explodes
    assert 1e-2 <= retention["LSTM, chrono init"] <= 1e2
    assert n["transformer_spread"] < 10
    # the bound ||dh_T/dh_t|| <= rho^k holds at every distance for the orthogonal W_hh = 0.5 Q
    logn = n["log_norm[tanh RNN, ρ = 0.5]"]
    assert all(v <= k * math.log(0.5) + 1e-9 for k, v in enumerate(logn, start=1))
    # the sweep is ordered: a larger spectral radius keeps more of the gradient
    sweep = n["sweep_log_retention"]
    assert sweep == sorted(sweep)
