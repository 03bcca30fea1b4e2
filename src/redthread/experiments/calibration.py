"""Claim C12: training is maximum likelihood (cross-entropy), so the learned P(next | context) is a
probability that means what it says: of the tokens predicted with probability 0.7, about 70% come true.

Set-up: three rungs of the ladder, a bigram (softmax regression on the previous token), an MLP on a
fixed window (Bengio et al. 2003) and a Transformer, each trained by the shared loop to near
convergence on a synthetic source with a known Bayes limit: an order-2 Markov chain over 16 symbols
(`redthread.data.synthetic.MarkovSource`, hierarchical Dirichlet rows), new chain, data and
initialisation for every seed. Maximum likelihood without weight decay: AdamW's decay is a prior that
shrinks the logits (at the bigram's learning rate it makes the model under-confident), so it is left
out of a test of what the likelihood alone gives. Each rung gets its learning rate from a sweep of
three, picked on the validation split of the first seed. On held-out test sequences, `reliability` groups every position by
the model's top next-token probability (its confidence) into equal-width bins and compares each bin's
mean confidence with how often that token came next; the count-weighted mean gap is the expected
calibration error (ECE, Guo et al. 2017, eq. 3; the same binning as `redthread.train.calibration`).

Why the criterion: cross-entropy is a proper scoring rule, minimised in expectation only by the true
conditional probabilities, and the best predictor from a shorter context (the bigram's one token) is
still calibrated, so a well-fitted model of any context length should be calibrated. But an ECE
measured on N positions is never zero, even for a perfect predictor: each bin's accuracy is a
frequency of finitely many draws. The control measures that floor at the same positions: labels
drawn from the model's own predicted distribution, for which the model is calibrated by
construction. Each rung's ECE is judged in units of that floor.

Temperature scaling (Guo et al. 2017, section 4.2): the one parameter T of softmax(logits / T) fitted
by NLL on the validation split; what it changes on the test split is reported beside the verdict. At
the maximum of the likelihood the derivative along the logits' scale vanishes, so a well-fitted model
needs T near 1.
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from redthread.data.sequences import SequenceData
from redthread.data.synthetic import MarkovSource
from redthread.data.targets import IGNORE_INDEX
from redthread.experiments.criteria import BELOW, Criterion
from redthread.experiments.report import Report
from redthread.experiments.stats import estimate
from redthread.models.bigram import BigramConfig, BigramLM
from redthread.models.mlp import MLPLM, MLPConfig
from redthread.models.transformer import TransformerConfig, TransformerLM
from redthread.plotting import pyplot
from redthread.train.calibration import Calibration
from redthread.train.loop import TrainConfig, evaluate, train

plt = pyplot()

NAME, CLAIMS = "calibration", "C12"

# The pre-registered criteria: each floor is the smallest effect size of interest, with its reason.
_NOISE_FLOOR = (
    "the noise floor, measured on a control: the same model scored on labels drawn from its own predicted distribution "
    "at the same positions is perfectly calibrated by construction, yet its ECE is not zero (finite bins of finite "
    "counts); its mean over draws is the floor (1 in this unit). A calibrated model's ECE scatters around the floor, so "
    "twice the floor is where the miscalibration itself becomes as large as the noise it is measured with"
)
CRITERIA: dict[str, Criterion] = {
    f"ece_{key}": Criterion("C12", part, f"the {part}'s top-1 ECE on held-out positions, in units of the noise floor "
                            "(its ECE on labels drawn from its own prediction)", 2.0, BELOW, _NOISE_FLOOR)
    for key, part in (("bigram", "bigram"), ("mlp", "MLP"), ("transformer", "Transformer"))
}
ORDER, VOCAB, CONCENTRATION, HIERARCHY = 2, 16, 1.0, 5.0  # as the sampling experiment's chain
LENGTH, N_BINS, BATCH = 32, 15, 32
CONTROL_DRAWS = 10  # label draws from the model's own prediction, averaged into the noise floor
RUNGS = {"bigram": "bigram", "mlp": "MLP", "transformer": "Transformer"}  # key -> the part of the claim
LRS = {"bigram": (0.03, 0.1, 0.3), "mlp": (3e-3, 1e-2, 3e-2), "transformer": (3e-3, 1e-2, 3e-2)}


def sizes(quick: bool) -> dict:
    """Sequences per split, seeds, and training steps per rung."""
    if quick:
        return {"train": 2000, "val": 250, "test": 500, "seeds": 2, "sweep": False,
                "steps": {"bigram": 200, "mlp": 200, "transformer": 100}}
    return {"train": 8000, "val": 1000, "test": 2000, "seeds": 5, "sweep": True,
            "steps": {"bigram": 1000, "mlp": 1500, "transformer": 1000}}


def make_model(rung: str, vocab_size: int, quick: bool) -> nn.Module:
    if rung == "bigram":
        return BigramLM(BigramConfig(vocab_size=vocab_size, block_size=LENGTH))
    if rung == "mlp":
        return MLPLM(MLPConfig(vocab_size=vocab_size, block_size=LENGTH, context=4, d_embed=16, d_hidden=128))
    return TransformerLM(TransformerConfig(vocab_size=vocab_size, block_size=LENGTH, n_layer=1 if quick else 2,
                                           n_head=4, d_model=32 if quick else 64, pos="learned"))


def run(quick: bool = False, seed: int = 0, progress=None) -> Report:
    size = sizes(quick)
    seeds = [seed + i for i in range(size["seeds"])]
    report = Report(NAME, CLAIMS, quick=quick, setup=setup_text(size, seeds), criterion=(
        "For each rung (bigram, MLP, Transformer), the top-1 ECE on the test positions divided by the noise floor "
        f"(the mean ECE, over {CONTROL_DRAWS} draws, of the same model on labels drawn from its own predicted "
        "distribution at the same positions) is below 2, with the 95% interval over seeds: a miscalibration no larger "
        "than the noise it is measured with. Temperature scaling is fitted on validation and reported, not decided on."
    ))
    results: dict[str, list[dict]] = {rung: [] for rung in RUNGS}
    lrs: dict[str, float] = {}
    sweeps: dict[str, dict[float, float]] = {}
    for i, s in enumerate(seeds):
        source, fit, test = splits(s, size)
        for rung in RUNGS:
            if i == 0 and size["sweep"]:
                model, lrs[rung], sweeps[rung] = sweep(rung, fit, s, size, quick)
            else:
                lrs.setdefault(rung, LRS[rung][1])
                model = fitted(rung, fit, s, size, quick, lrs[rung])
            results[rung].append(measure(model, rung, source, fit, test, s))
            if progress is not None:
                progress.update((i * len(RUNGS) + list(RUNGS).index(rung) + 1) / (len(seeds) * len(RUNGS)),
                                f"seed {s}, {rung}")
    for rung in RUNGS:
        ratios = [r["ratio"] for r in results[rung]]
        report.check(f"ece_{rung}", ratios, seeds, seen=f"{estimate(ratios)}; ECE {mean_of(results[rung], 'ece'):.4f} "
                     f"against a floor of {mean_of(results[rung], 'floor'):.4f}")
    describe(report, results, lrs, sweeps, seeds)
    return report


def setup_text(size: dict, seeds: list[int]) -> str:
    return (
        f"Source: an order-{ORDER} Markov chain over {VOCAB} symbols (MarkovSource, concentration {CONCENTRATION}, "
        f"hierarchy {HIERARCHY}), a new chain for every seed ({', '.join(map(str, seeds))}); sequences of {LENGTH} "
        f"tokens, {size['train']} to train on, {size['val']} to validate (learning rate, temperature), {size['test']} "
        f"to test ({size['test'] * LENGTH:,} positions). Rungs: a bigram (softmax regression on the previous token), "
        "an MLP (context 4, embeddings 16, hidden 128, tanh) and a Transformer (2 layers, 4 heads, d_model 64, learned "
        "positions; 1 layer, d_model 32 in --quick), each trained by maximum likelihood (AdamW without weight decay, "
        "which would add a prior that shrinks the logits), batch "
        f"{BATCH}, warm-up and cosine decay, for {', '.join(f'{k} {v}' for k, v in size['steps'].items())} steps. "
        + ("Learning rate per rung: the best validation NLL of three (" + "; ".join(
            f"{k} {', '.join(f'{lr:g}' for lr in v)}" for k, v in LRS.items()) + ") on the first seed, then kept. "
           if size["sweep"] else "Learning rate per rung: the middle of the full run's sweep (no sweep in --quick). ")
        + f"Calibration: top-1 confidence in {N_BINS} equal bins over every test position. Control: the same positions "
        f"with labels drawn from the model's own distribution, {CONTROL_DRAWS} draws. Temperature: one T fitted by "
        "NLL on the validation split, applied to the test split. The 95% intervals are over seeds."
    )


def splits(seed: int, size: dict) -> tuple[MarkovSource, SequenceData, SequenceData]:
    """The chain of this seed, its train/val data, and test data (both splits the test sequences; 'val' is read)."""
    source = MarkovSource(order=ORDER, vocab_size=VOCAB, concentration=CONCENTRATION, hierarchy=HIERARCHY, seed=seed)
    seqs = source.sample(size["train"] + size["val"] + size["test"], LENGTH, seed)  # (N, L)
    a, b = size["train"], size["train"] + size["val"]
    fit = SequenceData(seqs[:a], seqs[a:b], vocab_size=VOCAB + 1, boundary=VOCAB, end_token=False)
    test = SequenceData(seqs[b:], seqs[b:], vocab_size=VOCAB + 1, boundary=VOCAB, end_token=False)
    return source, fit, test


def fitted(rung: str, data: SequenceData, seed: int, size: dict, quick: bool, lr: float) -> nn.Module:
    torch.manual_seed(seed)
    model = make_model(rung, data.vocab_size, quick)
    steps = size["steps"][rung]
    train(model, data, TrainConfig(max_iters=steps, batch_size=BATCH, lr=lr, min_lr=lr / 10, warmup_iters=steps // 20,
                                   eval_interval=steps, eval_batches=5, seed=seed, device="cpu",
                                   weight_decay=0.0), progress=False)  # no prior: the plain likelihood
    return model


def sweep(rung: str, data: SequenceData, seed: int, size: dict, quick: bool) -> tuple[nn.Module, float, dict]:
    """Train at each of the rung's learning rates; keep the one with the lowest validation NLL."""
    models = {lr: fitted(rung, data, seed, size, quick, lr) for lr in LRS[rung]}
    nll = {lr: evaluate(m, data, "val", batch_size=256)["nll"] for lr, m in models.items()}
    best = min(nll, key=nll.get)
    return models[best], best, nll


@torch.no_grad()
def positions(model: nn.Module, data: SequenceData, split: str) -> tuple[torch.Tensor, torch.Tensor]:
    """Every scored position of a split: the logits (N, V) and the targets (N,)."""
    model.eval()
    logits, targets = [], []
    for x, y in data.eval_batches(split, 256, None):
        keep = y != IGNORE_INDEX  # (B, T)
        logits.append(model(x).float()[keep])
        targets.append(y[keep])
    return torch.cat(logits), torch.cat(targets)


def reliability(probs: torch.Tensor, targets: torch.Tensor, n_bins: int = N_BINS) -> Calibration:
    """The reliability diagram and ECE of top-1 probabilities (N, V) against targets (N,), binned as
    `redthread.train.calibration.calibration` bins a model's."""
    conf, top = probs.double().max(-1)  # (N,), (N,)
    hit = (top == targets).double()
    b = (conf * n_bins).long().clamp(max=n_bins - 1)  # the bin of each position
    count = torch.bincount(b, minlength=n_bins).double()
    safe = count.clamp(min=1)
    confidence = torch.bincount(b, conf, minlength=n_bins) / safe
    accuracy = torch.bincount(b, hit, minlength=n_bins) / safe
    empty = count == 0
    return Calibration(
        ece=float(((accuracy - confidence).abs() * count).sum() / count.sum()), counts=count.long().tolist(),
        confidence=confidence.masked_fill(empty, float("nan")).tolist(),
        accuracy=accuracy.masked_fill(empty, float("nan")).tolist(), n=int(count.sum()),
    )


def noise_floor(probs: torch.Tensor, draws: int, seed: int) -> list[float]:
    """ECEs of a perfectly calibrated control: the same predictions (N, V), labels drawn from them."""
    generator = torch.Generator().manual_seed(seed)
    return [reliability(probs, torch.multinomial(probs, 1, generator=generator)[:, 0]).ece for _ in range(draws)]


def fit_temperature(logits: torch.Tensor, targets: torch.Tensor, lo: float = 0.25, hi: float = 4.0) -> float:
    """The T in [lo, hi] minimising the NLL of softmax(logits / T): golden-section search on 1 / T, in which the
    NLL is convex (a log-sum-exp of linear functions minus a linear one)."""
    def nll(beta: float) -> float:
        return float(F.cross_entropy(logits.double() * beta, targets))

    a, b = 1 / hi, 1 / lo
    g = (math.sqrt(5) - 1) / 2
    c, d = b - g * (b - a), a + g * (b - a)
    for _ in range(60):
        if nll(c) < nll(d):
            b, d = d, c
            c = b - g * (b - a)
        else:
            a, c = c, d
            d = a + g * (b - a)
    return 2 / (a + b)


def measure(model: nn.Module, rung: str, source: MarkovSource, fit: SequenceData, test: SequenceData, seed: int) -> dict:
    """The test NLL against the rung's limit, the ECE against the control's floor, and temperature scaling."""
    z, y = positions(model, test, "val")  # (N, V), (N,)
    probs = z.softmax(-1)
    cal = reliability(probs, y)
    floors = noise_floor(probs, CONTROL_DRAWS, seed)
    floor = float(np.mean(floors))
    t = fit_temperature(*positions(model, fit, "val"))
    scaled = reliability((z / t).softmax(-1), y)
    nll = float(F.cross_entropy(z, y))
    seqs = np.stack(test.sequences("val"))  # (N, L)
    return {
        "nll": nll, "bayes": source.bayes_nll(seqs), "train_nll":
        evaluate(model, fit, "train", batch_size=256, max_batches=8)["nll"], "ece": cal.ece, "floor": floor,
        "floor_sd": float(np.std(floors, ddof=1)), "ratio": cal.ece / floor, "temperature": t,
        "nll_scaled": float(F.cross_entropy(z / t, y)), "ece_scaled": scaled.ece,
        "ratio_scaled": scaled.ece / float(np.mean(noise_floor((z / t).softmax(-1), CONTROL_DRAWS, seed))),
        "reliability": cal.to_dict(), "positions": cal.n,
        "limit": bigram_limit(source, seqs) if rung == "bigram" else source.bayes_nll(seqs),  # the rung's best
    }


def bigram_limit(source: MarkovSource, sequences: np.ndarray) -> float:
    """The lowest NLL a model of the previous token alone can reach on sequences (N, L): the mean of
    -log P(s_t | s_{t-1}) under the chain's stationary distribution, -log P(s_0) at position 0."""
    V = source.vocab_size
    # a state is the last `order` tokens, oldest most significant: sum out all but the newest
    joint = (source.stationary[:, None] * source.transition).reshape(-1, V, V).sum(0)  # (V, V): P(s_{t-1}, s_t)
    gram = joint.sum(1)  # (V,): the stationary marginal of one token
    logp = np.log(joint / joint.sum(1, keepdims=True))  # (V, V): log P(s_t | s_{t-1})
    first = np.log(gram)[sequences[:, 0]]  # (N,)
    rest = logp[sequences[:, :-1], sequences[:, 1:]]  # (N, L - 1)
    return float(-(first.sum() + rest.sum()) / sequences.size)


def mean_of(results: list[dict], key: str) -> float:
    return float(np.mean([r[key] for r in results]))


def interval(results: list[dict], key: str) -> str:
    return str(estimate([r[key] for r in results]))


def describe(report: Report, results: dict, lrs: dict, sweeps: dict, seeds: list[int]) -> None:
    keys = ("nll", "bayes", "limit", "train_nll", "ece", "floor", "floor_sd", "ratio", "temperature", "nll_scaled",
            "ece_scaled", "ratio_scaled")
    for rung, rs in results.items():
        for key in keys:
            report.number(f"{rung}.{key}", [r[key] for r in rs])
        report.number(f"{rung}.reliability", [r["reliability"] for r in rs])
        report.number(f"{rung}.lr", lrs[rung])
        if rung in sweeps:
            report.number(f"{rung}.sweep", {f"{lr:g}": v for lr, v in sweeps[rung].items()})
    report.number("seeds", seeds)
    report.number("positions", results["bigram"][0]["positions"])
    report.table(
        ["rung", "learning rate", "train NLL", "test NLL", "the rung's limit", "excess over it", "Bayes NLL", "ECE",
         "noise floor", "ECE / floor"],
        [[RUNGS[rung], lrs[rung], mean_of(rs, "train_nll"), mean_of(rs, "nll"), mean_of(rs, "limit"),
          mean_of(rs, "nll") - mean_of(rs, "limit"), mean_of(rs, "bayes"), mean_of(rs, "ece"), mean_of(rs, "floor"),
          mean_of(rs, "ratio")] for rung, rs in results.items()],
        title=f"Each rung on the test positions, mean over {len(seeds)} seeds (NLL in nats/token)",
    )
    for rung, rs in results.items():
        report.number(f"{rung}.excess_nll", [r["nll"] - r["limit"] for r in rs])
    report.note("The rung's limit is the lowest test NLL its context allows: the chain's Bayes NLL for the MLP (its "
                f"window of 4 covers the order-{ORDER} chain) and the Transformer, and for the bigram the NLL of the "
                "chain's own P(next | previous token) (`bigram_limit`). A small excess over it is what 'near "
                "convergence' means here.")
    report.table(
        ["rung", "fitted T", "test NLL at T = 1", "at fitted T", "change", "ECE at T = 1", "at fitted T",
         "ECE / floor at fitted T"],
        [[RUNGS[rung], mean_of(rs, "temperature"), mean_of(rs, "nll"), mean_of(rs, "nll_scaled"),
          mean_of(rs, "nll_scaled") - mean_of(rs, "nll"), mean_of(rs, "ece"), mean_of(rs, "ece_scaled"),
          mean_of(rs, "ratio_scaled")] for rung, rs in results.items()],
        title="Temperature scaling: T fitted on the validation split, applied to the test split (mean over seeds)",
    )
    report.note("With 95% intervals over seeds: " + "; ".join(
        f"{RUNGS[rung]}: fitted T {interval(rs, 'temperature')}, ECE {interval(rs, 'ece')}, noise floor "
        f"{interval(rs, 'floor')} (its scatter between control draws: sd {mean_of(rs, 'floor_sd'):.4f})"
        for rung, rs in results.items()) + ".")
    if sweeps:
        report.table(["rung"] + [f"lr {i + 1}" for i in range(3)] + ["validation NLL 1", "2", "3", "chosen"],
                     [[RUNGS[rung], *sweep_, *sweeps[rung].values(), lrs[rung]]
                      for rung, sweep_ in ((r, list(sweeps[r])) for r in RUNGS)],
                     title=f"Learning-rate sweep on the validation split of seed {seeds[0]}")
    report.figure("reliability", plot(results),
                  f"Reliability diagrams of each rung on seed {seeds[0]}'s test positions (bars: accuracy per "
                  "confidence bin, grey: share of positions), and each rung's ECE in units of the noise floor per seed "
                  "(the criterion: below 2).")


def plot(results: dict) -> plt.Figure:
    fig, axes = plt.subplots(1, len(results) + 1, figsize=(4 * (len(results) + 1), 4), layout="constrained")
    centers = [(i + 0.5) / N_BINS for i in range(N_BINS)]
    for ax, (rung, rs) in zip(axes, results.items()):
        c = rs[0]["reliability"]
        ax.bar(centers, [0.0 if math.isnan(a) else a for a in c["accuracy"]], width=1 / N_BINS, edgecolor="k",
               lw=0.4, alpha=0.8, label="accuracy")
        ax.bar(centers, [n / c["n"] for n in c["counts"]], width=1 / N_BINS, color="grey", alpha=0.4,
               label="share of positions")
        ax.plot([0, 1], [0, 1], "r--", lw=1, label="calibrated")
        ax.set_title(f"{RUNGS[rung]}: ECE {c['ece']:.4f}, floor {rs[0]['floor']:.4f}")
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        ax.set_xlabel("confidence (top probability)")
        ax.set_ylabel("accuracy")
        ax.legend(fontsize=8, loc="upper left")
    ax = axes[-1]
    for i, (rung, rs) in enumerate(results.items()):
        ax.scatter([i] * len(rs), [r["ratio"] for r in rs], label=RUNGS[rung])
    ax.axhline(1, color="grey", ls=":", lw=1, label="the floor")
    ax.axhline(2, color="r", ls="--", lw=1, label="criterion")
    ax.set_xticks(range(len(results)), [RUNGS[r] for r in results])
    ax.set_ylabel("ECE / noise floor")
    ax.set_ylim(bottom=0)
    ax.set_title("Each seed's ECE in units of the floor")
    ax.legend(fontsize=8)
    return fig
