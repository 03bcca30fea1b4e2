"""Claim C9: multi-head attention lets different heads learn different dependency types in
different subspaces, like an ensemble (Vaswani et al. 2017, section 3.2.2).

Set-up: a source with two kinds of dependency, each at its own distance and doing its own
thing. After a uniform start, each token is, with probability P_NEAR, a copy of the token
NEAR = 2 places back; with probability P_FAR, a fixed permutation pi of the token FAR = 6
places back; otherwise uniform:

    P(s_t = v | s_<t) = P_NEAR [v = s_{t-2}] + P_FAR [v = pi(s_{t-6})] + (1 - P_NEAR - P_FAR) / V

so the Bayes NLL is exact. Why these two and not "copy t-1 and copy t-k": the model predicts
s_t at the position whose input is s_{t-1}, so a lag-1 copy needs no attention at all (the
residual stream already holds the token); and two plain copies can be served by one head that
averages both keys (a mixture of copies is what a softmax average gives), so they need not be
told apart. A copy and a permuted copy are different operations at different distances: the
"syntax" and "coreference" of this small language.

A one-layer Transformer with four heads (rotary positions, which express a fixed offset
directly) is trained on it by maximum likelihood. Then:
- specialisation: each head's mean attention weight on the key of each lag (recorded with
  `record_attention`), and the score (w_near - w_far) / (w_near + w_far);
- ablation: a head's output (its slice of the input of `out_proj`, its subspace) replaced by
  its mean over the validation set, and the NLL lost, measured separately on the positions
  that only the lag-2 rule explains and those that only the lag-6 rule explains;
- one head against four: the same width with a single head, same training.
"""

from __future__ import annotations

import math
from contextlib import contextmanager

import matplotlib.pyplot as plt
import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from redthread.data.synthetic import SyntheticSource
from redthread.errors import InvalidValue
from redthread.experiments.report import Report
from redthread.layers.attention import MultiHeadAttention
from redthread.models.transformer import TransformerConfig, TransformerLM
from redthread.train.loop import TrainConfig, evaluate, train
from redthread.viz.record import record_attention

NAME, CLAIMS = "heads", "C9"
VOCAB, NEAR, FAR, P_NEAR, P_FAR = 32, 2, 6, 0.4, 0.4
N_HEAD, D_MODEL = 4, 64
FOCUS, LEAK = 0.5, 0.1  # a head specialises in a lag: >= FOCUS of its weight on that lag's key, <= LEAK on the other's
LOST = 0.5  # nats: ablating a lag's heads must cost at least this on the positions that lag explains
DISSOCIATION = 3.0  # ... and at least this many times what it costs on the other lag's positions
SINGLE_GAP = 0.1  # nats: a single head of the same width ends at least this much worse than N_HEAD heads
SHOWN_OFFSETS = 9  # key offsets 0 .. 8 in the figure


class TwoLagSource(SyntheticSource):
    """s_t = s_{t-near} w.p. p_near, pi(s_{t-far}) w.p. p_far, else uniform; uniform for t < far."""

    def __init__(self, vocab_size: int = VOCAB, near: int = NEAR, far: int = FAR, p_near: float = P_NEAR,
                 p_far: float = P_FAR, seed: int = 0):
        if not (0 < near < far and p_near >= 0 and p_far >= 0 and p_near + p_far <= 1):
            raise InvalidValue(f"need 0 < near < far and p_near + p_far <= 1, got {near}, {far}, {p_near}, {p_far}")
        self.vocab_size, self.near, self.far, self.p_near, self.p_far = vocab_size, near, far, p_near, p_far
        self.perm = np.random.default_rng(seed).permutation(vocab_size)  # (V,): pi

    def sample(self, n_sequences: int, length: int, seed: int = 0) -> np.ndarray:
        rng = np.random.default_rng(seed)
        seqs = rng.integers(self.vocab_size, size=(n_sequences, length))  # (N, L): the uniform draws
        u = rng.random((n_sequences, length))  # (N, L): which rule each position follows
        for t in range(self.far, length):
            near, far = seqs[:, t - self.near], self.perm[seqs[:, t - self.far]]
            seqs[:, t] = np.where(u[:, t] < self.p_near, near, np.where(u[:, t] < self.p_near + self.p_far, far, seqs[:, t]))
        return seqs

    def log_probs(self, sequences: np.ndarray) -> np.ndarray:
        V, f, n = self.vocab_size, self.far, self.near
        out = np.full(sequences.shape, -math.log(V))  # (N, L)
        s = sequences
        out[:, f:] = np.log(self.p_near * (s[:, f:] == s[:, f - n : -n]) + self.p_far * (s[:, f:] == self.perm[s[:, :-f]])
                            + (1 - self.p_near - self.p_far) / V)
        return out

    def explained_by(self, y: Tensor) -> tuple[Tensor, Tensor]:
        """Boolean (N, L) masks of the targets only the lag-near rule explains, and only the lag-far rule."""
        near, far = torch.zeros_like(y, dtype=torch.bool), torch.zeros_like(y, dtype=torch.bool)
        f, n = self.far, self.near
        is_near = y[:, f:] == y[:, f - n : -n]
        is_far = y[:, f:] == torch.from_numpy(self.perm)[y[:, :-f]]
        near[:, f:], far[:, f:] = is_near & ~is_far, is_far & ~is_near
        return near, far


def train_model(data, n_head: int, block_size: int, steps: int, seed: int) -> TransformerLM:
    torch.manual_seed(seed)
    cfg = TransformerConfig(vocab_size=data.vocab_size, block_size=block_size, n_layer=1, n_head=n_head,
                            d_model=D_MODEL, pos="rope")
    model = TransformerLM(cfg)
    train(model, data, TrainConfig(max_iters=steps, batch_size=32, lr=6e-3, min_lr=6e-4, warmup_iters=steps // 10,
                                   eval_interval=steps, log_interval=steps, seed=seed, device="cpu"), progress=False)
    return model.eval()


@torch.no_grad()
def token_nlls(model: TransformerLM, x: Tensor, y: Tensor) -> Tensor:
    """-log P(y_t | x_<=t) at every position, (N, T)."""
    return torch.cat([F.cross_entropy(model(xb).transpose(1, 2), yb, reduction="none")
                      for xb, yb in zip(x.split(256), y.split(256))])


@torch.no_grad()
def head_means(model: TransformerLM, x: Tensor) -> Tensor:
    """The mean over every validation position of the heads' outputs, the input of out_proj: (C,)."""
    sums = []
    handle = model.blocks[0].self_attn.out_proj.register_forward_pre_hook(lambda m, args: sums.append(args[0].sum((0, 1))))
    try:
        for xb in x.split(256):
            model(xb)
    finally:
        handle.remove()
    return torch.stack(sums).sum(0) / (x.size(0) * x.size(1))


@contextmanager
def mean_ablated(attn: MultiHeadAttention, heads: list[int], means: Tensor):
    """Within the block, the given heads output their mean: their subspace carries no information."""
    D = attn.d_head

    def replace(module, args):
        y = args[0].clone()  # (B, T, C): heads side by side, head h in columns h*D .. (h+1)*D
        for h in heads:
            y[..., h * D : (h + 1) * D] = means[h * D : (h + 1) * D]
        return (y,)

    handle = attn.out_proj.register_forward_pre_hook(replace)
    try:
        yield
    finally:
        handle.remove()


def offset_weights(att: Tensor, first_query: int) -> Tensor:
    """Mean attention weight on the key `o` places before the query, per head: (B, H, T, T) -> (H, SHOWN_OFFSETS)."""
    T = att.size(-1)
    q = torch.arange(first_query, T)  # queries that see every shown lag's key
    return torch.stack([att[:, :, q, q - o].mean((0, 2)) for o in range(SHOWN_OFFSETS)], dim=1)  # (H, O)


def run(quick: bool = False, seed: int = 0, progress=None) -> Report:
    length, steps, n_train, n_val = (24, 250, 2000, 400) if quick else (32, 1200, 8000, 1000)
    near_key, far_key = NEAR - 1, FAR - 1  # the input at position t is s_{t-1}: lag d is key offset d - 1
    report = Report(
        NAME, CLAIMS, quick=quick,
        setup=(
            f"Source: V = {VOCAB} symbols; after {FAR} uniform tokens, s_t = s_(t-{NEAR}) with probability {P_NEAR}, "
            f"s_t = π(s_(t-{FAR})) (a fixed random permutation π) with probability {P_FAR}, otherwise uniform; exact "
            f"Bayes NLL. {n_train} training and {n_val} validation sequences of {length} tokens (seed {seed}). Model: "
            f"one-layer Transformer, d_model {D_MODEL}, {N_HEAD} heads of {D_MODEL // N_HEAD} dimensions, rotary "
            f"positions, AdamW lr 6e-3, batch 32, {steps} steps; the same with one head of {D_MODEL} dimensions. The "
            f"input at position t is s_(t-1), so lag {NEAR} is the key {near_key} place back and lag {FAR} the key "
            f"{far_key} places back. Ablation: a head's output (its {D_MODEL // N_HEAD} columns of the input of out_proj) "
            "replaced by its mean over the validation set (mean ablation)."
        ),
        criterion=(
            f"(1) For each lag, some head puts ≥ {FOCUS} of its mean attention on that lag's key and ≤ {LEAK} on the "
            f"other lag's key. (2) Mean-ablating the heads specialised in a lag raises the NLL on the positions only "
            f"that lag explains by ≥ {LOST} nats and by ≥ {DISSOCIATION}× what it costs on the positions only the other "
            f"lag explains, for both lags. (3) A single head of the same width ends ≥ {SINGLE_GAP} nats above "
            f"{N_HEAD} heads."
        ),
    )
    source = TwoLagSource(seed=seed)
    data = source.data(n_train, n_val, length, seed=seed)
    bayes = source.bayes_nll(data.sequences("val"))
    x, y = next(data.eval_batches("val", n_val))  # (N, T), (N, T): the whole validation split
    near_pos, far_pos = source.explained_by(y)

    model = train_model(data, N_HEAD, length, steps, seed)
    if progress is not None:
        progress.update(0.45, f"{N_HEAD} heads trained")
    single = train_model(data, 1, length, steps, seed)
    if progress is not None:
        progress.update(0.9, "one head trained")
    nll_multi, nll_single = evaluate(model, data, "val")["nll"], evaluate(single, data, "val")["nll"]

    with record_attention(model) as maps:
        model(x[:200])
    weights = offset_weights(maps.decoder[0], FAR)  # (H, O)
    w_near, w_far = weights[:, near_key], weights[:, far_key]
    score = (w_near - w_far) / (w_near + w_far).clamp_min(1e-12)
    near_heads = [h for h in range(N_HEAD) if w_near[h] >= FOCUS and w_far[h] <= LEAK]
    far_heads = [h for h in range(N_HEAD) if w_far[h] >= FOCUS and w_near[h] <= LEAK]

    attn = model.blocks[0].self_attn
    means = head_means(model, x)
    base = token_nlls(model, x, y)

    def lost(heads: list[int]) -> tuple[float, float, float]:
        """NLL increase with these heads mean-ablated: on every position, on lag-near ones, on lag-far ones."""
        with mean_ablated(attn, heads, means):
            d = token_nlls(model, x, y) - base
        return d.mean().item(), d[near_pos].mean().item(), d[far_pos].mean().item()

    per_head = [lost([h]) for h in range(N_HEAD)]
    groups = {f"lag-{NEAR} heads {near_heads}": near_heads, f"lag-{FAR} heads {far_heads}": far_heads,
              "all heads": list(range(N_HEAD))}
    per_group = {name: lost(heads) if heads else (float("nan"),) * 3 for name, heads in groups.items()}
    near_cost, far_cost = per_group[f"lag-{NEAR} heads {near_heads}"], per_group[f"lag-{FAR} heads {far_heads}"]
    if progress is not None:
        progress.update(1.0)

    report.number("bayes_nll", bayes)
    report.number("val_nll", {f"{N_HEAD}_heads": nll_multi, "1_head": nll_single})
    report.number("excess_nll", {f"{N_HEAD}_heads": nll_multi - bayes, "1_head": nll_single - bayes})
    report.number("weight_by_offset", weights)
    report.number("weight_near_key", w_near)
    report.number("weight_far_key", w_far)
    report.number("specialisation", score)
    report.number("near_heads", near_heads)
    report.number("far_heads", far_heads)
    report.number("ablation_per_head", {str(h): dict(zip(("all", "near", "far"), per_head[h])) for h in range(N_HEAD)})
    report.number("ablation_groups", {k: dict(zip(("all", "near", "far"), v)) for k, v in per_group.items()})
    report.number("positions", {"near_only": int(near_pos.sum()), "far_only": int(far_pos.sum())})

    report.decide(bool(near_heads) and bool(far_heads),
                  f"a head with ≥ {FOCUS} on each lag's key and ≤ {LEAK} on the other's",
                  f"lag {NEAR}: heads {near_heads}; lag {FAR}: heads {far_heads} (weights on the lag-{NEAR} key "
                  f"{_fmt(w_near)}, on the lag-{FAR} key {_fmt(w_far)})")
    for lag, (_, on_near, on_far), own_first in ((NEAR, near_cost, True), (FAR, far_cost, False)):
        own, other = (on_near, on_far) if own_first else (on_far, on_near)
        ok = math.isfinite(own) and own >= LOST and own >= DISSOCIATION * other
        report.decide(ok, f"ablating the lag-{lag} heads: ≥ {LOST} nats on its positions, ≥ {DISSOCIATION}× the other's",
                      f"{own:+.3f} nats on lag-{lag} positions, {other:+.3f} on the other lag's")
    report.decide(nll_single - nll_multi >= SINGLE_GAP, f"one head ≥ {SINGLE_GAP} nats worse than {N_HEAD}",
                  f"1 head {nll_single:.3f}, {N_HEAD} heads {nll_multi:.3f} nats (Bayes {bayes:.3f})")

    kinds = {h: f"lag {NEAR} (copy)" for h in near_heads} | {h: f"lag {FAR} (permuted copy)" for h in far_heads}
    report.table(["head", f"weight on lag-{NEAR} key", f"weight on lag-{FAR} key", "specialisation", "type",
                  "NLL lost, all", f"NLL lost, lag-{NEAR} positions", f"NLL lost, lag-{FAR} positions"],
                 [[f"head {h}", w_near[h].item(), w_far[h].item(), score[h].item(), kinds.get(h, "mixed"), *per_head[h]]
                  for h in range(N_HEAD)], title="Each head: where it attends, and what mean-ablating it costs (nats)")
    report.table(["heads ablated", "NLL lost, all", f"NLL lost, lag-{NEAR} positions", f"NLL lost, lag-{FAR} positions"],
                 [[k, *v] for k, v in per_group.items()], title="Ablating the heads of one dependency type (nats)")
    report.table(["model", "val NLL", "Bayes NLL", "excess"],
                 [[f"{N_HEAD} heads of {D_MODEL // N_HEAD}", nll_multi, bayes, nll_multi - bayes],
                  [f"1 head of {D_MODEL}", nll_single, bayes, nll_single - bayes]], title="Several heads against one")

    fig, ax = plt.subplots(figsize=(6, 4), layout="constrained")
    for h in range(N_HEAD):
        ax.plot(range(SHOWN_OFFSETS), weights[h], "os^v"[h % 4] + "-:"[h % 2], label=f"head {h}: {kinds.get(h, 'mixed')}")
    for key, lag in ((near_key, NEAR), (far_key, FAR)):
        ax.axvline(key, color="grey", ls=":", lw=1)
        ax.text(key, 1.02, f"lag {lag}", ha="center", fontsize=8)
    ax.set(xlabel="key offset (places before the query)", ylabel="mean attention weight", ylim=(0, 1.08),
           title="Where each head attends")
    ax.legend(fontsize=8)
    report.figure("offsets", fig, f"Mean attention weight of each head against the key's offset; lag {NEAR} is offset "
                  f"{near_key}, lag {FAR} offset {far_key}.")
    near_best = max(near_heads, key=lambda h: w_near[h].item(), default=None)
    far_best = max(far_heads, key=lambda h: w_far[h].item(), default=None)
    report.figure("maps", _maps_figure(model, single, x[:1], near_best, far_best),
                  "Attention maps on one validation sequence: the most specialised head of each lag, and the single head.")
    fig, ax = plt.subplots(figsize=(6, 4), layout="constrained")
    pos = np.arange(N_HEAD)
    ax.bar(pos - 0.2, [c[1] for c in per_head], 0.4, label=f"on lag-{NEAR} positions")
    ax.bar(pos + 0.2, [c[2] for c in per_head], 0.4, label=f"on lag-{FAR} positions")
    ax.set_xticks(pos, [f"head {h}\n{kinds.get(h, 'mixed')}" for h in range(N_HEAD)], fontsize=8)
    ax.set(ylabel="NLL lost (nats)", title="Mean-ablating one head")
    ax.axhline(0, color="black", lw=0.8)
    ax.legend()
    report.figure("ablation", fig, f"NLL lost by mean-ablating each head, on the positions only lag {NEAR} explains and "
                  f"on those only lag {FAR} explains.")
    return report


def _maps_figure(model: TransformerLM, single: TransformerLM, x: Tensor, near: int | None, far: int | None):
    """Maps of one sequence: the given head of each lag (None: no head specialised in it), and the single head."""
    with record_attention(model) as maps:
        model(x)
    with record_attention(single) as single_maps:
        single(x)
    panels = [(f"head {h}, lag {lag}", maps.decoder[0][0, h]) for h, lag in ((near, NEAR), (far, FAR)) if h is not None]
    panels.append(("the single head", single_maps.decoder[0][0, 0]))
    fig, axes = plt.subplots(1, len(panels), figsize=(3.6 * len(panels), 3.6), layout="constrained", squeeze=False)
    for ax, (title, att) in zip(axes[0], panels):
        im = ax.imshow(att, cmap="viridis", vmin=0, vmax=1)
        ax.set(title=title, xlabel="key position", ylabel="query position")
    fig.colorbar(im, ax=axes[0].tolist(), shrink=0.8, label="attention weight")
    return fig


def _fmt(t: Tensor) -> str:
    return "[" + ", ".join(f"{v:.2f}" for v in t.tolist()) + "]"
