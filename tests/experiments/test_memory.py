import pytest

from redthread.experiments.long_range import n_params
from redthread.experiments.memory import growth, matched_width, widths

PARTS = {"state size", "load"}


def test_memory_quick_structure(quick_report):
    report, md, data, out = quick_report("memory")
    names = {c["name"] for c in data["checks"]}
    assert names == {f"{m}_{k}" for m in ("rnn", "lstm", "gru")
                     for k in ("state", "state_vs_transformer", "load", "load_vs_transformer")}
    assert set(data["parts"]) == PARTS
    for c in data["checks"]:
        assert c["claim"] == "C5" and len(c["seeds"]) >= 2 and c["floor"] > 0
    n = data["numbers"]
    sizes, loads, seeds = n["sizes"], n["loads"], n["seeds"]
    assert len(sizes) >= 2 and len(loads) >= 2 and len(seeds) >= 2
    for name in ("RNN", "LSTM", "GRU", "Transformer"):
        assert len(n["parameters"][name]) == len(sizes)
        for L in loads:
            per_size = n["excess_nll"][name][f"L={L}"]
            assert len(per_size) == len(sizes) and all(len(v) == len(seeds) for v in per_size)
            assert all(0 <= a <= 1 for v in n["recall_accuracy"][name][f"L={L}"] for a in v)
    for tf, gru in zip(n["parameters"]["Transformer"], n["parameters"]["GRU"]):
        assert abs(tf - gru) <= 0.25 * gru  # matched parameter counts
    assert (out / "excess_vs_state.png").exists()


def test_matched_width_is_the_nearest_count():
    target = n_params("gru", 16)
    w = matched_width(target)
    assert w % 2 == 0
    best = min(abs(n_params("transformer", v) - target) for v in range(2, 80, 2))
    assert abs(n_params("transformer", w) - target) == best


def test_widths_and_growth():
    out = widths([4, 8])
    assert out["RNN"] == [4, 8] and len(out["Transformer"]) == 2 and out["Transformer"][0] <= out["Transformer"][1]
    assert growth([1.0, 2.5], [0.5, 0.5]) == pytest.approx([0.5, 2.0])
