import inspect
import math

import torch

from redthread.experiments import scaling
from redthread.experiments.criteria import CRITERIA
from redthread.experiments.stats import run_seeds, tuning_seed
from tests.experiments.conftest import assert_parts

PARTS = {"variance": ["variance"], "saturation": ["one_hot", "jacobian_unscaled", "jacobian_scaled"],
         "trainability": ["scaled_trains", "gap"]}


def test_softmax_statistics_match_closed_forms():
    """The uniform softmax's Jacobian norm is sqrt(S - 1)/S (the thresholds' anchor); every draw lies between uniform and one-hot."""
    soft = scaling._softmax(50, seed=0)
    for key, values in soft.items():
        assert len(values) == len(scaling.D_K) and all(math.isfinite(v) for v in values), key
    S = scaling.S_KEYS
    p = torch.full((S,), 1 / S, dtype=torch.float64)
    jac = torch.diag(p) - torch.outer(p, p)  # the softmax Jacobian by hand
    assert math.isclose(float(jac.norm()), (S - 1) ** 0.5 / S, rel_tol=1e-12)
    assert math.isclose(CRITERIA["scaling"]["jacobian_unscaled"].floor, (S - 1) ** 0.5 / S / 2)
    # no softmax over S keys has entropy above log S or a largest weight below 1/S
    assert max(soft["entropy_scaled"] + soft["entropy_unscaled"]) <= math.log(S) + 1e-9
    assert min(soft["max_weight_scaled"] + soft["max_weight_unscaled"]) >= 1 / S - 1e-9


def test_variance_threshold_is_four_standard_errors():
    """Var((q·k)^2) = 2 d^2 + 6 d for Gaussian q, k: checked by simulation at d = 4."""
    g = torch.Generator().manual_seed(0)
    q, k = torch.randn(400_000, 4, generator=g, dtype=torch.float64), torch.randn(400_000, 4, generator=g, dtype=torch.float64)
    s2 = (q * k).sum(-1) ** 2
    assert math.isclose(float(s2.var()), 2 * 16 + 6 * 4, rel_tol=0.05)
    assert math.isclose(CRITERIA["scaling"]["variance"].floor, 4 * math.sqrt((2 + 6 / 4) / scaling.N_VAR))


def test_scaling_quick_structure(quick_report):
    report, md, data, _ = quick_report("scaling")
    assert_parts(report, data, PARTS)
    n = data["numbers"]
    assert n["d_k"] == scaling.D_K and all(v > 0 for v in n["var_unscaled"])
    assert all(1 / scaling.S_KEYS <= w <= 1 for w in n["max_weight_unscaled"] + n["max_weight_scaled"])
    assert n["picked_lr"] == {"scaled": scaling.QUICK_LR, "unscaled": scaling.QUICK_LR}  # quick: no sweep
    assert n["sweep_val_nll"] == {} and data["tuning"] == []
    assert len(n["nll_gap"]) >= 2 and all(math.isfinite(g) for g in n["nll_gap"])
    assert all(v > 0 for v in n["train_bayes"].values())


def test_training_steps_scale_with_the_budget():
    budget = scaling.BUDGET
    assert scaling.BUDGETS == (0.5, 1.0, 2.0) and inspect.signature(scaling.run).parameters["budget"].default == 1.0
    assert [scaling.training_steps(False, b) for b in scaling.BUDGETS] == [budget["steps"] // 2, budget["steps"],
                                                                         2 * budget["steps"]]
    assert scaling.training_steps(True, 0.5) == budget["quick_steps"] // 2 and scaling.training_steps(False, 1e-6) == 1


def test_run_tunes_on_the_tuning_seed_and_trains_the_verdict_seeds_afresh(monkeypatch):
    """With the training faked (the unscaled arm's validation NLL falls with the rate, so its grid is extended and its
    pick stays on the edge) and parts 1 and 2 made small, a full run's tuning and verdict runs are on disjoint seeds."""
    calls = []

    def fake_train_one(arm, lr, seed, d_model, steps, source):
        calls.append((arm, lr, seed, steps))
        val = lr if arm == "unscaled" else abs(math.log(lr / 1e-3))
        test = 1.0 + 0.01 * (seed % 7) + (0.3 if arm == "unscaled" else 0.0)
        return {"arm": arm, "seed": seed, "lr": lr, "losses": [2.7] * steps, "val_nll": val, "test_nll": test,
                "bayes": 0.8, "excess": test - 0.8, "closed": (math.log(16) - test) / (math.log(16) - 0.8),
                "q_var": 1.0, "init_max_weight": 0.2, "copy_weight": 0.5}

    real_softmax = scaling._softmax
    monkeypatch.setattr(scaling, "_train_one", fake_train_one)
    monkeypatch.setattr(scaling, "_softmax", lambda n, seed: real_softmax(20, seed))
    monkeypatch.setattr(scaling, "N_VAR", 200)
    report = scaling.run(quick=False, seed=0, budget=0.5)
    seeds, steps = run_seeds(0, False), scaling.training_steps(False, 0.5)
    assert {c[3] for c in calls} == {steps} and f"{steps} steps of batch" in report.setup
    tuning = [c for c in calls if c[2] == tuning_seed(0)]
    verdict = [c for c in calls if c[2] != tuning_seed(0)]
    assert tuning_seed(0) not in seeds and sorted(c[2] for c in verdict) == sorted(seeds * 2)
    tunings = {t["setting"]: t for t in report.tunings}
    assert set(tunings) == {"lr, 1/√d_k scale", "lr, none scale"}
    assert len(tuning) == sum(len(t["grid"]) for t in report.tunings)  # one run on the tuning seed per rate scored
    assert tunings["lr, 1/√d_k scale"]["pick"] == 1e-3 and not tunings["lr, 1/√d_k scale"]["edge"]
    unscaled = tunings["lr, none scale"]
    assert len(unscaled["grid"]) == len(scaling.GRID["lr"]) + 2 and unscaled["edge"]  # extended twice, still the edge
    assert {(arm, lr) for arm, lr, _, _ in verdict} == {("scaled", 1e-3), ("unscaled", unscaled["pick"])}
    n = report.numbers
    assert n["picked_lr"] == {"scaled": 1e-3, "unscaled": unscaled["pick"]}
    assert {float(lr) for lr in n["sweep_val_nll"]["unscaled"]} == set(unscaled["grid"])
