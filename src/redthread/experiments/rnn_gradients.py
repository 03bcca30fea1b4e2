"""Claim C3: an RNN's gradient over a distance k is a product of k Jacobians, so it vanishes or explodes.

For h_t = tanh(W_ih x_t + W_hh h_{t-1} + b), the Jacobian of a later state with respect to an
earlier one is a product (Bengio et al. 1994; Pascanu et al. 2013, eqs. 5-7):

    dh_T/dh_t = prod_{s=t+1..T} diag(1 - h_s^2) W_hh,   so  ||dh_T/dh_t|| <= (rho(W_hh) max|tanh'|)^(T-t)

Set-up: the library's own cells (`models/recurrent.py`) at initialisation, fed random tokens. The
tanh RNN gets W_hh = rho * Q (Q a random orthogonal matrix, so every singular value is rho) for a
sweep of spectral radii rho, with rho = 0.5, 1 and 2 named. The LSTM's state is (h_t, c_t); its cell
path c_t = f * c_{t-1} + i * g carries the gradient by the forget gate f alone (Hochreiter &
Schmidhuber 1997). It is measured at torch's initialisation (f ~ sigmoid(0) = 0.5) and with the
"chrono" initialisation of Tallec & Ollivier (2018), forget-gate biases log U(1, K - 1) for
dependencies up to K steps. The Transformer (pre-norm, sinusoidal positions, at initialisation)
has no chain over time: the output at position T reaches the input at any position t through
n_layer attention steps, a path of constant length (Vaswani et al. 2017, table 1).

What is measured: the spectral norm ||J(k)||_2 of the Jacobian of the last output state h_T
(the vector the language-model head reads) with respect to the state at position t = T - k,
for k = 1 .. K, computed exactly by autograd (one backward pass per output coordinate, batched),
in float64 so that 1e-40 is still a number. For the LSTM the state at t is (h_t, c_t); for the
Transformer it is the embedding x_t that enters the first block. Retention is
||J(K)|| / ||J(1)||, geometric means over the sequences.

Why the criterion: the claim predicts geometric change with distance for the tanh RNN, both ways
(orders of magnitude over K = 100 steps), and a gradient that does not depend on distance for
attention; the LSTM's additive cell, with forget gates near 1, should carry the gradient over K
steps without either. Each seed draws the models' initialisation and the sequences; the checks
take the seeds' 95% interval of log10 retention (thresholds and their reasons in
`experiments/criteria.py`). The radius sweep, a description, runs on the first seed.
"""

from __future__ import annotations

import math
import statistics

import torch
from torch import Tensor

from redthread.experiments import one_thread
from redthread.experiments.criteria import ABOVE, BELOW, Criterion
from redthread.experiments.report import Report
from redthread.lang import say
from redthread.models.recurrent import RecurrentConfig, RecurrentLM
from redthread.models.transformer import TransformerConfig, TransformerLM
from redthread.plotting import pyplot

plt = pyplot()

NAME, CLAIMS = "rnn-gradients", "C3"
HYPOTHESIS = ("Over 100 steps a tanh RNN's Jacobian norm vanishes (spectral radius 0.5) or explodes (2), a "
              "chrono-initialised LSTM keeps it, and a Transformer's stays flat: a path of constant length.")
BUDGET = {"sequences per seed": 8, "steps back": 100}
GRID: dict = {}  # nothing trained: measured at initialisation

# The pre-registered criteria: each floor is the smallest effect size of interest, with its reason.
CRITERIA: dict[str, Criterion] = {
    # log10 of retention ||J(K)|| / ||J(1)|| over K = 100 steps, per seed (a model's initialisation and its sequences)
    "rnn_vanishes": Criterion(
        "C3", "", "log10 retention over 100 steps, tanh RNN with spectral radius 0.5", -3.0,
        BELOW, "vanished: three orders of magnitude, the gradient from 100 steps back under 0.1% of the one from 1 step "
               "back (the bound rho^k allows 0.5^99 ~ 1e-30; the threshold is the definition, not the bound)"),
    "rnn_explodes": Criterion(
        "C3", "", "log10 retention over 100 steps, tanh RNN with spectral radius 2", 3.0,
        ABOVE, "exploded: three orders of magnitude up, the mirror of the vanishing threshold"),
    "lstm_keeps_above": Criterion(
        "C3", "", "log10 retention over 100 steps, LSTM with chrono forget-gate biases", -2.0,
        ABOVE, "kept: within two orders of magnitude, short of the three that define vanishing, so the two "
               "definitions cannot both hold"),
    "lstm_keeps_below": Criterion(
        "C3", "", "log10 retention over 100 steps, LSTM with chrono forget-gate biases", 2.0,
        BELOW, "kept: within two orders of magnitude, short of the three that define exploding"),
    "transformer_flat": Criterion(
        "C3", "", "log10 of the Transformer's max / min ||J(k)|| over k = 1..100", 1.0,
        BELOW, "one order of magnitude over 100 steps, a third of the three that define vanishing or exploding; "
               "the claim is a path of constant length, no geometric change"),
}
VOCAB, D_EMBED, D_HIDDEN = 16, 32, 64
N_LAYER, N_HEAD, D_MODEL = 2, 4, 64
DISTANCE = 100  # K: the longest T - t measured; sequences are K + 1 tokens
RADII = (0.5, 1.0, 2.0)  # the named spectral radii: below, at, above 1
VANISH, EXPLODE = 1e-3, 1e3  # drawn on the sweep's figure; the thresholds that decide are in experiments/criteria.py


def recurrent_jacobian_norms(model: RecurrentLM, idx: Tensor) -> Tensor:
    """||dh_T / d state_t||_2 for k = T - t = 1 .. T - 1: idx (B, T) -> (T - 1, B).

    Every sequence is repeated H times and copy i back-propagates h_T[i], so the gradient that
    state_t receives in copy i is row i of the Jacobian."""
    cell = model.cells[0]
    B, T = idx.shape
    H = cell.hidden_size
    x = model.tok_emb(idx).repeat_interleave(H, dim=0)  # (B*H, T, E)
    xp = cell.project(x)  # (B*H, T, G*H)
    state = cell.init_state(B * H, x)
    states = []
    for xp_t in xp.unbind(1):  # the model's own step, with every state kept; unbind: one backward node, not T
        state = cell.step(xp_t, state)
        for s in state:
            s.retain_grad()
        states.append(state)
    h_T = states[-1][0].view(B, H, H)  # (B, copy, H)
    h_T.diagonal(dim1=1, dim2=2).sum().backward()  # copy i back-propagates coordinate i
    norms = []
    for k in range(1, T):
        rows = torch.cat([s.grad for s in states[T - 1 - k]], dim=-1).view(B, H, -1)  # (B, H, n_states*H)
        norms.append(torch.linalg.matrix_norm(rows, ord=2))  # (B,)
    return torch.stack(norms)  # (T-1, B)


def transformer_jacobian_norms(model: TransformerLM, idx: Tensor) -> Tensor:
    """||dh_T / dx_t||_2 for k = T - t = 0 .. T - 1, h_T the final (normed) output at the last
    position, x_t the embedding entering the first block: idx (B, T) -> (T, B)."""
    B, T = idx.shape
    C = model.cfg.d_model
    x = model.embed(idx.repeat_interleave(C, dim=0))  # (B*C, T, C)
    x.retain_grad()
    h = x
    for block in model.blocks:
        h = block(h)
    h_T = model.norm_f(h)[:, -1].view(B, C, C)  # (B, copy, C)
    h_T.diagonal(dim1=1, dim2=2).sum().backward()
    rows = x.grad.view(B, C, T, C).transpose(1, 2)  # (B, T, C, C): the Jacobian for every position t
    return torch.linalg.matrix_norm(rows, ord=2).flip(1).T  # (T, B), row k = distance T - 1 - t


def rnn_with_radius(rho: float, seed: int) -> RecurrentLM:
    """A tanh RNN whose W_hh = rho * Q, Q orthogonal: every singular value (and |eigenvalue|) is rho."""
    torch.manual_seed(seed)
    model = RecurrentLM(RecurrentConfig(vocab_size=VOCAB, block_size=DISTANCE + 1, cell="rnn", d_embed=D_EMBED,
                                        d_hidden=D_HIDDEN)).double()
    q, _ = torch.linalg.qr(torch.randn(D_HIDDEN, D_HIDDEN, dtype=torch.float64, generator=torch.Generator().manual_seed(seed)))
    with torch.no_grad():
        model.cells[0].weight_hh.copy_(rho * q)
    return model


def lstm(seed: int, chrono: bool) -> RecurrentLM:
    """torch's initialisation, or chrono: forget bias log U(1, K - 1), input bias its negative (Tallec & Ollivier 2018)."""
    torch.manual_seed(seed)
    model = RecurrentLM(RecurrentConfig(vocab_size=VOCAB, block_size=DISTANCE + 1, cell="lstm", d_embed=D_EMBED,
                                        d_hidden=D_HIDDEN)).double()
    if chrono:
        H, cell = D_HIDDEN, model.cells[0]
        u = torch.rand(H, dtype=torch.float64, generator=torch.Generator().manual_seed(seed))
        bias_f = torch.log(1 + u * (DISTANCE - 2))  # (H,): log U(1, K - 1)
        with torch.no_grad():
            cell.bias_ih.zero_()
            cell.bias_hh.zero_()
            cell.bias_hh[H : 2 * H] = bias_f  # gates are stacked i, f, g, o
            cell.bias_hh[:H] = -bias_f
    return model


def log_norms(norms: Tensor) -> Tensor:
    """(K, B) norms -> (K,) mean log norm over the sequences (a geometric mean)."""
    return norms.log().mean(dim=1)


def rate_per_step(logn: Tensor) -> float:
    """Least-squares slope of log ||J(k)|| against k: the per-step growth (> 0) or decay (< 0) rate."""
    k = torch.arange(1, len(logn) + 1, dtype=torch.float64)
    return (((k - k.mean()) * (logn - logn.mean())).sum() / ((k - k.mean()) ** 2).sum()).item()


def crossing(xs: list[float], ys: list[float]) -> float | None:
    """The first x where ys crosses 0, linearly interpolated; None if it never does."""
    for (x0, y0), (x1, y1) in zip(zip(xs, ys), zip(xs[1:], ys[1:])):
        if y0 <= 0 < y1 or y0 >= 0 > y1:
            return x0 + (x1 - x0) * (-y0) / (y1 - y0)
    return None


def run(quick: bool = False, seed: int = 0, progress=None) -> Report:
    with one_thread():
        return _run(quick, seed, progress)


def seed_curves(seed: int, n_seq: int) -> tuple[dict[str, Tensor], Tensor, dict[str, Tensor]]:
    """One seed (the models' initialisation and the sequences): label -> (K,) mean log ||J(k)||, k = 1..K;
    the Transformer's (K+1,) curve from k = 0; and each LSTM's forget gate at zero input, (H,)."""
    K = DISTANCE
    idx = torch.randint(VOCAB, (n_seq, K + 1), generator=torch.Generator().manual_seed(10_000 + seed))  # (B, K+1)
    curves = {f"tanh RNN, ρ = {rho:g}": log_norms(recurrent_jacobian_norms(rnn_with_radius(rho, seed), idx))
              for rho in RADII}
    forget = {}
    for chrono, label in ((False, "LSTM, torch init"), (True, "LSTM, chrono init")):
        model = lstm(seed, chrono)
        curves[label] = log_norms(recurrent_jacobian_norms(model, idx))
        cell = model.cells[0]
        forget[label] = torch.sigmoid(cell.bias_ih + cell.bias_hh)[D_HIDDEN : 2 * D_HIDDEN]  # (H,): the gate at zero input
    torch.manual_seed(seed)
    tf = TransformerLM(TransformerConfig(vocab_size=VOCAB, block_size=K + 1, n_layer=N_LAYER, n_head=N_HEAD,
                                         d_model=D_MODEL)).double()
    tf_logn = log_norms(transformer_jacobian_norms(tf, idx))  # (K+1,), k = 0..K
    curves["Transformer"] = tf_logn[1:]
    return curves, tf_logn, forget


def log10_retention(logn: Tensor) -> float:
    """log10 ||J(K)|| / ||J(1)|| from a (K,) curve of natural-log norms."""
    return (logn[-1] - logn[0]).item() / math.log(10)


def log10_spread(logn: Tensor) -> float:
    """log10 of max / min ||J(k)|| over the curve."""
    return (logn.max() - logn.min()).item() / math.log(10)


def _run(quick: bool, seed: int, progress) -> Report:
    n_seq, n_seeds = (2, 2) if quick else (8, 5)
    seeds = [seed + i for i in range(n_seeds)]
    sweep = [0.5, 1.0, 2.0, 3.0] if quick else [0.5 + 0.25 * i for i in range(11)]
    K = DISTANCE
    report = Report(
        NAME, CLAIMS, quick=quick,
        setup=(
            f"{len(seeds)} seeds {seeds}: each seed draws every model's initialisation and {n_seq} random sequences of "
            f"{K + 1} tokens (vocabulary {VOCAB}); float64, every model at initialisation. tanh RNN: d_embed "
            f"{D_EMBED}, d_hidden {D_HIDDEN}, W_hh = ρ·Q with Q orthogonal, ρ in {list(RADII)} (and a sweep of ρ in "
            f"{[round(r, 2) for r in sweep]} on seed {seed}). LSTM: the same sizes, torch's initialisation and chrono "
            f"initialisation (forget-gate bias log U(1, {K - 1})). Transformer: {N_LAYER} pre-norm blocks, {N_HEAD} "
            f"heads, d_model {D_MODEL}, sinusoidal positions. Measured: ||∂h_T/∂state_t||₂ (spectral norm, exact "
            f"Jacobian by autograd) for T − t = 1 … {K}; state_t is h_t (RNN), (h_t, c_t) (LSTM), the embedding x_t "
            f"(Transformer). Per seed, a geometric mean over its sequences."
        ),
        criterion=(
            f"Over K = {K} steps, log10 retention log10 ||J(K)||/||J(1)|| is below −3 for the tanh RNN at "
            f"ρ = {RADII[0]:g} (vanishes) and above 3 at ρ = {RADII[2]:g} (explodes); the chrono-initialised LSTM's "
            f"lies in (−2, 2); the Transformer's ||J(k)|| varies by less than one order of magnitude over k = 1 … {K} "
            "(constant path length). Each over the seeds' 95% interval."
        ),
    )
    per_seed = []
    for i, s in enumerate(seeds):
        per_seed.append(seed_curves(s, n_seq))
        if progress is not None:
            progress.update(0.7 * (i + 1) / len(seeds), f"seed {s}")
    idx0 = torch.randint(VOCAB, (n_seq, K + 1), generator=torch.Generator().manual_seed(10_000 + seed))
    sweep_logn = {}
    for i, rho in enumerate(sweep):
        sweep_logn[rho] = log_norms(recurrent_jacobian_norms(rnn_with_radius(rho, seed), idx0))
        if progress is not None:
            progress.update(0.7 + 0.3 * (i + 1) / len(sweep), f"RNN ρ={rho:g}")

    labels = list(per_seed[0][0])
    retention = {label: [log10_retention(c[label]) for c, _, _ in per_seed] for label in labels}  # log10, per seed
    tf_spread = [log10_spread(c["Transformer"]) for c, _, _ in per_seed]
    low, high = f"tanh RNN, ρ = {RADII[0]:g}", f"tanh RNN, ρ = {RADII[2]:g}"
    chrono = "LSTM, chrono init"
    report.check("rnn_vanishes", retention[low], seeds)
    report.check("rnn_explodes", retention[high], seeds)
    report.check("lstm_keeps_above", retention[chrono], seeds)
    report.check("lstm_keeps_below", retention[chrono], seeds)
    report.check("transformer_flat", tf_spread, seeds)

    curves = {label: torch.stack([c[label] for c, _, _ in per_seed]).mean(0) for label in labels}  # (K,), over seeds
    tf_logn = torch.stack([t for _, t, _ in per_seed]).mean(0)  # (K+1,)
    forget = {label: statistics.mean(f[label].mean().item() for _, _, f in per_seed) for label in per_seed[0][2]}
    rows = []
    for label, logn in curves.items():
        norms = logn.exp()
        rows.append([label, *[float(f"{norms[k].item():.3g}") for k in (0, 9, 49, K - 1)],  # as the table shows them
                     statistics.mean(retention[label]), rate_per_step(logn)])
        report.number(f"log_norm[{label}]", logn)
    sweep_log_retention = [(sweep_logn[r][K - 1] - sweep_logn[r][0]).item() for r in sweep]
    critical = crossing(sweep, sweep_log_retention)

    report.number("seeds", seeds)
    report.number("distance", K)
    report.number("log10_retention_per_seed", retention)
    report.number("log10_retention_mean", {r[0]: r[5] for r in rows})
    report.number("rate_per_step", {r[0]: r[6] for r in rows})
    report.number("norm_at_1_10_50_K", {r[0]: r[1:5] for r in rows})
    report.number("transformer_log10_spread_per_seed", tf_spread)
    report.number("transformer_norm_k0", math.exp(tf_logn[0].item()))
    report.number("sweep_radii", sweep)
    report.number("sweep_log_retention", sweep_log_retention)
    report.number("critical_radius", critical)
    report.number("lstm_mean_forget_gate_at_bias", forget)

    report.table(["model", "‖J(1)‖", "‖J(10)‖", "‖J(50)‖", f"‖J({K})‖", f"log10 retention ‖J({K})‖/‖J(1)‖",
                  "log-rate per step"], rows,
                 title=f"Gradient norm against distance (geometric means over {len(seeds)} seeds)")
    report.table(["model", *[f"seed {s}" for s in seeds]],
                 [[label, *retention[label]] for label in labels],
                 title=f"log10 retention over {K} steps, per seed")
    report.table(["ρ", f"ln retention over {K} steps", "per-step rate (ln)"],
                 [[r, lr, rate_per_step(sweep_logn[r])] for r, lr in zip(sweep, sweep_log_retention)],
                 title=f"tanh RNN: spectral radius sweep (seed {seed})")
    plot(report, curves, sweep, sweep_log_retention, critical, retention, low, high, tf_spread, len(seeds))
    report.note(
        f"Torch's LSTM initialisation (forget gate ≈ {forget['LSTM, torch init']:.2f}) loses the gradient too (log10 "
        f"retention {statistics.mean(retention['LSTM, torch init']):.1f}): the cell path is multiplied by the forget "
        "gate at every step, so the LSTM keeps a gradient over long distances only where its forget gates sit near 1, "
        "which chrono initialisation starts from and training can learn. At distance 0 the Transformer's norm is "
        f"{math.exp(tf_logn[0].item()):.3g} (the residual path) against {math.exp(tf_logn[1].item()):.3g} at distance 1: "
        "attention at initialisation spreads its weight evenly over the positions, whatever their distance."
    )
    return report


def plot(report: Report, curves, sweep, sweep_log_retention, critical, retention, low, high, tf_spread, n_seeds) -> None:
    K = DISTANCE

    def draw_distance():
        fig, ax = plt.subplots(figsize=(6.5, 4.2), layout="constrained")
        k = range(1, K + 1)
        for label, logn in curves.items():
            shown = say(label, label.replace(", ", "，").replace(" init", " 初始化"))
            ax.semilogy(k, (logn - logn[0]).exp(), label=shown, lw=2 if label == "Transformer" else 1.5,
                        ls="--" if label.startswith("LSTM") else "-")
        ax.set_xlabel(say("distance T − t (steps)", "距离 T − t（步）"))
        ax.set_ylabel("‖∂h_T/∂state_t‖ / ‖∂h_T/∂state_(T−1)‖")
        ax.set_title(say(f"Gradient norm against distance, at initialisation ({n_seeds} seeds)",
                         f"初始化时梯度范数随距离的变化（{n_seeds} 个种子）"))
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=8)
        return fig

    rnn_low, rnn_high, tf = (statistics.mean(retention[low]), statistics.mean(retention[high]),
                             statistics.mean(tf_spread))
    report.figure("gradient_vs_distance", draw_distance,
                  f"Retention against distance, geometric means over {n_seeds} seeds. "
                  f"The tanh RNN's changes geometrically (ρ = {RADII[0]:g}: 10^{rnn_low:.0f}, "
                  f"ρ = {RADII[2]:g}: 10^{rnn_high:.0f} over {K} steps); the Transformer's "
                  f"stays within a factor 10^{tf:.2f}.",
                  f"保留比例随距离的变化，{n_seeds} 个种子的几何平均。tanh RNN 的保留比例按几何级数变化"
                  f"（{K} 步之后，ρ = {RADII[0]:g} 时为 10^{rnn_low:.0f}，ρ = {RADII[2]:g} 时为 10^{rnn_high:.0f}）；"
                  f"Transformer 的保留比例始终在 10^{tf:.2f} 倍的范围之内。")

    def draw_sweep():
        fig, ax = plt.subplots(figsize=(5.5, 4), layout="constrained")
        ax.plot(sweep, [v / math.log(10) for v in sweep_log_retention], "o-")
        ax.axhline(0, color="k", lw=0.8)
        ax.axhline(math.log10(VANISH), color="tab:blue", ls=":",
                   label=say(f"vanished ({VANISH:g})", f"消失（{VANISH:g}）"))
        ax.axhline(math.log10(EXPLODE), color="tab:red", ls=":",
                   label=say(f"exploded ({EXPLODE:g})", f"爆炸（{EXPLODE:g}）"))
        ax.set_xlabel(say("spectral radius ρ of W_hh", "W_hh 的谱半径 ρ"))
        ax.set_ylabel(say(f"log10 retention over {K} steps", f"{K} 步之后保留比例的 log10"))
        ax.set_title(say(f"tanh RNN: retention over {K} steps against ρ", f"tanh RNN：{K} 步之后的保留比例随 ρ 的变化"))
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
        return fig

    report.figure("radius_sweep", draw_sweep, "log10 ‖J(K)‖/‖J(1)‖ against ρ"
                  + (f"; it crosses 0 near ρ ≈ {critical:.2f}, above 1 because tanh' < 1 damps every step." if critical else "."),
                  "log10 ‖J(K)‖/‖J(1)‖ 随 ρ 的变化"
                  + (f"；它在 ρ ≈ {critical:.2f} 附近穿过 0；这个位置高于 1，是因为 tanh' < 1 让每一步都有衰减。"
                     if critical else "。"))
