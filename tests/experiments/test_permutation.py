import math
from collections import Counter

from redthread.experiments.permutation import LENGTH, FirstTokenData


def test_multiset_bound_matches_counting():
    data = FirstTokenData(10, 300, seed=3)
    x, y = data.splits["val"]
    accuracy, nll = data.multiset_bound()
    counts = [Counter(row[1:].tolist()) for row in x]
    assert math.isclose(accuracy, sum(max(c.values()) for c in counts) / LENGTH / len(x), rel_tol=1e-9)
    assert math.isclose(nll, -sum(math.log(c[int(t)] / LENGTH) for c, t in zip(counts, y)) / len(x), rel_tol=1e-9)


def test_permutation_quick_report(quick_report):
    report, md, data, out = quick_report("permutation")
    checks = {c["name"]: c for c in data["checks"]}
    assert set(checks) == {"equivariance_error", "positions_break_symmetry", "blind_excess", "positions_excess"}
    assert {c["part"] for c in data["checks"]} == {"order-blind", "positions inject order"}
    assert checks["equivariance_error"]["interval"] is None and checks["positions_break_symmetry"]["interval"] is None
    assert len(checks["blind_excess"]["seeds"]) >= 2 and len(checks["positions_excess"]["seeds"]) >= 2
    n = data["numbers"]
    assert min(n["error_causal_none"]) >= 0 and len(n["error_attention"]) == len(n["error_encoder_sinusoidal"])
    assert all(0 < b < 1 for b in n["bound"]) and all(0 <= a <= 1 for a in n["accuracy_none"] + n["accuracy_sinusoidal"])
    assert (out / "equivariance.png").exists() and (out / "first_token.png").exists()
