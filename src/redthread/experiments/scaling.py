"""Claim C7: the variance of q·k grows with d_k, pushing softmax towards one-hot and its gradients
towards zero; scaling the scores by 1/sqrt(d_k) restores trainability.

Reference: Vaswani et al. 2017, "Attention Is All You Need", section 3.2.1, eq. 1 and footnote 4:
if the components of q and k are independent with mean 0 and variance 1, q·k = sum_i q_i k_i has
mean 0 and variance d_k.

The claim in three parts, each decided over seeds (`experiments/criteria.py`, section "scaling"):
1. Variance. q, k ~ N(0, I_{d_k}) for d_k in D_K, N_VAR draws per seed: the largest deviation of
   Var(q·k) / d_k from 1, against four standard errors of a sample variance.
2. Saturation. One query against S_KEYS keys, all N(0, I): the softmax of the scores with and
   without the scale. Per draw its entropy, its largest weight, and the Frobenius norm of its
   Jacobian d softmax / d scores = diag(p) - p p^T (by autograd), the factor every gradient that
   reaches q and k passes through. The thresholds are the half-way points between the two
   distributions the claim names: uniform (largest weight 1/S, Jacobian norm sqrt(S - 1)/S) and
   one-hot (1 and 0).
3. Trainability. A one-layer Transformer with one head of d_k = d_model (sinusoidal positions) on
   a recall task with a known Bayes limit (`RecallSource`: s_t = s_{t-2} with probability 0.9,
   else uniform over 16 symbols), with and without the scale from the same initial weights. The
   query and key projections start with variance 1/d_model, so q and k have unit variance at
   initialisation as the paper's argument assumes (after a pre-norm LayerNorm the inputs have
   unit variance). Each arm gets its own learning rate, tuned on a seed of its own,
   `tuning_seed(seed)`, that no verdict uses: the lowest validation NLL over `GRID`, the grid
   extended past an edge pick (`experiments/tuning.py`); --quick uses one fixed rate instead. Every
   verdict seed is then trained afresh at its arm's rate and scored on a test split that no choice
   saw. The verdict rests on the per-seed gap (unscaled minus scaled test NLL).

The training budget is `BUDGET` steps times `budget`: the runner measures the claim at half, one
and twice it (`BUDGETS`). Parts 1 and 2 train nothing, so they measure the same at every budget.
"""

from __future__ import annotations

import math

import torch
from torch.func import jacrev, vmap

from redthread.data.sequences import SequenceData
from redthread.data.synthetic import RecallSource
from redthread.experiments.criteria import ABOVE, BELOW, Criterion
from redthread.experiments.report import Report
from redthread.experiments.stats import run_seeds, tuning_seed
from redthread.experiments.tuning import Tuned, tune
from redthread.lang import say
from redthread.models.likelihoods import token_nll
from redthread.models.transformer import TransformerConfig, TransformerLM
from redthread.plotting import pyplot
from redthread.train.loop import TrainConfig, evaluate, train
from redthread.viz.record import record_attention

plt = pyplot()

NAME, CLAIMS = "scaling", "C7"

HYPOTHESIS = ("The variance of q·k grows as d_k, so without the 1/√d_k scale the softmax over the scores goes towards "
              "one-hot and its Jacobian, the factor in every gradient to q and k, towards zero; with the scale a "
              "one-layer Transformer trains to a lower test NLL than the same model without it, each arm at its own "
              "tuned learning rate and the same training budget.")

# The pre-registered criteria: each floor is the smallest effect size of interest, with its reason.
S_KEYS_SCALING, N_DRAWS_SCALING = 32, 20000  # keys per softmax, draws of q and k per d_k (experiments/scaling.py)
UNIFORM_JACOBIAN = (S_KEYS_SCALING - 1) ** 0.5 / S_KEYS_SCALING  # ‖diag(p) − p pᵀ‖_F at p uniform over S keys
CRITERIA: dict[str, Criterion] = {
    "variance": Criterion(
        "C7", "variance", "largest |Var(q·k) / d_k − 1| over d_k ∈ {4, …, 1024}, q, k ~ N(0, I), 20000 draws per seed",
        4 * (3.5 / N_DRAWS_SCALING) ** 0.5, BELOW,
        "four standard errors of a sample variance: for Gaussian q, k, Var((q·k)²) = 2d_k² + 6d_k, so Var(q·k) / d_k "
        "from N = 20000 draws has standard error √((2 + 6/d_k) / N) ≤ 0.0132 (at d_k = 4); a larger deviation means "
        "Var(q·k) ≠ d_k"),
    "one_hot": Criterion(
        "C7", "saturation", "mean largest softmax weight over 32 keys without the scale, d_k = 1024",
        (1 + 1 / S_KEYS_SCALING) / 2, ABOVE,
        "half-way between the uniform softmax's largest weight (1/32) and one-hot (1): closer to one-hot"),
    "jacobian_unscaled": Criterion(
        "C7", "saturation", "mean ‖∂softmax/∂scores‖_F without the scale, d_k = 1024",
        UNIFORM_JACOBIAN / 2, BELOW,
        "half the uniform softmax's Jacobian norm √(S − 1)/S = 0.174 (S = 32); a one-hot softmax's is 0: closer to "
        "a vanished gradient than to the uniform's"),
    "jacobian_scaled": Criterion(
        "C7", "saturation", "mean ‖∂softmax/∂scores‖_F with the scale 1/√d_k, d_k = 1024",
        UNIFORM_JACOBIAN / 2, ABOVE,
        "the same half-way point between one-hot (0) and uniform (0.174): with the scale the gradient through the "
        "softmax stays nearer the uniform's"),
    "scaled_trains": Criterion(
        "C7", "trainability", "fraction of the gap from log 16 (no attention) to the Bayes limit the scaled model "
        "closes on the test split", 0.5, ABOVE,
        "half-way between the best model without attention (0) and the Bayes limit (1): the scaled model is trainable"),
    "gap": Criterion(
        "C7", "trainability", "test NLL without the scale minus with, each arm at its own learning rate picked on "
        "validation, nats/token", 0.1, ABOVE,
        "5% of the gap the task offers, log 16 (no attention) minus the Bayes limit (about 0.84): 0.05 x 1.93 = 0.1 "
        "nats; a smaller gain would not be the scale 'restoring trainability'"),
}
D_K = [4, 16, 64, 256, 1024]
S_KEYS = 32  # keys per softmax in part 2 (criteria.py's thresholds assume it)
N_VAR = 20000  # draws per seed and d_k in part 1 (the variance threshold assumes it)
LENGTH, DISTANCE, VOCAB = 16, 2, 16
N_TRAIN, N_VAL, N_TEST = 2000, 200, 500  # sequences: training, validation (picks the rate), test (the verdict)
TRAIN = {"batch_size": 32, "warmup_iters": 20, "weight_decay": 0.1}
ARMS = {"scaled": True, "unscaled": False}
GRID = {"lr": (1e-4, 3e-4, 1e-3, 3e-3)}  # per arm, on the set's tuning seed; extends past an edge pick
QUICK_LR = 3e-3  # --quick: this rate for both arms, no sweep
BUDGET = {"steps": 300, "quick_steps": 80}  # AdamW steps per training run, at budget 1
BUDGETS = (0.5, 1.0, 2.0)  # the runner measures the claim at half, one and twice the training budget


def training_steps(quick: bool, budget: float) -> int:
    """AdamW steps per training run: `budget` times BUDGET's steps (its quick steps with --quick), rounded, at least one."""
    return max(1, round(BUDGET["quick_steps" if quick else "steps"] * budget))


def run(quick: bool = False, seed: int = 0, progress=None, budget: float = 1.0) -> Report:
    d_model, steps = (64 if quick else 256), training_steps(quick, budget)
    n_softmax = 500 if quick else 2000  # draws per seed and d_k in part 2
    seeds = run_seeds(seed, quick)
    lr_text = (f"{QUICK_LR} for both arms (quick run: no sweep)" if quick else
               f"tuned per arm on seed {tuning_seed(seed)}, which no verdict uses: the lowest validation NLL over "
               f"{list(GRID['lr'])}, the grid extended past an edge pick (at most twice)")
    report = Report(
        NAME, CLAIMS, quick=quick,
        setup=(
            f"Seeds {seeds}. (1) Variance: {N_VAR} draws of q, k ~ N(0, I) per d_k in {D_K} and seed (float64). "
            f"(2) Saturation: {n_softmax} draws per d_k and seed of one query and {S_KEYS} keys, all N(0, I): softmax of "
            "q·k_j with and without 1/√d_k; entropy, largest weight, and the Frobenius norm of the softmax's Jacobian by "
            f"autograd. (3) Trainability: a 1-layer, 1-head Transformer, d_k = d_model = {d_model}, d_ff {d_model}, "
            f"sinusoidal positions, on RecallSource (s_t = s_(t-{DISTANCE}) with p 0.9, else uniform over {VOCAB} "
            f"symbols; {N_TRAIN} training, {N_VAL} validation and {N_TEST} test sequences of {LENGTH} per seed); AdamW, "
            f"{steps} steps of batch {TRAIN['batch_size']} (training budget {budget:g} × "
            f"{BUDGET['quick_steps' if quick else 'steps']} steps), cosine decay to a tenth, q and k projections "
            "initialised so that q and k have unit variance; with and without the scale from the same initial "
            f"weights. Learning rate: {lr_text}. Every verdict seed is trained afresh at its arm's rate and scored on "
            "its test split. Parts 1 and 2 train nothing: they measure the same at every training budget."
        ),
        criterion=(
            HYPOTHESIS + " Variance: the largest |Var(q·k)/d_k − 1| over d_k stays within four standard errors of a "
            f"sample variance. Saturation, at d_k = {D_K[-1]}: without the scale the mean largest weight is closer to "
            "one-hot than to uniform and the mean Jacobian norm closer to 0 than to the uniform softmax's; with the "
            "scale the Jacobian norm stays closer to the uniform's. Trainability: the scaled model closes more than "
            f"half the gap from log {VOCAB} (no attention) to the Bayes limit on the test split, and the unscaled "
            f"model's test NLL is higher by more than {CRITERIA['gap'].floor:g} nats (per seed, each arm at its own "
            "learning rate). Every check: the 95% t-interval over the seeds against the threshold in the Checks table."
        ),
    )
    variance = [_variance(N_VAR, s) for s in seeds]
    soft = [_softmax(n_softmax, s) for s in seeds]
    source = RecallSource(distance=DISTANCE, p=0.9, vocab_size=VOCAB)
    if quick:
        tuned, picked = {}, {arm: QUICK_LR for arm in ARMS}
    else:
        tuned = {arm: _tune(arm, tuning_seed(seed), d_model, steps, source, progress) for arm in ARMS}
        picked = {arm: report.tuned(f"lr, {_LABEL[arm]} scale", t) for arm, t in tuned.items()}
    runs = _train_seeds(picked, seeds, d_model, steps, source, progress)
    _variance_part(report, variance, seeds)
    _saturation_part(report, soft, seeds)
    _trainability_part(report, runs, picked, tuned, seeds)
    report.figure("variance", lambda: _plot_variance(variance),
                  "Var(q·k) grows as d_k; divided by √d_k it stays at 1 (mean over seeds).",
                  "Var(q·k) 随 d_k 线性增长；除以 √d_k 之后保持在 1（各种子的平均）。")
    report.figure("softmax", lambda: _plot_softmax(soft),
                  f"Without the scale the softmax over {S_KEYS} keys goes one-hot as d_k "
                  "grows and its Jacobian, the factor in every gradient to q and k, vanishes; with the scale nothing "
                  "changes (mean over seeds; the dotted lines are the half-way thresholds).",
                  f"不缩放时，{S_KEYS} 个键上的 softmax 随 d_k 增大而趋向独热，它的雅可比矩阵"
                  "（流向 q 和 k 的每个梯度里都有的因子）随之趋于零；缩放之后这些都不随 d_k 变化"
                  "（各种子的平均；点线是中点处的阈值）。")
    report.figure("training", lambda: _plot_training(runs),
                  f"Training loss (mean over 10 steps), d_k = {d_model}, with and "
                  "without the scale, each at its own learning rate; the dotted line is the Bayes limit.",
                  f"训练损失（每 10 步的平均），d_k = {d_model}，缩放与不缩放，各自用自己的学习率；点线是贝叶斯极限。")
    return report


def _variance_part(report: Report, variance: list[dict], seeds: list[int]) -> None:
    worst = [max(abs(v / d - 1) for v, d in zip(var["var_unscaled"], D_K)) for var in variance]
    report.check("variance", worst, seeds)
    mean = {key: [sum(v[key][i] for v in variance) / len(variance) for i in range(len(D_K))]
            for key in ("var_unscaled", "var_scaled")}
    report.number("d_k", D_K)
    report.number("var_unscaled", mean["var_unscaled"])
    report.number("var_scaled", mean["var_scaled"])
    report.number("var_worst_deviation", worst)
    report.table(["d_k", "Var(q·k) measured", "theory d_k", "ratio", "Var(q·k/√d_k)"],
                 [[d, v, d, v / d, s] for d, v, s in zip(D_K, mean["var_unscaled"], mean["var_scaled"])],
                 title="Variance of the score (mean over seeds)")


def _saturation_part(report: Report, soft: list[dict], seeds: list[int]) -> None:
    report.check("one_hot", [s["max_weight_unscaled"][-1] for s in soft], seeds)
    report.check("jacobian_unscaled", [s["jacobian_unscaled"][-1] for s in soft], seeds)
    report.check("jacobian_scaled", [s["jacobian_scaled"][-1] for s in soft], seeds)
    keys = [f"{k}_{m}" for k in ("entropy", "max_weight", "jacobian", "jacobian_median") for m in ("unscaled", "scaled")]
    mean = {key: [sum(s[key][i] for s in soft) / len(soft) for i in range(len(D_K))] for key in keys}
    for key in keys:
        report.number(key, mean[key])
        report.number(f"{key}_per_seed", {f"seed{s}": v[key] for s, v in zip(seeds, soft)})
    log_s = math.log(S_KEYS)
    report.table(["d_k", "entropy, unscaled", "entropy, scaled", "max weight, unscaled", "max weight, scaled",
                  "Jacobian norm, unscaled", "Jacobian norm, scaled", "median Jacobian norm, unscaled",
                  "median Jacobian norm, scaled"],
                 [[d, *(mean[k][i] for k in keys)] for i, d in enumerate(D_K)],
                 title=f"Softmax over {S_KEYS} keys (log {S_KEYS} = {log_s:.3f}; mean over seeds)")
    jac = mean["jacobian_unscaled"]
    slope = math.log(jac[-1] / jac[-2]) / math.log(D_K[-1] / D_K[-2])
    report.number("jacobian_unscaled_slope", slope)
    report.note(f"Between d_k = {D_K[-2]} and {D_K[-1]} the mean unscaled Jacobian norm falls as d_k^{slope:.2f}. The mean "
                "is held up by the draws whose two largest scores nearly tie (their softmax is not one-hot): the gap "
                "between them scales as √d_k, so the mean norm falls only about as 1/√d_k, while the median draw's norm "
                f"falls from {mean['jacobian_median_unscaled'][0]:.3f} to {mean['jacobian_median_unscaled'][-1]:.1e}.")


def _trainability_part(report: Report, runs: list[dict], picked: dict, tuned: dict[str, Tuned], seeds: list[int]) -> None:
    by = {(r["arm"], r["seed"]): r for r in runs}
    report.check("scaled_trains", [by["scaled", s]["closed"] for s in seeds], seeds)
    gaps = [by["unscaled", s]["test_nll"] - by["scaled", s]["test_nll"] for s in seeds]
    report.check("gap", gaps, seeds)
    report.number("learning_rates", list(GRID["lr"]))
    report.number("picked_lr", picked)
    report.number("sweep_val_nll", {arm: {str(lr): v for lr, v in zip(t.grid, t.scores)} for arm, t in tuned.items()})
    report.number("nll_gap", gaps)
    for key in ("test_nll", "bayes", "excess", "closed", "q_var", "init_max_weight", "copy_weight"):
        report.number(f"train_{key}", {f"{r['arm']}_seed{r['seed']}": r[key] for r in runs})
    if tuned:  # one row per rate scored: the grids differ where one was extended past an edge
        report.table(["scale", "lr", "validation NLL", "picked"],
                     [[_LABEL[arm], lr, v, "yes" if lr == t.pick else ""] for arm, t in tuned.items()
                      for lr, v in zip(t.grid, t.scores)],
                     title="Learning-rate tuning on the tuning seed, which no verdict uses (validation NLL, nats/token)")
    report.table(["scale", "seed", "lr", "Var(q) at init", "largest attention weight at init",
                  "attention on the copied token after training", "test NLL", "Bayes limit", "excess", "gap closed"],
                 [[_LABEL[r["arm"]], r["seed"], picked[r["arm"]], r["q_var"], r["init_max_weight"], r["copy_weight"],
                   r["test_nll"], r["bayes"], r["excess"], r["closed"]] for r in runs],
                 title="Training, each arm at its picked learning rate")
    edge = [arm for arm, t in tuned.items() if t.edge]
    if edge:
        report.note(f"The picked learning rate is still on the edge of the extended grid for: {', '.join(edge)}; "
                    "this run's measured verdicts are inconclusive.")


_LABEL = {"scaled": "1/√d_k", "unscaled": "none"}


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
    g = torch.Generator().manual_seed(seed + 10_000)  # draws of their own, not those of _variance
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


def _splits(source: RecallSource, seed: int) -> tuple[SequenceData, SequenceData]:
    """Training + validation splits (the rate is picked on validation), and training + test (the verdict's split)."""
    seqs = source.sample(N_TRAIN + N_VAL + N_TEST, LENGTH, seed)  # (N, L)
    train_, val, test = seqs[:N_TRAIN], seqs[N_TRAIN : N_TRAIN + N_VAL], seqs[N_TRAIN + N_VAL :]
    vocab, boundary = source.vocab_size + 1, source.vocab_size
    return (SequenceData(train_, val, vocab_size=vocab, boundary=boundary, end_token=False),
            SequenceData(train_, test, vocab_size=vocab, boundary=boundary, end_token=False))


def _train_one(arm: str, lr: float, seed: int, d_model: int, steps: int, source: RecallSource) -> dict:
    """Train one arm at one rate on seed's data; its validation and test NLL and what the probes see."""
    data, test = _splits(source, seed)
    cfg = TransformerConfig(vocab_size=data.vocab_size, block_size=LENGTH, n_layer=1, n_head=1, d_model=d_model,
                            d_ff=d_model, pos="sinusoidal", scale_attention=ARMS[arm])
    torch.manual_seed(seed)  # the same initial weights with and without the scale
    model = TransformerLM(cfg)
    _unit_variance_qk(model)
    probe = data.batch("val", 64, torch.Generator().manual_seed(seed))[0]  # (64, T): inputs to look at the model
    q_var, init_max, _ = _probe(model, probe)
    curve = _LossCurve()
    tc = TrainConfig(max_iters=steps, lr=lr, min_lr=lr / 10, eval_interval=steps, eval_batches=1, log_interval=steps,
                     seed=seed, device="cpu", **TRAIN)
    train(model, data, tc, objective=curve, progress=False)
    val_nll = evaluate(model, data, "val", batch_size=100)["nll"]
    test_nll = evaluate(model, test, "val", batch_size=100)["nll"]
    bayes = source.bayes_nll(test.sequences("val"))
    return {"arm": arm, "seed": seed, "lr": lr, "losses": curve.losses, "val_nll": val_nll, "test_nll": test_nll,
            "bayes": bayes, "excess": test_nll - bayes, "closed": (math.log(VOCAB) - test_nll) / (math.log(VOCAB) - bayes),
            "q_var": q_var, "init_max_weight": init_max, "copy_weight": _probe(model, probe)[2]}


def _tune(arm: str, seed: int, d_model: int, steps: int, source: RecallSource, progress) -> Tuned:
    """The arm's learning rate: the lowest validation NLL on `seed` (a tuning seed, which no verdict uses) over GRID,
    the grid extended past an edge pick."""
    def val_nll(lr: float) -> float:
        if progress is not None:
            progress.update(0.05, f"tuning: {arm}, lr {lr:g}")
        return _train_one(arm, lr, seed, d_model, steps, source)["val_nll"]

    return tune(val_nll, GRID["lr"])


def _train_seeds(picked: dict[str, float], seeds: list[int], d_model: int, steps: int, source: RecallSource,
                 progress) -> list[dict]:
    """Train each arm afresh on every verdict seed at its picked rate: one run per seed and arm, in that order."""
    runs = []
    for s in seeds:
        for arm in ARMS:
            runs.append(_train_one(arm, picked[arm], s, d_model, steps, source))
            if progress is not None:
                progress.update(0.1 + 0.9 * len(runs) / (len(seeds) * len(ARMS)), f"{arm}, seed {s}")
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


def _plot_variance(variance: list[dict]) -> plt.Figure:
    fig, ax = plt.subplots(figsize=(5.5, 4), layout="constrained")
    mean = {k: [sum(v[k][i] for v in variance) / len(variance) for i in range(len(D_K))] for k in ("var_unscaled", "var_scaled")}
    ax.loglog(D_K, mean["var_unscaled"], "o-", label=say("Var(q·k), measured", "Var(q·k)，测量值"))
    ax.loglog(D_K, D_K, "k--", lw=1, label=say("theory d_k", "理论值 d_k"))
    ax.loglog(D_K, mean["var_scaled"], "s-", label=say("Var(q·k / √d_k), measured", "Var(q·k / √d_k)，测量值"))
    ax.set_xlabel("d_k")
    ax.set_ylabel(say("variance of the score", "注意力分数的方差"))
    ax.set_title("q, k ~ N(0, I)")
    ax.legend()
    return fig


def _plot_softmax(soft: list[dict]) -> plt.Figure:
    mean = {k: [sum(s[k][i] for s in soft) / len(soft) for i in range(len(D_K))] for k in soft[0]}
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.8), layout="constrained")
    panels = (("entropy", say("mean entropy (nats)", "平均熵（奈特）")), ("max_weight", say("mean largest weight", "最大权重的均值")),
              ("jacobian", say("‖∂softmax/∂scores‖_F", "‖∂softmax/∂分数‖_F")))

    mean_word = say(", mean", "，均值")
    for ax, (key, label) in zip(axes, panels):
        plot = ax.loglog if key == "jacobian" else ax.semilogx
        plot(D_K, mean[f"{key}_unscaled"], "o-",
             label=say("q·k (no scale)", "q·k（不缩放）") + (mean_word if key == "jacobian" else ""))
        plot(D_K, mean[f"{key}_scaled"], "s-", label="q·k / √d_k" + (mean_word if key == "jacobian" else ""))
        if key == "jacobian":
            plot(D_K, mean["jacobian_median_unscaled"], "o:", color="C0",
                 label=say("q·k (no scale), median", "q·k（不缩放），中位数"))
        ax.set_xlabel("d_k")
        ax.set_ylabel(label)
        ax.legend(fontsize=8)
    axes[0].axhline(math.log(S_KEYS), color="k", ls=":", lw=1)
    axes[1].axhline((1 + 1 / S_KEYS) / 2, color="0.5", ls=":", lw=1)
    axes[2].axhline((S_KEYS - 1) ** 0.5 / S_KEYS / 2, color="0.5", ls=":", lw=1)
    axes[0].set_title(say(f"entropy (uniform: log {S_KEYS})", f"熵（均匀分布：log {S_KEYS}）"))
    axes[1].set_title(say("towards one-hot", "趋向独热"))
    axes[2].set_title(say("gradient through the softmax", "穿过 softmax 的梯度"))
    return fig


def _plot_training(runs: list[dict]) -> plt.Figure:
    fig, ax = plt.subplots(figsize=(6.5, 4.2), layout="constrained")
    for r in runs:
        losses = torch.tensor(r["losses"])
        smooth = losses[: len(losses) // 10 * 10].view(-1, 10).mean(-1)  # (steps / 10,)
        steps = torch.arange(len(smooth)) * 10 + 10
        scaled = ARMS[r["arm"]]
        ax.plot(steps, smooth, "-" if scaled else "--", color="C0" if scaled else "C1", lw=1,
                label=say(f"{'1/√d_k' if scaled else 'no scale'}, lr {r['lr']:g}",
                          f"{'1/√d_k' if scaled else '不缩放'}，学习率 {r['lr']:g}") if r is runs[0] or r is runs[1] else None)
    ax.axhline(sum(r["bayes"] for r in runs) / len(runs), color="k", ls=":", lw=1,
               label=say("Bayes limit (mean)", "贝叶斯极限（均值）"))
    ax.axhline(math.log(VOCAB), color="0.6", ls=":", lw=1, label=say(f"log {VOCAB} (no attention)", f"log {VOCAB}（无注意力）"))
    ax.set_xlabel(say("step", "训练步"))
    ax.set_ylabel(say("training NLL (nats/token)", "训练集 NLL（奈特/词元）"))
    ax.set_title(say("unit-variance q, k; one line per seed", "方差为 1 的 q、k；每个种子一条线"))

    ax.legend(fontsize=8)
    return fig
