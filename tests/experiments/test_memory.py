import inspect

import pytest

from redthread.experiments import memory
from redthread.experiments.long_range import n_params
from redthread.experiments.memory import BUDGET, BUDGETS, GRID, QUICK_LR, growth, matched_width, training_steps, widths
from redthread.experiments.stats import run_seeds, tuning_seed
from tests.experiments.test_long_range import fake_training

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
    assert all(lr == QUICK_LR for rates in n["learning_rates"].values() for lr in rates)  # quick: no sweep
    assert n["steps"] == training_steps(True, 1.0) and n["budget"] == 1.0 and data["tuning"] == []
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


def test_training_steps_scale_with_the_budget():
    assert BUDGETS == (0.5, 1.0, 2.0) and inspect.signature(memory.run).parameters["budget"].default == 1.0
    assert [training_steps(False, b) for b in BUDGETS] == [BUDGET["steps"] // 2, BUDGET["steps"], 2 * BUDGET["steps"]]
    assert training_steps(True, 2.0) == 2 * BUDGET["quick_steps"] and training_steps(False, 1e-6) == 1


def test_run_tunes_at_the_highest_load_on_the_tuning_seed(monkeypatch):
    calls = fake_training(monkeypatch)  # long_range's training, which memory's runs go through
    monkeypatch.setattr(memory, "matched_width", lambda target: 40)  # its search is tested above, and slow
    report = memory.run(quick=False, seed=100, budget=2.0)
    seeds, loads, sizes = run_seeds(100, False), report.numbers["loads"], report.numbers["sizes"]
    assert {c[1] for c in calls} == {training_steps(False, 2.0)}
    tuning = [c for c in calls if c[3] == tuning_seed(100)]
    verdict = [c for c in calls if c[3] != tuning_seed(100)]
    assert tuning_seed(100) not in seeds and {c[3] for c in verdict} == set(seeds)
    assert {arm.distance for arm, *_ in tuning} == {loads[-1]}  # tuned at the highest load only
    assert len(report.tunings) == 4 * len(sizes) and all(set(GRID["lr"]) <= set(t["grid"]) for t in report.tunings)
    assert len(verdict) == 4 * len(sizes) * len(loads) * len(seeds)  # every arm at every load, on every verdict seed
    rnn_pick = next(t["pick"] for t in report.tunings if t["setting"].startswith("lr, RNN"))
    assert rnn_pick < min(GRID["lr"])  # the fake RNN's grid was extended below its lower edge
    for arm, _, lr, _ in verdict:  # both loads train at the rate tuned at the highest load
        assert lr == (rnn_pick if arm.kind == "rnn" else 1e-2)
