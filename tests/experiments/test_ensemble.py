import math

import torch

from redthread.experiments.ensemble import KS, N_HEAD, jsd, make_model, output_means, pairwise_jsd, removal_costs


def test_jsd_against_its_definition():
    p, q = torch.tensor([0.5, 0.5, 0.0]), torch.tensor([0.1, 0.2, 0.7])
    m = (p + q) / 2
    kl = lambda a: sum(float(a[i]) * math.log(float(a[i]) / float(m[i])) for i in range(3) if a[i] > 0)  # noqa: E731
    assert math.isclose(jsd(p, q).item(), (kl(p) + kl(q)) / 2, rel_tol=1e-6)
    assert math.isclose(jsd(q, p).item(), jsd(p, q).item(), rel_tol=1e-6)
    assert jsd(p, p).item() == 0
    assert math.isclose(jsd(torch.tensor([1.0, 0.0]), torch.tensor([0.0, 1.0])).item(), math.log(2), rel_tol=1e-6)


def test_pairwise_jsd_of_identical_heads_is_zero():
    row = torch.softmax(torch.randn(2, 1, 5, 5), -1)
    assert pairwise_jsd(row.expand(2, 3, 5, 5)) == 0
    a = torch.softmax(torch.randn(2, 3, 5, 5), -1)
    assert pairwise_jsd(a, a) > 0  # across: every head against every head, itself among them


def test_removing_every_head_equals_removing_every_dimension():
    model = make_model(vocab=11, block=8, n_layer=1, d_model=16, seed=0).eval()
    x, y = torch.randint(11, (4, 8)), torch.randint(11, (4, 8))
    means = output_means(model, x)
    heads, dims = removal_costs(model, x, y, means, N_HEAD, seed=0)  # every column either way
    assert math.isclose(heads, dims, rel_tol=1e-5, abs_tol=1e-7)


def test_ensemble_quick_report_structure(quick_report):
    report, md, data, folder = quick_report("ensemble")
    checks = {c["name"]: c for c in data["checks"]}
    assert set(checks) == {"disagreement", *(f"removal_{k}" for k in KS)}
    assert {c["part"] for c in data["checks"]} == {"disagreement", "graceful loss"}
    assert all(len(c["seeds"]) >= 2 for c in data["checks"])
    assert checks["disagreement"]["direction"] == "above" and checks["removal_1"]["direction"] == "below"
    n = data["numbers"]
    for key in ("jsd_within", "jsd_across", "jsd_untrained"):
        assert all(0 <= v <= math.log(2) for v in n[key]) and len(n[key]) == len(n["seeds"])
    assert (folder / "ensemble.png").exists()
