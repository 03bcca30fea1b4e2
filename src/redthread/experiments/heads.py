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

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from redthread.data.synthetic import SyntheticSource
from redthread.errors import InvalidValue
from redthread.experiments.criteria import ABOVE, Criterion
from redthread.experiments.report import Report
from redthread.layers.attention import MultiHeadAttention
from redthread.models.transformer import TransformerConfig, TransformerLM
from redthread.plotting import pyplot
from redthread.train.loop import TrainConfig, evaluate, train
from redthread.viz.record import record_attention

plt = pyplot()

NAME, CLAIMS = "heads", "C9"

# The pre-registered criteria: each floor is the smallest effect size of interest, with its reason.
CRITERIA: dict[str, Criterion] = {
    "specialisation": Criterion(
        "C9", "specialisation",
        "for the lag each head serves least well, the best head's weight on that lag's key minus on the other lag's, "
        "trained minus untrained (the same seed's initial model)",
        0.05, ABOVE,
        "the untrained model of the same seed gives what the best of the heads shows by chance; the claim needs, for "
        "both lags, a head that favours that lag's key over the other's beyond it, by 5% of the most a weight "
        "difference can be (1)", bounds=(-1.0, 1.0)),
    "dissociation_near": Criterion(
        "C9", "ablation",
        "mean-ablating the most lag-2-specialised head: NLL lost on positions only lag 2 explains minus on those only "
        "lag 6 explains, nats",
        0.04, ABOVE,
        "a head that served both dependencies alike would cost the same on both kinds of position: the claim needs "
        "more on its own, by 5% of what one lag can carry at such a position (log 32 minus the entropy of the 0.4 "
        "copy mixture, 0.79 nats)"),
    "dissociation_far": Criterion(
        "C9", "ablation",
        "mean-ablating the most lag-6-specialised head: NLL lost on positions only lag 6 explains minus on those only "
        "lag 2 explains, nats",
        0.04, ABOVE,
        "a head that served both dependencies alike would cost the same on both kinds of position: the claim needs "
        "more on its own, by 5% of what one lag can carry at such a position (log 32 minus the entropy of the 0.4 "
        "copy mixture, 0.79 nats)"),
    "several_heads": Criterion(
        "C9", "several heads",
        "val NLL of one head of the full width minus that of four heads, each at its own learning rate, nats",
        0.08, ABOVE,
        "5% of the gap the task offers, log 32 minus the Bayes limit (about 1.94): 0.05 x 1.53 = 0.08 nats; the claim "
        "is that several heads do better than one of the same width"),
}
VOCAB, NEAR, FAR, P_NEAR, P_FAR = 32, 2, 6, 0.4, 0.4
N_HEAD, D_MODEL = 4, 64
LRS, QUICK_LR = (3e-3, 6e-3, 1.2e-2), 6e-3  # the learning-rate sweep (per arm, on the first seed)
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


def model_config(data, n_head: int, block_size: int) -> TransformerConfig:
    return TransformerConfig(vocab_size=data.vocab_size, block_size=block_size, n_layer=1, n_head=n_head,
                             d_model=D_MODEL, pos="rope")


def train_model(data, n_head: int, block_size: int, steps: int, seed: int, lr: float) -> TransformerLM:
    torch.manual_seed(seed)
    model = TransformerLM(model_config(data, n_head, block_size))
    train(model, data, TrainConfig(max_iters=steps, batch_size=32, lr=lr, min_lr=lr / 10, warmup_iters=steps // 10,
                                   eval_interval=steps, eval_batches=1, log_interval=steps, seed=seed, device="cpu"),
          progress=False)
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


def mean_ablated(attn: MultiHeadAttention, heads: list[int], means: Tensor):
    """Within the block, the given heads output their mean: their subspace carries no information."""
    D = attn.d_head  # heads side by side in the attention output: head h in columns h*D .. (h+1)*D
    return columns_mean_ablated(attn, torch.cat([torch.arange(h * D, (h + 1) * D) for h in heads]), means)


@contextmanager
def columns_mean_ablated(attn: MultiHeadAttention, columns: Tensor, means: Tensor):
    """Within the block, the given columns of the attention output carry their mean: no information."""

    def replace(module, args):
        y = args[0].clone()  # (B, T, C)
        y[..., columns] = means[columns]
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


def seed_run(source: TwoLagSource, n_train: int, n_val: int, length: int, steps: int, lrs: dict[int, float],
             seed: int) -> dict:
    """One seed: train N_HEAD heads and one head, measure where each head attends (trained and at
    initialisation) and what mean-ablating each lag's most specialised head costs on each kind of position."""
    near_key, far_key = NEAR - 1, FAR - 1  # the input at position t is s_{t-1}: lag d is key offset d - 1
    data = source.data(n_train, n_val, length, seed=seed)
    x, y = next(data.eval_batches("val", n_val))  # (N, T), (N, T): the whole validation split
    near_pos, far_pos = source.explained_by(y)
    torch.manual_seed(seed)
    untrained = TransformerLM(model_config(data, N_HEAD, length)).eval()  # the initial weights of `model` below
    model = train_model(data, N_HEAD, length, steps, seed, lrs[N_HEAD])
    single = train_model(data, 1, length, steps, seed, lrs[1])
    nll_multi, nll_single = evaluate(model, data, "val")["nll"], evaluate(single, data, "val")["nll"]

    def lag_weights(m: TransformerLM) -> tuple[Tensor, Tensor, Tensor]:
        with record_attention(m) as maps:
            m(x[:200])
        w = offset_weights(maps.decoder[0], FAR)  # (H, O)
        return w, w[:, near_key], w[:, far_key]

    weights, w_near, w_far = lag_weights(model)
    _, u_near, u_far = lag_weights(untrained)
    best = lambda a, b: (a - b).max().item()  # noqa: E731  the best head's preference for one lag's key over the other's
    specialisation = min(best(w_near, w_far), best(w_far, w_near)) - min(best(u_near, u_far), best(u_far, u_near))
    near_head, far_head = int((w_near - w_far).argmax()), int((w_far - w_near).argmax())

    attn, means, base = model.blocks[0].self_attn, head_means(model, x), token_nlls(model, x, y)

    def lost(heads: list[int]) -> tuple[float, float, float]:
        """NLL increase with these heads mean-ablated: on every position, on lag-near ones, on lag-far ones."""
        with mean_ablated(attn, heads, means):
            d = token_nlls(model, x, y) - base
        return d.mean().item(), d[near_pos].mean().item(), d[far_pos].mean().item()

    per_head = [lost([h]) for h in range(N_HEAD)]
    return dict(
        model=model, single=single, x=x, bayes=source.bayes_nll(data.sequences("val")), nll_multi=nll_multi,
        nll_single=nll_single, weights=weights, w_near=w_near, w_far=w_far, specialisation=specialisation,
        near_head=near_head, far_head=far_head, per_head=per_head,
        dissociation_near=per_head[near_head][1] - per_head[near_head][2],
        dissociation_far=per_head[far_head][2] - per_head[far_head][1],
        all_heads=lost(list(range(N_HEAD))), positions={"near_only": int(near_pos.sum()), "far_only": int(far_pos.sum())},
    )


def sweep(source: TwoLagSource, n_train: int, n_val: int, length: int, steps: int, seed: int) -> tuple[dict, list]:
    """Each arm's learning rate (N_HEAD heads, one head), picked from LRS by validation NLL on one seed."""
    data = source.data(n_train, n_val, length, seed=seed)
    chosen, rows = {}, []
    for n_head in (N_HEAD, 1):
        scores = {lr: evaluate(train_model(data, n_head, length, steps, seed, lr), data, "val")["nll"] for lr in LRS}
        chosen[n_head] = min(scores, key=scores.get)
        rows.append([f"{n_head} head{'s' * (n_head > 1)}", *(scores[lr] for lr in LRS), chosen[n_head]])
    return chosen, rows


def run(quick: bool = False, seed: int = 0, progress=None) -> Report:
    n_seeds, length, steps, n_train, n_val = (2, 24, 150, 1500, 300) if quick else (5, 32, 500, 6000, 800)
    seeds = list(range(seed, seed + n_seeds))
    near_key, far_key = NEAR - 1, FAR - 1  # the input at position t is s_{t-1}: lag d is key offset d - 1
    report = Report(
        NAME, CLAIMS, quick=quick,
        setup=(
            f"Source: V = {VOCAB} symbols; after {FAR} uniform tokens, s_t = s_(t-{NEAR}) with probability {P_NEAR}, "
            f"s_t = π(s_(t-{FAR})) (a fixed random permutation π, source seed {seed}) with probability {P_FAR}, "
            f"otherwise uniform; exact Bayes NLL. Per seed ({seeds}): {n_train} training and {n_val} validation "
            f"sequences of {length} tokens. Model: one-layer Transformer, d_model {D_MODEL}, {N_HEAD} heads of "
            f"{D_MODEL // N_HEAD} dimensions, rotary positions, AdamW, batch 32, {steps} steps; the same with one head "
            f"of {D_MODEL} dimensions. Learning rate: " + (f"{QUICK_LR} for both (quick run: no sweep)" if quick else
            f"picked per arm from {', '.join(map(str, LRS))} by validation NLL on seed {seed}") + f". The input at "
            f"position t is s_(t-1), so lag {NEAR} is the key {near_key} place back and lag {FAR} the key {far_key} "
            f"places back. A head's preference for a lag: its mean weight on that lag's key minus on the other's. "
            f"Ablation: the most lag-{NEAR}-preferring head and the most lag-{FAR}-preferring head, each's output (its "
            f"{D_MODEL // N_HEAD} columns of the input of out_proj) replaced by its mean over the validation set, and "
            "the NLL lost on the positions only one rule explains."
        ),
        criterion=(
            "Each over seeds, the whole 95% interval above 0. (1) Specialisation: for both lags some head prefers that "
            "lag's key over the other's; the smaller of the two best preferences exceeds the same statistic of the "
            f"untrained model (its chance level). (2) Ablation: removing the most lag-{NEAR} head costs more on the "
            f"lag-{NEAR} positions than on the lag-{FAR} ones, and removing the most lag-{FAR} head the reverse "
            f"(differences of costs, not ratios). (3) One head of the same width ends with a higher val NLL than "
            f"{N_HEAD} heads, each at its own learning rate."
        ),
    )
    source = TwoLagSource(seed=seed)
    if quick:
        lrs, sweep_rows = {N_HEAD: QUICK_LR, 1: QUICK_LR}, []
    else:
        lrs, sweep_rows = sweep(source, n_train, n_val, length, steps, seed)
    runs = []
    for i, s in enumerate(seeds):
        runs.append(seed_run(source, n_train, n_val, length, steps, lrs, s))
        if progress is not None:
            progress.update((i + 1) / n_seeds, f"seed {s}")

    per_seed = {key: [r[key] for r in runs] for key in
                ("specialisation", "dissociation_near", "dissociation_far", "nll_multi", "nll_single", "bayes")}
    report.number("seeds", seeds)
    report.number("learning_rate", {f"{N_HEAD}_heads": lrs[N_HEAD], "1_head": lrs[1]})
    for key, values in per_seed.items():
        report.number(key, values)
    report.number("near_head", [r["near_head"] for r in runs])
    report.number("far_head", [r["far_head"] for r in runs])
    report.number("weight_near_key", [r["w_near"] for r in runs])
    report.number("weight_far_key", [r["w_far"] for r in runs])
    report.number("ablation_per_head", [[dict(zip(("all", "near", "far"), c)) for c in r["per_head"]] for r in runs])
    report.number("ablation_all_heads", [dict(zip(("all", "near", "far"), r["all_heads"])) for r in runs])
    report.number("positions", [r["positions"] for r in runs])
    report.check("specialisation", per_seed["specialisation"], seeds)
    report.check("dissociation_near", per_seed["dissociation_near"], seeds)
    report.check("dissociation_far", per_seed["dissociation_far"], seeds)
    report.check("several_heads", [a - b for a, b in zip(per_seed["nll_single"], per_seed["nll_multi"])], seeds)

    report.table(["seed", f"lag-{NEAR} head", f"its cost, lag-{NEAR} positions", f"its cost, lag-{FAR} positions",
                  f"lag-{FAR} head", f"its cost, lag-{FAR} positions", f"its cost, lag-{NEAR} positions",
                  "specialisation (minus untrained)", f"val NLL, {N_HEAD} heads", "val NLL, 1 head", "Bayes NLL"],
                 [[s, r["near_head"], r["per_head"][r["near_head"]][1], r["per_head"][r["near_head"]][2], r["far_head"],
                   r["per_head"][r["far_head"]][2], r["per_head"][r["far_head"]][1], r["specialisation"], r["nll_multi"],
                   r["nll_single"], r["bayes"]] for s, r in zip(seeds, runs)],
                 title="Per seed: each lag's most specialised head, what mean-ablating it costs (nats), and the NLLs")
    if sweep_rows:
        report.table(["model", *(f"val NLL at lr {lr:g}" for lr in LRS), "chosen"], sweep_rows,
                     title=f"Learning-rate sweep (seed {seed})")

    first = runs[0]
    weights, w_near, w_far, per_head = first["weights"], first["w_near"], first["w_far"], first["per_head"]
    report.number("weight_by_offset_first_seed", weights)
    kinds = {first["near_head"]: f"lag {NEAR} (copy)", first["far_head"]: f"lag {FAR} (permuted copy)"}
    report.table(["head", f"weight on lag-{NEAR} key", f"weight on lag-{FAR} key", "most specialised in",
                  "NLL lost, all", f"NLL lost, lag-{NEAR} positions", f"NLL lost, lag-{FAR} positions"],
                 [[f"head {h}", w_near[h].item(), w_far[h].item(), kinds.get(h, "-"), *per_head[h]]
                  for h in range(N_HEAD)], title=f"Seed {seed}: each head, where it attends and what mean-ablating it costs (nats)")

    fig, ax = plt.subplots(figsize=(6, 4), layout="constrained")
    for h in range(N_HEAD):
        ax.plot(range(SHOWN_OFFSETS), weights[h], "os^v"[h % 4] + "-:"[h % 2], label=f"head {h}: {kinds.get(h, '-')}")
    for key, lag in ((near_key, NEAR), (far_key, FAR)):
        ax.axvline(key, color="grey", ls=":", lw=1)
        ax.text(key, 1.02, f"lag {lag}", ha="center", fontsize=8)
    ax.set(xlabel="key offset (places before the query)", ylabel="mean attention weight", ylim=(0, 1.08),
           title=f"Where each head attends (seed {seed})")
    ax.legend(fontsize=8)
    report.figure("offsets", fig, f"Mean attention weight of each head against the key's offset (seed {seed}); lag "
                  f"{NEAR} is offset {near_key}, lag {FAR} offset {far_key}.")
    report.figure("maps", _maps_figure(first["model"], first["single"], first["x"][:1], first["near_head"], first["far_head"]),
                  f"Attention maps on one validation sequence (seed {seed}): the most specialised head of each lag, "
                  "and the single head.")
    fig, ax = plt.subplots(figsize=(6, 4), layout="constrained")
    for j, key in enumerate(("dissociation_near", "dissociation_far")):
        ax.scatter(np.full(n_seeds, j), per_seed[key], color=f"C{j}")
        ax.bar(j, np.mean(per_seed[key]), color=f"C{j}", alpha=0.3)
    ax.set_xticks([0, 1], [f"lag-{NEAR} head:\ncost on lag-{NEAR} minus lag-{FAR} positions",
                           f"lag-{FAR} head:\ncost on lag-{FAR} minus lag-{NEAR} positions"], fontsize=8)
    ax.set(ylabel="NLL lost, difference (nats)", title="Mean-ablating each lag's head, per seed")
    ax.axhline(0, color="black", lw=0.8)
    report.figure("ablation", fig, "Per seed: what mean-ablating each lag's most specialised head costs on its own "
                  "lag's positions minus on the other lag's; the claim needs both above 0.")
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
