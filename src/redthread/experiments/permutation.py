"""Claim C8: self-attention alone is insensitive to order (permuting the input permutes the output);
positional encoding injects order.

Reference: Vaswani et al. 2017, "Attention Is All You Need", section 3.5 (sinusoidal positional
encoding, added to the token embeddings because "the model contains no recurrence and no
convolution"). Self-attention computes softmax(Q K^T / sqrt(d)) V row by row with the same
weights at every position, so for a permutation matrix P, Attn(P X) = P Attn(X); so do the
position-wise FFN, the residual connections and LayerNorm, hence a whole encoder without a causal
mask (Lee et al. 2019, "Set Transformer", property 1).

Set-up, in two parts:
1. Equivariance, measured in float32 on random inputs and random permutations: `MultiHeadAttention`
   alone, and a 2-layer bidirectional `Encoder` with pos="none" and with pos="sinusoidal"; the
   error is max |f(x[perm]) - f(x)[perm]|. A causal `TransformerLM` with pos="none" is measured
   too, without a check: its mask is itself an order (position t sees t + 1 tokens), so it is not
   equivariant even without a positional encoding.
2. Learnability of an order-dependent task: read [CLS, s_1, ..., s_T] (s_i uniform over V symbols)
   and name s_1, the first token, from the CLS position's output. Without positions the CLS output
   is a function of the multiset {s_1 .. s_T} only, and the best any such function can do is to
   guess P(s_1 = v | multiset) = count(v) / T: accuracy E[max_v count(v)] / T, computed exactly on
   the validation sequences. With sinusoidal positions the task is a single attention lookup.

Why this criterion: equivariance is exact in real arithmetic, so it is an exact check: float32
reorders sums, so an exactly equivariant map still shows errors of order 1e-7 to 1e-6 relative to
outputs of order 1; 1e-5 admits that and nothing more, and the sinusoidal encoder must miss by more
than a thousand times that. The task is decided over seeds (each its own data and initial weights)
with 95% intervals against the multiset bound, derived exactly: an order-blind model's expected
accuracy cannot exceed it (its accuracy minus the bound has mean <= 0; one that reaches the bound
sits on it, so the margin is the validation set's sampling noise, two standard errors of an accuracy
on 10000 sequences, 0.01), and the model with positions must beat it (accuracy minus the
bound > 0), which only information about order allows.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from redthread.data.tensors import TensorSplits
from redthread.experiments.criteria import ABOVE, BELOW, Criterion
from redthread.experiments.report import Report
from redthread.experiments.stats import run_seeds
from redthread.lang import say
from redthread.layers.attention import MultiHeadAttention
from redthread.models.likelihoods import token_nll
from redthread.models.transformer import Encoder, TransformerConfig, TransformerLM
from redthread.plotting import pyplot
from redthread.train.loop import TrainConfig, evaluate, train

plt = pyplot()

NAME, CLAIMS = "permutation", "C8"
HYPOTHESIS = ("Self-attention without positions is permutation-equivariant (exactly, up to float rounding) and "
              "cannot beat the multiset bound on an order task; sinusoidal positions break the symmetry and beat it.")
BUDGET = {"steps": 600, "quick_steps": 150, "training sequences": 20000}
GRID: dict = {}  # one fixed recipe for both arms (the claim is about what positions make possible)

# The pre-registered criteria: each floor is the smallest effect size of interest, with its reason.
CRITERIA: dict[str, Criterion] = {
    # Exact properties (no randomness in them; decided on the largest error over the permutations tried).
    "equivariance_error": Criterion("C8", "order-blind", "max |f(x[perm]) - f(x)[perm]|, MultiHeadAttention and "
                                    "Encoder pos='none', float32", 1e-5, BELOW,
                                    "exactly 0 in real arithmetic; float32 reorders sums, errors ~1e-7..1e-6 on outputs "
                                    "of order 1"),
    "positions_break_symmetry": Criterion("C8", "positions inject order", "min |f(x[perm]) - f(x)[perm]|, Encoder "
                                          "pos='sinusoidal', float32", 1e-2, ABOVE,
                                          "a thousand times the float32 tolerance of the order-blind models"),
    # Name the first token: the multiset bound E[max_v count(v)] / T is the exact best expected accuracy of any
    # function of the multiset of tokens, so an order-blind model's accuracy minus it has mean <= 0.
    # A model that reaches the bound sits on it in expectation, so the margin is the validation set's own sampling
    # noise: two standard errors of an accuracy on 10000 sequences, 2 * 0.5 / sqrt(10000) = 0.01 at most.
    "blind_excess": Criterion("C8", "order-blind", "val accuracy without positions minus the multiset bound", 0.01,
                              BELOW, "the multiset bound is the best any order-blind model can reach in expectation; "
                              "0.01 = two standard errors of an accuracy on 10000 validation sequences"),
    "positions_excess": Criterion("C8", "positions inject order", "val accuracy with sinusoidal positions minus the "
                                  "multiset bound", 0.01, ABOVE,
                                  "beating the best order-blind accuracy takes information about order; 0.01 = two "
                                  "standard errors of an accuracy on 10000 validation sequences, as for the blind arm",
                                  bounds=(-1.0, 1.0)),
}
EQUIVARIANT = 1e-5  # float32 tolerance of the order-blind models (criteria.py: equivariance_error), for the figure
VOCAB, LENGTH = 16, 8  # symbols, sequence length (the CLS token comes first, id VOCAB)
MODEL = {"n_layer": 2, "n_head": 4, "d_model": 64, "d_ff": 128}
TRAIN = {"batch_size": 64, "lr": 3e-3, "min_lr": 3e-4, "warmup_iters": 20, "weight_decay": 0.0}


def run(quick: bool = False, seed: int = 0, progress=None) -> Report:
    n_perm = 10 if quick else 50
    steps = 150 if quick else 600
    n_train, n_val = (8000, 4000) if quick else (20000, 10000)
    seeds = run_seeds(seed, quick)
    report = Report(
        NAME, CLAIMS, quick=quick,
        setup=(
            f"(1) {n_perm} random permutations of random inputs (batch 8, {LENGTH + 1} positions, d_model "
            f"{MODEL['d_model']}, float32) through MultiHeadAttention ({MODEL['n_head']} heads, no mask) and a {MODEL['n_layer']}-layer "
            "bidirectional Encoder with pos='none' and pos='sinusoidal' (and a causal TransformerLM with pos='none', "
            f"unchecked); error = max |f(x[perm]) − f(x)[perm]|. (2) Name the first of {LENGTH} tokens (uniform over "
            f"{VOCAB} symbols) from a CLS token's output: Encoder ({MODEL['n_layer']} layers, {MODEL['n_head']} heads, "
            f"d_model {MODEL['d_model']}, d_ff {MODEL['d_ff']}) + a linear head, {n_train} training and {n_val} validation "
            f"sequences, AdamW {steps} steps of batch {TRAIN['batch_size']}, lr {TRAIN['lr']}, seeds {seeds}, with "
            "pos='none' and pos='sinusoidal' from the same initial weights."
        ),
        criterion=(
            "Order-blind: without positions (MultiHeadAttention, Encoder pos='none') the error is below 1e-5 for every "
            "permutation (an exact property), and the model's validation accuracy minus the multiset bound is below 0.01, "
            "two standard errors of the validation accuracy "
            "(95% interval over seeds). Positions inject order: with sinusoidal positions the error is above 1e-2 for "
            "every permutation, and the accuracy minus the multiset bound is above 0 (95% interval over seeds)."
        ),
    )
    errors = _equivariance(n_perm, seed)
    if progress is not None:
        progress.update(0.1, "training")
    runs = []
    for i, s in enumerate(seeds):
        runs.append(_learn(s, steps, n_train, n_val))
        if progress is not None:
            progress.update(0.1 + 0.9 * (i + 1) / len(seeds), f"seed {s}")

    for key, values in errors.items():
        report.number(f"error_{key}", values)
    report.check("equivariance_error", max(max(errors["attention"]), max(errors["encoder_none"])))
    report.check("positions_break_symmetry", min(errors["encoder_sinusoidal"]))
    blind_excess = [r["accuracy_none"] - r["bound"] for r in runs]
    ordered_excess = [r["accuracy_sinusoidal"] - r["bound"] for r in runs]
    report.check("blind_excess", blind_excess, seeds)
    report.check("positions_excess", ordered_excess, seeds)
    report.number("blind_excess", blind_excess)
    report.number("positions_excess", ordered_excess)
    for key in ("accuracy_none", "accuracy_sinusoidal", "bound", "nll_none", "nll_sinusoidal", "bound_nll"):
        report.number(key, [r[key] for r in runs])
    report.number("seeds", seeds)

    names = {"attention": "MultiHeadAttention, no mask", "encoder_none": "Encoder, pos='none'",
             "encoder_sinusoidal": "Encoder, pos='sinusoidal'", "causal_none": "causal TransformerLM, pos='none' (unchecked)"}
    report.table(["model", "largest error", "median error", "smallest error"],
                 [[names[k], max(v), _median(v), min(v)] for k, v in errors.items()],
                 title=f"max |f(x[perm]) − f(x)[perm]| over {n_perm} permutations (float32)")
    report.table(["seed", "accuracy, no positions", "multiset bound", "no positions − bound", "accuracy, sinusoidal",
                  "sinusoidal − bound", "val NLL, no positions", "multiset bound NLL", "val NLL, sinusoidal"],
                 [[s, r["accuracy_none"], r["bound"], r["accuracy_none"] - r["bound"], r["accuracy_sinusoidal"],
                   r["accuracy_sinusoidal"] - r["bound"], r["nll_none"], r["bound_nll"], r["nll_sinusoidal"]]
                  for s, r in zip(seeds, runs)],
                 title=f"Name the first of {LENGTH} tokens ({VOCAB} symbols; chance 1/{VOCAB} = {1 / VOCAB:.4f})")
    report.figure("equivariance", lambda: _plot_errors(errors, names), "Permuting the input of an order-blind model "
                  "permutes its output up to float32 rounding; sinusoidal positions (and a causal mask) break the "
                  "symmetry.",
                  "把不看顺序的模型的输入换序，它的输出也随之换序，差别只在 float32 的舍入误差之内；"
                  "正弦位置编码（以及因果掩码）打破了这种对称。")
    report.figure("first_token", lambda: _plot_learning(runs), "Training NLL: without positions the model stops at "
                  "what the multiset of tokens allows; with sinusoidal positions it goes on to name the first token.",
                  "训练集 NLL：没有位置编码时，模型停在词元的多重集所能达到的水平；有正弦位置编码时，"
                  "它继续往下降，学会说出第一个词元。")
    report.note(f"The causal TransformerLM without positional encoding moves by up to {max(errors['causal_none']):.2f} "
                "under a permutation: the causal mask gives position t exactly t + 1 visible tokens, an order of its own, "
                "so only self-attention without a mask is order-blind.")
    return report


@torch.no_grad()
def _equivariance(n_perm: int, seed: int) -> dict[str, list[float]]:
    g = torch.Generator().manual_seed(seed)
    T, C = LENGTH + 1, MODEL["d_model"]
    torch.manual_seed(seed)
    attention = MultiHeadAttention(C, MODEL["n_head"]).eval()
    models = {
        "encoder_none": Encoder(_config("none")).eval(),
        "encoder_sinusoidal": Encoder(_config("sinusoidal")).eval(),
        "causal_none": TransformerLM(_config("none")).eval(),
    }
    out = {"attention": [], **{k: [] for k in models}}
    for _ in range(n_perm):
        perm = torch.randperm(T, generator=g)  # (T,)
        x = torch.randn(8, T, C, generator=g)  # (B, T, C)
        out["attention"].append(float((attention(x[:, perm])[0] - attention(x)[0][:, perm]).abs().max()))
        idx = torch.randint(VOCAB + 1, (8, T), generator=g)  # (B, T)
        for key, model in models.items():
            out[key].append(float((model(idx[:, perm]) - model(idx)[:, perm]).abs().max()))
    return out


def _config(pos: str) -> TransformerConfig:
    return TransformerConfig(vocab_size=VOCAB + 1, block_size=LENGTH + 1, pos=pos, **MODEL)


class FirstTokenClassifier(nn.Module):
    """Encoder + a linear head on the CLS position: idx (B, T) -> logits (B, V) of P(first token | sequence)."""

    def __init__(self, cfg: TransformerConfig):
        super().__init__()
        self.encoder = Encoder(cfg)
        self.head = nn.Linear(cfg.d_model, VOCAB)

    def forward(self, idx: Tensor) -> Tensor:
        return self.head(self.encoder(idx)[:, 0])  # (B, T, C) -> (B, C) -> (B, V)


class FirstTokenData(TensorSplits):
    """[CLS, s_1 .. s_T] -> s_1, with s_i uniform over VOCAB symbols; a data source for the training loop."""

    def __init__(self, n_train: int, n_val: int, seed: int):
        g = torch.Generator().manual_seed(seed)
        self.splits = {}
        for name, n in (("train", n_train), ("val", n_val)):
            seqs = torch.randint(VOCAB, (n, LENGTH), generator=g)  # (N, T)
            cls = torch.full((n, 1), VOCAB)  # (N, 1): the CLS token
            self.splits[name] = (torch.cat([cls, seqs], 1), seqs[:, 0])  # (N, T + 1), (N,)

    def multiset_bound(self, split: str = "val") -> tuple[float, float]:
        """The best accuracy and NLL of any order-blind predictor: P(s_1 = v | multiset) = count(v) / T."""
        x, y = self.splits[split]
        counts = torch.nn.functional.one_hot(x[:, 1:], VOCAB).sum(1).double()  # (N, V)
        accuracy = float(counts.max(-1).values.mean() / LENGTH)
        nll = float(-(counts.gather(1, y[:, None])[:, 0] / LENGTH).log().mean())
        return accuracy, nll


def _learn(seed: int, steps: int, n_train: int, n_val: int) -> dict:
    data = FirstTokenData(n_train, n_val, seed)
    bound, bound_nll = data.multiset_bound()
    out = {"bound": bound, "bound_nll": bound_nll}
    for pos in ("none", "sinusoidal"):
        torch.manual_seed(seed)  # the same initial weights with and without positions
        model = FirstTokenClassifier(_config(pos))
        curve = _LossCurve()
        cfg = TrainConfig(max_iters=steps, eval_interval=steps, eval_batches=1, log_interval=steps, seed=seed, device="cpu",
                          **TRAIN)
        train(model, data, cfg, objective=curve, progress=False)
        out[f"losses_{pos}"] = curve.losses
        out[f"accuracy_{pos}"] = _accuracy(model, data)
        out[f"nll_{pos}"] = evaluate(model, data, "val", batch_size=500)["nll"]
    return out


class _LossCurve:
    """token_nll that keeps each training step's loss (the loop itself logs only every log_interval steps)."""

    def __init__(self):
        self.losses: list[float] = []

    def __call__(self, logits: Tensor, targets: Tensor, reduction: str = "mean") -> Tensor:
        loss = token_nll(logits, targets, reduction=reduction)
        if reduction == "mean" and torch.is_grad_enabled():
            self.losses.append(loss.item())
        return loss


@torch.no_grad()
def _accuracy(model: nn.Module, data: FirstTokenData) -> float:
    model.eval()
    x, y = data.splits["val"]
    return float((model(x).argmax(-1) == y).double().mean())


def _median(values: list[float]) -> float:
    return float(torch.tensor(values).median())


def _plot_errors(errors: dict, names: dict) -> plt.Figure:
    fig, ax = plt.subplots(figsize=(7, 3.8), layout="constrained")
    for i, (_key, values) in enumerate(errors.items()):
        ax.scatter([i] * len(values), [max(v, 1e-12) for v in values], s=12, alpha=0.6)
    ax.axhline(EQUIVARIANT, color="k", ls=":", lw=1, label=say(f"tolerance {EQUIVARIANT:g}", f"容差 {EQUIVARIANT:g}"))
    ax.set_yscale("log")
    names_zh = {"attention": "MultiHeadAttention，无掩码", "encoder_none": "Encoder，pos='none'",
                "encoder_sinusoidal": "Encoder，pos='sinusoidal'", "causal_none": "因果 TransformerLM，pos='none'（不检查）"}
    shown = [say(names[k].replace(", ", ",\n", 1), names_zh.get(k, names[k]).replace("，", "，\n", 1)) for k in errors]
    ax.set_xticks(range(len(errors)), shown, fontsize=8)
    ax.set_ylabel("max |f(x[perm]) − f(x)[perm]|")
    ax.set_title(say("Permute, run, permute back", "换序、运行、再换回来"))
    ax.legend(fontsize=8)
    return fig


def _plot_learning(runs: list[dict]) -> plt.Figure:
    fig, ax = plt.subplots(figsize=(6, 4), layout="constrained")
    for i, r in enumerate(runs):
        for pos, style, color, label in (("sinusoidal", "-", "C0", say("sinusoidal positions", "正弦位置编码")),
                                         ("none", "--", "C1", say("no positions", "无位置编码"))):
            losses = torch.tensor(r[f"losses_{pos}"])
            smooth = losses[: len(losses) // 10 * 10].view(-1, 10).mean(-1)  # (steps / 10,)
            ax.plot(torch.arange(len(smooth)) * 10 + 10, smooth, style, color=color, alpha=0.8, label=label if i == 0 else None)
    ax.axhline(runs[0]["bound_nll"], color="C1", ls=":", lw=1,
               label=say("best order-blind NLL (multiset bound)", "不看顺序时最好的 NLL（多重集的界）"))
    ax.axhline(math.log(VOCAB), color="0.5", ls=":", lw=1, label=say(f"chance, log {VOCAB}", f"随机猜测，log {VOCAB}"))
    ax.set_ylim(bottom=0)
    ax.set_xlabel(say("step", "训练步"))
    ax.set_ylabel(say("training NLL (nats), mean over 10 steps", "训练集 NLL（奈特），每 10 步的平均"))
    ax.set_title(say(f"Name the first of {LENGTH} tokens", f"说出 {LENGTH} 个词元中的第一个"))

    ax.legend(fontsize=8)
    return fig
