import inspect
import math

import numpy as np
import pytest
import torch

from redthread.experiments import long_range
from redthread.experiments.long_range import (
    BUDGET,
    BUDGETS,
    CHANCE,
    GRID,
    QUICK_LR,
    VOCAB,
    Arm,
    build,
    heads,
    interval_cells,
    n_params,
    recall_data,
    recall_scores,
    training_steps,
)
from redthread.experiments.stats import run_seeds, tuning_seed

CHECKS = {"transformer_longest", "rnn_drop", "rnn_gap", "lstm_drop", "lstm_gap"}


def test_long_range_quick_structure(quick_report):
    report, md, data, out = quick_report("long-range")
    checks = {c["name"]: c for c in data["checks"]}
    assert set(checks) == CHECKS
    assert set(data["parts"]) == {"attention reaches any distance (C6)", "recurrent models lose long-range recall (C3, C5)"}
    assert checks["transformer_longest"]["floor"] == pytest.approx(1 / VOCAB)  # chance, from the vocabulary
    for c in data["checks"]:
        assert len(c["seeds"]) >= 2 and c["interval"] is not None
    n = data["numbers"]
    seeds, distances = n["seeds"], n["distances"]
    assert len(seeds) >= 2 and distances == sorted(distances)
    for name in ("RNN", "LSTM", "Transformer"):
        assert len(n["recall_accuracy"][name]) == len(distances)
        for per_seed in n["recall_accuracy"][name]:
            assert len(per_seed) == len(seeds) and all(0 <= a <= 1 for a in per_seed)
        for per_seed in n["excess_nll"][name]:
            assert all(e > -0.05 for e in per_seed)  # a KL estimate: never far below zero
        assert all(lr == QUICK_LR for lr in n["learning_rates"][name])  # quick: one fixed rate, no sweep
    assert n["steps"] == training_steps(True, 1.0) and n["budget"] == 1.0 and data["tuning"] == []
    params = n["parameters"]
    assert max(params.values()) <= 1.2 * min(params.values())  # matched sizes
    assert (out / "accuracy_vs_distance.png").exists()


def test_chance_is_the_rate_of_a_model_without_memory():
    """A model that predicts the previous token (no reach to distance L) hits s_(t-L) at the chance rate 1/V."""
    _, data, _ = recall_data(distance=5, length=400, seed=3)
    y = torch.as_tensor(np.stack(data.sequences("train")))  # (N, T)
    hits = (y[:, 4:-1] == y[:, :-5]).double().mean().item()  # s_(t-1) against s_(t-5), t >= 5
    assert hits == pytest.approx(CHANCE, abs=0.005)


def test_recall_scores_of_a_perfect_copier():
    """An oracle whose logits put all mass on s_(t-L) scores accuracy 1."""
    L = 3
    _, data, _ = recall_data(distance=L, length=32, seed=0)

    class Copier(torch.nn.Module):
        def forward(self, x):  # x (B, T): the boundary, then the tokens shifted by one
            logits = torch.zeros(*x.shape, VOCAB + 1)
            logits[:, L:] = 10 * torch.nn.functional.one_hot(x[:, 1 : x.size(1) - L + 1], VOCAB + 1)
            return logits

    acc, nll = recall_scores(Copier(), data, "val", L)
    assert acc == 1.0 and nll > 0


def test_initialisations():
    rnn = build("rnn", 32, 32, seed=0, t_max=32)
    w = rnn.cells[0].weight_hh.detach()
    assert torch.allclose(w @ w.T, torch.eye(32), atol=1e-5)  # orthogonal
    lstm = build("lstm", 16, 32, seed=0, t_max=32)
    b = lstm.cells[0].bias_hh.detach()
    forget = b[16:32]
    assert (forget >= 0).all() and (forget <= math.log(31) + 1e-6).all()  # log U(1, T_max - 1)
    assert torch.allclose(b[:16], -forget) and torch.all(lstm.cells[0].bias_ih == 0)
    gru = build("gru", 16, 32, seed=0, t_max=32)
    z = gru.cells[0].bias_hh.detach()[16:32]
    assert (z >= 0).all() and (z <= math.log(31) + 1e-6).all()


def test_heads_divide_the_width():
    for w in range(2, 130, 2):
        assert w % heads(w) == 0 and (w // heads(w)) % 2 == 0  # rotary positions need even head widths


def test_interval_cells_match_a_t_interval():
    values = [0.2, 0.4, 0.3, 0.5, 0.1]
    mean, lo, hi = interval_cells(values)
    half = 2.776 * np.std(values, ddof=1) / math.sqrt(5)  # t(0.975, 4)
    assert mean == pytest.approx(0.3) and lo == pytest.approx(0.3 - half, rel=1e-3) and hi == pytest.approx(0.3 + half, rel=1e-3)


def test_arm_length_covers_the_distance():
    assert Arm("rnn", 8, 4).length >= 8 and Arm("rnn", 8, 64).length == 128
    assert n_params("transformer", 40) > 0


def test_training_steps_scale_with_the_budget():
    assert BUDGETS == (0.5, 1.0, 2.0) and inspect.signature(long_range.run).parameters["budget"].default == 1.0
    assert [training_steps(False, b) for b in BUDGETS] == [BUDGET["steps"] // 2, BUDGET["steps"], 2 * BUDGET["steps"]]
    assert training_steps(True, 0.5) == round(BUDGET["quick_steps"] / 2)
    assert training_steps(False, 1e-6) == 1  # never zero steps


def fake_training(monkeypatch) -> list[tuple]:
    """Replace the training of one arm by a fake that records (arm, steps, lr, seed); the RNN's validation NLL falls
    with the rate (its pick runs off the grid's lower edge), the others' is lowest at 1e-2 (an interior pick)."""
    calls = []

    def fake_train_arm(arm, steps, lr, seed):
        calls.append((arm, steps, lr, seed))
        val_nll = lr if arm.kind == "rnn" else abs(math.log(lr / 1e-2))
        return {"val_nll": val_nll, "accuracy": 0.5 + 0.01 * (seed % 7), "excess": 0.1 + 0.01 * (seed % 5), "seconds": 0.0}

    def fake_run_jobs(jobs, workers, progress, done_before=0, total=None):
        return {job: fake_train_arm(*job) for job in jobs}

    monkeypatch.setattr(long_range, "train_arm", fake_train_arm)
    monkeypatch.setattr(long_range, "run_jobs", fake_run_jobs)
    return calls


def test_run_tunes_on_the_tuning_seed_and_trains_the_verdict_seeds_afresh(monkeypatch):
    calls = fake_training(monkeypatch)
    report = long_range.run(quick=False, seed=0, budget=0.5)
    steps, seeds = training_steps(False, 0.5), run_seeds(0, False)
    assert {c[1] for c in calls} == {steps} and f"{steps} AdamW steps" in report.setup
    tuning = [c for c in calls if c[3] == tuning_seed(0)]
    verdict = [c for c in calls if c[3] != tuning_seed(0)]
    assert tuning_seed(0) not in seeds and {c[3] for c in verdict} == set(seeds)
    assert len(report.tunings) == len(report.numbers["distances"]) * 3  # one per (model, distance)
    assert len(tuning) == sum(len(t["grid"]) for t in report.tunings)  # one run on the tuning seed per rate scored
    for t in report.tunings:
        assert set(GRID["lr"]) <= set(t["grid"])
    rnn = [t for t in report.tunings if t["setting"].startswith("lr, rnn")]
    assert all(len(t["grid"]) == len(GRID["lr"]) + 2 and t["edge"] for t in rnn)  # extended twice, still on the edge
    picks = {(arm, lr) for arm, _, lr, _ in verdict}
    assert all(lr == 1e-2 for arm, lr in picks if arm.kind != "rnn")
    assert len(verdict) == len(report.tunings) * len(seeds)  # every arm on every verdict seed, once
