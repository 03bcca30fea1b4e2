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
  `record_attention`); for each lag, the best head's weight on that lag's key minus on the
  other's, the smaller of the two, minus the same statistic of the untrained model;
- ablation: a head's output (its slice of the input of `out_proj`, its subspace) replaced by
  its mean over the validation set, and the NLL lost, measured separately on the positions
  that only the lag-2 rule explains and those that only the lag-6 rule explains;
- one head against four: the same width with a single head, same training, each arm at its own
  learning rate.

Protocol (experiments/replication.py): the learning rate of each arm (four heads, one head) is
tuned on `tuning_seed(seed)`, its own data draw and initialisation, which no verdict uses; every
verdict seed (`run_seeds`) then trains both arms fresh at the picks. The comparison is made at
half, one and twice the training budget (`BUDGETS`); `budget` scales the training steps only.
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
from redthread.experiments.stats import run_seeds, tuning_seed
from redthread.experiments.tuning import tune
from redthread.lang import say
from redthread.layers.attention import MultiHeadAttention
from redthread.models.transformer import TransformerConfig, TransformerLM
from redthread.plotting import pyplot
from redthread.train.loop import TrainConfig, evaluate, train
from redthread.viz.record import record_attention

plt = pyplot()

NAME, CLAIMS = "heads", "C9"

HYPOTHESIS = ("On a source with two different dependencies (a copy of the token two places back, a permuted copy of "
              "the token six places back), a one-layer Transformer's four heads divide the work: for each dependency "
              "some head attends to its key, mean-ablating that head costs more where its dependency explains the "
              "token than where the other does, and four heads beat one head of the same width.")

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
GRID = {"lr": (3e-3, 6e-3, 1.2e-2)}  # per arm, on the set's tuning seed; extends past an edge pick
QUICK_LR = 6e-3  # --quick: no sweep
BUDGET = {"steps": 500, "quick_steps": 150}  # AdamW steps of batch 32 per model
BUDGETS = (0.5, 1.0, 2.0)  # a comparative claim: measured at half, one and twice the training budget
VOCAB, NEAR, FAR, P_NEAR, P_FAR = 32, 2, 6, 0.4, 0.4
N_HEAD, D_MODEL = 4, 64
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


def training_steps(quick: bool, budget: float) -> int:
    """The steps each model trains for: the budget's share of BUDGET, at least one."""
    return max(1, int(BUDGET["quick_steps" if quick else "steps"] * budget))


def arm_name(n_head: int) -> str:
    return f"{n_head} head{'s' * (n_head > 1)}"


def tuned_lrs(report: Report, source: TwoLagSource, n_train: int, n_val: int, length: int, steps: int,
              seed: int) -> dict[int, float]:
    """Each arm's learning rate (N_HEAD heads, one head): the lowest validation NLL over GRID["lr"] (extended past an
    edge pick), data and initialisation from tuning_seed(seed), a seed no verdict uses. Recorded in the report."""
    t = tuning_seed(seed)
    data = source.data(n_train, n_val, length, seed=t)
    lrs = {}
    for n_head in (N_HEAD, 1):
        def val_nll(lr: float, n_head: int = n_head) -> float:
            return evaluate(train_model(data, n_head, length, steps, t, lr), data, "val")["nll"]

        lrs[n_head] = report.tuned(f"lr, {arm_name(n_head)}", tune(val_nll, GRID["lr"]))
    return lrs


def run(quick: bool = False, seed: int = 0, progress=None, budget: float = 1.0) -> Report:
    length, n_train, n_val = (24, 1500, 300) if quick else (32, 6000, 800)
    steps = training_steps(quick, budget)
    seeds = run_seeds(seed, quick)
    near_key, far_key = NEAR - 1, FAR - 1  # the input at position t is s_{t-1}: lag d is key offset d - 1
    report = Report(
        NAME, CLAIMS, quick=quick,
        setup=(
            f"Source: V = {VOCAB} symbols; after {FAR} uniform tokens, s_t = s_(t-{NEAR}) with probability {P_NEAR}, "
            f"s_t = π(s_(t-{FAR})) (a fixed random permutation π, source seed {seed}) with probability {P_FAR}, "
            f"otherwise uniform; exact Bayes NLL. Per seed ({seeds}): {n_train} training and {n_val} validation "
            f"sequences of {length} tokens. Model: one-layer Transformer, d_model {D_MODEL}, {N_HEAD} heads of "
            f"{D_MODEL // N_HEAD} dimensions, rotary positions, AdamW, batch 32, {steps} steps (training budget "
            f"×{budget:g} of {BUDGET['quick_steps' if quick else 'steps']}); the same with one head of {D_MODEL} "
            f"dimensions. Learning rate: " + (f"{QUICK_LR} for both (quick run: no sweep)" if quick else
            f"picked per arm from {', '.join(map(str, GRID['lr']))} (extended past an edge pick) by validation NLL "
            f"after the same {steps} steps on seed {tuning_seed(seed)}'s data and initialisation, which no verdict "
            f"uses; every verdict seed trains both arms fresh at the picks") + f". The input at "
            f"position t is s_(t-1), so lag {NEAR} is the key {near_key} place back and lag {FAR} the key {far_key} "
            f"places back. A head's preference for a lag: its mean weight on that lag's key minus on the other's. "
            f"Ablation: the most lag-{NEAR}-preferring head and the most lag-{FAR}-preferring head, each's output (its "
            f"{D_MODEL // N_HEAD} columns of the input of out_proj) replaced by its mean over the validation set, and "
            "the NLL lost on the positions only one rule explains."
        ),
        criterion=(
            HYPOTHESIS + " Each check over seeds, its 95% interval above its floor. (1) Specialisation: for both lags "
            "some head prefers that lag's key over the other's; the smaller of the two best preferences exceeds the "
            f"same statistic of the untrained model (its chance level) by {CRITERIA['specialisation'].floor:g}. "
            f"(2) Ablation: removing the most lag-{NEAR} head costs more on the lag-{NEAR} positions than on the "
            f"lag-{FAR} ones, and removing the most lag-{FAR} head the reverse (differences of costs, not ratios), by "
            f"{CRITERIA['dissociation_near'].floor:g} nats. (3) One head of the same width ends with a val NLL higher "
            f"than {N_HEAD} heads', each at its own learning rate, by {CRITERIA['several_heads'].floor:g} nats. At "
            "every training budget."
        ),
    )
    source = TwoLagSource(seed=seed)
    lrs = {N_HEAD: QUICK_LR, 1: QUICK_LR} if quick else tuned_lrs(report, source, n_train, n_val, length, steps, seed)
    runs = []
    for i, s in enumerate(seeds):  # fresh data, initialisation and training at the picks
        runs.append(seed_run(source, n_train, n_val, length, steps, lrs, s))
        if progress is not None:
            progress.update((i + 1) / len(seeds), f"seed {s}")

    per_seed = {key: [r[key] for r in runs] for key in
                ("specialisation", "dissociation_near", "dissociation_far", "nll_multi", "nll_single", "bayes")}
    report.number("seeds", seeds)
    report.number("steps", steps)
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

    first = runs[0]
    weights, w_near, w_far, per_head = first["weights"], first["w_near"], first["w_far"], first["per_head"]
    report.number("weight_by_offset_first_seed", weights)
    kinds = {first["near_head"]: f"lag {NEAR} (copy)", first["far_head"]: f"lag {FAR} (permuted copy)"}
    report.table(["head", f"weight on lag-{NEAR} key", f"weight on lag-{FAR} key", "most specialised in",
                  "NLL lost, all", f"NLL lost, lag-{NEAR} positions", f"NLL lost, lag-{FAR} positions"],
                 [[f"head {h}", w_near[h].item(), w_far[h].item(), kinds.get(h, "-"), *per_head[h]]
                  for h in range(N_HEAD)], title=f"Seed {seed}: each head, where it attends and what mean-ablating it costs (nats)")

    def draw_offsets():
        fig, ax = plt.subplots(figsize=(6, 4), layout="constrained")
        shown = {first["near_head"]: say(kinds[first["near_head"]], f"间隔 {NEAR}（复制）"),
                 first["far_head"]: say(kinds[first["far_head"]], f"间隔 {FAR}（换序后复制）")}
        for h in range(N_HEAD):
            ax.plot(range(SHOWN_OFFSETS), weights[h], "os^v"[h % 4] + "-:"[h % 2],
                    label=say(f"head {h}: {shown.get(h, '-')}", f"头 {h}：{shown.get(h, '-')}"))
        for key, lag in ((near_key, NEAR), (far_key, FAR)):
            ax.axvline(key, color="grey", ls=":", lw=1)
            ax.text(key, 1.02, say(f"lag {lag}", f"间隔 {lag}"), ha="center", fontsize=8)
        ax.set(xlabel=say("key offset (places before the query)", "键的偏移（键在查询之前的位置数）"),
               ylabel=say("mean attention weight", "平均注意力权重"), ylim=(0, 1.08),
               title=say(f"Where each head attends (seed {seed})", f"每个头关注哪里（种子 {seed}）"))
        ax.legend(fontsize=8)
        return fig

    def draw_ablation():
        fig, ax = plt.subplots(figsize=(6, 4), layout="constrained")
        for j, key in enumerate(("dissociation_near", "dissociation_far")):
            ax.scatter(np.full(len(seeds), j), per_seed[key], color=f"C{j}")
            ax.bar(j, np.mean(per_seed[key]), color=f"C{j}", alpha=0.3)
        ax.set_xticks([0, 1], [say(f"lag-{NEAR} head:\ncost on lag-{NEAR} minus lag-{FAR} positions",
                                   f"间隔 {NEAR} 的头：\n间隔 {NEAR} 的位置上的代价减去间隔 {FAR} 的"),
                               say(f"lag-{FAR} head:\ncost on lag-{FAR} minus lag-{NEAR} positions",
                                   f"间隔 {FAR} 的头：\n间隔 {FAR} 的位置上的代价减去间隔 {NEAR} 的")], fontsize=8)
        ax.set(ylabel=say("NLL lost, difference (nats)", "损失的 NLL 之差（奈特）"),
               title=say("Mean-ablating each lag's head, per seed", "均值消融每个间隔的头，逐个种子"))
        ax.axhline(0, color="black", lw=0.8)
        return fig

    report.figure("offsets", draw_offsets, "Mean attention weight of each head against the key's offset "
                  f"(seed {seed}); lag {NEAR} is offset {near_key}, lag {FAR} offset {far_key}.",
                  f"每个头的平均注意力权重随键的偏移的变化（种子 {seed}）；间隔 {NEAR} 即偏移 {near_key}，"
                  f"间隔 {FAR} 即偏移 {far_key}。")
    report.figure("maps", lambda: _maps_figure(first["model"], first["single"], first["x"][:1], first["near_head"],
                                               first["far_head"]),
                  f"Attention maps on one validation sequence (seed {seed}): the most specialised head of each lag, "
                  "and the single head.",
                  f"验证集中一条序列上的注意力图（种子 {seed}）：每个间隔最专门化的头，以及只有一个头的模型的那个头。")
    report.figure("ablation", draw_ablation, "Per seed: what mean-ablating each lag's most specialised head costs on "
                  f"its own lag's positions minus on the other lag's; the claim needs both above "
                  f"{CRITERIA['dissociation_near'].floor:g} nats.",
                  "逐个种子：均值消融每个间隔最专门化的头，在它自己那个间隔的位置上的代价减去在另一个间隔的位置上的代价；"
                  f"论点要求两者都高于 {CRITERIA['dissociation_near'].floor:g} 奈特。")
    return report


def _maps_figure(model: TransformerLM, single: TransformerLM, x: Tensor, near: int | None, far: int | None):
    """Maps of one sequence: the given head of each lag (None: no head specialised in it), and the single head."""
    with record_attention(model) as maps:
        model(x)
    with record_attention(single) as single_maps:
        single(x)
    panels = [(say(f"head {h}, lag {lag}", f"头 {h}，间隔 {lag}"), maps.decoder[0][0, h])
              for h, lag in ((near, NEAR), (far, FAR)) if h is not None]
    panels.append((say("the single head", "只有一个头的模型"), single_maps.decoder[0][0, 0]))
    fig, axes = plt.subplots(1, len(panels), figsize=(3.6 * len(panels), 3.6), layout="constrained", squeeze=False)
    for ax, (title, att) in zip(axes[0], panels):
        im = ax.imshow(att, cmap="viridis", vmin=0, vmax=1)
        ax.set(title=title, xlabel=say("key position", "键的位置"), ylabel=say("query position", "查询的位置"))
    fig.colorbar(im, ax=axes[0].tolist(), shrink=0.8, label=say("attention weight", "注意力权重"))

    return fig
