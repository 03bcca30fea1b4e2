"""Claim C7: the variance of q·k grows with d_k, pushing softmax towards one-hot and its gradients
towards zero; scaling the scores by 1/sqrt(d_k) restores trainability.

Reference: Vaswani et al. 2017, "Attention Is All You Need", section 3.2.1, eq. 1 and footnote 4:
if the components of q and k are independent with mean 0 and variance 1, q·k = sum_i q_i k_i has
mean 0 and variance d_k.

Set-up, in three parts:
1. Variance. q, k ~ N(0, I_{d_k}) for d_k in D_K; the sample variance of q·k against the theory d_k,
   and of q·k / sqrt(d_k) against 1.
2. Softmax. One query against S_KEYS keys, all N(0, I): the softmax of the scores with and without
   the scale. Per draw: its entropy, its largest weight, and the Frobenius norm of its Jacobian
   d softmax / d scores = diag(p) - p p^T (by autograd), the factor every gradient that reaches
   q and k passes through. Unscaled scores have standard deviation sqrt(d_k), so as d_k grows the
   top score leaves the others behind: the weights go one-hot and the Jacobian goes to zero.
3. Training. A one-layer Transformer with one head of d_k = d_model = 256 (sinusoidal positions)
   on a recall task with a known Bayes limit (`RecallSource`: s_t = s_{t-2} with probability 0.9,
   else uniform over 16 symbols), trained with and without the scale from the same initial
   weights. The query and key projections start with variance 1/d_model, so q and k have unit
   variance at initialisation as the paper's argument assumes (after a pre-norm LayerNorm the
   inputs have unit variance). The library's default GPT-2 initialisation (std 0.02) gives q and
   k of variance ~0.1, so unscaled scores start with variance ~d_k / 100, not d_k; full mode
   trains that pair too, to show what the scale does outside the claim's premise (no check).

Why this criterion: the variance must match d_k within sampling error (10 %, more than three
standard errors at the smallest sample). Saturation is judged where the claim says it happens, at
the largest d_k: a largest weight above 0.9 and an entropy under a fifth of the uniform's log S,
while the scaled softmax stays near-uniform at every d_k; the unscaled Jacobian must fall as d_k
grows and end under a quarter of the scaled one. Trainability: the scaled model must close at least
75 % of the gap between the best model without attention (uniform, log 16) and the Bayes limit, and
end at least 0.2 nats/token below the unscaled model.
"""

from __future__ import annotations

import math
from itertools import pairwise

import matplotlib.pyplot as plt
import torch
from torch.func import jacrev, vmap

from redthread.data.synthetic import RecallSource
from redthread.experiments.report import Report
from redthread.models.likelihoods import token_nll
from redthread.models.transformer import TransformerConfig, TransformerLM
from redthread.train.loop import TrainConfig, evaluate, train
from redthread.viz.record import record_attention

NAME, CLAIMS = "scaling", "C7"
D_K = [4, 16, 64, 256, 1024]
S_KEYS = 32  # keys per softmax in part 2
VAR_TOL = 0.10  # |Var(q·k) / d_k - 1|
ONE_HOT = 0.9  # unscaled largest weight at the largest d_k, at least
COLLAPSE = 0.2  # unscaled entropy at the largest d_k, at most this fraction of log S
NEAR_UNIFORM = 0.75  # scaled entropy at every d_k, at least this fraction of log S
JACOBIAN_RATIO = 0.25  # unscaled / scaled Jacobian norm at the largest d_k, at most
CLOSED = 0.75  # fraction of the gap uniform -> Bayes the scaled model closes, at least
MARGIN = 0.2  # nats/token the unscaled model ends above the scaled one, at least
D_MODEL, LENGTH, DISTANCE, VOCAB = 256, 16, 2, 16
TRAIN = {"batch_size": 32, "lr": 3e-3, "min_lr": 3e-4, "warmup_iters": 20, "weight_decay": 0.1}


def run(quick: bool = False, seed: int = 0, progress=None) -> Report:
    n_var, n_softmax = (4000, 2000) if quick else (20000, 2000)  # the softmax draws are cheap: as many in both
    steps = 150 if quick else 300
    seeds = [seed] if quick else [seed, seed + 1]
    inits = ["unit"] if quick else ["unit", "gpt2"]
    report = Report(
        NAME, CLAIMS, quick=quick,
        setup=(
            f"(1) {n_var} draws of q, k ~ N(0, I) for d_k in {D_K} (float64). (2) {n_softmax} draws of one query and "
            f"{S_KEYS} keys, all N(0, I), per d_k: softmax of q·k_j with and without 1/√d_k; entropy, largest weight, and "
            f"the Frobenius norm of the softmax's Jacobian by autograd. (3) A 1-layer, 1-head Transformer, d_k = d_model = "
            f"{D_MODEL}, d_ff {D_MODEL}, sinusoidal positions, on RecallSource (s_t = s_(t-{DISTANCE}) with p 0.9, else "
            f"uniform over {VOCAB} symbols; 2000 training and 200 validation sequences of {LENGTH}); AdamW, {steps} steps of "
            f"batch {TRAIN['batch_size']}, lr {TRAIN['lr']}, seeds {seeds}; with and without the scale from the same "
            "initial weights; q and k projections initialised so that q and k have unit variance"
            + ("" if quick else ", and again with the library's GPT-2 initialisation (std 0.02)") + "."
        ),
        criterion=(
            f"(1) |Var(q·k) / d_k − 1| ≤ {VAR_TOL} at every d_k. (2) At d_k = {D_K[-1]} without the scale: mean largest "
            f"weight ≥ {ONE_HOT} and mean entropy ≤ {COLLAPSE} × log {S_KEYS}; with the scale, mean entropy ≥ "
            f"{NEAR_UNIFORM} × log {S_KEYS} at every d_k. (3) The unscaled Jacobian norm falls at every step of d_k and ends "
            f"≤ {JACOBIAN_RATIO} × the scaled one. (4) With unit-variance q, k, for every seed: the scaled model closes ≥ "
            f"{CLOSED} of the gap from log {VOCAB} (no attention) to the Bayes limit, and the unscaled model's validation NLL "
            f"is ≥ {MARGIN} nats/token higher."
        ),
    )
    variance = _variance(n_var, seed)
    soft = _softmax(n_softmax, seed)
    if progress is not None:
        progress.update(0.1, "training")
    runs = _train_all(seeds, inits, steps, progress)

    report.number("d_k", D_K)
    for key in ("var_unscaled", "var_scaled"):
        report.number(key, variance[key])
    for key in ("entropy", "max_weight", "jacobian", "jacobian_median"):
        for mode in ("unscaled", "scaled"):
            report.number(f"{key}_{mode}", soft[f"{key}_{mode}"])
    log_s = math.log(S_KEYS)
    ratios = [v / d for v, d in zip(variance["var_unscaled"], D_K)]
    worst_var = max(abs(r - 1) for r in ratios)
    report.decide(worst_var <= VAR_TOL, f"Var(q·k)/d_k within 1 ± {VAR_TOL} at every d_k", f"largest deviation {worst_var:.3f}")
    top, ent = soft["max_weight_unscaled"][-1], soft["entropy_unscaled"][-1]
    ent_scaled = min(soft["entropy_scaled"])
    report.decide(top >= ONE_HOT and ent <= COLLAPSE * log_s and ent_scaled >= NEAR_UNIFORM * log_s,
                  f"unscaled at d_k={D_K[-1]}: max weight ≥ {ONE_HOT}, entropy ≤ {COLLAPSE * log_s:.3f}; "
                  f"scaled entropy ≥ {NEAR_UNIFORM * log_s:.3f}",
                  f"max weight {top:.3f}, entropy {ent:.3f}; lowest scaled entropy {ent_scaled:.3f}")
    jac = soft["jacobian_unscaled"]
    falls = all(b < a for a, b in pairwise(jac))
    jac_ratio = jac[-1] / soft["jacobian_scaled"][-1]
    report.decide(falls and jac_ratio <= JACOBIAN_RATIO, f"unscaled Jacobian norm falls with d_k; ratio to scaled ≤ {JACOBIAN_RATIO}",
                  f"{'falls' if falls else 'does not fall'} at every step ({jac[0]:.3f} → {jac[-1]:.4f}); ratio {jac_ratio:.3f}")

    slope = math.log(jac[-1] / jac[-2]) / math.log(D_K[-1] / D_K[-2])
    report.number("jacobian_unscaled_slope", slope)
    unit = [r for r in runs if r["init"] == "unit"]
    closed = min(r["closed"] for r in unit if r["scaled"])
    gaps = [u["val_nll"] - s["val_nll"] for s in unit if s["scaled"] for u in unit
            if not u["scaled"] and u["seed"] == s["seed"]]
    report.decide(closed >= CLOSED and min(gaps) >= MARGIN,
                  f"unit-variance q, k: scaled closes ≥ {CLOSED} of the gap; unscaled ≥ {MARGIN} nats higher",
                  f"scaled closes {closed:.3f} (lowest seed); unscaled higher by {min(gaps):.3f} (smallest)")
    for key in ("val_nll", "excess", "closed", "q_var", "init_max_weight", "copy_weight"):
        report.number(f"train_{key}", {f"{r['init']}_{'scaled' if r['scaled'] else 'unscaled'}_seed{r['seed']}": r[key]
                                       for r in runs})
    report.number("bayes_nll", {f"seed{r['seed']}": r["bayes"] for r in runs})
    report.number("nll_gap_unit", gaps)

    report.table(["d_k", "Var(q·k) measured", "theory d_k", "ratio", "Var(q·k/√d_k)"],
                 [[d, v, d, r, s] for d, v, r, s in zip(D_K, variance["var_unscaled"], ratios, variance["var_scaled"])],
                 title="Variance of the score")
    report.table(["d_k", "entropy, unscaled", "entropy, scaled", "max weight, unscaled", "max weight, scaled",
                  "Jacobian norm, unscaled", "Jacobian norm, scaled", "median Jacobian norm, unscaled",
                  "median Jacobian norm, scaled"],
                 [[d, *(soft[f"{k}_{m}"][i] for k in ("entropy", "max_weight", "jacobian", "jacobian_median")
                        for m in ("unscaled", "scaled"))]
                  for i, d in enumerate(D_K)],
                 title=f"Softmax over {S_KEYS} keys (log {S_KEYS} = {log_s:.3f})")
    report.table(["init", "scale", "seed", "Var(q) at init", "largest attention weight at init",
                  "attention on the copied token after training", "val NLL", "Bayes limit", "excess", "gap closed"],
                 [[_INIT_LABEL[r["init"]], "1/√d_k" if r["scaled"] else "none", r["seed"], r["q_var"], r["init_max_weight"],
                   r["copy_weight"], r["val_nll"], r["bayes"], r["excess"], r["closed"]] for r in runs],
                 title=f"Training with d_k = {D_MODEL}")
    report.figure("variance", _plot_variance(variance), "Var(q·k) grows as d_k; divided by √d_k it stays at 1.")
    report.figure("softmax", _plot_softmax(soft), f"Without the scale the softmax over {S_KEYS} keys goes one-hot as d_k grows "
                  "and its Jacobian, the factor in every gradient to q and k, vanishes; with the scale nothing changes.")
    report.figure("training", _plot_training(runs, inits), f"Training loss (mean over 10 steps), d_k = {D_MODEL}, with and "
                  "without the scale; the dotted line is the Bayes limit.")
    report.note(f"Between d_k = {D_K[-2]} and {D_K[-1]} the mean unscaled Jacobian norm falls as d_k^{slope:.2f}. The mean is "
                "held up by the draws whose two largest scores nearly tie (their softmax is not one-hot): the gap between "
                "them scales as √d_k, so the mean norm falls only about as 1/√d_k, while the median draw's norm falls from "
                f"{soft['jacobian_median_unscaled'][0]:.3f} to {soft['jacobian_median_unscaled'][-1]:.1e}.")
    if not quick:
        gpt2 = [r for r in runs if r["init"] == "gpt2"]
        gap2 = [u["val_nll"] - s["val_nll"] for s in gpt2 if s["scaled"] for u in gpt2
                if not u["scaled"] and u["seed"] == s["seed"]]
        report.number("nll_gap_gpt2", gap2)
        init_top = [r["init_max_weight"] for r in gpt2 if not r["scaled"]]
        reading = ("so on this task the scale matters even when training does not start saturated" if min(gap2) >= MARGIN
                   else "so starting with small q and k, the scale matters less on this task")
        report.note(f"Outside the claim's premise (GPT-2 initialisation: q variance about {gpt2[0]['q_var']:.2f} instead of 1, "
                    f"the unscaled model's largest attention weight at init {max(init_top):.2f} or less), the unscaled model "
                    f"ends {', '.join(f'{g:+.3f}' for g in gap2)} nats/token from the scaled one (unscaled minus scaled, per "
                    f"seed; with unit-variance q, k: {', '.join(f'{g:+.3f}' for g in gaps)}), {reading}.")
    return report


_INIT_LABEL = {"unit": "unit-variance q, k", "gpt2": "GPT-2 (std 0.02)"}


def _variance(n: int, seed: int) -> dict:
    g = torch.Generator().manual_seed(seed)
    unscaled, scaled = [], []
    for d in D_K:
        q = torch.randn(n, d, generator=g, dtype=torch.float64)  # (N, d_k)
        k = torch.randn(n, d, generator=g, dtype=torch.float64)  # (N, d_k)
        s = (q * k).sum(-1)  # (N,)
        unscaled.append(float(s.var()))
        scaled.append(float((s / math.sqrt(d)).var()))
    return {"var_unscaled": unscaled, "var_scaled": scaled}


def _softmax(n: int, seed: int) -> dict:
    g = torch.Generator().manual_seed(seed + 1)
    jacobian = vmap(jacrev(lambda s: s.softmax(-1)))  # (N, S) -> (N, S, S), d p_i / d s_j per draw
    out = {f"{k}_{m}": [] for k in ("entropy", "max_weight", "jacobian", "jacobian_median") for m in ("unscaled", "scaled")}
    for d in D_K:
        q = torch.randn(n, 1, d, generator=g, dtype=torch.float64)  # (N, 1, d_k)
        k = torch.randn(n, S_KEYS, d, generator=g, dtype=torch.float64)  # (N, S, d_k)
        scores = (q * k).sum(-1)  # (N, S)
        for mode, s in (("unscaled", scores), ("scaled", scores / math.sqrt(d))):
            p = s.softmax(-1)  # (N, S)
            out[f"entropy_{mode}"].append(float(-(p * p.clamp_min(1e-300).log()).sum(-1).mean()))
            out[f"max_weight_{mode}"].append(float(p.max(-1).values.mean()))
            norms = jacobian(s).flatten(1).norm(dim=-1)  # (N,): Frobenius norm per draw
            out[f"jacobian_{mode}"].append(float(norms.mean()))
            out[f"jacobian_median_{mode}"].append(float(norms.median()))
    return out


class _LossCurve:
    """token_nll that keeps each training step's loss (the loop itself logs only every log_interval steps)."""

    def __init__(self):
        self.losses: list[float] = []

    def __call__(self, logits, targets, reduction: str = "mean"):
        loss = token_nll(logits, targets, reduction=reduction)
        if reduction == "mean" and torch.is_grad_enabled():
            self.losses.append(loss.item())
        return loss


def _train_all(seeds: list[int], inits: list[str], steps: int, progress) -> list[dict]:
    source = RecallSource(distance=DISTANCE, p=0.9, vocab_size=VOCAB)
    runs, total = [], len(seeds) * len(inits) * 2
    for s in seeds:
        data = source.data(2000, 200, LENGTH, seed=s)
        bayes = source.bayes_nll(data.sequences("val"))
        probe = data.batch("val", 64, torch.Generator().manual_seed(s))[0]  # (64, T): inputs to look at the initial model
        for init in inits:
            for scaled in (True, False):
                cfg = TransformerConfig(vocab_size=data.vocab_size, block_size=LENGTH, n_layer=1, n_head=1, d_model=D_MODEL,
                                        d_ff=D_MODEL, pos="sinusoidal", scale_attention=scaled)
                torch.manual_seed(s)  # the same initial weights with and without the scale
                model = TransformerLM(cfg)
                if init == "unit":
                    _unit_variance_qk(model)
                q_var, init_max, _ = _probe(model, probe)
                curve = _LossCurve()
                tc = TrainConfig(max_iters=steps, eval_interval=steps, eval_batches=1, log_interval=steps, seed=s,
                                 device="cpu", **TRAIN)
                train(model, data, tc, objective=curve, progress=False)
                nll = evaluate(model, data, "val", batch_size=100)["nll"]
                copy = _probe(model, probe)[2]
                runs.append({"init": init, "scaled": scaled, "seed": s, "losses": curve.losses, "val_nll": nll, "bayes": bayes,
                             "excess": nll - bayes, "closed": (math.log(VOCAB) - nll) / (math.log(VOCAB) - bayes),
                             "q_var": q_var, "init_max_weight": init_max, "copy_weight": copy})
                if progress is not None:
                    progress.update(0.1 + 0.9 * len(runs) / total, f"{init}, {'scaled' if scaled else 'unscaled'}, seed {s}")
    return runs


@torch.no_grad()
def _unit_variance_qk(model: TransformerLM) -> None:
    """W_q, W_k ~ N(0, 1/d_model): unit-variance inputs (after LayerNorm) give unit-variance q and k."""
    for block in model.blocks:
        C = block.self_attn.d_model
        block.self_attn.qkv_proj.weight[: 2 * C].normal_(0.0, C**-0.5)  # rows [W_q; W_k] of the packed projection


@torch.no_grad()
def _probe(model: TransformerLM, idx: torch.Tensor) -> tuple[float, float, float]:
    """Var of the query entries; the mean largest attention weight over the second half of the positions;
    the mean weight on the key that holds the token to copy (input t - DISTANCE + 1 holds s_(t - DISTANCE))."""
    block = model.blocks[0]
    h = block.self_attn_res.normed_input(model.embed(idx))  # (B, T, C)
    q = block.self_attn.qkv_proj(h)[..., : block.self_attn.d_model]  # (B, T, C)
    with record_attention(model) as maps:
        model(idx)
    att = maps.decoder[0]  # (B, H, T, T); early rows see few keys, so only the later half is averaged
    rows = torch.arange(DISTANCE, idx.size(1))  # positions whose target can be a copy
    copy = att[:, :, rows, rows - DISTANCE + 1]  # (B, H, T - DISTANCE)
    return float(q.var()), float(att[:, :, idx.size(1) // 2 :].max(-1).values.mean()), float(copy.mean())


def _plot_variance(variance: dict) -> plt.Figure:
    fig, ax = plt.subplots(figsize=(5.5, 4), layout="constrained")
    ax.loglog(D_K, variance["var_unscaled"], "o-", label="Var(q·k), measured")
    ax.loglog(D_K, D_K, "k--", lw=1, label="theory d_k")
    ax.loglog(D_K, variance["var_scaled"], "s-", label="Var(q·k / √d_k), measured")
    ax.set_xlabel("d_k")
    ax.set_ylabel("variance of the score")
    ax.set_title("q, k ~ N(0, I)")
    ax.legend()
    return fig


def _plot_softmax(soft: dict) -> plt.Figure:
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.8), layout="constrained")
    panels = (("entropy", "mean entropy (nats)"), ("max_weight", "mean largest weight"), ("jacobian", "‖∂softmax/∂scores‖_F"))
    for ax, (key, label) in zip(axes, panels):
        plot = ax.loglog if key == "jacobian" else ax.semilogx
        plot(D_K, soft[f"{key}_unscaled"], "o-", label="q·k (no scale)" + (", mean" if key == "jacobian" else ""))
        plot(D_K, soft[f"{key}_scaled"], "s-", label="q·k / √d_k" + (", mean" if key == "jacobian" else ""))
        if key == "jacobian":
            plot(D_K, soft["jacobian_median_unscaled"], "o:", color="C0", label="q·k (no scale), median")
        ax.set_xlabel("d_k")
        ax.set_ylabel(label)
        ax.legend(fontsize=8)
    axes[0].axhline(math.log(S_KEYS), color="k", ls=":", lw=1)
    axes[0].set_title(f"entropy (uniform: log {S_KEYS})")
    axes[1].set_title("towards one-hot")
    axes[2].set_title("gradient through the softmax")
    return fig


def _plot_training(runs: list[dict], inits: list[str]) -> plt.Figure:
    fig, axes = plt.subplots(1, len(inits), figsize=(5.5 * len(inits), 4), layout="constrained", squeeze=False)
    for ax, init in zip(axes[0], inits):
        for r in (r for r in runs if r["init"] == init):
            losses = torch.tensor(r["losses"])
            smooth = losses[: len(losses) // 10 * 10].view(-1, 10).mean(-1)  # (steps / 10,)
            steps = torch.arange(len(smooth)) * 10 + 10
            style = "-" if r["scaled"] else "--"
            color = f"C{2 * r['seed'] % 10 + (0 if r['scaled'] else 1)}"
            ax.plot(steps, smooth, style, color=color,
                    label=f"{'1/√d_k' if r['scaled'] else 'no scale'}, seed {r['seed']} (val {r['val_nll']:.3f})")
        ax.axhline(runs[0]["bayes"], color="k", ls=":", lw=1, label="Bayes limit")
        ax.axhline(math.log(VOCAB), color="0.6", ls=":", lw=1, label=f"log {VOCAB} (no attention)")
        ax.set_xlabel("step")
        ax.set_ylabel("training NLL (nats/token)")
        ax.set_title(_INIT_LABEL[init])
        ax.legend(fontsize=7)
    return fig
