import torch

from redthread.experiments.attention_regression import knn_predict


def test_knn_predict_matches_a_direct_computation():
    g = torch.Generator().manual_seed(0)
    X, y = torch.rand(30, 1, generator=g), torch.randn(30, generator=g)
    query = torch.rand(7, 1, generator=g)
    got = knn_predict(X, y, query, [1, 3, 30])  # (7, 3)
    for i, q in enumerate(query[:, 0]):
        nearest = sorted(range(30), key=lambda j: abs(float(X[j, 0] - q)))
        for col, k in enumerate((1, 3, 30)):
            assert torch.isclose(got[i, col], y[nearest[:k]].double().mean())


def test_attention_regression_quick_report(quick_report):
    report, md, data, out = quick_report("attention-as-regression")
    checks = {c["name"]: c for c in data["checks"]}
    assert set(checks) == {"rmse_vs_knn", "width_vs_best"}
    assert {c["part"] for c in data["checks"]} == {"recovers E[y|x]", "learned weighting"}
    assert all(len(c["seeds"]) >= 2 for c in data["checks"])
    n = data["numbers"]
    assert len(n["seeds"]) >= 2 and len(n["rmse_learned"]) == len(n["rmse_knn"]) == len(n["seeds"])
    assert all(0 < r < 1 for r in n["rmse_learned"] + n["rmse_knn"] + n["rmse_poly"])
    assert all(r >= 1 - 1e-9 for r in n["ratio_learned_best"]) or min(n["rmse_best"]) <= min(n["rmse_learned"]) + 1e-3
    assert all(e < 1e-6 for e in n["row_sum_error"]) and all(w >= 0 for w in n["min_weight"])  # any softmax: a sanity check
    assert len(n["rmse_by_width"]) == len(n["widths"])
    for fig in ("fit", "weights", "bandwidth"):
        assert (out / f"{fig}.png").exists()
