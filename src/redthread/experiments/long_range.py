"""Claims C3, C5, C6: recall of a token L positions back, for an RNN, an LSTM and a Transformer.

`RecallSource(distance=L)` copies the token L positions back with probability 0.9 and otherwise
draws a fresh one, so the best prediction at every position t >= L is s_{t-L} and the model has
to carry that token across L steps:
- a recurrent model must keep the last L tokens (4 bits each) in its fixed-size state (C5), and
  learn to do so through a gradient that crosses L steps of the recurrence (C3);
- attention reaches position t - L in one step, whatever L (C6): Output_t = sum_j att_tj v_j with
  att_tj learned to peak at j = t - L.

Recall accuracy: how often the model's most probable next token at a position t >= L is s_{t-L},
on held-out test sequences. Chance, derived from the task: s_{t-L} is uniform over the V = 16
tokens and independent of every token whose offset from it is not a multiple of L, so a model
that has not kept s_{t-L} (nor s_{t-2L}, ...) names it with probability 1/V = 0.0625; a perfect
recaller scores 1. The excess of the test NLL over the source's exact Bayes NLL is reported too.

Method, fair to every arm: each model at each distance (an arm) has its learning rate tuned on
its own seed, `tuning_seed(seed)`, that no verdict uses: the lowest validation NLL over `GRID`,
the grid extended past an edge pick (`experiments/tuning.py`; the test split never enters the
choice). Every verdict seed (5, or 2 in --quick, where a fixed rate replaces the sweep) is then
trained afresh at its arm's pick, drawing its own data and initialisation. The training budget
is `BUDGET` steps times `budget` (the runner measures the claim at half, one and twice it). The
recurrent models start from their best-known initialisations: the tanh RNN with an orthogonal
W_hh (Saxe et al. 2014; Le et al. 2015), the LSTM (and, in `memory`, the GRU) with the chrono
initialisation of Tallec & Ollivier (2018), gate biases log U(1, T_max - 1) so that the cell
keeps its content over up to T_max steps. The Transformer is one pre-norm block with rotary
positions (Su et al. 2021), which express the offset t - j this task is about.

Every check is decided on the per-seed values against its floor in `CRITERIA` (chance for the
Transformer's accuracy, 5% of the range from chance to perfect recall for a drop or a gap), with
a 95% interval (`experiments/stats.py`): holds, does not hold, or inconclusive.

The training machinery here (`Arm`, `train_arm`, `tune_arms`, `train_seeds`) is shared with `memory`.
"""

from __future__ import annotations

import math
import multiprocessing
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from functools import partial

import numpy as np
import torch

from redthread.data.sequences import SequenceData
from redthread.data.synthetic import RecallSource
from redthread.experiments import one_thread
from redthread.experiments.criteria import ABOVE, Criterion
from redthread.experiments.report import Report
from redthread.experiments.stats import estimate, run_seeds, tuning_seed
from redthread.experiments.tuning import Tuned, tune
from redthread.lang import say
from redthread.models.likelihoods import token_nll
from redthread.models.recurrent import RecurrentConfig, RecurrentLM
from redthread.models.transformer import TransformerConfig, TransformerLM
from redthread.plotting import pyplot
from redthread.train.loop import TrainConfig, train

plt = pyplot()

NAME, CLAIMS = "long-range", "C3, C5, C6"

HYPOTHESIS = ("Attention reaches a token any distance back in one step, so a Transformer recalls s_(t-L) above chance "
              "at the longest distance; an RNN's and an LSTM's recall falls as L grows, and at the longest distance "
              "stays below the Transformer's, each arm at its own tuned learning rate and the same training budget.")

# The pre-registered criteria: each floor is the smallest effect size of interest, with its reason.
_RECALL_CHANCE = 1 / 16  # RecallSource(vocab_size=16): s_(t-L) is uniform and independent of the tokens between
_RECALL_FLOOR = 0.05 * (1 - _RECALL_CHANCE)
_ATTENTION, _RECURRENT = "attention reaches any distance (C6)", "recurrent models lose long-range recall (C3, C5)"
CRITERIA: dict[str, Criterion] = {
    "transformer_longest": Criterion(
        "C6", _ATTENTION, "Transformer's test recall accuracy at the longest distance", _RECALL_CHANCE, ABOVE,
        "chance, 1/V for V = 16: a model that has not reached back L positions names s_(t-L) with probability 1/V",
        bounds=(0.0, 1.0)),
    **{f"{m.lower()}_drop": Criterion(
        "C3", _RECURRENT, f"{m}'s test recall accuracy at the shortest distance minus at the longest", _RECALL_FLOOR, ABOVE,
        "5% of the range from chance to perfect recall, 0.05 x (1 - 1/16): the least fall that counts as losing recall",
        bounds=(-1.0, 1.0))
       for m in ("RNN", "LSTM")},
    **{f"{m.lower()}_gap": Criterion(
        "C3", _RECURRENT, f"Transformer's minus {m}'s test recall accuracy at the longest distance (same seed)",
        _RECALL_FLOOR, ABOVE, "5% of the range from chance to perfect recall, 0.05 x (1 - 1/16): the least advantage "
        "that counts, each arm tuned on validation", bounds=(-1.0, 1.0))
       for m in ("RNN", "LSTM")},
}
VOCAB, P_COPY = 16, 0.9
CHANCE = 1 / VOCAB  # recall accuracy of a model that has not kept s_{t-L} (see the docstring)
MIN_LENGTH = 32
N_TRAIN, N_VAL, N_TEST = 1000, 128, 256
BATCH = 16
GRID = {"lr": (3e-3, 1e-2, 3e-2)}  # per arm, on the set's tuning seed; extends past an edge pick
QUICK_LR = 1e-2  # --quick: this rate for every arm, no sweep
BUDGET = {"steps": 300, "quick_steps": 60}  # AdamW steps per run, at budget 1
BUDGETS = (0.5, 1.0, 2.0)  # the runner measures the claim at half, one and twice the training budget
D_EMBED = 16
WIDTHS = {"rnn": 128, "lstm": 64, "transformer": 40}  # ~20k parameters each (reported)
MODELS = {"RNN": "rnn", "LSTM": "lstm", "Transformer": "transformer"}


@dataclass(frozen=True)
class Arm:
    """One model at one recall distance: kind rnn / lstm / gru / transformer, width d_hidden or d_model."""

    kind: str
    width: int
    distance: int

    @property
    def length(self) -> int:
        return max(2 * self.distance, MIN_LENGTH)


def heads(width: int) -> int:
    """Attention heads for a width: heads of 8 to 16 dimensions where the width allows, else one."""
    return 4 if width % 8 == 0 and width >= 32 else 2 if width % 4 == 0 and width >= 16 else 1


def build(kind: str, width: int, block_size: int, seed: int, t_max: int) -> torch.nn.Module:
    """A model of `kind` at `width`, in its best-known initialisation (`t_max`: the chrono range)."""
    torch.manual_seed(seed)
    V = VOCAB + 1  # the boundary token too
    if kind == "transformer":
        return TransformerLM(TransformerConfig(vocab_size=V, block_size=block_size, n_layer=1, n_head=heads(width),
                                               d_model=width, pos="rope"))
    model = RecurrentLM(RecurrentConfig(vocab_size=V, block_size=block_size, cell=kind, d_embed=D_EMBED,
                                        d_hidden=width))
    init_recurrent(model, kind, t_max, seed)
    return model


@torch.no_grad()
def init_recurrent(model: RecurrentLM, kind: str, t_max: int, seed: int) -> None:
    """Orthogonal W_hh for the tanh RNN; chrono gate biases for the LSTM (forget) and GRU (update).

    Chrono (Tallec & Ollivier 2018): b_f ~ log U(1, t_max - 1) and b_i = -b_f, so the forget gate
    sigmoid(b_f) = 1 - 1/u keeps the cell over ~u steps, u spread over 1 .. t_max - 1. The GRU's
    update gate z plays the forget gate's role (h_t = (1 - z) n + z h_{t-1}): b_z gets the same law."""
    cell, H = model.cells[0], model.cfg.d_hidden
    gen = torch.Generator().manual_seed(seed)
    if kind == "rnn":
        torch.nn.init.orthogonal_(cell.weight_hh, generator=gen)
        return
    bias = torch.log(1 + torch.rand(H, generator=gen) * max(t_max - 2, 0))  # (H,): log U(1, t_max - 1)
    cell.bias_ih.zero_()
    cell.bias_hh.zero_()
    if kind == "lstm":  # gates stacked i, f, g, o
        cell.bias_hh[H : 2 * H] = bias
        cell.bias_hh[:H] = -bias
    elif kind == "gru":  # gates stacked r, z, n
        cell.bias_hh[H : 2 * H] = bias


def n_params(kind: str, width: int) -> int:
    return sum(p.numel() for p in build(kind, width, MIN_LENGTH, 0, MIN_LENGTH).parameters())


def recall_data(distance: int, length: int, seed: int) -> tuple[RecallSource, SequenceData, SequenceData]:
    """(source, train/val data, val/test data): the test sequences are drawn with the rest, never trained or chosen on."""
    source = RecallSource(distance=distance, p=P_COPY, vocab_size=VOCAB)
    seqs = source.sample(N_TRAIN + N_VAL + N_TEST, length, seed)  # (N, T)
    a, b = N_TRAIN, N_TRAIN + N_VAL
    data = SequenceData(seqs[:a], seqs[a:b], vocab_size=VOCAB + 1, boundary=VOCAB, end_token=False)
    test = SequenceData(seqs[a:b], seqs[b:], vocab_size=VOCAB + 1, boundary=VOCAB, end_token=False)
    return source, data, test


@torch.no_grad()
def recall_scores(model, data: SequenceData, split: str, L: int) -> tuple[float, float]:
    """(recall accuracy at positions t >= L, mean NLL over every position) on one split."""
    model.eval()
    hits = total = 0
    nll = 0.0
    for x, y in data.eval_batches(split, 64):  # (B, T) each; y holds every token, x the boundary and the shifted tokens
        logits = model(x)  # (B, T, V)
        hits += (logits[:, L:].argmax(-1) == y[:, :-L]).sum().item()
        total += y[:, L:].numel()
        nll += token_nll(logits, y, reduction="sum").item()
    return hits / total, nll / data.n_targets(split)


def data_seed(seed: int, distance: int) -> int:
    """Each seed draws its own data; every model at that seed and distance sees the same (paired comparisons)."""
    return 1000 * seed + distance


def train_arm(arm: Arm, steps: int, lr: float, seed: int) -> dict:
    """Train one arm with one learning rate and seed; its validation NLL, test accuracy, test excess NLL, seconds.

    Self-contained (it builds its own data), so that it can run in a worker process."""
    with one_thread():
        source, data, test = recall_data(arm.distance, arm.length, data_seed(seed, arm.distance))
        model = build(arm.kind, arm.width, data.block_size, seed, t_max=arm.length)
        cfg = TrainConfig(max_iters=steps, batch_size=BATCH, lr=lr, min_lr=lr / 10, warmup_iters=steps // 10,
                          eval_interval=steps, eval_batches=1, log_interval=steps, seed=seed, device="cpu")
        result = train(model, data, cfg, progress=False)
        _, val_nll = recall_scores(model, data, "val", arm.distance)
        acc, nll = recall_scores(model, test, "val", arm.distance)
        val_nll = val_nll if math.isfinite(val_nll) else math.inf
        return {"val_nll": val_nll, "accuracy": acc, "excess": nll - source.bayes_nll(test.sequences("val")),
                "seconds": result.elapsed}


def run_jobs(jobs: list[tuple], workers: int, progress, done_before: int = 0, total: int | None = None) -> dict:
    """train_arm(*job) for every job, here or in `workers` processes; the results do not depend on which."""
    total = total or len(jobs)
    out = {}

    def tick(i, job):
        if progress is not None:
            progress.update((done_before + i + 1) / total, f"{job[0].kind} L={job[0].distance} seed {job[3]}")

    if workers == 1:
        for i, job in enumerate(jobs):
            out[job] = train_arm(*job)
            tick(i, job)
        return out
    # each job is seeded and builds its own data, so a pool only changes the wall-clock time
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = {pool.submit(train_arm, *job): job for job in jobs}
        for i, done in enumerate(as_completed(futures)):
            out[futures[done]] = done.result()
            tick(i, futures[done])
    return out


def training_steps(quick: bool, budget: float) -> int:
    """AdamW steps per run: `budget` times BUDGET's steps (its quick steps with --quick), rounded, at least one."""
    return max(1, round(BUDGET["quick_steps" if quick else "steps"] * budget))


def tune_arms(arms: list[Arm], steps: int, seed: int, workers: int, progress, lrs: tuple[float, ...] = GRID["lr"],
              total: int | None = None) -> dict[Arm, Tuned]:
    """Each arm's learning rate, tuned on `seed` (a tuning seed, which no verdict uses): the lowest validation NLL
    over `lrs`, the grid extended past an edge pick (experiments/tuning.py).

    The grid's runs go to the workers together; a rate past an edge (at most two per arm) is trained here."""
    arms = sorted(arms, key=lambda a: -a.length)  # the longest (slowest) jobs first
    runs = run_jobs([(arm, steps, lr, seed) for arm in arms for lr in lrs], workers, progress, 0, total)

    def val_nll(arm: Arm, lr: float) -> float:
        job = (arm, steps, lr, seed)
        if job not in runs:  # a rate past the grid's edge
            runs[job] = train_arm(*job)
        return runs[job]["val_nll"]

    return {arm: tune(partial(val_nll, arm), lrs) for arm in arms}


def train_seeds(arms: list[Arm], lrs: dict[Arm, float], steps: int, seeds: list[int], workers: int, progress,
                done_before: int = 0, total: int | None = None) -> dict[Arm, list[dict]]:
    """Train every arm afresh on every verdict seed at its learning rate; per arm, its results in the order of `seeds`."""
    jobs = [(arm, steps, lrs[arm], s) for arm in sorted(arms, key=lambda a: -a.length) for s in seeds]
    results = run_jobs(jobs, workers, progress, done_before, total)
    return {arm: [results[(arm, steps, lrs[arm], s)] for s in seeds] for arm in arms}


def interval_cells(values: list[float]) -> list[float]:
    """[mean, lo, hi] of per-seed values (95% t-interval), for a table."""
    est = estimate(values)
    return [est.mean, est.lo, est.hi]


def run(quick: bool = False, seed: int = 0, progress=None, budget: float = 1.0) -> Report:
    distances = [4, 16] if quick else [4, 16, 64]
    steps = training_steps(quick, budget)
    seeds = run_seeds(seed, quick)
    workers = 1 if quick else 2
    params = {name: n_params(kind, WIDTHS[kind]) for name, kind in MODELS.items()}
    lr_text = (f"{QUICK_LR} for every model and distance (quick run: no sweep)" if quick else
               f"tuned per (model, distance) on seed {tuning_seed(seed)}, which no verdict uses: the lowest validation "
               f"NLL over {list(GRID['lr'])}, the grid extended past an edge pick (at most twice); every verdict seed "
               "is then trained afresh at its arm's pick")
    floors = {name: CRITERIA[name].floor for name in ("transformer_longest", "rnn_drop", "rnn_gap")}
    report = Report(
        NAME, CLAIMS, quick=quick,
        setup=(
            f"RecallSource(distance=L, p={P_COPY}, vocabulary {VOCAB}) for L in {distances}; sequences of max(2L, "
            f"{MIN_LENGTH}) tokens, {N_TRAIN} for training, {N_VAL} for validation (the learning-rate choice) and "
            f"{N_TEST} for the test scores, drawn afresh for every seed. Models: tanh RNN (d_embed {D_EMBED}, d_hidden "
            f"{WIDTHS['rnn']}, orthogonal W_hh, {params['RNN']:,} parameters), LSTM (d_embed {D_EMBED}, d_hidden "
            f"{WIDTHS['lstm']}, chrono forget-gate biases log U(1, T - 1) with T the sequence length, "
            f"{params['LSTM']:,}), Transformer (1 pre-norm block, {heads(WIDTHS['transformer'])} heads, d_model "
            f"{WIDTHS['transformer']}, rotary positions, {params['Transformer']:,}). Every model and distance: {steps} "
            f"AdamW steps of {BATCH} sequences (training budget {budget:g} × "
            f"{BUDGET['quick_steps' if quick else 'steps']} steps), 10% warm-up, cosine to a tenth of the learning "
            f"rate, gradient clipping 1. Learning rate: {lr_text}. Verdict seeds {seeds}. Chance recall accuracy "
            f"1/{VOCAB} = {CHANCE:.4g}: s_(t-L) is uniform and independent of every token a model could use instead."
        ),
        criterion=(
            HYPOTHESIS + " Parts, each decided on the per-seed values with a 95% t-interval. Attention reaches any "
            f"distance (C6): the Transformer's test recall accuracy at the longest distance L = {distances[-1]} is "
            f"above chance ({floors['transformer_longest']:.4g}). Recurrent models lose long-range recall (C3, C5): "
            f"for the RNN and for the LSTM, the accuracy falls from L = {distances[0]} to L = {distances[-1]} by more "
            f"than {floors['rnn_drop']:.3g} (drop), and at L = {distances[-1]} it is below the Transformer's at the "
            f"same seed by more than {floors['rnn_gap']:.3g} (gap): 5% of the range from chance to perfect recall."
        ),
    )
    arms = [Arm(kind, WIDTHS[kind], L) for L in distances for kind in MODELS.values()]
    n_tuning = 0 if quick else len(arms) * len(GRID["lr"])
    total = n_tuning + len(arms) * len(seeds)  # runs, for the progress bar (a grid's extensions not counted)
    if quick:
        chosen = {arm: QUICK_LR for arm in arms}
    else:
        tuned = tune_arms(arms, steps, tuning_seed(seed), workers, progress, total=total)
        chosen = {arm: report.tuned(f"lr, {arm.kind} at L = {arm.distance}", tuned[arm]) for arm in arms}
    results = train_seeds(arms, chosen, steps, seeds, workers, progress, n_tuning, total)
    acc = {name: [[r["accuracy"] for r in results[Arm(kind, WIDTHS[kind], L)]] for L in distances]
           for name, kind in MODELS.items()}  # model -> distance index -> seed
    excess = {name: [[r["excess"] for r in results[Arm(kind, WIDTHS[kind], L)]] for L in distances]
              for name, kind in MODELS.items()}
    lrs = {name: [chosen[Arm(kind, WIDTHS[kind], L)] for L in distances] for name, kind in MODELS.items()}
    seconds = {name: sum(r["seconds"] for L in distances for r in results[Arm(kind, WIDTHS[kind], L)])
               for name, kind in MODELS.items()}

    report.number("distances", distances)
    report.number("seeds", seeds)
    report.number("chance", CHANCE)
    report.number("parameters", params)
    report.number("budget", budget)
    report.number("steps", steps)
    report.number("learning_rates", lrs)
    report.number("recall_accuracy", acc)
    report.number("excess_nll", excess)
    report.number("train_seconds", {n: round(s, 1) for n, s in seconds.items()})

    report.check("transformer_longest", acc["Transformer"][-1], seeds)
    for name in ("RNN", "LSTM"):
        report.check(f"{name.lower()}_drop", [a - b for a, b in zip(acc[name][0], acc[name][-1])], seeds)
        report.check(f"{name.lower()}_gap", [t - a for t, a in zip(acc["Transformer"][-1], acc[name][-1])], seeds)

    report.table(["L", "sequence length", *(f"{n} {k}" for n in MODELS for k in ("accuracy", "lo", "hi"))],
                 [[L, max(2 * L, MIN_LENGTH), *(c for n in MODELS for c in interval_cells(acc[n][i]))]
                  for i, L in enumerate(distances)],
                 title=f"Test recall accuracy against distance: mean over {len(seeds)} seeds and 95% interval")
    report.table(["L", *(f"{n} excess NLL" for n in MODELS), *(f"{n} lr" for n in MODELS)],
                 [[L, *(float(np.mean(excess[n][i])) for n in MODELS), *(lrs[n][i] for n in MODELS)]
                  for i, L in enumerate(distances)],
                 title="Test excess NLL over the Bayes limit (nats/token, mean over seeds) and the chosen learning rates")
    report.number("excess_nll_mean", {n: [float(np.mean(e)) for e in excess[n]] for n in MODELS})
    report.table(["model", "parameters", "training seconds (all runs)"],
                 [[n, params[n], round(seconds[n], 1)] for n in MODELS], title="Models")
    report.figure("accuracy_vs_distance", lambda: accuracy_figure(distances, acc, params, steps, len(seeds)),
                  "Mean test recall accuracy over seeds with 95% intervals. Attention reaches any distance in one step; "
                  "the recurrent models must carry every token through their fixed-size state and their gradient "
                  "through L steps.",
                  "测试序列上回忆的准确率，对种子取平均，附 95% 区间。注意力一步就能到达任意距离；"
                  "循环模型却必须把每个词元都装进固定大小的状态里带过去，梯度也要穿过 L 步。")
    report.note(
        f"To recall at distance L a recurrent model must hold the last L tokens, {math.log2(VOCAB):.0f} bits each "
        f"({math.log2(VOCAB) * distances[-1]:.0f} bits at L = {distances[-1]}), in a state of {WIDTHS['rnn']} numbers "
        f"(RNN) or 2 × {WIDTHS['lstm']} (LSTM, h and c), and learn to do it from a gradient that crosses L steps. The "
        "Transformer keeps every past token and looks back by position. "
        + ("Every arm ran at one fixed learning rate (quick run)." if quick else
           f"The learning rates were tuned on seed {tuning_seed(seed)}, whose runs enter no verdict; every verdict seed "
           "was trained afresh at its arm's pick, and no test split entered a choice.")
    )
    return report


def accuracy_figure(distances, acc, params, steps, n_seeds) -> plt.Figure:
    fig, ax = plt.subplots(figsize=(6, 4), layout="constrained")
    for (name, values), marker in zip(acc.items(), "o^s"):
        cells = [interval_cells(v) for v in values]  # per distance: mean, lo, hi
        mean = [c[0] for c in cells]
        err = [[m - c[1] for m, c in zip(mean, cells)], [c[2] - m for m, c in zip(mean, cells)]]
        ax.errorbar(distances, mean, yerr=err, fmt=marker + "-", capsize=3,
                    label=say(f"{name} ({params[name] / 1e3:.1f}k params)", f"{name}（{params[name] / 1e3:.1f}k 个参数）"))
    ax.axhline(CHANCE, color="gray", ls=":", label=say(f"chance (1/{VOCAB})", f"随机猜测（1/{VOCAB}）"))
    ax.set_xscale("log", base=2)
    ax.set_ylim(-0.05, 1.05)
    ax.set_xlabel(say("distance L (tokens back)", "距离 L（往前数的词元数）"))
    ax.set_ylabel(say("recall accuracy on test sequences", "测试序列上回忆的准确率"))
    ax.set_title(say(f"Recall at distance L: {steps} steps × {BATCH} sequences, {n_seeds} seeds",
                     f"距离 L 上的回忆：{steps} 步 × {BATCH} 条序列，{n_seeds} 个种子"))

    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return fig
