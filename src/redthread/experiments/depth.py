"""Claim C11: residual connections and LayerNorm keep deep stacks trainable (gradient flow,
stable input distributions). He et al. 2016 (residual learning); Ba et al. 2016 (LayerNorm);
Xiong et al. 2020 (pre-norm); Dong et al. 2021 (attention without skip connections loses rank
with depth).

Set-up: the same decoder stack in four variants, built here from the library's
`MultiHeadAttention` and `FeedForward` (the library's `DecoderBlock` always has both parts):

    residual + LayerNorm   x = x + Sublayer(LN(x))     (pre-norm, the library's default)
    residual only          x = x + Sublayer(x)
    LayerNorm only         x = Sublayer(LN(x))
    neither                x = Sublayer(x)

with a final LayerNorm exactly when the variant has LayerNorm and the same training for all, at
several depths. The residual variants start from the library's GPT-2 initialisation; those
without residuals from a variance-preserving one (see `StackLM`), since GPT-2's small weights
would shrink their signal below LayerNorm's epsilon and decide the outcome by themselves. The data are a first-order
Markov chain with peaked rows: the best prediction needs only the current token, so every depth
can represent it, and what is tested is whether gradient descent finds it through the stack.

Measured per variant and depth: the validation NLL after training, as the fraction of the gap
between the unigram NLL (no context) and the Bayes NLL that training closed; the gradient norm of
each block's parameters on one fixed batch at initialisation (gradient flow), and the standard
deviation of the residual stream entering each block (the input distributions).
"""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from redthread.data.synthetic import MarkovSource
from redthread.experiments.report import Report
from redthread.layers.attention import MultiHeadAttention
from redthread.layers.feedforward import FeedForward
from redthread.models.base import LanguageModel
from redthread.models.transformer import Embedding, TransformerConfig, init_weights
from redthread.train.loop import TrainConfig, evaluate, train

NAME, CLAIMS = "depth", "C11"
VARIANTS = {  # name -> (residual, LayerNorm)
    "residual + LayerNorm": (True, True),
    "residual only": (True, False),
    "LayerNorm only": (False, True),
    "neither": (False, False),
}
REFERENCE, NO_LN, NO_RESIDUAL = "residual + LayerNorm", "residual only", ("LayerNorm only", "neither")
VOCAB, N_HEAD = 16, 4
TRAINS, FAILS = 0.8, 0.5  # fraction of the unigram-to-Bayes gap closed: trainable at or above, not trainable below
LN_COST = 0.05  # nats: without LayerNorm the deepest residual stack must end at least this much worse
GRAD_DEPTHS = [2, 6, 12, 24]  # depths whose gradients and activations are measured at initialisation
FLOW, VANISH = 10.0, 100.0  # |first / last block gradient norm| within a factor FLOW (flows), beyond VANISH (does not)


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


def run(quick: bool = False, seed: int = 0, progress=None) -> Report:
    depths, steps = ([1, 3], 150) if quick else ([1, 2, 4, 8, 16], 200)
    d_model, length, batch, lr = 32, 16, 32, 1e-2
    deepest, grad_deepest = depths[-1], GRAD_DEPTHS[-1]
    report = Report(
        NAME, CLAIMS, quick=quick,
        setup=(
            f"Data: a first-order Markov chain over {VOCAB} symbols, transition rows Dirichlet(0.3) (seed {seed}); "
            f"4000 training and 500 validation sequences of {length} tokens. Models: the four variants (residual or "
            f"not, LayerNorm or not), d_model {d_model}, {N_HEAD} heads, d_ff {4 * d_model}, sinusoidal positions, "
            "GPT-2 initialisation with residuals (output projections scaled by 1/sqrt(2 n_layer)), a variance-preserving "
            f"one without (He before the GELU, LeCun elsewhere), model seed {seed}. Training at "
            f"depths {depths}: AdamW lr {lr} (warm-up then cosine), batch {batch}, gradient clipping 1.0, {steps} steps. "
            "Gap closed = (unigram NLL − val NLL) / (unigram NLL − Bayes NLL), the unigram NLL from the training-token "
            f"frequencies. At initialisation, at depths {GRAD_DEPTHS}: the gradient norm of each block's parameters and "
            "the standard deviation of the stream entering each block, on one fixed training batch."
        ),
        criterion=(
            f"(1) Residual + LayerNorm at depth {deepest} closes ≥ {TRAINS:.0%} of the gap. (2) Without residual "
            f"connections (with or without LayerNorm) the depth-{deepest} stack closes < {FAILS:.0%}, while the "
            f"shallowest stack with LayerNorm and no residual (depth {depths[0]}) closes ≥ {TRAINS:.0%}. (3) Residual "
            f"without LayerNorm ends ≥ {LN_COST} nats above residual + LayerNorm at depth {deepest}. (4) At "
            f"initialisation, depth {grad_deepest}: the first block's gradient norm is within a factor {FLOW:g} of the "
            f"last block's with residual + LayerNorm, and beyond a factor {VANISH:g} (vanished or exploded) without "
            "residual connections."
        ),
    )
    source = MarkovSource(order=1, vocab_size=VOCAB, concentration=0.3, seed=seed)
    data = source.data(4000, 500, length, seed=seed)
    bayes = source.bayes_nll(data.sequences("val"))
    counts = np.bincount(np.concatenate(data.sequences("train")), minlength=VOCAB) + 1.0  # add-one: no zero probability
    unigram = float(-np.log(counts / counts.sum())[np.concatenate(data.sequences("val"))].mean())
    xb, yb = data.batch("train", batch, torch.Generator().manual_seed(seed))  # (B, T): the fixed batch

    def build(variant: str, depth: int, init: str | None = None) -> StackLM:
        torch.manual_seed(seed)
        cfg = TransformerConfig(vocab_size=data.vocab_size, block_size=length, n_layer=depth, n_head=N_HEAD, d_model=d_model)
        residual, norm = VARIANTS[variant]
        return StackLM(cfg, residual, norm, init or ("gpt2" if residual else "variance"))

    grads, stds = {}, {}
    for depth in GRAD_DEPTHS:
        for variant in VARIANTS:
            model = build(variant, depth)
            grads[variant, depth], stds[variant, depth] = block_gradients(model, xb, yb), input_stds(model, xb)
        for variant in NO_RESIDUAL:  # the residual stream's initialisation on a stack without one, for comparison
            model = build(variant, depth, "gpt2")
            grads[f"{variant}, GPT-2 init", depth] = block_gradients(model, xb, yb)
            stds[f"{variant}, GPT-2 init", depth] = input_stds(model, xb)
    ratio = {k: g[0] / g[-1] if g[-1] > 0 else float("inf") for k, g in grads.items()}  # first block / last block
    grad_rows = [*VARIANTS, *(f"{v}, GPT-2 init" for v in NO_RESIDUAL)]

    nll, closed = {}, {}
    runs = [(v, d) for d in depths for v in VARIANTS]
    for i, (variant, depth) in enumerate(runs):
        model = build(variant, depth)
        train(model, data, TrainConfig(max_iters=steps, batch_size=batch, lr=lr, min_lr=lr / 10, warmup_iters=steps // 10,
                                       eval_interval=steps, log_interval=steps, seed=seed, device="cpu"), progress=False)
        nll[variant, depth] = evaluate(model, data, "val")["nll"]
        closed[variant, depth] = (unigram - nll[variant, depth]) / (unigram - bayes)
        if progress is not None:
            progress.update((i + 1) / len(runs), f"{variant}, {depth} layers")

    report.number("depths", depths)
    report.number("gradient_depths", GRAD_DEPTHS)
    report.number("bayes_nll", bayes)
    report.number("unigram_nll", unigram)
    for name, values, ds, rows in (("val_nll", nll, depths, VARIANTS), ("gap_closed", closed, depths, VARIANTS),
                                   ("grad_ratio_first_last", ratio, GRAD_DEPTHS, grad_rows),
                                   ("block_grad_norms", grads, GRAD_DEPTHS, grad_rows),
                                   ("block_input_std", stds, GRAD_DEPTHS, grad_rows)):
        report.number(name, {v: {str(d): values[v, d] for d in ds} for v in rows})

    ref = closed[REFERENCE, deepest]
    report.decide(ref >= TRAINS, f"residual + LayerNorm at depth {deepest} closes ≥ {TRAINS:.0%}", f"{ref:.1%}")
    no_res = {v: closed[v, deepest] for v in NO_RESIDUAL}
    shallow = closed["LayerNorm only", depths[0]]
    report.decide(all(c < FAILS for c in no_res.values()) and shallow >= TRAINS,
                  f"no residual: < {FAILS:.0%} at depth {deepest}; LayerNorm only at depth {depths[0]}: ≥ {TRAINS:.0%}",
                  ", ".join(f"{v} {c:.1%}" for v, c in no_res.items()) + f"; LayerNorm only, depth {depths[0]}: {shallow:.1%}")
    cost = nll[NO_LN, deepest] - nll[REFERENCE, deepest]
    report.decide(cost >= LN_COST, f"removing LayerNorm costs ≥ {LN_COST} nats at depth {deepest}",
                  f"{cost:+.3f} nats ({nll[NO_LN, deepest]:.3f} against {nll[REFERENCE, deepest]:.3f})")
    flows = 1 / FLOW <= ratio[REFERENCE, grad_deepest] <= FLOW
    blocked = all(not 1 / VANISH <= ratio[v, grad_deepest] <= VANISH for v in NO_RESIDUAL)
    report.decide(flows and blocked, f"gradient ratio first/last block at depth {grad_deepest}: within {FLOW:g}× with "
                  f"both, beyond {VANISH:g}× without residuals", ", ".join(f"{v} {ratio[v, grad_deepest]:.2g}" for v in VARIANTS))

    report.table(["variant", *(f"depth {d}" for d in depths)], [[v, *(nll[v, d] for d in depths)] for v in VARIANTS],
                 title=f"Validation NLL after training (nats; Bayes {bayes:.3f}, unigram {unigram:.3f})")
    report.table(["variant", *(f"depth {d}" for d in depths)], [[v, *(closed[v, d] for d in depths)] for v in VARIANTS],
                 title="Fraction of the unigram-to-Bayes gap closed")
    report.table(["variant", *(f"depth {d}" for d in GRAD_DEPTHS)],
                 [[v, *(ratio[v, d] for d in GRAD_DEPTHS)] for v in grad_rows],
                 title="Gradient norm of the first block / the last block, at initialisation")
    gpt2_std = stds["LayerNorm only, GPT-2 init", grad_deepest][-1]
    report.note("Without residual connections the variants start from a variance-preserving initialisation; the last "
                "two rows give the gradient ratio they would have with the residual stream's GPT-2 initialisation, whose "
                "small weights shrink a stack without residuals (LayerNorm only: the stream entering the head has std "
                f"{gpt2_std:.1e} at depth {grad_deepest}, against {stds['LayerNorm only', grad_deepest][-1]:.2f} with the "
                "variance-preserving start) until LayerNorm's epsilon (1e-5, added to the variance) outweighs the signal.")

    fig, axes = plt.subplots(1, 3, figsize=(14, 4), layout="constrained")
    for v, style in zip(VARIANTS, ("o-", "s--", "^-", "v:")):
        axes[0].plot(depths, [closed[v, d] for d in depths], style, label=v)
        axes[1].semilogy(range(1, grad_deepest + 1), [max(n, 1e-30) for n in grads[v, grad_deepest]], style, label=v)
        axes[2].semilogy(range(grad_deepest + 1), [max(s, 1e-30) for s in stds[v, grad_deepest]], style, label=v)
    axes[0].axhline(TRAINS, color="grey", ls=":", lw=1)
    axes[0].set(xlabel="depth (blocks)", ylabel="gap closed", title=f"After {steps} steps: fraction of the gap closed",
                xscale="log")
    axes[0].minorticks_off()
    axes[0].set_xticks(depths, [str(d) for d in depths])
    axes[1].set(xlabel="block", ylabel="gradient norm (floored at 1e-30)",
                title=f"Gradient norm per block at init, {grad_deepest} blocks")
    axes[2].set(xlabel="block (last point: input to the head)", ylabel="std of the stream (floored at 1e-30)",
                title=f"Scale of each block's input at init, {grad_deepest} blocks")
    for ax in axes:
        ax.legend(fontsize=8)
    report.figure("depth", fig, f"Left: the fraction of the unigram-to-Bayes gap closed after {steps} steps. Middle: "
                  "the gradient norm of each block's parameters at initialisation. Right: the standard deviation of the "
                  "stream entering each block.")
    return report
