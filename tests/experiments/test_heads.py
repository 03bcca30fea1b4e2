import inspect
import math

import torch

from redthread.experiments import heads
from redthread.experiments.heads import BUDGET, BUDGETS, FAR, GRID, N_HEAD, NEAR, TwoLagSource, offset_weights
from redthread.experiments.report import Report
from redthread.experiments.stats import SEED_SETS, run_seeds, tuning_seed


def test_two_lag_source_bayes_nll_matches_sampling_rule():
    source = TwoLagSource(seed=0)
    seqs = source.sample(200, 20, seed=1)
    logp = source.log_probs(seqs)
    assert logp.shape == seqs.shape and (logp <= 0).all()
    # each conditional is a distribution: summing P(v | s_<t) over v gives 1 at every position
    t = FAR + 3
    total = sum(((source.p_near * (v == seqs[:, t - NEAR]) + source.p_far * (v == source.perm[seqs[:, t - FAR]]))
                 + (1 - source.p_near - source.p_far) / source.vocab_size) for v in range(source.vocab_size))
    assert abs(total - 1).max() < 1e-12


def test_explained_by_marks_positions_one_rule_only_explains():
    source = TwoLagSource(seed=0)
    y = torch.from_numpy(source.sample(50, 20, seed=2))
    near, far = source.explained_by(y)
    assert not (near & far).any() and not near[:, :FAR].any()
    for n, t in zip(*torch.nonzero(near, as_tuple=True)):
        assert y[n, t] == y[n, t - NEAR] and y[n, t] != source.perm[y[n, t - FAR]]


def test_offset_weights_of_a_known_map():
    att = torch.zeros(1, 2, 10, 10)
    q = torch.arange(10)
    att[0, 0, q, (q - 1).clamp_min(0)] = 1  # head 0: the key one place back
    att[0, 1, q, q] = 1  # head 1: the query's own key
    w = offset_weights(att, FAR)
    assert w[0, 1] == 1 and w[0, 0] == 0 and w[1, 0] == 1 and w[1, 1] == 0


def test_heads_quick_report_structure(quick_report):
    report, md, data, folder = quick_report("heads")
    checks = {c["name"]: c for c in data["checks"]}
    assert set(checks) == {"specialisation", "dissociation_near", "dissociation_far", "several_heads"}
    assert {c["part"] for c in data["checks"]} == {"specialisation", "ablation", "several heads"}
    assert all(len(c["seeds"]) >= 2 and c["floor"] > 0 and c["direction"] == "above" for c in data["checks"])
    n = data["numbers"]
    assert len(n["seeds"]) >= 2 and all(0 <= h < N_HEAD for h in n["near_head"] + n["far_head"])
    assert all(a != b for a, b in zip(n["near_head"], n["far_head"]))
    assert all(m > b for m, b in zip(n["nll_multi"], n["bayes"]))  # no model beats the exact Bayes NLL
    assert n["steps"] == BUDGET["quick_steps"] and data["tuning"] == []  # --quick: budget 1, no sweep
    for name in ("offsets", "maps", "ablation"):
        assert (folder / f"{name}.png").exists()


def test_steps_scale_with_the_budget():
    assert BUDGETS == (0.5, 1.0, 2.0) and "budget" in inspect.signature(heads.run).parameters
    assert [heads.training_steps(False, b) for b in BUDGETS] == [BUDGET["steps"] // 2, BUDGET["steps"], 2 * BUDGET["steps"]]
    assert heads.training_steps(True, 1.0) == BUDGET["quick_steps"] and heads.training_steps(False, 1e-6) == 1


def test_learning_rates_are_tuned_on_the_tuning_seed_only(monkeypatch):
    trained, drawn = [], []
    source = TwoLagSource(seed=0)
    draw = source.data
    monkeypatch.setattr(source, "data", lambda *args, seed: drawn.append(seed) or draw(*args, seed=seed))
    monkeypatch.setattr(heads, "train_model", lambda data, n_head, length, steps, seed, lr: trained.append(seed) or lr)
    best = GRID["lr"][1]
    monkeypatch.setattr(heads, "evaluate", lambda lr, data, split: {"nll": (math.log(lr) - math.log(best)) ** 2})
    report = Report("heads", "C9")
    lrs = heads.tuned_lrs(report, source, 20, 10, 12, steps=5, seed=0)
    assert lrs == {N_HEAD: best, 1: best}  # the fake score's minimum, for both arms
    assert [t["setting"] for t in report.tunings] == [f"lr, {N_HEAD} heads", "lr, 1 head"]
    assert not any(t["edge"] for t in report.tunings)
    assert set(trained) == set(drawn) == {tuning_seed(0)}
    for offset in SEED_SETS:  # no verdict seed of either set is tuned on
        assert tuning_seed(0) not in run_seeds(offset, quick=False)
