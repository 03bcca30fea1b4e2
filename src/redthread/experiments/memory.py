"""Claim C5: an RNN's memory is a fixed-size state that compresses all of the past, losing detail.

Task: `RecallSource(distance=L)`, where s_t copies s_{t-L} with probability 0.9. To predict every
position a model must hold the last L tokens at once, a sliding buffer of L items of log2(16) = 4
bits each: L is the load. The source gives the exact Bayes NLL, so a model's test NLL minus it
(its excess, a Monte-Carlo KL per token) measures what its memory loses; recall accuracy (how
often its most probable token is s_{t-L}; chance 1/16) is reported beside it.

A recurrent model's memory is its state: d_hidden numbers (RNN, GRU), 2 x d_hidden (LSTM). An
information bound says what must give: L items of 4 bits need 4L bits, and a state of d numbers
read at b bits of usable precision holds at most d * b bits, so for small d and large L the state
must drop detail. A Transformer's "state" is its whole window: each past token stays available to
attention, however narrow the model. So the claim predicts that shrinking the state, or raising the
load, raises a recurrent model's excess, and raises a Transformer's of the same parameter count
less (beyond seed noise).

Method: RNN (orthogonal W_hh), LSTM (chrono forget-gate biases) and GRU (chrono update-gate
biases) at several d_hidden, each size level with a one-block rotary Transformer whose d_model is
chosen to match the GRU's parameter count (the counts are reported). Each (model, size) arm has
its learning rate tuned at the highest load on its own seed, `tuning_seed(seed)`, that no verdict
uses: the lowest validation NLL over `GRID`, the grid extended past an edge pick
(`experiments/tuning.py`); --quick uses one fixed rate instead. Every verdict seed (5, or 2 in
--quick) is then trained afresh at each load at its arm's pick. The training budget is `BUDGET`
steps times `budget` (the runner measures the claim at half, one and twice it); the training
machinery is `long_range`'s.

Criteria (`CRITERIA`, fixed before the run), per recurrent model and per seed, with 95% intervals:
the excess grows as the state shrinks (smallest minus largest size, at the highest load) and as
the load grows (highest minus lowest load, at the smallest size), and each growth is larger than
the matched Transformer's (a difference of differences). Each floor is 0.11 nats, 5% of the
information a copied item carries per token: the least loss that counts.
"""

from __future__ import annotations

from redthread.experiments.criteria import ABOVE, Criterion
from redthread.experiments.long_range import (
    CHANCE,
    D_EMBED,
    MIN_LENGTH,
    N_TEST,
    N_TRAIN,
    N_VAL,
    P_COPY,
    VOCAB,
    Arm,
    interval_cells,
    n_params,
    train_seeds,
    tune_arms,
)
from redthread.experiments.report import Report
from redthread.experiments.stats import run_seeds, tuning_seed
from redthread.lang import say
from redthread.plotting import pyplot

plt = pyplot()

NAME, CLAIMS = "memory", "C5"

HYPOTHESIS = ("A recurrent model's memory is its fixed-size state: shrinking the state, or raising the number of "
              "items it must hold, raises its excess NLL over the Bayes limit, and by more than the same change "
              "raises a parameter-matched Transformer's, whose window keeps every past token.")

# The pre-registered criteria: each floor is the smallest effect size of interest, with its reason.
_STATE, _LOAD = "state size", "load"
_MEM_FLOOR, _MEM_WHY = 0.11, ("5% of the information a copied item carries per token, 0.05 x (log 16 - H(copy)) = "
                              "0.05 x 2.21 nats: the least loss that counts as the state losing detail")
CRITERIA: dict[str, Criterion] = {}
for _m in ("RNN", "LSTM", "GRU"):
    CRITERIA.update({
        f"{_m.lower()}_state": Criterion(
            "C5", _STATE, f"{_m}'s test excess NLL at the smallest state minus at the largest (highest load), nats",
            _MEM_FLOOR, ABOVE, _MEM_WHY + "; the claim is that a smaller state loses more of the past"),
        f"{_m.lower()}_state_vs_transformer": Criterion(
            "C5", _STATE, f"that rise for the {_m} minus the same rise for the parameter-matched Transformers, nats",
            _MEM_FLOOR, ABOVE, _MEM_WHY + "; a Transformer keeps its whole window, so shrinking it should cost it less "
            "than shrinking a recurrent state; without this control the rise could be a plain effect of model size"),
        f"{_m.lower()}_load": Criterion(
            "C5", _LOAD, f"{_m}'s test excess NLL at the highest load minus at the lowest (smallest state), nats",
            _MEM_FLOOR, ABOVE, _MEM_WHY + "; the claim is that a fixed state loses detail as more must be held"),
        f"{_m.lower()}_load_vs_transformer": Criterion(
            "C5", _LOAD, f"that rise for the {_m} minus the same rise for the matched Transformer, nats",
            _MEM_FLOOR, ABOVE, _MEM_WHY + "; the Transformer's window holds every item, so a harder task alone should "
            "raise its excess less; without this control the rise could be the task's difficulty, not the state"),
    })
RECURRENT = {"RNN": "rnn", "LSTM": "lstm", "GRU": "gru"}
MODELS = {**RECURRENT, "Transformer": "transformer"}
BATCH = 16
GRID = {"lr": (3e-3, 1e-2, 3e-2)}  # per (model, size), at the highest load on the set's tuning seed; extends past an edge
QUICK_LR = 1e-2  # --quick: this rate for every arm, no sweep
BUDGET = {"steps": 250, "quick_steps": 40}  # AdamW steps per run, at budget 1
BUDGETS = (0.5, 1.0, 2.0)  # the runner measures the claim at half, one and twice the training budget


def matched_width(target: int) -> int:
    """The even Transformer d_model whose parameter count is nearest `target` (rotary positions need even widths)."""
    return min(range(2, 257, 2), key=lambda w: abs(n_params("transformer", w) - target))


def widths(sizes: list[int]) -> dict[str, list[int]]:
    """Per model, its width at each size level: d_hidden for the recurrent models, a GRU-matched d_model for the Transformer."""
    out = {name: list(sizes) for name in RECURRENT}
    out["Transformer"] = [matched_width(n_params("gru", d)) for d in sizes]
    return out


def growth(high: list[float], low: list[float]) -> list[float]:
    """Per seed, how much the excess rises from one condition (`low`) to another (`high`)."""
    return [h - lo for h, lo in zip(high, low)]


def training_steps(quick: bool, budget: float) -> int:
    """AdamW steps per run: `budget` times BUDGET's steps (its quick steps with --quick), rounded, at least one."""
    return max(1, round(BUDGET["quick_steps" if quick else "steps"] * budget))


def run(quick: bool = False, seed: int = 0, progress=None, budget: float = 1.0) -> Report:
    sizes = [4, 32] if quick else [4, 16, 64]
    loads = [1, 4]
    steps = training_steps(quick, budget)
    seeds = run_seeds(seed, quick)
    workers = 1 if quick else 2
    width = widths(sizes)
    params = {name: [n_params(MODELS[name], w) for w in width[name]] for name in MODELS}
    lr_text = (f"{QUICK_LR} for every arm (quick run: no sweep)" if quick else
               f"tuned per (model, size) at L = {loads[-1]} on seed {tuning_seed(seed)}, which no verdict uses: the "
               f"lowest validation NLL over {list(GRID['lr'])}, the grid extended past an edge pick (at most twice); "
               "every verdict seed is then trained afresh at its arm's pick")
    report = Report(
        NAME, CLAIMS, quick=quick,
        setup=(
            f"RecallSource(distance=L, p={P_COPY}, vocabulary {VOCAB}), load L in {loads} items to hold at once; "
            f"sequences of {MIN_LENGTH} tokens, {N_TRAIN} for training, {N_VAL} for validation and {N_TEST} for the "
            f"test scores, drawn afresh for every seed. Recurrent models (d_embed {D_EMBED}) at d_hidden {sizes}: "
            "tanh RNN with an orthogonal W_hh, LSTM with chrono forget-gate biases, GRU with chrono update-gate "
            f"biases; at each size level a one-block rotary Transformer of d_model {width['Transformer']}, matched to "
            f"the GRU's parameter count. Parameters: "
            + "; ".join(f"{n} {params[n]}" for n in MODELS)
            + f". {steps} AdamW steps of {BATCH} sequences (training budget {budget:g} × "
            f"{BUDGET['quick_steps' if quick else 'steps']} steps), 10% warm-up, cosine to a tenth of the learning "
            f"rate, gradient clipping 1. Learning rate: {lr_text}. Verdict seeds {seeds}."
        ),
        criterion=(
            HYPOTHESIS + " Per recurrent model, on the per-seed test excess NLL (nats/token over the exact Bayes NLL), "
            f"each with a 95% t-interval and a floor of {_MEM_FLOOR} nats. State size: the excess at d_hidden "
            f"{sizes[0]} minus at {sizes[-1]} (load L = {loads[-1]}) exceeds the floor, and exceeds the same "
            f"difference for the matched Transformers by more than the floor. Load: the excess at L = {loads[-1]} "
            f"minus at L = {loads[0]} (d_hidden {sizes[0]}) exceeds the floor, and exceeds the same difference for the "
            "matched Transformer by more than the floor."
        ),
    )
    arms = {(name, i, L): Arm(MODELS[name], width[name][i], L) for name in MODELS
            for i in range(len(sizes)) for L in loads}
    tuned_on = {(name, i): arms[(name, i, loads[-1])] for name in MODELS for i in range(len(sizes))}  # the highest load
    n_tuning = 0 if quick else len(tuned_on) * len(GRID["lr"])
    total = n_tuning + len(arms) * len(seeds)  # runs, for the progress bar (a grid's extensions not counted)
    if quick:
        lr = {key: QUICK_LR for key in tuned_on}
    else:
        tuned = tune_arms(list(tuned_on.values()), steps, tuning_seed(seed), workers, progress, GRID["lr"], total)
        lr = {(name, i): report.tuned(f"lr, {name} at size level {sizes[i]}", tuned[arm])
              for (name, i), arm in tuned_on.items()}
    chosen = {arm: lr[(name, i)] for (name, i, _), arm in arms.items()}  # both loads at the (model, size)'s rate
    results = train_seeds(list(arms.values()), chosen, steps, seeds, workers, progress, n_tuning, total)
    excess = {key: [r["excess"] for r in results[arm]] for key, arm in arms.items()}
    acc = {key: [r["accuracy"] for r in results[arm]] for key, arm in arms.items()}

    report.number("sizes", sizes)
    report.number("loads", loads)
    report.number("seeds", seeds)
    report.number("chance", CHANCE)
    report.number("widths", width)
    report.number("parameters", params)
    report.number("budget", budget)
    report.number("steps", steps)
    report.number("learning_rates", {n: [chosen[arms[(n, i, loads[-1])]] for i in range(len(sizes))] for n in MODELS})
    report.number("excess_nll", {n: {f"L={L}": [excess[(n, i, L)] for i in range(len(sizes))] for L in loads}
                                 for n in MODELS})
    report.number("recall_accuracy", {n: {f"L={L}": [acc[(n, i, L)] for i in range(len(sizes))] for L in loads}
                                      for n in MODELS})

    small, large, low, high = 0, len(sizes) - 1, loads[0], loads[-1]
    tf_state = growth(excess[("Transformer", small, high)], excess[("Transformer", large, high)])
    tf_load = growth(excess[("Transformer", small, high)], excess[("Transformer", small, low)])
    report.number("transformer_growth", {"state": tf_state, "load": tf_load})
    for name in RECURRENT:
        state = growth(excess[(name, small, high)], excess[(name, large, high)])
        load = growth(excess[(name, small, high)], excess[(name, small, low)])
        key = name.lower()
        report.check(f"{key}_state", state, seeds)
        report.check(f"{key}_state_vs_transformer", growth(state, tf_state), seeds)
        report.check(f"{key}_load", load, seeds)
        report.check(f"{key}_load_vs_transformer", growth(load, tf_load), seeds)

    rows = [[n, sizes[i], width[n][i], params[n][i], L, *interval_cells(acc[(n, i, L)]),
             *interval_cells(excess[(n, i, L)]), chosen[arms[(n, i, L)]]]
            for n in MODELS for i in range(len(sizes)) for L in loads]
    report.table(["model", "size level (d_hidden)", "width", "parameters", "L", "accuracy", "lo", "hi",
                  "excess NLL", "lo", "hi", "lr"], rows,
                 title=f"Test recall accuracy and excess NLL (nats/token): mean over {len(seeds)} seeds and 95% interval")
    report.figure("excess_vs_state", lambda: excess_figure(sizes, loads, excess, params),
                  "Test excess NLL over the Bayes limit against the size level (recurrent d_hidden; the Transformer "
                  "matched to the GRU's parameter count), one panel per load, mean over seeds with 95% intervals.",
                  "测试集上超出贝叶斯极限的 NLL 随大小档位的变化（循环网络的 d_hidden；Transformer 的参数量与 GRU 的相当），"
                  "每种负载一个子图，对种子取平均，附 95% 区间。")
    bits = [4 * L for L in loads]
    report.note(
        f"The information the task asks a model to hold: L items of 4 bits, {bits} bits for L = {loads}. A recurrent "
        f"state of d_hidden = {sizes[0]} numbers ({2 * sizes[0]} for the LSTM's h and c) would need "
        f"{bits[-1] / sizes[0]:g} bits of usable precision per number to hold L = {loads[-1]} items; trained networks "
        "use far fewer (Collins et al. 2017 measure about one bit of memory per unit), so the small states must "
        "drop detail. The Transformer holds none of it in a state: every token stays in its window, and attention "
        "reads back by position."
    )
    return report


def excess_figure(sizes, loads, excess, params) -> plt.Figure:
    fig, axes = plt.subplots(1, len(loads), figsize=(5 * len(loads), 4), layout="constrained", sharey=True)
    for ax, L in zip(axes, loads):
        for (name, marker) in zip(MODELS, "o^vs"):
            cells = [interval_cells(excess[(name, i, L)]) for i in range(len(sizes))]  # per size: mean, lo, hi
            mean = [c[0] for c in cells]
            err = [[m - c[1] for m, c in zip(mean, cells)], [c[2] - m for m, c in zip(mean, cells)]]
            ax.errorbar(sizes, mean, yerr=err, fmt=marker + "-", capsize=3,
                        label=say(f"{name} ({params[name][0]:,}–{params[name][-1]:,} params)",
                                  f"{name}（{params[name][0]:,}–{params[name][-1]:,} 个参数）"))
        ax.set_xscale("log", base=2)
        ax.set_xlabel(say("size level: recurrent d_hidden", "大小档位：循环网络的 d_hidden"))
        ax.set_title(say(f"load L = {L} ({4 * L} bits to hold)", f"负载 L = {L}（要记住 {4 * L} 比特）"))
        ax.grid(alpha=0.3)
    axes[0].set_ylabel(say("test excess NLL over Bayes (nats/token)", "测试集上超出贝叶斯极限的 NLL（奈特/词元）"))

    axes[0].legend(fontsize=8)
    return fig
