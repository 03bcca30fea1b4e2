"""Claim C11: residual connections and LayerNorm keep deep stacks trainable (gradient flow,
stable input distributions). He et al. 2016 (residual learning); Ba et al. 2016 (LayerNorm);
Xiong et al. 2020 (pre-norm); Dong et al. 2021 (attention without skip connections loses rank
with depth).

The same decoder stack in four variants, built here from the library's `MultiHeadAttention` and
`FeedForward` (the library's `DecoderBlock` always has both parts):

    residual + LayerNorm   x = x + Sublayer(LN(x))     (pre-norm, the library's default)
    residual only          x = x + Sublayer(x)
    LayerNorm only         x = Sublayer(LN(x))
    neither                x = Sublayer(x)

with a final LayerNorm exactly when the variant has LayerNorm. The residual variants start from
the library's GPT-2 initialisation; those without residuals from a variance-preserving one (see
`StackLM`), since GPT-2's small weights would shrink their signal below LayerNorm's epsilon and
decide the outcome by themselves. The data are first-order Markov chains with peaked rows: the
best prediction needs only the current token, so every depth can represent it, and what is tested
is whether training finds it through the stack.

The claim in two parts, each decided over seeds (`experiments/criteria.py`, section "depth"):

Residuals. A deep stack with residual connections and LayerNorm against the same stack without
residual connections (LayerNorm only), each at its own learning rate (picked on validation in a
sweep on the first seed), scored on a test split: the fraction of the unigram-to-Bayes gap the
residual stack closes, and the per-seed gap between the two. The mechanism, at initialisation:
the share of the variance of the last block's output vectors explained by the current token
(`token_identity`). With residual connections the embedding of the token passes up the stream;
without them every attention layer averages the positions' vectors and the token's identity
collapses (a forward collapse of rank; the gradient norms per block are reported beside it, to
tell a collapse apart from a vanishing gradient).

LayerNorm. Pre-norm LayerNorm rescales each sublayer's input to zero mean and unit variance: it matters
when the stream's scale drifts. A regime that stresses it: a deeper and wider residual stack, no
gradient clipping, and larger learning rates in the sweep; residual + LayerNorm against residual
only, each at its own learning rate, the per-seed gap on the test split.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from redthread.data.sequences import SequenceData
from redthread.data.synthetic import MarkovSource
from redthread.errors import RedthreadError
from redthread.experiments.criteria import ABOVE, BELOW, Criterion
from redthread.experiments.report import Report
from redthread.experiments.stats import run_seeds
from redthread.layers.attention import MultiHeadAttention
from redthread.layers.feedforward import FeedForward
from redthread.models.base import LanguageModel
from redthread.models.transformer import Embedding, TransformerConfig, init_weights
from redthread.plotting import pyplot
from redthread.train.loop import TrainConfig, evaluate, train

plt = pyplot()

NAME, CLAIMS = "depth", "C11"

# The pre-registered criteria: each floor is the smallest effect size of interest, with its reason.
CRITERIA: dict[str, Criterion] = {
    "residual_trains": Criterion(
        "C11", "residuals", "fraction of the unigram-to-Bayes gap the deep residual + LayerNorm stack closes on the "
        "test split", 0.5, ABOVE,
        "half-way between the unigram NLL (no context used: 0) and the Bayes limit (1): the deep stack is trainable"),
    "residual_gap": Criterion(
        "C11", "residuals", "test NLL without residual connections (LayerNorm only) minus with (residual + LayerNorm), "
        "same depth, each arm at its own learning rate picked on validation, nats/token", 0.04, ABOVE,
        "5% of the gap the task offers, the unigram NLL minus the Bayes limit (about 2.68 - 1.92 = 0.76 nats): the "
        "least gain that counts as residual connections keeping the stack trainable"),
    "identity_residual": Criterion(
        "C11", "residuals", "share of the variance of the last block's output vectors explained by the current token, "
        "residual + LayerNorm, at initialisation", 0.5, ABOVE,
        "half-way between total collapse (0: nothing of the token is left) and vectors that are a function of the "
        "token alone (1): the token's identity reaches the head"),
    "identity_no_residual": Criterion(
        "C11", "residuals", "the same share without residual connections (LayerNorm only), at initialisation",
        0.5, BELOW,
        "the same half-way point: without residual connections the token's identity is mostly lost on the way up "
        "(rank collapse, Dong et al. 2021)"),
    "layernorm_gap": Criterion(
        "C11", "LayerNorm", "test NLL without LayerNorm (residual only) minus with (residual + LayerNorm) in the "
        "stress regime (deeper, wider, no gradient clipping, larger learning rates in the sweep), each arm at its own "
        "learning rate picked on validation, nats/token", 0.04, ABOVE,
        "5% of the gap the task offers, the unigram NLL minus the Bayes limit (about 0.76 nats): the least gain that "
        "counts as LayerNorm keeping the stack trainable"),
}
VARIANTS = {  # name -> (residual, LayerNorm)
    "residual + LayerNorm": (True, True),
    "residual only": (True, False),
    "LayerNorm only": (False, True),
    "neither": (False, False),
}
REFERENCE, NO_LN, NO_RESIDUAL = "residual + LayerNorm", "residual only", "LayerNorm only"
VOCAB, N_HEAD, LENGTH, BATCH = 16, 4, 16, 32
N_TRAIN, N_VAL, N_TEST = 4000, 500, 500  # sequences per seed: training, validation (picks the rate), test (the verdict)


class StackBlock(nn.Module):
    """Causal self-attention then FFN, each with or without a residual connection and a LayerNorm before it."""

    def __init__(self, d_model: int, n_head: int, residual: bool, norm: bool):
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, n_head, causal=True)
        self.ffn = FeedForward(d_model, 4 * d_model)
        self.attn_norm = nn.LayerNorm(d_model) if norm else nn.Identity()
        self.ffn_norm = nn.LayerNorm(d_model) if norm else nn.Identity()
        self.residual = residual

    def forward(self, x: Tensor) -> Tensor:
        """x (B, T, C) -> (B, T, C)."""
        h = self.self_attn(self.attn_norm(x))[0]
        x = x + h if self.residual else h
        h = self.ffn(self.ffn_norm(x))
        return x + h if self.residual else h


class StackLM(LanguageModel):
    """A decoder-only language model of StackBlocks: the library's embedding and tied head.

    init="gpt2": the library's `init_weights` (N(0, 0.02), output projections scaled by
    1/sqrt(2 n_layer)), designed for a residual stream that carries the signal past each block.
    init="variance": the blocks' matrices drawn to preserve the variance of their input instead
    (std sqrt(2 / fan_in) before the GELU, He et al. 2015; sqrt(1 / fan_in) elsewhere, LeCun et
    al. 1998), the usual start of a plain deep stack, where each block's output is all there is.
    """

    def __init__(self, cfg: TransformerConfig, residual: bool, norm: bool, init: str = "gpt2"):
        super().__init__()
        self.cfg = cfg
        self.embed = Embedding(cfg.vocab_size, cfg)
        self.blocks = nn.ModuleList(StackBlock(cfg.d_model, cfg.n_head, residual, norm) for _ in range(cfg.n_layer))
        self.norm_f = nn.LayerNorm(cfg.d_model) if norm else nn.Identity()
        self.lm_head = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)
        init_weights(self, cfg.n_layer)
        if init == "variance":
            for name, p in self.blocks.named_parameters():
                if p.dim() == 2:
                    nn.init.normal_(p, std=((2.0 if name.endswith("fc_in.weight") else 1.0) / p.size(1)) ** 0.5)
        elif init != "gpt2":
            raise ValueError(f"init must be gpt2 or variance, got {init!r}")
        self.lm_head.weight = self.embed.tok_emb.weight

    def forward(self, idx: Tensor) -> Tensor:
        """idx (B, T) -> logits (B, T, V)."""
        x = self.embed(idx)  # (B, T, C)
        for block in self.blocks:
            x = block(x)
        return self.lm_head(self.norm_f(x))


def token_identity(h: Tensor, tokens: Tensor) -> float:
    """The share of the variance of vectors h (N, C) explained by their token ids tokens (N,):
    1 - (sum of squares within each token's group) / (total sum of squares around the mean), the R^2
    of predicting each vector by its token's mean vector. 1: the vectors are a function of the token
    alone; 0: nothing of the token is left (or all vectors are equal: nothing to explain)."""
    h = h.double()
    total = (h - h.mean(0)).pow(2).sum()
    if total <= 0:
        return 0.0
    ids, group = torch.unique(tokens, return_inverse=True)  # group (N,): index of each vector's token
    sums = torch.zeros(len(ids), h.size(1), dtype=h.dtype).index_add_(0, group, h)  # (G, C)
    means = sums / torch.bincount(group, minlength=len(ids)).unsqueeze(1)  # (G, C)
    within = (h - means[group]).pow(2).sum()
    return float(1 - within / total)


@torch.no_grad()
def last_block_output(model: StackLM, x: Tensor) -> Tensor:
    """The stream leaving the last block (before the final LayerNorm and the head): x (B, T) -> (B, T, C)."""
    h = model.embed(x)
    for block in model.blocks:
        h = block(h)
    return h


def block_gradients(model: StackLM, x: Tensor, y: Tensor) -> list[float]:
    """The norm of the NLL's gradient over each block's parameters, first block first, on one batch."""
    model.zero_grad()
    F.cross_entropy(model(x).transpose(1, 2), y).backward()
    norms = [math.sqrt(sum(p.grad.pow(2).sum().item() for p in b.parameters() if p.grad is not None)) for b in model.blocks]
    model.zero_grad()
    return norms


@torch.no_grad()
def input_stds(model: StackLM, x: Tensor) -> list[float]:
    """The standard deviation of the residual stream entering each block, then entering the head."""
    stds, h = [], model.embed(x)
    for block in model.blocks:
        stds.append(h.std().item())
        h = block(h)
    return stds + [h.std().item()]




@dataclass(frozen=True)
class Regime:
    """One comparison's stack and training: depth, width, steps, gradient clipping (0: off), the rates swept."""

    depth: int
    d_model: int
    steps: int
    grad_clip: float
    lrs: tuple[float, ...]

    def describe(self) -> str:
        clip = f"gradient clipping {self.grad_clip:g}" if self.grad_clip else "no gradient clipping"
        return (f"depth {self.depth}, d_model {self.d_model}, {N_HEAD} heads, d_ff {4 * self.d_model}, {self.steps} steps of "
                f"batch {BATCH}, {clip}, learning rates {list(self.lrs)}")


def regimes(quick: bool) -> tuple[Regime, Regime, list[int]]:
    """The residual comparison's regime, the LayerNorm stress regime, and the depths measured at initialisation."""
    if quick:
        return Regime(3, 32, 40, 1.0, (3e-3, 1e-2)), Regime(4, 48, 40, 0.0, (1e-2, 3e-2)), [1, 3]
    return Regime(8, 32, 120, 1.0, (3e-3, 1e-2, 3e-2)), Regime(24, 48, 100, 0.0, (1e-3, 3e-3, 1e-2, 3e-2)), [1, 2, 4, 8, 16, 24]


def run(quick: bool = False, seed: int = 0, progress=None) -> Report:
    res, stress, id_depths = regimes(quick)
    seeds = run_seeds(seed, quick)
    report = Report(
        NAME, CLAIMS, quick=quick,
        setup=(
            f"Seeds {seeds}; per seed a first-order Markov chain over {VOCAB} symbols (transition rows Dirichlet(0.3), "
            f"chain seed = seed) with {N_TRAIN} training, {N_VAL} validation and {N_TEST} test sequences of {LENGTH} "
            "tokens. The four variants (residual or not, LayerNorm or not), sinusoidal positions, GPT-2 initialisation "
            "with residuals, a variance-preserving one without (He before the GELU, LeCun elsewhere). Each comparison "
            f"gives each arm the learning rate of its sweep with the lowest validation NLL on seed {seed}, then trains "
            "every seed at it (AdamW, warm-up then cosine decay to a tenth) and scores the test split. Gap closed = "
            "(unigram NLL − test NLL) / (unigram NLL − Bayes NLL), the unigram NLL from the training-token frequencies. "
            f"Residuals: residual + LayerNorm against LayerNorm only, {res.describe()}; at initialisation, at depths "
            f"{id_depths} (d_model {res.d_model}), the share of the variance of the last block's output vectors explained "
            f"by the current token, on one training batch of {BATCH} sequences per seed, beside the same share with the "
            "token ids shuffled (chance), and at depth "
            f"{res.depth} the gradient norm of each block's parameters. LayerNorm, a stress regime: residual + LayerNorm "
            f"against residual only, {stress.describe()}."
        ),
        criterion=(
            f"Residuals (depth {res.depth}): the residual + LayerNorm stack closes more than half the unigram-to-Bayes "
            "gap; without residual connections the test NLL is higher; at initialisation the current token explains "
            "more than half the variance of the last block's output with residual connections, and less than half "
            f"without. LayerNorm (the stress regime, depth {stress.depth}): without LayerNorm the test NLL is higher. "
            "Every check: the 95% t-interval over the seeds against the threshold in the Checks table; each arm at "
            "its own learning rate."
        ),
    )
    identity, chance, grads, stds = _at_init(seeds, res.d_model, id_depths, res.depth)
    _identity_part(report, identity, chance, grads, stds, seeds, id_depths, res.depth)
    res_out = _compare((REFERENCE, NO_RESIDUAL), res, seeds, progress, 0.0, 0.4)
    stress_out = _compare((REFERENCE, NO_LN), stress, seeds, progress, 0.4, 1.0)
    _training_part(report, "residuals", res, res_out, seeds, NO_RESIDUAL, "residual_gap")
    _training_part(report, "LayerNorm", stress, stress_out, seeds, NO_LN, "layernorm_gap")
    report.figure("depth", _plot(identity, chance, grads, stress_out, id_depths, res, stress),
                  "Left: the share of the variance of the last block's output explained by the current token, at "
                  "initialisation (mean over seeds; dotted: the same with the token ids shuffled). Middle: the gradient "
                  f"norm of each block's parameters at initialisation, depth {res.depth}, seed {seed}. Right: the scale of "
                  f"the stream entering each block after training in the stress regime (depth {stress.depth}), seed "
                  f"{seed}, each arm at its own learning rate.")
    return report


@functools.lru_cache(maxsize=8)
def _data(seed: int) -> dict:
    """Seed's chain and its splits: train + val (the rate is picked on val), train + test (the verdict's split)."""
    source = MarkovSource(order=1, vocab_size=VOCAB, concentration=0.3, seed=seed)
    seqs = source.sample(N_TRAIN + N_VAL + N_TEST, LENGTH, seed)  # (N, L)
    train_, val, test = seqs[:N_TRAIN], seqs[N_TRAIN : N_TRAIN + N_VAL], seqs[N_TRAIN + N_VAL :]
    counts = np.bincount(train_.ravel(), minlength=VOCAB) + 1.0  # add-one: no zero probability
    kw = {"vocab_size": VOCAB + 1, "boundary": VOCAB, "end_token": False}
    return {"data": SequenceData(train_, val, **kw), "test": SequenceData(train_, test, **kw),
            "bayes": source.bayes_nll(test), "unigram": float(-np.log(counts / counts.sum())[test.ravel()].mean())}


def build(variant: str, depth: int, d_model: int, seed: int) -> StackLM:
    """A variant's stack with seed's initial weights: GPT-2's with residual connections, variance-preserving without."""
    torch.manual_seed(seed)
    cfg = TransformerConfig(vocab_size=VOCAB + 1, block_size=LENGTH, n_layer=depth, n_head=N_HEAD, d_model=d_model)
    residual, norm = VARIANTS[variant]
    return StackLM(cfg, residual, norm, "gpt2" if residual else "variance")


def _at_init(seeds: list[int], d_model: int, depths: list[int], grad_depth: int):
    """Token identity of the last block's output per variant, depth and seed (and with shuffled ids: chance);
    gradient norms per block and the stream's scale per block at grad_depth, first seed."""
    identity = {(v, d): [] for v in VARIANTS for d in depths}
    chance = {d: [] for d in depths}
    grads, stds = {}, {}
    for s in seeds:
        data = _data(s)["data"]
        x, y = data.batch("train", BATCH, torch.Generator().manual_seed(s))  # (B, T), (B, T)
        shuffled = x.flatten()[torch.randperm(x.numel(), generator=torch.Generator().manual_seed(s))]  # (B*T,)
        for d in depths:
            for v in VARIANTS:
                model = build(v, d, d_model, s)
                h = last_block_output(model, x).flatten(0, 1)  # (B*T, C)
                identity[v, d].append(token_identity(h, x.flatten()))
                if v == REFERENCE:
                    chance[d].append(token_identity(h, shuffled))
                if d == grad_depth and s == seeds[0]:
                    grads[v], stds[v] = block_gradients(model, x, y), input_stds(model, x)
    return identity, chance, grads, stds


def _identity_part(report: Report, identity, chance, grads, stds, seeds, depths, depth) -> None:
    report.check("identity_residual", identity[REFERENCE, depth], seeds)
    report.check("identity_no_residual", identity[NO_RESIDUAL, depth], seeds)
    mean = {k: sum(v) / len(v) for k, v in identity.items()}
    chance_mean = {d: sum(v) / len(v) for d, v in chance.items()}
    report.number("identity_depths", depths)
    report.number("token_identity_init", {v: {str(d): mean[v, d] for d in depths} for v in VARIANTS})
    report.number("token_identity_init_per_seed", {v: {str(d): identity[v, d] for d in depths} for v in VARIANTS})
    report.number("token_identity_chance", {str(d): chance_mean[d] for d in depths})
    report.table(["variant", *(f"depth {d}" for d in depths)],
                 [*([v, *(mean[v, d] for d in depths)] for v in VARIANTS),
                  ["shuffled token ids (chance)", *(chance_mean[d] for d in depths)]],
                 title="Share of the last block's output variance explained by the current token, at initialisation "
                       "(mean over seeds)")
    ratio = {v: g[0] / g[-1] if g[-1] > 0 else float("inf") for v, g in grads.items()}
    report.number("block_grad_norms_init", grads)
    report.number("block_input_std_init", stds)
    report.number("grad_ratio_first_last_init", ratio)
    report.table(["variant", "gradient norm, first block", "gradient norm, last block", "first / last",
                  "std entering the head"],
                 [[v, grads[v][0], grads[v][-1], ratio[v], stds[v][-1]] for v in VARIANTS],
                 title=f"At initialisation, depth {depth}, seed {seeds[0]}: gradient flow and the stream's scale")
    report.note(f"At initialisation, depth {depth}: the first block's gradient norm over the last block's is "
                + ", ".join(f"{v} {ratio[v]:.2g}" for v in VARIANTS) + "; the current token's share of the last block's "
                "output variance is " + ", ".join(f"{v} {mean[v, depth]:.3f}" for v in VARIANTS)
                + f" (shuffled ids, chance: {chance_mean[depth]:.3f}). A ratio far from 1 is a gradient that vanishes "
                "or explodes on the way down; a share near chance is a forward collapse: the token no longer reaches "
                "the head.")


def _train_one(variant: str, regime: Regime, lr: float, seed: int) -> dict:
    d = _data(seed)
    model = build(variant, regime.depth, regime.d_model, seed)
    cfg = TrainConfig(max_iters=regime.steps, batch_size=BATCH, lr=lr, min_lr=lr / 10, warmup_iters=regime.steps // 10,
                      grad_clip=regime.grad_clip, eval_interval=regime.steps, log_interval=regime.steps, seed=seed,
                      device="cpu")
    try:
        train(model, d["data"], cfg, progress=False)
        val, test = evaluate(model, d["data"], "val")["nll"], evaluate(model, d["test"], "val")["nll"]
    except RedthreadError as error:  # the loop stops a run whose loss or gradient is not finite
        if "diverged" not in str(error):
            raise
        val = test = math.nan
    diverged = not (math.isfinite(val) and math.isfinite(test))
    if diverged:  # scored as the unigram model (no context): generous to it, and finite for the verdict's arithmetic
        val = test = d["unigram"]
    x = d["data"].batch("train", BATCH, torch.Generator().manual_seed(seed))[0]  # (B, T)
    return {"variant": variant, "seed": seed, "lr": lr, "val_nll": val, "test_nll": test, "bayes": d["bayes"],
            "unigram": d["unigram"], "closed": (d["unigram"] - test) / (d["unigram"] - d["bayes"]),
            "input_std": input_stds(model, x), "diverged": diverged}


def _compare(arms: tuple[str, str], regime: Regime, seeds: list[int], progress, start: float, end: float) -> dict:
    """Each arm's rate swept on the first seed (validation NLL), then every other seed at the rate picked."""
    total, done = len(arms) * (len(regime.lrs) + len(seeds) - 1), 0

    def tick(text: str) -> None:
        nonlocal done
        done += 1
        if progress is not None:
            progress.update(start + (end - start) * done / total, text)

    first = {}
    for arm in arms:
        for lr in regime.lrs:
            first[arm, lr] = _train_one(arm, regime, lr, seeds[0])
            tick(f"depth {regime.depth}, sweep: {arm}, lr {lr:g}")
    sweep = {arm: {lr: first[arm, lr]["val_nll"] for lr in regime.lrs} for arm in arms}
    picked = {arm: min(regime.lrs, key=lambda lr, arm=arm: sweep[arm][lr]) for arm in arms}
    runs = {(arm, seeds[0]): first[arm, picked[arm]] for arm in arms}
    for s in seeds[1:]:
        for arm in arms:
            runs[arm, s] = _train_one(arm, regime, picked[arm], s)
            tick(f"depth {regime.depth}: {arm}, seed {s}")
    return {"arms": arms, "picked": picked, "sweep": sweep, "runs": runs, "first": first}


def _training_part(report: Report, part: str, regime: Regime, out: dict, seeds: list[int], other: str, gap_name: str) -> None:
    runs, picked, sweep = out["runs"], out["picked"], out["sweep"]
    if part == "residuals":
        report.check("residual_trains", [runs[REFERENCE, s]["closed"] for s in seeds], seeds)
    gaps = [runs[other, s]["test_nll"] - runs[REFERENCE, s]["test_nll"] for s in seeds]
    report.check(gap_name, gaps, seeds)
    key = part.lower()
    report.number(f"{key}_regime", {"depth": regime.depth, "d_model": regime.d_model, "steps": regime.steps,
                                    "grad_clip": regime.grad_clip, "learning_rates": list(regime.lrs)})
    report.number(f"{key}_picked_lr", picked)
    report.number(f"{key}_sweep_val_nll", {arm: {str(lr): v for lr, v in sweep[arm].items()} for arm in out["arms"]})
    report.number(f"{key}_gap", gaps)
    for field in ("test_nll", "bayes", "unigram", "closed"):
        report.number(f"{key}_{field}", {arm: {f"seed{s}": runs[arm, s][field] for s in seeds} for arm in out["arms"]})
    report.number(f"{key}_input_std_trained", {arm: runs[arm, seeds[0]]["input_std"] for arm in out["arms"]})
    report.table(["variant", *(f"val NLL at lr {lr:g}" for lr in regime.lrs), "picked lr"],
                 [[arm, *(sweep[arm][lr] for lr in regime.lrs), picked[arm]] for arm in out["arms"]],
                 title=f"{part}: learning-rate sweep on seed {seeds[0]} (validation NLL, nats/token)")
    report.table(["seed", "Bayes", "unigram", *(f"test NLL, {arm}" for arm in out["arms"]),
                  *(f"gap closed, {arm}" for arm in out["arms"]), f"{other} minus {REFERENCE}"],
                 [[s, runs[REFERENCE, s]["bayes"], runs[REFERENCE, s]["unigram"],
                   *(runs[arm, s]["test_nll"] for arm in out["arms"]), *(runs[arm, s]["closed"] for arm in out["arms"]), g]
                  for s, g in zip(seeds, gaps)],
                 title=f"{part}: test NLL per seed, depth {regime.depth}, each arm at its picked learning rate")
    report.number(f"{key}_diverged", {arm: {str(lr): out["first"][arm, lr]["diverged"] for lr in regime.lrs}
                                      for arm in out["arms"]})
    diverged = [f"{r['variant']} at lr {r['lr']:g} (seed {r['seed']})" for r in [*out["first"].values(), *runs.values()]
                if r["diverged"]]
    if diverged:
        report.note(f"{part}: diverged (loss or gradient not finite; scored as the unigram model): "
                    f"{'; '.join(sorted(set(diverged)))}.")
    edge = [arm for arm in out["arms"] if picked[arm] in (regime.lrs[0], regime.lrs[-1])]
    if edge:
        report.note(f"{part}: the picked learning rate lies at the edge of the sweep for {', '.join(edge)}.")


def _plot(identity, chance, grads, stress_out, depths, res: Regime, stress: Regime) -> plt.Figure:
    fig, axes = plt.subplots(1, 3, figsize=(14, 4), layout="constrained")
    styles = dict(zip(VARIANTS, ("o-", "s--", "^-", "v:")))
    for v in VARIANTS:
        axes[0].plot(depths, [sum(identity[v, d]) / len(identity[v, d]) for d in depths], styles[v], label=v)
        axes[1].semilogy(range(1, res.depth + 1), [max(n, 1e-30) for n in grads[v]], styles[v], label=v)
    axes[0].plot(depths, [sum(chance[d]) / len(chance[d]) for d in depths], "k:", lw=1, label="shuffled ids (chance)")
    axes[0].axhline(0.5, color="grey", ls=":", lw=1)
    axes[0].set(xlabel="depth (blocks)", ylabel="share explained by the current token", xscale="log",
                title="Token identity of the last block's output, at init", ylim=(-0.02, 1.02))
    axes[0].minorticks_off()
    axes[0].set_xticks(depths, [str(d) for d in depths])
    axes[1].set(xlabel="block", ylabel="gradient norm (floored at 1e-30)", title=f"Gradient norm per block at init, depth {res.depth}")
    first = min(s for _, s in stress_out["runs"])
    for arm in stress_out["arms"]:
        axes[2].semilogy(range(stress.depth + 1), stress_out["runs"][arm, first]["input_std"], styles[arm],
                         label=f"{arm} (lr {stress_out['picked'][arm]:g})")
    axes[2].set(xlabel="block (last point: input to the head)", ylabel="std of the stream",
                title=f"Stress regime after training, depth {stress.depth}")
    for ax in axes:
        ax.legend(fontsize=8)
    return fig
