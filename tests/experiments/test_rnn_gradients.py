import math

import torch

from redthread.experiments.rnn_gradients import (
    crossing,
    log10_retention,
    log10_spread,
    rate_per_step,
    recurrent_jacobian_norms,
    rnn_with_radius,
)


def test_jacobian_norms_match_autograd_jacobian():
    """The batched one-backward-per-coordinate trick against torch.autograd.functional.jacobian."""
    model = rnn_with_radius(1.0, seed=0)
    idx = torch.randint(16, (1, 6), generator=torch.Generator().manual_seed(2))
    norms = recurrent_jacobian_norms(model, idx)  # (T-1, 1)
    cell = model.cells[0]
    xp = cell.project(model.tok_emb(idx)).detach()  # (1, T, H)

    def h_last_from(t):
        def f(h_t):
            state = (h_t,)
            for s in range(t + 1, idx.size(1)):
                state = cell.step(xp[:, s], state)
            return state[0]
        return f

    state = cell.init_state(1, xp)
    states = []
    for s in range(idx.size(1)):
        state = cell.step(xp[:, s], state)
        states.append(state[0].detach())
    T = idx.size(1)
    for k in (1, 3, T - 1):
        J = torch.autograd.functional.jacobian(h_last_from(T - 1 - k), states[T - 1 - k])[0, :, 0]  # (H, H)
        assert abs(torch.linalg.matrix_norm(J, ord=2).item() - norms[k - 1, 0].item()) < 1e-9


def test_helpers():
    logn = torch.tensor([0.0, -1.0, -2.0, -3.0], dtype=torch.float64)
    assert abs(rate_per_step(logn) + 1.0) < 1e-12
    assert abs(log10_retention(logn) + 3 / math.log(10)) < 1e-12
    assert abs(log10_spread(torch.tensor([1.0, -2.0, 0.5], dtype=torch.float64)) - 3 / math.log(10)) < 1e-12
    assert crossing([1.0, 2.0, 3.0], [-1.0, -0.5, 0.5]) == 2.5
    assert crossing([1.0, 2.0], [1.0, 2.0]) is None


def test_rnn_gradients_quick_structure(quick_report):
    report, md, data, _ = quick_report("rnn-gradients")
    checks = {c["name"]: c for c in data["checks"]}
    assert set(checks) == {"rnn_vanishes", "rnn_explodes", "lstm_keeps_above", "lstm_keeps_below", "transformer_flat"}
    assert all(len(c["seeds"]) >= 2 and c["claim"] == "C3" for c in checks.values())
    n = data["numbers"]
    # the bound ||dh_T/dh_t|| <= rho^k holds at every distance for the orthogonal W_hh = 0.5 Q (a theorem, not a result)
    logn = n["log_norm[tanh RNN, ρ = 0.5]"]
    assert len(logn) == n["distance"]
    assert all(v <= k * math.log(0.5) + 1e-9 for k, v in enumerate(logn, start=1))
    assert all(len(v) == len(n["seeds"]) for v in n["log10_retention_per_seed"].values())
    assert "gradient_vs_distance.png" in md and "radius_sweep.png" in md
