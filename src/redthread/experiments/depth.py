"""Claim C11: residual connections and LayerNorm keep deep stacks trainable (gradient flow,
stable input distributions). He et al. 2016 (residual learning); Ba et al. 2016 (LayerNorm);
Xiong et al. 2020 (pre-norm); Dong et al. 2021 (attention without skip connections loses rank
with depth); Bengio et al. 1994, Glorot & Bengio 2010 (gradients through a product of Jacobians).

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

The protocol (`experiments/stats.py`, `experiments/replication.py`): the criteria below are fixed
before anything runs; every arm's learning rate is tuned on `tuning_seed(seed)`, a seed no verdict
uses (`experiments/tuning.py`: the grid extends past an edge pick), and every seed of `run_seeds`
is trained fresh at the pick; a full run measures two seed sets at half, one and twice the
training steps (`BUDGETS`). The claim in three parts:

Residuals. A deep stack with residual connections and LayerNorm against the same stack without
residual connections (LayerNorm only), each at its own learning rate, scored on a test split: the
fraction of the unigram-to-Bayes gap the residual stack closes, and the per-seed gap between the
two. The mechanism, at initialisation: the share of the variance of the last block's output
vectors explained by the current token (`token_identity`). With residual connections the embedding
of the token passes up the stream; without them every attention layer averages the positions'
vectors and the token's identity collapses (a forward collapse of rank).

Gradient flow. The same deep stack, all four variants, each at its own learning rate. On one fixed
training batch per seed, the norm of the loss's gradient over each block's parameters
(`block_gradients`), at initialisation and at fixed fractions of training (`FLOW_FRACTIONS`). The
primary quantity, per seed:

    log10 ratio = log10( ||grad, first block|| / ||grad, last block|| )

0: the gradient reaches the bottom of the stack at the scale it had at the top; -1: a tenth of it
(vanishing); +1: ten times it (exploding). A residual connection's Jacobian is I + dF/dx, so the
last block's gradient reaches the first one through the identity; without it the gradient is a
product of the blocks' Jacobians and is predicted to shrink or grow geometrically with depth.

LayerNorm. Pre-norm LayerNorm rescales each sublayer's input to zero mean and unit variance: it
matters when the stream's scale drifts. A regime that stresses it: a deeper and wider residual
stack, no gradient clipping, and larger learning rates in the sweep; residual + LayerNorm against
residual only, each at its own learning rate, the per-seed gap on the test split.
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
from redthread.experiments.criteria import ABOVE, BELOW, WITHIN, Criterion
from redthread.experiments.report import Report
from redthread.experiments.stats import run_seeds, tuning_seed
from redthread.experiments.tuning import tune
from redthread.lang import say
from redthread.layers.attention import MultiHeadAttention
from redthread.layers.feedforward import FeedForward
from redthread.models.base import LanguageModel
from redthread.models.transformer import Embedding, TransformerConfig, init_weights
from redthread.plotting import pyplot
from redthread.train.loop import TrainConfig, evaluate, train

plt = pyplot()

NAME, CLAIMS = "depth", "C11"

HYPOTHESIS = ("In a deep decoder stack, residual connections keep the current token's identity in the stream and the "
              "gradient flowing: with them the stack closes more than half the gap from the unigram model to the Bayes "
              "limit and the first block's gradient stays within a factor 10 of the last block's, at initialisation and during training; without them the "
              "token's identity collapses, the stack trains worse, and the gradient shrinks or grows by more than a "
              "factor 10 on its way down. LayerNorm keeps a deeper residual stack trainable where the stream's scale "
              "is left free to drift (no gradient clipping, large learning rates).")

VARIANTS = {  # name -> (residual, LayerNorm)
    "residual + LayerNorm": (True, True),
    "residual only": (True, False),
    "LayerNorm only": (False, True),
    "neither": (False, False),
}
REFERENCE, NO_LN, NO_RESIDUAL = "residual + LayerNorm", "residual only", "LayerNorm only"
FLOW_KEYS = {"residual + LayerNorm": "residual_layernorm", "residual only": "residual_only",
             "LayerNorm only": "layernorm_only", "neither": "neither"}  # variant -> its checks' names
FLOW_FRACTIONS = (0.25, 0.5, 1.0)  # of the training steps: where the gradient is measured during training
TINY = 1e-30  # a gradient norm is floored here before its logarithm: a vanished one reads as 30 orders of magnitude

_KEPT_WHY = ("one order of magnitude either way (a factor 10), decided by two one-sided tests: the line between a "
             "gradient that reaches the bottom of the stack at about the scale it left the top and one that vanishes "
             "or explodes on the way; a residual connection's Jacobian is I + dF/dx, so the last block's gradient "
             "reaches the first through the identity (He et al. 2016) and the residual variants are predicted inside it")
_LOST_WHY = ("the same line from the other side, one order of magnitude: without the identity path the gradient reaching "
             "the first block is a product of the blocks' Jacobians, predicted to shrink or grow geometrically with "
             "depth (Bengio et al. 1994; Glorot & Bengio 2010), so beyond a factor 10 either way; one line for both "
             "kinds of variant, so that no value falls between the two claims (the check dropped on 2026-12-01 asked a "
             "factor 100 of this side, at depth 24: see the history)")
_CHECKPOINTS = ", ".join(f"{f:.0%}" for f in FLOW_FRACTIONS)
_AT_INIT = ("log10 of the ratio of the gradient norm over the first block's parameters to the last block's, the "
            "residuals part's deep stack, one fixed training batch per seed, at initialisation")
_TRAINED = (f"during training, at {_CHECKPOINTS} of the training steps (each arm at its own learning rate picked on "
            "validation)")

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
    # Gradient flow: with a residual connection the ratio is within a factor 10 (|log10 ratio| < 1); without, beyond it.
    **{f"flow_init_{FLOW_KEYS[v]}": Criterion(
        "C11", "gradient flow", f"{_AT_INIT}, {v}", 1.0, WITHIN, _KEPT_WHY) for v in ("residual + LayerNorm", "residual only")},
    **{f"flow_init_{FLOW_KEYS[v]}": Criterion(
        "C11", "gradient flow", f"absolute value of the {_AT_INIT}, {v}", 1.0, ABOVE, _LOST_WHY, bounds=(0.0, math.inf))
       for v in ("LayerNorm only", "neither")},
    **{f"flow_trained_{FLOW_KEYS[v]}": Criterion(
        "C11", "gradient flow", f"the same log10 ratio {_TRAINED}: the checkpoint furthest from 0, {v}",
        1.0, WITHIN, _KEPT_WHY + "; the checkpoint furthest from 0, so that the claim holds only if it holds throughout")
       for v in ("residual + LayerNorm", "residual only")},
    **{f"flow_trained_{FLOW_KEYS[v]}": Criterion(
        "C11", "gradient flow", f"the same absolute value {_TRAINED}: the smallest over the checkpoints, {v}",
        1.0, ABOVE, _LOST_WHY + "; the smallest over the checkpoints, so that the claim holds only if it holds "
        "throughout", bounds=(0.0, math.inf))
       for v in ("LayerNorm only", "neither")},
}
GRID = {"lr, residuals": (3e-3, 1e-2, 3e-2),  # the residuals and gradient-flow stack: each of the four variants
        "lr, LayerNorm": (1e-3, 3e-3, 1e-2, 3e-2)}  # the stress regime: larger rates; each grid extends past an edge
BUDGET = {"residuals_steps": 120, "layernorm_steps": 100, "quick_steps": 30}  # steps of batch BATCH at budget 1
BUDGETS = (0.5, 1.0, 2.0)  # a comparative claim: measured at half, one and twice the training steps
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
    """The norm of the NLL's gradient over each block's parameters, first block first, on one batch:
    block l's norm is sqrt(sum over its parameters p of sum(dL/dp ** 2)), L the mean cross-entropy."""
    model.zero_grad()
    F.cross_entropy(model(x).transpose(1, 2), y).backward()
    norms = [math.sqrt(sum(p.grad.pow(2).sum().item() for p in b.parameters() if p.grad is not None)) for b in model.blocks]
    model.zero_grad()
    return norms


def log_ratio(norms: list[float]) -> float:
    """log10(first block's gradient norm / last block's), each floored at TINY: 0 when the gradient reaches the first
    block at the scale it left the last, -1 at a tenth of it (vanishing), +1 at ten times it (exploding); nan when a
    norm is not finite (a diverged run)."""
    first, last = norms[0], norms[-1]
    if not (math.isfinite(first) and math.isfinite(last)):
        return math.nan
    return math.log10(max(first, TINY) / max(last, TINY))


def worst_for_claim(ratios: list[float], residual: bool) -> float:
    """One seed's value for a check during training, from its log10 ratios at the checkpoints: with a residual
    connection (predicted within ±1) the one furthest from 0; without (predicted beyond ±1) the smallest |ratio|.
    Either way every checkpoint must agree with the claim for the seed to. A checkpoint that is not finite (a diverged
    run) counts against the claim: 30 orders of magnitude with a residual connection, 0 without."""
    if not all(math.isfinite(r) for r in ratios):
        return -math.log10(TINY) if residual else 0.0
    return max(ratios, key=abs) if residual else min(abs(r) for r in ratios)


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

    def quick_lr(self) -> float:
        """--quick tunes nothing: the grid's middle value."""
        return self.lrs[len(self.lrs) // 2]


def regimes(quick: bool, budget: float = 1.0) -> tuple[Regime, Regime, list[int]]:
    """The residuals (and gradient-flow) regime, the LayerNorm stress regime, and the depths measured at
    initialisation; the training steps are BUDGET's times `budget` (at least one)."""
    def steps(key: str) -> int:
        return max(1, round(BUDGET["quick_steps" if quick else key] * budget))

    res_lrs, stress_lrs = GRID["lr, residuals"], GRID["lr, LayerNorm"]
    if quick:
        return (Regime(3, 32, steps("residuals_steps"), 1.0, res_lrs), Regime(4, 48, steps("layernorm_steps"), 0.0, stress_lrs),
                [1, 3])
    return (Regime(8, 32, steps("residuals_steps"), 1.0, res_lrs), Regime(24, 48, steps("layernorm_steps"), 0.0, stress_lrs),
            [1, 2, 4, 8, 16, 24])


def run(quick: bool = False, seed: int = 0, progress=None, budget: float = 1.0) -> Report:
    res, stress, id_depths = regimes(quick, budget)
    seeds = run_seeds(seed, quick)
    ticker = _Ticker(progress, n_runs=(0 if quick else 4 * len(res.lrs) + 2 * len(stress.lrs)) + 6 * len(seeds))
    tuning = ("the middle of its grid (quick run: no sweep)" if quick else
              f"the rate with the lowest validation NLL in its sweep (the grid extends past an edge pick) on seed "
              f"{tuning_seed(seed)}, which no verdict uses")
    report = Report(
        NAME, CLAIMS, quick=quick,
        setup=(
            f"Seeds {seeds}; per seed a first-order Markov chain over {VOCAB} symbols (transition rows Dirichlet(0.3), "
            f"chain seed = seed) with {N_TRAIN} training, {N_VAL} validation and {N_TEST} test sequences of {LENGTH} "
            "tokens. The four variants (residual or not, LayerNorm or not), sinusoidal positions, GPT-2 initialisation "
            f"with residuals, a variance-preserving one without (He before the GELU, LeCun elsewhere). Training budget "
            f"×{budget:g} (the steps below). Every arm of every comparison gets its own learning rate, {tuning}; every "
            "seed is then trained fresh at it (AdamW, warm-up then cosine decay to a tenth) and scored on the test "
            "split. Gap closed = (unigram NLL − test NLL) / (unigram NLL − Bayes NLL), the unigram NLL from the "
            f"training-token frequencies. Residuals: residual + LayerNorm against LayerNorm only, {res.describe()}; at "
            f"initialisation, at depths {id_depths} (d_model {res.d_model}), the share of the variance of the last "
            f"block's output vectors explained by the current token, on one training batch of {BATCH} sequences per "
            "seed, beside the same share with the token ids shuffled (chance). Gradient flow: the four variants in the "
            "residuals regime; on the same batch, the norm of the gradient over each block's parameters at "
            f"initialisation and at {', '.join(f'{f:.0%}' for f in FLOW_FRACTIONS)} of the training steps; per seed, "
            "log10 of the first block's norm over the last block's. LayerNorm, a stress regime: residual + LayerNorm "
            f"against residual only, {stress.describe()}."
        ),
        criterion=(
            HYPOTHESIS + f" Residuals (depth {res.depth}): the residual + LayerNorm stack closes more than half the "
            "unigram-to-Bayes gap; without residual connections the test NLL is higher by 0.04 nats or more; at "
            "initialisation the current token explains more than half the variance of the last block's output with "
            f"residual connections, and less than half without. Gradient flow (depth {res.depth}): with residual "
            "connections (with or without LayerNorm) |log10 ratio| < 1, at initialisation and at every checkpoint of "
            "training; without them (LayerNorm only, neither) |log10 ratio| > 1, likewise. LayerNorm (the stress "
            f"regime, depth {stress.depth}): without LayerNorm the test NLL is higher by 0.04 nats or more. Every "
            "check: the 95% t-interval over the seeds against the threshold in the Checks table."
        ),
    )
    identity, chance, grads_init, stds = _at_init(seeds, res.d_model, id_depths, res.depth)
    ticker.tick("at initialisation")
    res_lr, res_tried = _tune(report, "residuals", tuple(VARIANTS), res, seed, quick, ticker)
    stress_lr, stress_tried = _tune(report, "LayerNorm", (REFERENCE, NO_LN), stress, seed, quick, ticker)
    res_runs = _verdict_runs(tuple(VARIANTS), res, res_lr, seeds, ticker)
    stress_runs = _verdict_runs((REFERENCE, NO_LN), stress, stress_lr, seeds, ticker)

    _identity_part(report, identity, chance, stds, seeds, id_depths, res.depth)
    _training_part(report, "residuals", res, (REFERENCE, NO_RESIDUAL), res_lr, res_tried, res_runs, seeds, "residual_gap")
    _flow_part(report, res, grads_init, res_lr, res_runs, seeds)
    _training_part(report, "LayerNorm", stress, (REFERENCE, NO_LN), stress_lr, stress_tried, stress_runs, seeds,
                   "layernorm_gap")
    report.figure("depth",
                  lambda: _plot(identity, chance, grads_init, stress_runs, stress_lr, id_depths, res, stress, seeds[0]),
                  "Left: the share of the variance of the last block's output explained by the current token, at "
                  "initialisation (mean over seeds; dotted: the same with the token ids shuffled). Middle: the gradient "
                  f"norm of each block's parameters at initialisation, depth {res.depth}, seed {seeds[0]}. Right: the "
                  f"scale of the stream entering each block after training in the stress regime (depth {stress.depth}), "
                  f"seed {seeds[0]}, each arm at its own learning rate.",
                  "左：初始化时，最后一层输出的方差里当前词元能解释的比例（各种子的平均；点线：把词元编号打乱之后的"
                  f"同一比例）。中：初始化时每一层参数的梯度范数，深度 {res.depth}，种子 {seeds[0]}。右：压力设置"
                  f"（深度 {stress.depth}）下训练之后，进入每一层的残差流的尺度，种子 {seeds[0]}，每一组用各自的"
                  "学习率。")
    report.figure("gradient_flow", lambda: _plot_flow(grads_init, res_runs, res, seeds),
                  f"The gradient norm over each block's parameters, depth {res.depth}, one panel per variant (log scale, "
                  "geometric mean over the seeds, floored at 1e-30), at initialisation and at "
                  f"{', '.join(f'{f:.0%}' for f in FLOW_FRACTIONS)} of the {res.steps} training steps, each variant at its "
                  "own learning rate. A flat line: the gradient reaches the first block at the scale it left the last.",
                  f"每一层参数的梯度范数，深度 {res.depth}，每个变体一幅图（对数坐标，对各种子取几何平均，下限 1e-30），"
                  f"画的是初始化时以及训练（共 {res.steps} 步）进行到 {'、'.join(f'{f:.0%}' for f in FLOW_FRACTIONS)} "
                  "时的值，每个变体用各自的学习率。线是平的，说明梯度到达最靠近嵌入的那一层时，尺度和它离开最后一层"
                  "时一样。")
    return report


class _Ticker:
    """The run's progress: update(fraction, text) after each model trained (a sweep's extensions may add a few)."""

    def __init__(self, progress, n_runs: int):
        self.progress, self.total, self.done = progress, max(n_runs, 1), 0

    def tick(self, text: str) -> None:
        self.done += 1
        if self.progress is not None:
            self.progress.update(min(self.done / self.total, 1.0), text)


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


def probe_batch(seed: int) -> tuple[Tensor, Tensor]:
    """Seed's fixed training batch, where the token identity, the gradients and the stream's scale are measured:
    x, y (BATCH, LENGTH)."""
    return _data(seed)["data"].batch("train", BATCH, torch.Generator().manual_seed(seed))


def build(variant: str, depth: int, d_model: int, seed: int) -> StackLM:
    """A variant's stack with seed's initial weights: GPT-2's with residual connections, variance-preserving without."""
    torch.manual_seed(seed)
    cfg = TransformerConfig(vocab_size=VOCAB + 1, block_size=LENGTH, n_layer=depth, n_head=N_HEAD, d_model=d_model)
    residual, norm = VARIANTS[variant]
    return StackLM(cfg, residual, norm, "gpt2" if residual else "variance")


def _at_init(seeds: list[int], d_model: int, depths: list[int], grad_depth: int):
    """Token identity of the last block's output per variant, depth and seed (and with shuffled ids: chance);
    gradient norms per block per variant and seed at grad_depth; the stream's scale per block there, first seed."""
    identity = {(v, d): [] for v in VARIANTS for d in depths}
    chance = {d: [] for d in depths}
    grads = {v: [] for v in VARIANTS}  # variant -> per seed, (grad_depth,) norms
    stds = {}
    for s in seeds:
        x, y = probe_batch(s)  # (B, T), (B, T)
        shuffled = x.flatten()[torch.randperm(x.numel(), generator=torch.Generator().manual_seed(s))]  # (B*T,)
        for d in sorted(set(depths) | {grad_depth}):
            for v in VARIANTS:
                model = build(v, d, d_model, s)
                if d in depths:
                    h = last_block_output(model, x).flatten(0, 1)  # (B*T, C)
                    identity[v, d].append(token_identity(h, x.flatten()))
                    if v == REFERENCE:
                        chance[d].append(token_identity(h, shuffled))
                if d == grad_depth:
                    grads[v].append(block_gradients(model, x, y))
                    if s == seeds[0]:
                        stds[v] = input_stds(model, x)
    return identity, chance, grads, stds


def _identity_part(report: Report, identity, chance, stds, seeds, depths, depth) -> None:
    report.check("identity_residual", identity[REFERENCE, depth], seeds)
    report.check("identity_no_residual", identity[NO_RESIDUAL, depth], seeds)
    mean = {k: sum(v) / len(v) for k, v in identity.items()}
    chance_mean = {d: sum(v) / len(v) for d, v in chance.items()}
    report.number("identity_depths", depths)
    report.number("token_identity_init", {v: {str(d): mean[v, d] for d in depths} for v in VARIANTS})
    report.number("token_identity_init_per_seed", {v: {str(d): identity[v, d] for d in depths} for v in VARIANTS})
    report.number("token_identity_chance", {str(d): chance_mean[d] for d in depths})
    report.number("block_input_std_init", stds)
    report.table(["variant", *(f"depth {d}" for d in depths)],
                 [*([v, *(mean[v, d] for d in depths)] for v in VARIANTS),
                  ["shuffled token ids (chance)", *(chance_mean[d] for d in depths)]],
                 title="Share of the last block's output variance explained by the current token, at initialisation "
                       "(mean over seeds)")
    report.note(f"At initialisation, depth {depth}: the current token's share of the last block's output variance is "
                + ", ".join(f"{v} {mean[v, depth]:.3f}" for v in VARIANTS) + f" (shuffled ids, chance: "
                f"{chance_mean[depth]:.3f}); the stream entering the head has std "
                + ", ".join(f"{v} {stds[v][-1]:.3g}" for v in VARIANTS) + f" (seed {seeds[0]}). A share near chance is "
                "a forward collapse: the token no longer reaches the head.")


def _train_one(variant: str, regime: Regime, lr: float, seed: int) -> dict:
    """Train seed's stack of `variant` at `lr`; its validation and test NLL, gap closed, the stream's scale after
    training, and the gradient norms per block on the probe batch at FLOW_FRACTIONS of the steps."""
    d = _data(seed)
    x, y = probe_batch(seed)  # (B, T), (B, T)
    model = build(variant, regime.depth, regime.d_model, seed)
    at: dict[int, list[float]] = {}  # step -> the fractions measured after it
    for f in FLOW_FRACTIONS:
        at.setdefault(max(1, round(f * regime.steps)), []).append(f)
    grads: dict[float, list[float]] = {}  # fraction -> (depth,) norms

    def measure(step: int, seconds: float, m: nn.Module) -> bool:
        if step in at:  # after the optimizer's step; measuring leaves the weights and the optimizer's state alone
            norms = block_gradients(m, x, y)
            grads.update({f: norms for f in at[step]})
        return False  # never stop the run

    cfg = TrainConfig(max_iters=regime.steps, batch_size=BATCH, lr=lr, min_lr=lr / 10,
                      warmup_iters=regime.steps // 10, grad_clip=regime.grad_clip, eval_interval=regime.steps,
                      eval_batches=1, log_interval=regime.steps, seed=seed, device="cpu")  # the loop's own val estimate: unused
    try:
        train(model, d["data"], cfg, progress=False, monitor=measure)
        val, test = evaluate(model, d["data"], "val")["nll"], evaluate(model, d["test"], "val")["nll"]
    except RedthreadError as error:  # the loop stops a run whose loss or gradient is not finite
        if "diverged" not in str(error):
            raise
        val = test = math.nan
    diverged = not (math.isfinite(val) and math.isfinite(test))
    if diverged:  # scored as the unigram model (no context): generous to it, and finite for the verdict's arithmetic
        val = test = d["unigram"]
    grads = {f: grads.get(f, [math.nan] * regime.depth) for f in FLOW_FRACTIONS}
    return {"variant": variant, "seed": seed, "lr": lr, "val_nll": val, "test_nll": test, "bayes": d["bayes"],
            "unigram": d["unigram"], "closed": (d["unigram"] - test) / (d["unigram"] - d["bayes"]),
            "input_std": input_stds(model, x), "diverged": diverged, "grads": grads}


def _tune(report: Report, part: str, arms: tuple[str, ...], regime: Regime, seed: int, quick: bool, ticker: _Ticker):
    """Each arm's learning rate, tuned on tuning_seed(seed) (validation NLL) and recorded; --quick: the grid's middle.
    Returns arm -> rate, and (arm, rate) -> the tuning run (for its divergences)."""
    if quick:
        return {arm: regime.quick_lr() for arm in arms}, {}
    tried: dict[tuple[str, float], dict] = {}
    picked = {}
    for arm in arms:
        def val_nll(lr: float, arm: str = arm) -> float:
            tried[arm, lr] = _train_one(arm, regime, lr, tuning_seed(seed))
            ticker.tick(f"depth {regime.depth}, tuning: {arm}, lr {lr:g}")
            return tried[arm, lr]["val_nll"]

        picked[arm] = report.tuned(f"lr, {part} (depth {regime.depth}), {arm}", tune(val_nll, regime.lrs))
    return picked, tried


def _verdict_runs(arms: tuple[str, ...], regime: Regime, picked: dict, seeds: list[int], ticker: _Ticker) -> dict:
    """Every seed trained fresh at each arm's picked rate: (arm, seed) -> its run."""
    runs = {}
    for s in seeds:
        for arm in arms:
            runs[arm, s] = _train_one(arm, regime, picked[arm], s)
            ticker.tick(f"depth {regime.depth}: {arm}, seed {s}")
    return runs


def _training_part(report: Report, part: str, regime: Regime, arms: tuple[str, str], picked: dict, tried: dict,
                   runs: dict, seeds: list[int], gap_name: str) -> None:
    other = arms[1]
    if part == "residuals":
        report.check("residual_trains", [runs[REFERENCE, s]["closed"] for s in seeds], seeds)
    gaps = [runs[other, s]["test_nll"] - runs[REFERENCE, s]["test_nll"] for s in seeds]
    report.check(gap_name, gaps, seeds)
    key = part.lower()
    report.number(f"{key}_regime", {"depth": regime.depth, "d_model": regime.d_model, "steps": regime.steps,
                                    "grad_clip": regime.grad_clip, "learning_rates": list(regime.lrs)})
    report.number(f"{key}_picked_lr", {arm: picked[arm] for arm in arms})
    report.number(f"{key}_gap", gaps)
    for field in ("test_nll", "bayes", "unigram", "closed"):
        report.number(f"{key}_{field}", {arm: {f"seed{s}": runs[arm, s][field] for s in seeds} for arm in arms})
    report.number(f"{key}_input_std_trained", {arm: runs[arm, seeds[0]]["input_std"] for arm in arms})
    report.table(["seed", "Bayes", "unigram", *(f"test NLL, {arm}" for arm in arms),
                  *(f"gap closed, {arm}" for arm in arms), f"{other} minus {REFERENCE}"],
                 [[s, runs[REFERENCE, s]["bayes"], runs[REFERENCE, s]["unigram"],
                   *(runs[arm, s]["test_nll"] for arm in arms), *(runs[arm, s]["closed"] for arm in arms), g]
                  for s, g in zip(seeds, gaps)],
                 title=f"{part}: test NLL per seed, depth {regime.depth}, each arm at its picked learning rate "
                       f"({', '.join(f'{arm} {picked[arm]:g}' for arm in arms)})")
    report.number(f"{key}_tuning_diverged", {arm: {str(lr): r["diverged"] for (a, lr), r in tried.items() if a == arm}
                                             for arm in arms})
    diverged = [f"{arm} at lr {lr:g} (tuning seed {r['seed']})" for (arm, lr), r in tried.items()
                if arm in arms and r["diverged"]]
    diverged += [f"{arm} at lr {picked[arm]:g} (seed {s})" for arm in arms for s in seeds if runs[arm, s]["diverged"]]
    if diverged:
        report.note(f"{part}: diverged (loss or gradient not finite; scored as the unigram model): "
                    f"{'; '.join(sorted(set(diverged)))}.")


def _flow_part(report: Report, regime: Regime, grads_init: dict, picked: dict, runs: dict, seeds: list[int]) -> None:
    """The gradient-flow checks: per variant and seed, log10 of the first block's gradient norm over the last's."""
    at_init = {v: [log_ratio(g) for g in grads_init[v]] for v in VARIANTS}  # variant -> per seed
    trained = {v: {f: [log_ratio(runs[v, s]["grads"][f]) for s in seeds] for f in FLOW_FRACTIONS} for v in VARIANTS}
    for v, (residual, _) in VARIANTS.items():
        key = FLOW_KEYS[v]
        init_values = [worst_for_claim([r], residual) for r in at_init[v]]  # with a residual: r; without: |r|
        report.check(f"flow_init_{key}", init_values, seeds)
        report.check(f"flow_trained_{key}", [worst_for_claim([trained[v][f][i] for f in FLOW_FRACTIONS], residual)
                                             for i in range(len(seeds))], seeds)
    labels = ["init", *(f"{f:g}" for f in FLOW_FRACTIONS)]
    report.number("flow_fractions", list(FLOW_FRACTIONS))
    report.number("flow_log10_ratio", {v: {"init": at_init[v], **{f"{f:g}": trained[v][f] for f in FLOW_FRACTIONS}}
                                       for v in VARIANTS})
    report.number("flow_block_grad_norms", {v: {"init": grads_init[v], **{f"{f:g}": [runs[v, s]["grads"][f] for s in seeds]
                                                                           for f in FLOW_FRACTIONS}} for v in VARIANTS})
    report.number("flow_picked_lr", picked)
    report.number("flow_test_nll", {v: {f"seed{s}": runs[v, s]["test_nll"] for s in seeds} for v in VARIANTS})

    def mean(xs: list[float]) -> float:
        finite = [x for x in xs if math.isfinite(x)]
        return sum(finite) / len(finite) if finite else math.nan

    report.table(["variant", "picked lr", *(f"log10 ratio, {lab}" for lab in labels), "test NLL"],
                 [[v, picked[v], mean(at_init[v]), *(mean(trained[v][f]) for f in FLOW_FRACTIONS),
                   mean([runs[v, s]["test_nll"] for s in seeds])] for v in VARIANTS],
                 title=f"Gradient flow, depth {regime.depth}: log10 of the first block's gradient norm over the last "
                       f"block's, at initialisation and at fractions of the {regime.steps} training steps (mean over "
                       "seeds)")
    report.note("Gradient flow: 0 is a gradient that reaches the first block at the scale it left the last; -1 a tenth of "
                "it (vanishing), +1 ten times it (exploding). The checks need |log10 ratio| < 1 with a residual "
                "connection and > 1 without, at initialisation and at every checkpoint of training. The gradient's size "
                "alone does not decide trainability under AdamW, which rescales each parameter's step by its own "
                "gradient's running size; the residuals part's token identity (a forward collapse) and test NLL are "
                "the other half of the picture.")


def _plot(identity, chance, grads_init, stress_runs, stress_lr, depths, res: Regime, stress: Regime, first: int):
    fig, axes = plt.subplots(1, 3, figsize=(14, 4), layout="constrained")
    styles = dict(zip(VARIANTS, ("o-", "s--", "^-", "v:")))
    for v in VARIANTS:
        axes[0].plot(depths, [sum(identity[v, d]) / len(identity[v, d]) for d in depths], styles[v], label=_shown(v))
        axes[1].semilogy(range(1, res.depth + 1), [max(n, TINY) for n in grads_init[v][0]], styles[v], label=_shown(v))
    axes[0].plot(depths, [sum(chance[d]) / len(chance[d]) for d in depths], "k:", lw=1,
                 label=say("shuffled ids (chance)", "打乱的编号（随机猜测）"))
    axes[0].axhline(0.5, color="grey", ls=":", lw=1)
    axes[0].set(xlabel=say("depth (blocks)", "深度（层数）"),
                ylabel=say("share explained by the current token", "当前词元能解释的比例"), xscale="log",
                title=say("Token identity of the last block's output, at init", "初始化时最后一层输出里的词元身份"),
                ylim=(-0.02, 1.02))
    axes[0].minorticks_off()
    axes[0].set_xticks(depths, [str(d) for d in depths])
    axes[1].set(xlabel=say("block", "层（从 1 计数）"), ylabel=say("gradient norm (floored at 1e-30)", "梯度范数（下限 1e-30）"),
                title=say(f"Gradient norm per block at init, depth {res.depth}", f"初始化时每一层的梯度范数，深度 {res.depth}"))
    for arm in (REFERENCE, NO_LN):
        axes[2].semilogy(range(stress.depth + 1), stress_runs[arm, first]["input_std"], styles[arm],
                         label=say(f"{arm} (lr {stress_lr[arm]:g})", f"{_shown(arm)}（学习率 {stress_lr[arm]:g}）"))
    axes[2].set(xlabel=say("block (last point: input to the head)", "层（从 0 计数；最后一点：输出层的输入）"),
                ylabel=say("std of the stream", "残差流的标准差"),
                title=say(f"Stress regime after training, depth {stress.depth}", f"训练之后的压力设置，深度 {stress.depth}"))
    for ax in axes:
        ax.legend(fontsize=8)
    return fig


def _plot_flow(grads_init: dict, runs: dict, res: Regime, seeds: list[int]):
    """One panel per variant: the gradient norm per block (geometric mean over seeds), at init and during training."""
    fig, axes = plt.subplots(1, len(VARIANTS), figsize=(16, 4), layout="constrained", sharey=True)
    blocks = np.arange(1, res.depth + 1)

    def geometric_mean(per_seed: list[list[float]]) -> np.ndarray:  # per seed (depth,) norms -> (depth,)
        logs = np.log10(np.maximum(np.asarray(per_seed, dtype=float), TINY))  # (S, depth); nan stays nan
        return 10 ** np.nanmean(logs, axis=0) if np.isfinite(logs).any() else np.full(res.depth, np.nan)

    for ax, v in zip(axes, VARIANTS):
        ax.semilogy(blocks, geometric_mean(grads_init[v]), "k-o", ms=3, label=say("init", "初始化"))
        for i, f in enumerate(FLOW_FRACTIONS):
            norms = geometric_mean([runs[v, s]["grads"][f] for s in seeds])
            ax.semilogy(blocks, norms, "-o", color=plt.cm.viridis(0.2 + 0.6 * i / max(len(FLOW_FRACTIONS) - 1, 1)),
                        ms=3, label=say(f"{f:.0%} of training", f"训练进行到 {f:.0%}"))
        ax.set(xlabel=say("block (1: first, nearest the embedding)", "层（从 1 计数，1 最靠近嵌入）"), title=_shown(v))
        ax.legend(fontsize=8)
    axes[0].set_ylabel(say("gradient norm over the block's parameters", "这一层参数上的梯度范数"))
    return fig


VARIANTS_ZH = {"residual + LayerNorm": "残差 + 层归一化", "residual only": "只有残差", "LayerNorm only": "只有层归一化",
               "neither": "两者都没有"}


def _shown(variant: str) -> str:
    """A variant's name in the language chosen."""
    return say(variant, VARIANTS_ZH.get(variant, variant))

