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
"""

from __future__ import annotations

import math
from contextlib import contextmanager

import matplotlib.pyplot as plt
import numpy as np
import torch
from torch import Tensor

from redthread.data.synthetic import SyntheticSource
from redthread.errors import InvalidValue
from redthread.experiments.report import Report
from redthread.models.regression import SoftmaxRegression
from redthread.models.transformer import TransformerConfig, TransformerLM
from redthread.train.loop import TrainConfig, evaluate, train

NAME, CLAIMS = "ffn", "C10"
VOCAB, A_LAG, B_LAG, P_RULE = 16, 2, 5, 0.8
N_LAYER, N_HEAD, D_MODEL = 2, 4, 64
LOST = 0.5  # nats: mean-ablating every attention sublayer, and every FFN, must each cost at least this
RISE = 0.3  # the largest rise in probe accuracy across one sublayer must be at least this
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


def sublayers(model: TransformerLM) -> list[tuple[str, torch.nn.Module]]:
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


def run(quick: bool = False, seed: int = 0, progress=None) -> Report:
    length, steps, n_train, n_val = (24, 300, 2000, 400) if quick else (32, 1500, 8000, 1000)
    report = Report(
        NAME, CLAIMS, quick=quick,
        setup=(
            f"Source: V = {VOCAB} symbols; after {B_LAG} uniform tokens, s_t = f(s_(t-{A_LAG}), s_(t-{B_LAG})) with "
            f"probability {P_RULE}, f a fixed random {VOCAB}×{VOCAB} table, otherwise uniform; exact Bayes NLL. "
            f"{n_train} training and {n_val} validation sequences of {length} tokens (seed {seed}). Model: "
            f"{N_LAYER}-layer pre-norm Transformer, d_model {D_MODEL}, {N_HEAD} heads, d_ff {4 * D_MODEL}, rotary "
            f"positions, AdamW lr 6e-3, batch 32, {steps} steps. Ablation: a sublayer's output replaced by its mean "
            f"over every validation position. Probes: softmax regression on the standardised residual stream at the "
            f"positions t ≥ {B_LAG} of the validation sequences, fitted (L-BFGS, {PROBE_ITERS} iterations, L2 "
            f"{PROBE_L2}) on the first half of the sequences and scored on the second; chance is 1/{VOCAB}."
        ),
        criterion=(
            f"(1) Mean-ablating every attention sublayer raises the validation NLL by ≥ {LOST} nats, and so does "
            f"mean-ablating every FFN. (2) Along the residual stream, the largest rise in probe accuracy for the "
            f"context tokens s_(t-{A_LAG}), s_(t-{B_LAG}) (their mean) happens across an attention sublayer, and the "
            f"largest rise for the rule's output f(s_(t-{A_LAG}), s_(t-{B_LAG})) across an FFN, each rise ≥ {RISE}."
        ),
    )
    source = RuleSource(seed=seed)
    data = source.data(n_train, n_val, length, seed=seed)
    bayes = source.bayes_nll(data.sequences("val"))
    x, y = next(data.eval_batches("val", n_val))  # (N, T), (N, T): the whole validation split

    torch.manual_seed(seed)
    model = TransformerLM(TransformerConfig(vocab_size=data.vocab_size, block_size=length, n_layer=N_LAYER,
                                            n_head=N_HEAD, d_model=D_MODEL, pos="rope"))
    train(model, data, TrainConfig(max_iters=steps, batch_size=32, lr=6e-3, min_lr=6e-4, warmup_iters=steps // 10,
                                   eval_interval=steps, log_interval=steps, seed=seed, device="cpu"), progress=False)
    model.eval()
    if progress is not None:
        progress.update(0.7, "trained")
    nll = evaluate(model, data, "val")["nll"]
    stream, means = stream_and_means(model, x)
    names = [name for name, _ in sublayers(model)]
    attn_names, ffn_names = [n for n in names if n.startswith("attention")], [n for n in names if n.startswith("FFN")]
    ablations = {**{n: [n] for n in names}, "every attention sublayer": attn_names, "every FFN": ffn_names}
    lost = {}
    for label, ablated in ablations.items():
        with mean_ablated(model, ablated, means):
            lost[label] = evaluate(model, data, "val")["nll"] - nll

    t = torch.arange(B_LAG, length)  # positions where the rule may apply
    targets = {f"s(t-{A_LAG})": y[:, t - A_LAG], f"s(t-{B_LAG})": y[:, t - B_LAG]}  # (N, T'), y_t = s_t
    targets["f (rule output)"] = torch.from_numpy(source.table)[targets[f"s(t-{A_LAG})"], targets[f"s(t-{B_LAG})"]]
    points = list(stream)  # embedding, then after each sublayer
    accuracy = {k: [probe_accuracy(stream[p][:, t].reshape(-1, D_MODEL), v.reshape(-1), VOCAB, seed) for p in points]
                for k, v in targets.items()}
    if progress is not None:
        progress.update(1.0)
    context = [(a + b) / 2 for a, b in zip(accuracy[f"s(t-{A_LAG})"], accuracy[f"s(t-{B_LAG})"])]
    rule = accuracy["f (rule output)"]
    context_rise = [context[i + 1] - context[i] for i in range(len(names))]  # across sublayer i
    rule_rise = [rule[i + 1] - rule[i] for i in range(len(names))]
    best_context, best_rule = int(np.argmax(context_rise)), int(np.argmax(rule_rise))

    report.number("bayes_nll", bayes)
    report.number("val_nll", nll)
    report.number("excess_nll", nll - bayes)
    report.number("nll_lost", lost)
    report.number("probe_points", points)
    report.number("probe_accuracy", accuracy)
    report.number("context_accuracy", context)
    report.number("context_rise", dict(zip(names, context_rise)))
    report.number("rule_rise", dict(zip(names, rule_rise)))
    report.number("chance", 1 / VOCAB)

    for label in ("every attention sublayer", "every FFN"):
        report.decide(lost[label] >= LOST, f"mean-ablating {label} costs ≥ {LOST} nats",
                      f"{lost[label]:+.3f} nats (trained model {nll:.3f}, Bayes {bayes:.3f})")
    report.decide(names[best_context].startswith("attention") and context_rise[best_context] >= RISE,
                  f"context tokens become readable across an attention sublayer (rise ≥ {RISE})",
                  f"largest rise {context_rise[best_context]:+.2f} across {names[best_context]}")
    report.decide(names[best_rule].startswith("FFN") and rule_rise[best_rule] >= RISE,
                  f"the rule's output becomes readable across an FFN (rise ≥ {RISE})",
                  f"largest rise {rule_rise[best_rule]:+.2f} across {names[best_rule]}")

    report.table(["mean-ablated", "NLL lost (nats)"], [[k, v] for k, v in lost.items()],
                 title=f"Ablating sublayers of the trained model (val NLL {nll:.3f}, Bayes {bayes:.3f})")
    report.table(["residual stream after", *accuracy, "context (mean)"],
                 [[p, *(accuracy[k][i] for k in accuracy), context[i]] for i, p in enumerate(points)],
                 title="Linear probe accuracy along the residual stream (held-out)")

    fig, ax = plt.subplots(figsize=(6.5, 4), layout="constrained")
    for (k, acc), style in zip(accuracy.items(), ("o-", "s-", "^--")):
        ax.plot(range(len(points)), acc, style, label=k)
    ax.axhline(1 / VOCAB, color="grey", ls=":", label="chance")
    for i, name in enumerate(names):
        ax.axvspan(i + 0.05, i + 0.95, color="tab:blue" if name.startswith("attention") else "tab:orange", alpha=0.08)
    ax.set_xticks(range(len(points)), points, rotation=20)
    ax.set(xlabel="residual stream after … (shaded: blue across attention, orange across an FFN)",
           ylabel="held-out probe accuracy", ylim=(0, 1.05), title="What a linear read-out finds, sublayer by sublayer")
    ax.legend(fontsize=8)
    report.figure("probes", fig, "Accuracy of linear probes for the two context tokens and the rule's output, after the "
                  "embedding and after each sublayer.")
    fig, ax = plt.subplots(figsize=(6, 3.8), layout="constrained")
    labels = list(lost)
    ax.barh(range(len(labels)), [lost[k] for k in labels],
            color=["tab:blue" if "attention" in k else "tab:orange" for k in labels])
    ax.set_yticks(range(len(labels)), labels)
    ax.invert_yaxis()
    ax.set(xlabel="validation NLL lost (nats)", title="Mean-ablating attention (blue) and FFN (orange)")
    report.figure("ablation", fig, "NLL lost when a sublayer, or every sublayer of a kind, outputs only its mean.")
    return report
