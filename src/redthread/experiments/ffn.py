"""Claim C10: the position-wise FFN transforms each position's aggregated context non-linearly:
attention aggregates, the FFN processes (Vaswani et al. 2017, section 3.3, eq. 2).

Set-up: a source whose next token is a non-linear function of two earlier tokens. After five
uniform tokens, s_t = f(s_{t-2}, s_{t-5}) with probability P_RULE, where f is a fixed random
V x V table, otherwise uniform:

    P(s_t = v | s_<t) = P_RULE [v = f(s_{t-2}, s_{t-5})] + (1 - P_RULE) / V

so the Bayes NLL is exact. Predicting s_t needs both steps the claim names: bring s_{t-2} and
s_{t-5} to position t (the input there is s_{t-1}), which only attention can do, and compute a
random table of the pair, which a sum of the two embeddings read out linearly cannot (logits
additive in the two tokens fit no random table), so something non-linear must.

A two-layer Transformer is trained on it by maximum likelihood. Then two measurements:
- ablation: every attention sublayer, or every FFN, has its output replaced by its mean over
  the validation set (mean ablation: the sublayer still adds its average, but no information),
  and the validation NLL lost is measured;
- linear probes along the residual stream (after the embedding, then after each attention
  sublayer and each FFN): a softmax regression (the C2 rung, `SoftmaxRegression`) trained on
  half the validation positions and scored on the other half, for the two context tokens and
  for the rule's output f. Where a quantity becomes linearly readable shows which sublayer
  produced it (Alain & Bengio 2016, "Understanding intermediate layers using linear probes").

Both run over seeds (`run_seeds`: each its own table f, data, initial weights and probes) and are
decided by 95% intervals over the seeds. The ablation is scored at the positions where the rule may
apply (t >= 5) against half the information the context carries there, (log V - H_rule) / 2 = 0.89
nats, exact for this source; the probes by which kind of sublayer produces the largest rise, by 5%
of the range from chance to a perfect probe.

Nothing is tuned (`GRID` is empty): one model per seed at a fixed learning rate, and the comparison
(attention against FFN) is made within that model. It is made at half, one and twice the training
budget (`BUDGETS`); `budget` scales the training steps only.
"""

from __future__ import annotations

import math
from contextlib import contextmanager

import numpy as np
import torch
from torch import Tensor

from redthread.data.synthetic import SyntheticSource
from redthread.errors import InvalidValue
from redthread.experiments.criteria import ABOVE, Criterion
from redthread.experiments.report import Report
from redthread.experiments.stats import run_seeds
from redthread.lang import say
from redthread.models.regression import SoftmaxRegression
from redthread.models.transformer import TransformerConfig, TransformerLM
from redthread.plotting import pyplot
from redthread.train.loop import TrainConfig, evaluate, train

plt = pyplot()

NAME, CLAIMS = "ffn", "C10"

HYPOTHESIS = ("In a two-layer Transformer trained on a source whose next token is a random table of two earlier "
              "tokens, the attention sublayers bring the two tokens to the position and the FFNs compute the table: "
              "mean-ablating either kind costs at least half the information the context carries, the context "
              "tokens become linearly readable across an attention sublayer, and the table's output across an FFN.")

# The pre-registered criteria: each floor is the smallest effect size of interest, with its reason.
CRITERIA: dict[str, Criterion] = {
    # At the positions where the rule may apply, the context carries log V - H_rule nats per token, H_rule the entropy
    # of P(s_t | s_<t) = 0.8 [v = f] + 0.2 / 16: log 16 - 0.990 = 1.782 nats. A kind of sublayer the model needs for
    # the rule loses at least half of that when mean-ablated (0.89 nats); one it does not need loses little.
    "attention_lost": Criterion("C10", "attention aggregates", "val NLL lost at the rule's positions when every "
                                "attention sublayer is mean-ablated, nats", 0.89, ABOVE,
                                "half the information the context carries, (log 16 - H_rule) / 2 = 1.782 / 2"),
    "ffn_lost": Criterion("C10", "FFN processes", "val NLL lost at the rule's positions when every FFN is "
                          "mean-ablated, nats", 0.89, ABOVE,
                          "half the information the context carries, (log 16 - H_rule) / 2 = 1.782 / 2"),
    # Linear probes along the residual stream: which kind of sublayer makes a quantity linearly readable.
    "context_by_attention": Criterion("C10", "attention aggregates", "largest rise in the context tokens' probe "
                                      "accuracy across an attention sublayer minus across an FFN", 0.047, ABOVE,
                                      "the claim: gathering s_(t-2), s_(t-5) to position t is attention's work; 5% of "
                                      "the range from chance to a perfect probe, 0.05 x (1 - 1/16)", bounds=(-1.0, 1.0)),
    "rule_by_ffn": Criterion("C10", "FFN processes", "largest rise in the rule output's probe accuracy across an FFN "
                             "minus across an attention sublayer", 0.047, ABOVE,
                             "the claim: computing f(s_(t-2), s_(t-5)) from them is the FFN's work; 5% of the range "
                             "from chance to a perfect probe, 0.05 x (1 - 1/16)", bounds=(-1.0, 1.0)),
}
GRID: dict = {}  # nothing tuned: one model per seed at LR, compared within itself
LR = 6e-3
BUDGET = {"steps": 600, "quick_steps": 150}  # AdamW steps of batch 32
BUDGETS = (0.5, 1.0, 2.0)  # measured at half, one and twice the training budget
VOCAB, A_LAG, B_LAG, P_RULE = 16, 2, 5, 0.8
N_LAYER, N_HEAD, D_MODEL = 2, 4, 64
PROBE_ITERS, PROBE_L2 = 100, 1e-3


class RuleSource(SyntheticSource):
    """s_t = table[s_{t-a}, s_{t-b}] w.p. p, else uniform; uniform for t < b."""

    def __init__(self, vocab_size: int = VOCAB, a: int = A_LAG, b: int = B_LAG, p: float = P_RULE, seed: int = 0):
        if not (0 < a < b and 0 <= p <= 1):
            raise InvalidValue(f"need 0 < a < b and 0 <= p <= 1, got a={a}, b={b}, p={p}")
        self.vocab_size, self.a, self.b, self.p = vocab_size, a, b, p
        self.table = np.random.default_rng(seed).integers(vocab_size, size=(vocab_size, vocab_size))  # (V, V): f

    def sample(self, n_sequences: int, length: int, seed: int = 0) -> np.ndarray:
        rng = np.random.default_rng(seed)
        seqs = rng.integers(self.vocab_size, size=(n_sequences, length))  # (N, L): the uniform draws
        rule = rng.random((n_sequences, length)) < self.p  # (N, L)
        for t in range(self.b, length):
            seqs[:, t] = np.where(rule[:, t], self.table[seqs[:, t - self.a], seqs[:, t - self.b]], seqs[:, t])
        return seqs

    def log_probs(self, sequences: np.ndarray) -> np.ndarray:
        s, a, b = sequences, self.a, self.b
        out = np.full(s.shape, -math.log(self.vocab_size))  # (N, L)
        out[:, b:] = np.log(self.p * (s[:, b:] == self.table[s[:, b - a : -a], s[:, :-b]]) + (1 - self.p) / self.vocab_size)
        return out


ZH = {"embedding": "嵌入", "attention": "注意力", "FFN": "前馈网络", "every attention sublayer": "所有注意力子层",
      "every FFN": "所有前馈网络", "f (rule output)": "f（规则的输出）"}  # the figures' names in Chinese


def _shown(name: str) -> str:
    """A sublayer's or a probe target's name in the language chosen: 'FFN 1' is '前馈网络 1' in Chinese."""
    kind, _, i = name.rpartition(" ")
    if kind in ZH and i.isdigit():
        return say(name, f"{ZH[kind]} {i}")
    return say(name, ZH.get(name, name))


def sublayers(
model: TransformerLM) -> list[tuple[str, torch.nn.Module]]:
    """(name, module) of every sublayer in order: attention 0, FFN 0, attention 1, ..."""
    return [(f"{kind} {i}", getattr(block, attr)) for i, block in enumerate(model.blocks)
            for kind, attr in (("attention", "self_attn"), ("FFN", "ffn"))]


def _output(out) -> Tensor:
    return out[0] if isinstance(out, tuple) else out  # attention returns (y, att)


@torch.no_grad()
def stream_and_means(model: TransformerLM, x: Tensor) -> tuple[dict[str, Tensor], dict[str, Tensor]]:
    """The residual stream after the embedding and after every sublayer, (N, T, C) each, and each
    sublayer's mean output over every position, (C,). Pre-norm with no dropout: the stream after a
    sublayer is the stream before it plus the sublayer's output."""
    outputs: dict[str, list[Tensor]] = {}
    handles = [module.register_forward_hook(lambda m, args, out, name=name: outputs.setdefault(name, []).append(_output(out)))
               for name, module in sublayers(model)]
    embedded: list[Tensor] = []
    handles.append(model.embed.register_forward_hook(lambda m, args, out: embedded.append(out)))
    try:
        for xb in x.split(256):
            model(xb)
    finally:
        for h in handles:
            h.remove()
    stream = {"embedding": torch.cat(embedded)}
    prev = stream["embedding"]
    for name, _ in sublayers(model):
        prev = stream[name] = prev + torch.cat(outputs[name])  # (N, T, C)
    means = {name: torch.cat(out).mean((0, 1)) for name, out in outputs.items()}
    return stream, means


@contextmanager
def mean_ablated(model: TransformerLM, names: list[str], means: dict[str, Tensor]):
    """Within the block, the named sublayers output their mean over the validation set."""

    def replace(module, args, out, name):
        if isinstance(out, tuple):
            return (means[name].expand_as(out[0]), *out[1:])
        return means[name].expand_as(out)

    handles = [module.register_forward_hook(lambda m, a, o, name=name: replace(m, a, o, name))
               for name, module in sublayers(model) if name in names]
    try:
        yield
    finally:
        for h in handles:
            h.remove()


def probe_accuracy(features: Tensor, labels: Tensor, n_classes: int, seed: int) -> float:
    """Held-out accuracy of a softmax regression fitted on the first half of the rows (full-batch L-BFGS)."""
    half = features.size(0) // 2
    mu, sd = features[:half].mean(0), features[:half].std(0).clamp_min(1e-8)
    z = (features - mu) / sd  # standardised with the training half's statistics
    torch.manual_seed(seed)
    probe = SoftmaxRegression(features.size(1), n_classes)
    opt = torch.optim.LBFGS(probe.parameters(), lr=1.0, max_iter=PROBE_ITERS, line_search_fn="strong_wolfe")

    def closure():
        opt.zero_grad()
        loss = probe.nll(z[:half], labels[:half]) + PROBE_L2 * sum((p**2).sum() for p in probe.parameters())
        loss.backward()
        return loss

    opt.step(closure)
    with torch.no_grad():
        return (probe.predict(z[half:]) == labels[half:]).float().mean().item()


@torch.no_grad()
def rule_nll(model: TransformerLM, x: Tensor, y: Tensor) -> float:
    """Mean NLL of y (N, T) at the positions t >= B_LAG, where the rule may apply."""
    logp = torch.cat([model(xb).log_softmax(-1) for xb in x.split(256)])  # (N, T, V)
    return float(-logp.gather(-1, y[..., None])[:, B_LAG:].mean())


def one_seed(seed: int, length: int, steps: int, n_train: int, n_val: int) -> dict:
    """Train on a fresh source; ablate and probe the trained model."""
    source = RuleSource(seed=seed)
    data = source.data(n_train, n_val, length, seed=seed)
    seqs = np.stack(data.sequences("val"))  # (N, L)
    x, y = next(data.eval_batches("val", n_val))  # (N, T), (N, T): the whole validation split; y_t = s_t
    torch.manual_seed(seed)
    model = TransformerLM(TransformerConfig(vocab_size=data.vocab_size, block_size=length, n_layer=N_LAYER,
                                            n_head=N_HEAD, d_model=D_MODEL, pos="rope"))
    train(model, data, TrainConfig(max_iters=steps, batch_size=32, lr=LR, min_lr=LR / 10, warmup_iters=steps // 10,
                                   eval_interval=steps, log_interval=steps, seed=seed, device="cpu"), progress=False)
    model.eval()
    out = {"bayes_nll": source.bayes_nll(seqs), "bayes_rule_nll": float(-source.log_probs(seqs)[:, B_LAG:].mean()),
           "val_nll": evaluate(model, data, "val")["nll"], "rule_nll": rule_nll(model, x, y)}
    stream, means = stream_and_means(model, x)
    names = [name for name, _ in sublayers(model)]
    ablations = {**{n: [n] for n in names}, "every attention sublayer": [n for n in names if n.startswith("attention")],
                 "every FFN": [n for n in names if n.startswith("FFN")]}
    out["lost"] = {}
    for label, ablated in ablations.items():
        with mean_ablated(model, ablated, means):
            out["lost"][label] = rule_nll(model, x, y) - out["rule_nll"]

    t = torch.arange(B_LAG, length)  # positions where the rule may apply
    targets = {f"s(t-{A_LAG})": y[:, t - A_LAG], f"s(t-{B_LAG})": y[:, t - B_LAG]}  # (N, T')
    targets["f (rule output)"] = torch.from_numpy(source.table)[targets[f"s(t-{A_LAG})"], targets[f"s(t-{B_LAG})"]]
    points = list(stream)  # embedding, then after each sublayer
    out["accuracy"] = {k: [probe_accuracy(stream[p][:, t].reshape(-1, D_MODEL), v.reshape(-1), VOCAB, seed) for p in points]
                       for k, v in targets.items()}
    context = [(a + b) / 2 for a, b in zip(out["accuracy"][f"s(t-{A_LAG})"], out["accuracy"][f"s(t-{B_LAG})"])]
    out["context"] = context
    out["context_rise"] = {n: context[i + 1] - context[i] for i, n in enumerate(names)}  # across sublayer n
    rule = out["accuracy"]["f (rule output)"]
    out["rule_rise"] = {n: rule[i + 1] - rule[i] for i, n in enumerate(names)}
    out["points"], out["names"] = points, names
    return out


def best_rise(rises: dict[str, float], kind: str) -> float:
    """The largest rise across a sublayer whose name starts with `kind` ("attention" or "FFN")."""
    return max(v for k, v in rises.items() if k.startswith(kind))


def training_steps(quick: bool, budget: float) -> int:
    """The steps the model trains for: the budget's share of BUDGET, at least one."""
    return max(1, int(BUDGET["quick_steps" if quick else "steps"] * budget))


def run(quick: bool = False, seed: int = 0, progress=None, budget: float = 1.0) -> Report:
    length, n_train, n_val = (16, 1000, 200) if quick else (24, 4000, 400)
    steps = training_steps(quick, budget)
    seeds = run_seeds(seed, quick)
    report = Report(
        NAME, CLAIMS, quick=quick,
        setup=(
            f"Source: V = {VOCAB} symbols; after {B_LAG} uniform tokens, s_t = f(s_(t-{A_LAG}), s_(t-{B_LAG})) with "
            f"probability {P_RULE}, f a fixed random {VOCAB}×{VOCAB} table, otherwise uniform; exact Bayes NLL. "
            f"{n_train} training and {n_val} validation sequences of {length} tokens, seeds {seeds} (each seed its own "
            f"table, data, weights and probes). Model: {N_LAYER}-layer pre-norm Transformer, d_model {D_MODEL}, "
            f"{N_HEAD} heads, d_ff {4 * D_MODEL}, rotary positions, AdamW, batch 32, {steps} steps (training budget "
            f"×{budget:g} of {BUDGET['quick_steps' if quick else 'steps']}), lr {LR:g} with warm-up and cosine decay "
            f"to {LR / 10:g}, not tuned (nothing is compared across separately trained models). Ablation: a "
            f"sublayer's output replaced by its mean over every validation position; NLL scored at the positions "
            f"t ≥ {B_LAG} where the rule may apply. Probes: softmax regression on the standardised residual stream at "
            f"the positions t ≥ {B_LAG} of the validation sequences, fitted (L-BFGS, {PROBE_ITERS} iterations, L2 "
            f"{PROBE_L2}) on the first half of the sequences and scored on the second; chance is 1/{VOCAB}."
        ),
        criterion=(
            HYPOTHESIS + " Attention aggregates: mean-ablating every attention sublayer raises the NLL at the rule's "
            f"positions by more than {CRITERIA['attention_lost'].floor:g} nats (half of the log 16 − H_rule = 1.78 nats the context "
            f"carries), and the context tokens' s_(t-{A_LAG}), s_(t-{B_LAG}) probe accuracy rises most across an "
            f"attention sublayer (its largest rise minus an FFN's > {CRITERIA['context_by_attention'].floor:g}). FFN "
            f"processes: mean-ablating every FFN costs more than {CRITERIA['ffn_lost'].floor:g} nats, and the rule "
            "output's probe accuracy rises most across an FFN (its largest rise minus an attention sublayer's > "
            f"{CRITERIA['rule_by_ffn'].floor:g}). Each decided by the 95% interval over seeds, at every training budget."
        ),
    )
    runs = []
    for i, s in enumerate(seeds):
        runs.append(one_seed(s, length, steps, n_train, n_val))
        if progress is not None:
            progress.update((i + 1) / len(seeds), f"seed {s}")
    names, points = runs[0]["names"], runs[0]["points"]

    report.check("attention_lost", [r["lost"]["every attention sublayer"] for r in runs], seeds)
    report.check("context_by_attention", [best_rise(r["context_rise"], "attention") - best_rise(r["context_rise"], "FFN")
                                          for r in runs], seeds)
    report.check("ffn_lost", [r["lost"]["every FFN"] for r in runs], seeds)
    report.check("rule_by_ffn", [best_rise(r["rule_rise"], "FFN") - best_rise(r["rule_rise"], "attention") for r in runs],
                 seeds)

    report.number("seeds", seeds)
    report.number("steps", steps)
    for key in ("bayes_nll", "val_nll", "bayes_rule_nll", "rule_nll"):
        report.number(key, [r[key] for r in runs])
    report.number("nll_lost", {k: [r["lost"][k] for r in runs] for k in runs[0]["lost"]})
    report.number("probe_points", points)
    accuracy = {k: [sum(r["accuracy"][k][i] for r in runs) / len(runs) for i in range(len(points))] for k in runs[0]["accuracy"]}
    context = [sum(r["context"][i] for r in runs) / len(runs) for i in range(len(points))]
    report.number("probe_accuracy", accuracy)  # mean over seeds
    report.number("probe_accuracy_by_seed", [r["accuracy"] for r in runs])
    report.number("context_accuracy", context)
    report.number("context_rise", {n: [r["context_rise"][n] for r in runs] for n in names})
    report.number("rule_rise", {n: [r["rule_rise"][n] for r in runs] for n in names})
    report.number("chance", 1 / VOCAB)

    lost_mean = {k: sum(r["lost"][k] for r in runs) / len(runs) for k in runs[0]["lost"]}
    report.number("nll_lost_mean", lost_mean)
    report.table(["seed", "val NLL (all positions)", "Bayes", "NLL at rule positions", "Bayes there",
                  "lost, every attention", "lost, every FFN"],
                 [[s, r["val_nll"], r["bayes_nll"], r["rule_nll"], r["bayes_rule_nll"], r["lost"]["every attention sublayer"],
                   r["lost"]["every FFN"]] for s, r in zip(seeds, runs)],
                 title="The trained models and the ablations (nats, rule positions t ≥ 5 unless said)")
    report.table(["mean-ablated", "NLL lost at the rule's positions (nats, mean over seeds)"],
                 [[k, v] for k, v in lost_mean.items()], title="Ablating sublayers, one at a time and by kind")
    report.table(["residual stream after", *accuracy, "context (mean)"],
                 [[p, *(accuracy[k][i] for k in accuracy), context[i]] for i, p in enumerate(points)],
                 title="Linear probe accuracy along the residual stream (held-out, mean over seeds)")

    def draw_probes() -> plt.Figure:
        fig, ax = plt.subplots(figsize=(6.5, 4), layout="constrained")
        for (k, acc), style, color in zip(accuracy.items(), ("o-", "s-", "^--"), ("C0", "C1", "C2")):
            for r in runs:
                ax.plot(range(len(points)), r["accuracy"][k], "-", color=color, alpha=0.25, lw=1)
            ax.plot(range(len(points)), acc, style, color=color, label=_shown(k))
        ax.axhline(1 / VOCAB, color="grey", ls=":", label=say("chance", "随机猜测"))
        for i, name in enumerate(names):
            ax.axvspan(i + 0.05, i + 0.95, color="tab:blue" if name.startswith("attention") else "tab:orange",
                       alpha=0.08)
        ax.set_xticks(range(len(points)), [_shown(p) for p in points], rotation=20)
        ax.set(xlabel=say("residual stream after … (shaded: blue across attention, orange across an FFN)",
                          "……之后的残差流（阴影：蓝色跨过注意力，橙色跨过前馈网络）"),
               ylabel=say("held-out probe accuracy", "探针在留出数据上的准确率"), ylim=(0, 1.05),
               title=say("What a linear read-out finds, sublayer by sublayer", "线性读出逐个子层找到了什么"))
        ax.legend(fontsize=8)
        return fig

    report.figure("probes", draw_probes, "Accuracy of linear probes for the two context tokens and the rule's output, "
                  "after the embedding and after each sublayer (thick: mean over seeds; thin: each seed).",
                  "嵌入之后和每个子层之后，线性探针对两个上下文词元和规则输出的准确率（粗线：各种子的平均；"
                  "细线：每个种子）。")

    def draw_ablation() -> plt.Figure:
        fig, ax = plt.subplots(figsize=(6, 3.8), layout="constrained")
        labels = list(lost_mean)
        ax.barh(range(len(labels)), [lost_mean[k] for k in labels],
                color=["tab:blue" if "attention" in k else "tab:orange" for k in labels])
        for j, k in enumerate(labels):
            ax.plot([r["lost"][k] for r in runs], [j] * len(runs), "k.", ms=4)
        ax.axvline(0.89, color="k", ls=":", lw=1, label=say("threshold 0.89 nats", "阈值 0.89 奈特"))
        ax.set_yticks(range(len(labels)), [_shown(k) for k in labels])
        ax.invert_yaxis()
        ax.set(xlabel=say("NLL lost at the rule's positions (nats)", "规则所在位置上损失的 NLL（奈特）"),
               title=say("Mean-ablating attention (blue) and FFN (orange)", "均值消融注意力（蓝色）和前馈网络（橙色）"))
        ax.legend(fontsize=8)
        return fig

    report.figure("ablation", draw_ablation, "NLL lost when a sublayer, or every sublayer of a kind, outputs only its "
                  "mean (bars: mean over seeds; dots: each seed).",
                  "一个子层，或同一种类的所有子层，只输出自己的均值时损失的 NLL（柱：各种子的平均；点：每个种子）。")
    return report
