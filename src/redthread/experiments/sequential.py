"""Claim C4: an RNN's computation is sequential (h_t needs h_{t-1}), a speed bottleneck.

`RecurrentLM.hidden` must run its T steps one after another; a Transformer computes every
position of a layer at once, so the number of operations that have to wait for one another is
n_layer times a constant, whatever T (Vaswani et al. 2017, section 4 and table 1: "sequential
operations" O(n) for a recurrent layer, O(1) for self-attention).

Set-up: a tanh RNN and a Transformer of about the same number of parameters (~100k), on batches of
a few random sequences (a small batch, as when one long document is read: the RNN cannot hide its
T steps behind a large batch). Two measurements for each length T, in one run:
- the depth of the autograd graph of the loss: the longest chain of operations each of which needs
  the previous one's result (counted by walking `grad_fn`), the structure behind the claim;
- the wall-clock time of forward + backward (`time.perf_counter`, the median of a few repeats,
  the two models interleaved so that both see the same machine load).
Everything runs on one CPU thread (`one_thread`): the timings then do not depend on other load
on the machine, and the test is conservative, since more threads or a GPU speed up the
Transformer's position-parallel matrix products and not the RNN's chain of small ones.

Why the criterion: the claim predicts a chain of operations that grows with T for the RNN and
not for the Transformer, a time that grows at least in proportion to T for the RNN, and a
Transformer of the same size that is clearly faster on long sequences.
"""

from __future__ import annotations

import math
import statistics
import time

import matplotlib.pyplot as plt
import torch
from torch import Tensor

from redthread.experiments import one_thread
from redthread.experiments.report import Report
from redthread.models.likelihoods import token_nll
from redthread.models.recurrent import RecurrentConfig, RecurrentLM
from redthread.models.transformer import TransformerConfig, TransformerLM

NAME, CLAIMS = "sequential", "C4"
VOCAB, BATCH = 65, 4
N_LAYER, N_HEAD, D_MODEL = 2, 4, 64  # ~104k parameters
D_EMBED, D_HIDDEN = 64, 256  # ~103k parameters
DEPTH_SLOPE = 0.9  # the RNN's graph depth grows at least this fast against T (log-log)
TIME_SLOPE = 0.8  # the RNN's time grows at least this fast against T (log-log), for T >= SLOPE_FROM
SLOPE_FROM = 128
SPEEDUP = 1.5  # the Transformer is at least this much faster at the longest T


def graph_depth(t: Tensor) -> int:
    """The longest chain of autograd nodes from t back to the leaves: operations that run one after another."""
    depth: dict = {}
    stack = [(t.grad_fn, False)]
    while stack:  # an iterative post-order walk: the RNN's graph is deeper than Python's recursion limit
        node, expanded = stack.pop()
        if node in depth:
            continue
        children = [n for n, _ in node.next_functions if n is not None]
        if expanded:
            depth[node] = 1 + max((depth[n] for n in children), default=0)
            continue
        stack.append((node, True))
        stack.extend((n, False) for n in children if n not in depth)
    return depth[t.grad_fn]


def loss_of(model, idx: Tensor) -> Tensor:
    return token_nll(model(idx), idx)  # any targets do: the cost is the same


def forward_backward_seconds(model, idx: Tensor) -> float:
    t0 = time.perf_counter()
    loss_of(model, idx).backward()
    seconds = time.perf_counter() - t0
    model.zero_grad(set_to_none=True)
    return seconds


def slope(xs: list[float], ys: list[float]) -> float:
    """Least-squares slope of log y against log x."""
    lx, ly = [math.log(x) for x in xs], [math.log(y) for y in ys]
    mx, my = sum(lx) / len(lx), sum(ly) / len(ly)
    return sum((a - mx) * (b - my) for a, b in zip(lx, ly)) / sum((a - mx) ** 2 for a in lx)


def run(quick: bool = False, seed: int = 0, progress=None) -> Report:
    with one_thread():
        return _run(quick, seed, progress)


def _run(quick: bool, seed: int, progress) -> Report:
    lengths = [16, 128, 1024] if quick else [16, 32, 64, 128, 256, 512, 1024]
    repeats = 3 if quick else 5
    torch.manual_seed(seed)
    models = {
        "Transformer": TransformerLM(TransformerConfig(vocab_size=VOCAB, block_size=max(lengths), n_layer=N_LAYER,
                                                       n_head=N_HEAD, d_model=D_MODEL)),
        "RNN": RecurrentLM(RecurrentConfig(vocab_size=VOCAB, block_size=max(lengths), cell="rnn", d_embed=D_EMBED,
                                           d_hidden=D_HIDDEN)),
    }
    params = {name: sum(p.numel() for p in m.parameters()) for name, m in models.items()}
    report = Report(
        NAME, CLAIMS, quick=quick,
        setup=(
            f"Transformer: {N_LAYER} pre-norm blocks, {N_HEAD} heads, d_model {D_MODEL} ({params['Transformer']:,} "
            f"parameters). tanh RNN: d_embed {D_EMBED}, d_hidden {D_HIDDEN} ({params['RNN']:,} parameters). Vocabulary "
            f"{VOCAB}, batches of {BATCH} random sequences of length T in {lengths}, float32, one CPU thread. For each T: "
            f"the depth of the loss's autograd graph, and the time of forward + backward of the mean token NLL, the "
            f"median of {repeats} repeats after one warm-up, the two models interleaved (seed {seed})."
        ),
        criterion=(
            f"The RNN's graph depth grows with T (log-log slope ≥ {DEPTH_SLOPE}) while the Transformer's is the same "
            f"at every T; the RNN's time grows at least as T^{TIME_SLOPE} for T ≥ {SLOPE_FROM}; at the longest T the "
            f"Transformer is at least {SPEEDUP}× faster."
        ),
    )
    depth = {name: [] for name in models}
    seconds = {name: [] for name in models}
    gen = torch.Generator().manual_seed(seed)
    for i, T in enumerate(lengths):
        idx = torch.randint(VOCAB, (BATCH, T), generator=gen)  # (B, T)
        for name, model in models.items():
            depth[name].append(graph_depth(loss_of(model, idx)))
        times = {name: [] for name in models}
        for r in range(repeats + 1):  # the first round warms up allocator and caches; it is not counted
            for name, model in models.items():
                s = forward_backward_seconds(model, idx)
                if r > 0:
                    times[name].append(s)
        for name in models:
            seconds[name].append(statistics.median(times[name]))
        if progress is not None:
            progress.update((i + 1) / len(lengths), f"T={T}")

    depth_slope = slope(lengths, depth["RNN"])
    long_T = [T for T in lengths if T >= SLOPE_FROM]
    time_slope = slope(long_T, seconds["RNN"][-len(long_T):])
    speedup = [r / t for r, t in zip(seconds["RNN"], seconds["Transformer"])]

    report.number("lengths", lengths)
    report.number("parameters", params)
    report.number("graph_depth", depth)
    report.number("speedup", speedup)
    report.number("rnn_depth_slope", depth_slope)
    report.number("rnn_time_slope", time_slope)
    report.number("transformer_time_slope", slope(long_T, seconds["Transformer"][-len(long_T):]))

    tf_depth = depth["Transformer"]
    report.decide(depth_slope >= DEPTH_SLOPE and max(tf_depth) == min(tf_depth),
                  f"RNN depth slope ≥ {DEPTH_SLOPE}; Transformer depth constant",
                  f"RNN slope {depth_slope:.2f} ({depth['RNN'][0]} → {depth['RNN'][-1]}); Transformer "
                  f"{min(tf_depth)}–{max(tf_depth)}")
    report.decide(time_slope >= TIME_SLOPE, f"RNN time slope (T ≥ {SLOPE_FROM}) ≥ {TIME_SLOPE}", f"{time_slope:.2f}")
    report.decide(speedup[-1] >= SPEEDUP, f"Transformer ≥ {SPEEDUP}× faster at T = {lengths[-1]}", f"{speedup[-1]:.2f}×")

    report.table(["T", "RNN graph depth", "Transformer graph depth", "RNN ms", "Transformer ms", "RNN / Transformer",
                  "RNN µs per token", "Transformer µs per token"],
                 [[T, dr, dt, round(1e3 * sr, 2), round(1e3 * st, 2), round(sp, 3), round(1e6 * sr / (BATCH * T), 1),
                   round(1e6 * st / (BATCH * T), 1)]
                  for T, dr, dt, sr, st, sp in zip(lengths, depth["RNN"], depth["Transformer"], seconds["RNN"],
                                                   seconds["Transformer"], speedup)],
                 title="Forward + backward against sequence length")
    report.number("ms", {name: [round(1e3 * s, 2) for s in v] for name, v in seconds.items()})
    report.number("us_per_token", {name: [round(1e6 * s / (BATCH * T), 1) for s, T in zip(v, lengths)]
                                   for name, v in seconds.items()})

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4), layout="constrained")
    for name, marker in (("RNN", "o"), ("Transformer", "s")):
        ax1.loglog(lengths, [1e3 * s for s in seconds[name]], marker + "-", label=f"{name} ({params[name] / 1e3:.0f}k params)")
        ax2.loglog(lengths, depth[name], marker + "-", label=name)
    ax1.set_xlabel("sequence length T")
    ax1.set_ylabel("forward + backward (ms, median)")
    ax1.set_title(f"Wall-clock, batch {BATCH}, one CPU thread")
    ax2.set_xlabel("sequence length T")
    ax2.set_ylabel("longest chain of autograd operations")
    ax2.set_title("Sequential depth of the computation")
    for ax in (ax1, ax2):
        ax.set_xscale("log", base=2)
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=8)
    report.figure("time_vs_length", fig, f"Left: time against T (RNN slope {time_slope:.2f} for T ≥ {SLOPE_FROM}; the "
                  f"Transformer {speedup[-1]:.1f}× faster at T = {lengths[-1]}). Right: the RNN's chain of dependent "
                  "operations grows with T, the Transformer's does not.")
    report.note(
        "On one CPU thread the Transformer's advantage comes from doing each layer's work for all positions in a few "
        "large matrix products instead of T small ones; on parallel hardware (more threads, a GPU) its depth, not its "
        "work, bounds the time, while the RNN's T steps still run one after another."
    )
    return report
