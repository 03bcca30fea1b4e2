import math

import torch

from redthread.experiments import scaling
from redthread.experiments.criteria import CRITERIA
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
    assert set(n["picked_lr"]) == {"scaled", "unscaled"}
    assert all(n["picked_lr"][arm] in n["learning_rates"] for arm in n["picked_lr"])
    for arm, nlls in n["sweep_val_nll"].items():  # the pick is the sweep's lowest validation NLL
        assert float(min(nlls, key=nlls.get)) == n["picked_lr"][arm]
    assert len(n["nll_gap"]) >= 2 and all(math.isfinite(g) for g in n["nll_gap"])
    assert all(v > 0 for v in n["train_bayes"].values())
