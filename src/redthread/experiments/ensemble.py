"""Claim C9, its last words: multi-head attention works "like an ensemble" (Vaswani et al. 2017,
section 3.2.2). An ensemble has two marks, each measured here on character Transformers
trained on Shakespeare's plays:

- its members disagree. The disagreement of two heads is the Jensen-Shannon divergence of
  their attention rows for the same query,

      JSD(p, q) = KL(p || m) / 2 + KL(q || m) / 2,   m = (p + q) / 2   (nats, at most log 2),

  averaged over queries, pairs of heads and layers. The control is a true ensemble: the heads
  of a model trained apart (the next seed's model, same architecture and data), paired with
  this model's heads on the same text. Heads of one model are as diverse as an ensemble's
  members when they disagree at least as much as heads of separately trained models do. The
  heads of the untrained model are shown as the chance level.
- it loses a member gracefully. Mean-ablating k heads of a layer (their columns of the input
  of out_proj replaced by their mean over held-out text) is compared with mean-ablating the
  same number of columns drawn at random across every head: the same width removed. Were the
  head boundaries meaningless the two would cost the same; an ensemble, whose members each
  carry a whole prediction, loses a whole member at no more cost than a slice of every member.
"""

from __future__ import annotations

import itertools

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from redthread.data.lm import LMData, load_splits
from redthread.errors import RedthreadError
from redthread.experiments.criteria import ABOVE, BELOW, Criterion
from redthread.experiments.heads import columns_mean_ablated
from redthread.experiments.report import Report
from redthread.lang import say
from redthread.models.transformer import TransformerConfig, TransformerLM
from redthread.plotting import pyplot
from redthread.train.loop import TrainConfig, train
from redthread.viz.record import record_attention

plt = pyplot()

NAME, CLAIMS = "ensemble", "C9"
HYPOTHESIS = ("The heads of one model are as diverse as the members of an ensemble, and losing a whole head "
              "costs no more than losing the same width spread over every head.")
BUDGET = {"steps": 300, "quick_steps": 60}
GRID: dict = {}  # one fixed learning rate (LR below) for every model: the comparison is within a model

# The pre-registered criteria: each floor is the smallest effect size of interest, with its reason.
CRITERIA: dict[str, Criterion] = {
    "disagreement": Criterion(
        "C9", "disagreement",
        "mean pairwise Jensen-Shannon divergence between the attention rows of two heads of one model, minus between "
        "heads of two models trained apart (the next seed's), nats",
        -0.035, ABOVE,
        "heads of separately trained models are the members of a true ensemble: heads of one model are as diverse "
        "as an ensemble's members when they disagree at least as much, within 5% of the largest divergence (log 2): "
        "a non-inferiority margin"),
    "removal_1": Criterion(
        "C9", "graceful loss",
        "val NLL lost by mean-ablating 1 head minus by mean-ablating the same number of random dimensions of the "
        "attention output, nats",
        0.02, BELOW,
        "equal costs are what no head structure gives; an ensemble loses a whole member gracefully, so losing a head "
        "must cost no more than losing the same width spread over every head, within 0.02 nats (2% of perplexity: a "
        "non-inferiority margin)"),
    "removal_2": Criterion(
        "C9", "graceful loss",
        "val NLL lost by mean-ablating 2 heads minus by mean-ablating the same number of random dimensions of the "
        "attention output, nats",
        0.02, BELOW,
        "equal costs are what no head structure gives; an ensemble loses whole members gracefully, so losing heads "
        "must cost no more than losing the same width spread over every head, within 0.02 nats (2% of perplexity: a "
        "non-inferiority margin)"),
}
N_HEAD, LR = 4, 3e-3
KS = (1, 2)  # heads removed at once
RANDOM_DRAWS = 8  # random column sets per k and layer


def jsd(p: Tensor, q: Tensor) -> Tensor:
    """Jensen-Shannon divergence in nats along the last axis: (..., S), (..., S) -> (...)."""
    m = (p + q) / 2
    kl = lambda a: torch.special.xlogy(a, a).sum(-1) - torch.special.xlogy(a, m).sum(-1)  # noqa: E731
    return (kl(p) + kl(q)) / 2


def pairwise_jsd(a: Tensor, b: Tensor | None = None) -> float:
    """Mean JSD between the heads' rows, (B, H, T, T) maps, over queries 1 .. T-1 (query 0 sees one key).
    b None: every pair of distinct heads of a; else every head of a against every head of b."""
    a = a[:, :, 1:]  # (B, H, T-1, T)
    if b is None:
        pairs = [jsd(a[:, h], a[:, g]).mean() for h, g in itertools.combinations(range(a.size(1)), 2)]
    else:
        b = b[:, :, 1:]
        pairs = [jsd(a[:, h], b[:, g]).mean() for h in range(a.size(1)) for g in range(b.size(1))]
    return torch.stack(pairs).mean().item()


@torch.no_grad()
def attention(model: TransformerLM, x: Tensor) -> list[Tensor]:
    with record_attention(model) as maps:
        model(x)
    return maps.decoder  # per layer (B, H, T, T)


@torch.no_grad()
def token_nll(model: TransformerLM, x: Tensor, y: Tensor) -> float:
    return F.cross_entropy(model(x).transpose(1, 2), y).item()


@torch.no_grad()
def output_means(model: TransformerLM, x: Tensor) -> list[Tensor]:
    """Each layer's mean attention output (the input of out_proj) over every position of x: per layer (C,)."""
    seen: list[Tensor] = []
    handles = [b.self_attn.out_proj.register_forward_pre_hook(lambda m, args: seen.append(args[0].mean((0, 1))))
               for b in model.blocks]
    try:
        model(x)
    finally:
        for h in handles:
            h.remove()
    return seen


def removal_costs(model: TransformerLM, x: Tensor, y: Tensor, means: list[Tensor], k: int, seed: int) -> tuple[float, float]:
    """(heads, dims): val NLL lost by mean-ablating k heads of a layer (every set of k, averaged) and by
    mean-ablating k * d_head random columns of it (RANDOM_DRAWS draws), both averaged over layers."""
    base = token_nll(model, x, y)
    d = model.cfg.d_head
    gen = torch.Generator().manual_seed(seed)
    heads, dims = [], []
    for block, mu in zip(model.blocks, means):
        for subset in itertools.combinations(range(N_HEAD), k):
            cols = torch.cat([torch.arange(h * d, (h + 1) * d) for h in subset])
            with columns_mean_ablated(block.self_attn, cols, mu):
                heads.append(token_nll(model, x, y) - base)
        for _ in range(RANDOM_DRAWS):
            cols = torch.randperm(model.cfg.d_model, generator=gen)[: k * d]
            with columns_mean_ablated(block.self_attn, cols, mu):
                dims.append(token_nll(model, x, y) - base)
    return float(np.mean(heads)), float(np.mean(dims))


def make_model(vocab: int, block: int, n_layer: int, d_model: int, seed: int) -> TransformerLM:
    torch.manual_seed(seed)
    return TransformerLM(TransformerConfig(vocab_size=vocab, block_size=block, n_layer=n_layer, n_head=N_HEAD,
                                           d_model=d_model, pos="rope"))


def run(quick: bool = False, seed: int = 0, progress=None) -> Report:
    n_seeds, n_layer, d_model, block, steps = (2, 1, 32, 24, 60) if quick else (5, 2, 64, 48, 300)
    n_eval = 32 if quick else 128
    seeds = list(range(seed, seed + n_seeds))
    report = Report(
        NAME, CLAIMS, quick=quick,
        setup=(
            f"Models: {n_layer}-layer character Transformers on Shakespeare's plays, {N_HEAD} heads of "
            f"{d_model // N_HEAD} dimensions (d_model {d_model}), rotary positions, context {block}, AdamW lr {LR} "
            f"(one rate: no arms are trained against each other, every comparison is inside one model), batch 32, "
            f"{steps} steps; seeds {seeds}. Held out: {n_eval} fixed validation windows. Disagreement: mean pairwise "
            f"JSD of the heads' attention rows (queries 1 .. {block - 1}, every layer); control: each head of the "
            f"model against each head of the next seed's model (cyclically), same layer, same text. Removal: in each "
            f"layer, every set of k heads mean-ablated (their columns of out_proj's input replaced by the held-out "
            f"mean), against {RANDOM_DRAWS} random sets of k × {d_model // N_HEAD} columns, k = {', '.join(map(str, KS))}."
        ),
        criterion=(
            "(1) Disagreement: JSD between heads of one model minus JSD between heads of two separately trained models "
            "> 0 (heads as diverse as a true ensemble's members). (2) Graceful loss, for k = 1 and 2: NLL lost by "
            "removing k heads minus NLL lost by removing the same width at random < 0. Each over seeds, the whole 95% "
            "interval on the claim's side."
        ),
    )
    try:
        train_split, val_split, tokenizer = load_splits(None)
    except RedthreadError as e:
        report.skip(f"the default corpus is not installed here ({e})")
        return report
    data = LMData(train_split, val_split, block)
    batches = list(data.eval_batches("val", n_eval, 1))
    x, y = batches[0]  # (n_eval, block), (n_eval, block)
    probe = x[:32]

    models, untrained_jsd = [], []
    for i, s in enumerate(seeds):
        model = make_model(tokenizer.vocab_size, block, n_layer, d_model, s)
        untrained_jsd.append(float(np.mean([pairwise_jsd(a) for a in attention(model.eval(), probe)])))
        train(model, data, TrainConfig(max_iters=steps, batch_size=32, lr=LR, min_lr=LR / 10, warmup_iters=steps // 10,
                                       eval_interval=steps, eval_batches=1, log_interval=steps, seed=s, device="cpu"),
              progress=False)
        models.append(model.eval())
        if progress is not None:
            progress.update(0.8 * (i + 1) / n_seeds, f"seed {s} trained")

    maps = [attention(m, probe) for m in models]
    within = [float(np.mean([pairwise_jsd(a) for a in ms])) for ms in maps]
    across = [float(np.mean([pairwise_jsd(a, b) for a, b in zip(maps[i], maps[(i + 1) % n_seeds])])) for i in range(n_seeds)]
    costs = {k: [removal_costs(m, x, y, output_means(m, x), k, s) for m, s in zip(models, seeds)] for k in KS}
    nll = [token_nll(m, x, y) for m in models]
    if progress is not None:
        progress.update(1.0)

    report.number("seeds", seeds)
    report.number("val_nll", nll)
    report.number("jsd_within", within)
    report.number("jsd_across", across)
    report.number("jsd_untrained", untrained_jsd)
    report.number("jsd_max", float(np.log(2)))
    report.check("disagreement", [w - a for w, a in zip(within, across)], seeds)
    for k in KS:
        report.number(f"cost_heads_{k}", [c[0] for c in costs[k]])
        report.number(f"cost_dims_{k}", [c[1] for c in costs[k]])
        report.check(f"removal_{k}", [h - d for h, d in costs[k]], seeds)

    report.table(["seed", "val NLL", "JSD within", "JSD across models", "JSD untrained",
                  *(f"cost {k} head{'s' * (k > 1)}" for k in KS), *(f"cost {k} × d_head random dims" for k in KS)],
                 [[s, nll[i], within[i], across[i], untrained_jsd[i], *(costs[k][i][0] for k in KS),
                   *(costs[k][i][1] for k in KS)] for i, s in enumerate(seeds)],
                 title="Per seed: disagreement between heads (nats) and the NLL lost by removal (nats)")
    report.figure("ensemble", lambda: _figure(within, across, untrained_jsd, costs),
                  "Left: mean pairwise JSD of attention rows, heads of one model against heads of two models trained "
                  "apart and of the untrained model. Right: NLL lost removing k heads against the same width at random.",
                  "左：各行注意力权重两两之间 JSD 的平均，比较同一个模型的头、分开训练的两个模型的头，以及未训练模型的头。"
                  "右：去掉 k 个头所损失的 NLL，对比随机去掉同样宽度的维度。")
    return report


def _figure(within, across, untrained, costs):
    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 4), layout="constrained")
    for i, vals in enumerate((within, across, untrained)):  # one model, two models, untrained
        a.scatter(np.full(len(vals), i), vals, color=f"C{i}")
        a.bar(i, np.mean(vals), color=f"C{i}", alpha=0.3)
    a.set_xticks(range(3), [say("heads of one model", "同一个模型的头"), say("heads of two models", "两个模型的头"),
                            say("untrained heads", "未训练的头")])
    a.set(ylabel=say("mean pairwise JSD (nats)", "两两之间 JSD 的平均（奈特）"),
          title=say("Disagreement between heads", "头与头之间的分歧"))
    for j, (name, idx) in enumerate(((say("k heads", "k 个头"), 0), (say("same width, random", "同样宽度，随机维度"), 1))):
        for k, cs in costs.items():
            vals = [c[idx] for c in cs]
            b.scatter(np.full(len(vals), k + (j - 0.5) * 0.2), vals, color=f"C{j}", label=name if k == KS[0] else None)
    b.set_xticks(list(costs), [str(k) for k in costs])
    b.set(xlabel=say("heads removed (k)", "去掉的头数（k）"), ylabel=say("val NLL lost (nats)", "验证集上损失的 NLL（奈特）"),
          title=say("Removing heads or random dimensions", "去掉头，或去掉随机的维度"))

    b.axhline(0, color="black", lw=0.8)
    b.legend()
    return fig
