"""Claim C8, second half: positional encoding injects order, e.g. the prior "nearby words
matter more" (Vaswani et al. 2017, section 3.5).

Set-up: small Transformer LMs with each kind of position (sinusoidal, learned, rotary, none)
are trained on two corpora:
- Shakespeare's characters (`load_splits`), windows of the stream;
- an order-2 Markov source (`MarkovSource`, hierarchical Dirichlet table), whose dependency
  range is known exactly: s_t depends on s_{t-1} and s_{t-2} only.

The input at position t is s_{t-1}, so the key `o` places before the query holds s_{t-1-o}.
On held-out text each layer's attention is recorded (`record_attention`) and averaged by
offset o = i - j over the queries i >= T/2 (every one of them sees the offsets 0 .. T/2):

    profile(o) = mean over sequences, heads and queries i >= T/2 of A[i, i - o]
    near mass  = sum of profile(o) for o < K     (K = 3 on the plays, K = 2 on the Markov source)

Control: the same model, seed and training on shuffled text, the training stream's tokens
permuted so that no order statistics remain, measured on the same held-out (ordered) text. Its
near mass is what the causal mask, the architecture and chance give without order to learn;
the uniform level, mean over the queries of K / (i + 1), is shown beside it. The claim holds
for a kind of position where the trained model's near mass exceeds its control's, over seeds.
"No positions" is measured too, as a reference, not a check: a causal model without positions
can still find order from the mask in its later layers.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor

from redthread.data.dataset import TokenSplit
from redthread.data.lm import LMData, load_splits
from redthread.data.sequences import SequenceData
from redthread.data.synthetic import MarkovSource
from redthread.errors import RedthreadError
from redthread.experiments.report import Report
from redthread.models.transformer import TransformerConfig, TransformerLM
from redthread.plotting import pyplot
from redthread.train.loop import TrainConfig, evaluate, train
from redthread.viz.record import record_attention

plt = pyplot()

NAME, CLAIMS = "locality", "C8"
POSITIONS = ("sinusoidal", "learned", "rope", "none")
CHECKED = POSITIONS[:3]  # "none" is the reference: no claim is made about it
NEAR = {"plays": 3, "markov": 2}  # keys counted as nearby, fixed in advance (see criteria.py)
CORPUS_NAMES = {"plays": "Shakespeare's characters", "markov": "order-2 Markov source"}
MARKOV_VOCAB, MARKOV_HIERARCHY = 8, 1.0
LRS = (1e-3, 3e-3, 1e-2)  # the sweep, on the first seed, per corpus and kind of position
QUICK_LR = 3e-3
N_HEAD, D_MODEL, BATCH, N_PROBE = 2, 32, 32, 64


def shuffled_split(split: TokenSplit, seed: int) -> TokenSplit:
    """The same tokens in a random order: the unigram statistics stay, every order statistic goes."""
    tokens = np.random.default_rng(seed).permutation(np.asarray(split.tokens))  # (N,)
    return TokenSplit(tokens, split.n_chars, split.name)


def markov_data(source: MarkovSource, n_train: int, n_val: int, length: int, seed: int) -> tuple[SequenceData, SequenceData]:
    """(ordered, shuffled) data: the same sequences, and their training tokens permuted across the whole split."""
    seqs = source.sample(n_train + n_val, length, seed)  # (N, L)
    train_seqs, val_seqs = seqs[:n_train], seqs[n_train:]
    mixed = np.random.default_rng(seed).permutation(train_seqs.ravel()).reshape(train_seqs.shape)
    make = lambda tr: SequenceData(tr, val_seqs, vocab_size=source.vocab_size + 1, boundary=source.vocab_size,  # noqa: E731
                                   end_token=False)
    return make(train_seqs), make(mixed)


def offset_profile(att: Tensor, first_query: int) -> Tensor:
    """Mean attention weight on the key `o` places before the query, o = 0 .. first_query:
    (B, H, T, T) -> (first_query + 1,), over sequences, heads and the queries i >= first_query."""
    T = att.size(-1)
    q = torch.arange(first_query, T)  # every one of these queries sees each offset shown
    return torch.stack([att[:, :, q, q - o].mean() for o in range(first_query + 1)])


def uniform_near_mass(k: int, first_query: int, T: int) -> float:
    """The near mass of uniform causal attention: mean over queries i >= first_query of k / (i + 1)."""
    return float(np.mean([k / (i + 1) for i in range(first_query, T)]))


def train_lm(data, vocab: int, block: int, n_layer: int, pos: str, steps: int, lr: float, seed: int) -> TransformerLM:
    torch.manual_seed(seed)
    model = TransformerLM(TransformerConfig(vocab_size=vocab, block_size=block, n_layer=n_layer, n_head=N_HEAD,
                                            d_model=D_MODEL, pos=pos))
    train(model, data, TrainConfig(max_iters=steps, batch_size=BATCH, lr=lr, min_lr=lr / 10, warmup_iters=steps // 10,
                                   eval_interval=steps, eval_batches=1, log_interval=steps, seed=seed, device="cpu"),
          progress=False)
    return model.eval()


@torch.no_grad()
def profiles(model: TransformerLM, x: Tensor) -> Tensor:
    """Each layer's offset profile on held-out inputs x (B, T): (n_layer, T // 2 + 1)."""
    with record_attention(model) as maps:
        model(x)
    return torch.stack([offset_profile(att, x.size(1) // 2) for att in maps.decoder])


def run(quick: bool = False, seed: int = 0, progress=None) -> Report:
    n_seeds, n_layer, block, steps = (2, 1, 16, 30) if quick else (5, 2, 32, 250)
    n_train, n_val = (600, 64) if quick else (4000, 400)
    seeds = list(range(seed, seed + n_seeds))
    report = Report(
        NAME, CLAIMS, quick=quick,
        setup=(
            f"Models: {n_layer}-layer Transformer LMs, {N_HEAD} heads, d_model {D_MODEL}, context {block}, one per kind "
            f"of position ({', '.join(POSITIONS)}), AdamW, batch {BATCH}, {steps} steps with warm-up and cosine decay. "
            f"Learning rate: " + (f"{QUICK_LR} (quick run: no sweep)" if quick else
                                  f"picked per corpus and kind of position from {', '.join(map(str, LRS))} by validation "
                                  f"NLL on seed {seed}") + ". "
            f"Corpora: (a) Shakespeare's characters, windows of the training stream; (b) an order-2 Markov source, "
            f"V = {MARKOV_VOCAB}, hierarchical Dirichlet table (source seed {seed}), {n_train} training sequences of "
            f"{block} tokens. Control: the same model trained the same way on shuffled text (the training tokens "
            f"permuted across the whole split: no order statistic remains). Measure: each layer's attention recorded "
            f"on {N_PROBE} held-out ordered sequences, averaged by key offset over the queries i ≥ {block // 2}; the "
            f"near mass is the weight on the {NEAR['plays']} nearest keys (plays) or the {NEAR['markov']} nearest "
            f"(the Markov source's dependency range), averaged over layers. Seeds {seeds}."
        ),
        criterion=(
            "For each kind of position in the paper's sense (sinusoidal, learned, rotary) and each corpus: the near "
            "mass of the model trained on ordered text minus that of the same model trained on shuffled text is > 0, "
            "the whole 95% interval over seeds above 0. 'No positions' is measured as a reference, not a check."
        ),
    )
    try:
        plays_train, plays_val, tokenizer = load_splits(None)
    except RedthreadError as e:
        report.skip(f"the default corpus is not installed here ({e})")
        return report
    source = MarkovSource(order=2, vocab_size=MARKOV_VOCAB, hierarchy=MARKOV_HIERARCHY, seed=seed)
    plays_probe = LMData(plays_train, plays_val, block)

    # near[corpus][pos][arm]: per seed, (n_layer,) near masses; prof[...]: per seed (n_layer, O) profiles
    near = {c: {p: {"ordered": [], "shuffled": []} for p in POSITIONS} for c in NEAR}
    prof = {c: {p: {"ordered": [], "shuffled": []} for p in POSITIONS} for c in NEAR}
    chosen_lr = {c: {} for c in NEAR}
    sweep_rows = []
    total, done = n_seeds * len(NEAR) * len(POSITIONS), 0
    for s in seeds:
        ordered_m, shuffled_m = markov_data(source, n_train, n_val, block, s)
        datasets = {
            "plays": (LMData(plays_train, plays_val, block), LMData(shuffled_split(plays_train, s), plays_val, block),
                      tokenizer.vocab_size, next(plays_probe.eval_batches("val", N_PROBE, 1))[0]),
            "markov": (ordered_m, shuffled_m, MARKOV_VOCAB + 1, next(ordered_m.eval_batches("val", N_PROBE, None))[0]),
        }
        for corpus, (ordered, shuffled, vocab, x) in datasets.items():  # x (N_PROBE, block): held-out, ordered
            for pos in POSITIONS:
                if s == seed and not quick:  # the sweep: each arm's learning rate picked on validation
                    fits = {lr: train_lm(ordered, vocab, block, n_layer, pos, steps, lr, s) for lr in LRS}
                    scores = {lr: evaluate(m, ordered, "val", batch_size=64, max_batches=4)["nll"] for lr, m in fits.items()}
                    chosen_lr[corpus][pos] = min(scores, key=scores.get)
                    sweep_rows.append([CORPUS_NAMES[corpus], pos, *(scores[lr] for lr in LRS), chosen_lr[corpus][pos]])
                    model = fits[chosen_lr[corpus][pos]]
                else:
                    chosen_lr[corpus].setdefault(pos, QUICK_LR)
                    model = train_lm(ordered, vocab, block, n_layer, pos, steps, chosen_lr[corpus][pos], s)
                control = train_lm(shuffled, vocab, block, n_layer, pos, steps, chosen_lr[corpus][pos], s)
                for arm, m in (("ordered", model), ("shuffled", control)):
                    p = profiles(m, x)  # (n_layer, O)
                    prof[corpus][pos][arm].append(p)
                    near[corpus][pos][arm].append(p[:, : NEAR[corpus]].sum(1))  # (n_layer,)
                done += 1
                if progress is not None:
                    progress.update(done / total, f"seed {s}: {corpus}, {pos}")

    uniform = {c: uniform_near_mass(k, block // 2, block) for c, k in NEAR.items()}
    report.number("seeds", seeds)
    report.number("uniform_near_mass", uniform)
    report.number("learning_rate", chosen_lr)
    for corpus in NEAR:
        for pos in POSITIONS:
            arms = near[corpus][pos]
            excess = [float((o - c).mean()) for o, c in zip(arms["ordered"], arms["shuffled"])]  # per seed
            report.number(f"near_{corpus}_{pos}", {arm: [v.tolist() for v in vals] for arm, vals in arms.items()})
            report.number(f"excess_{corpus}_{pos}", excess)
            if pos in CHECKED:
                report.check(f"near_{corpus}_{pos}", excess, seeds)

    rows = []
    for corpus in NEAR:
        for pos in POSITIONS:
            arms = near[corpus][pos]
            o, c = torch.stack(arms["ordered"]), torch.stack(arms["shuffled"])  # (S, n_layer)
            for layer in range(n_layer):
                rows.append([CORPUS_NAMES[corpus], pos, layer, o[:, layer].mean().item(), c[:, layer].mean().item(),
                             (o[:, layer] - c[:, layer]).mean().item(), uniform[corpus]])
    report.number("table_rows", rows)
    report.table(["corpus", "positions", "layer", "near mass, ordered", "near mass, shuffled", "excess", "uniform"],
                 rows, title=f"Near mass by layer, mean over {n_seeds} seeds")
    if sweep_rows:
        report.table(["corpus", "positions", *(f"val NLL at lr {lr:g}" for lr in LRS), "chosen"], sweep_rows,
                     title=f"Learning-rate sweep (seed {seed}, ordered text)")
    mean_prof = {c: {p: {a: torch.stack(v).mean((0, 1)) for a, v in arms.items()} for p, arms in ps.items()}
                 for c, ps in prof.items()}  # (O,) each: mean over seeds and layers
    report.number("profile", mean_prof)
    report.figure("profiles", _figure(mean_prof, block), "Mean attention weight against the key's offset (mean over "
                  "seeds and layers) on held-out text: trained on ordered text (solid), on shuffled text (dashed), "
                  "uniform causal attention (grey).")
    return report


def _figure(mean_prof: dict, block: int):
    fig, axes = plt.subplots(1, len(mean_prof), figsize=(6 * len(mean_prof), 4), layout="constrained", squeeze=False)
    q = np.arange(block // 2, block)
    for ax, (corpus, ps) in zip(axes[0], mean_prof.items()):
        for i, (pos, arms) in enumerate(ps.items()):
            offsets = np.arange(len(arms["ordered"]))
            ax.plot(offsets, arms["ordered"], "-o", color=f"C{i}", ms=3, label=pos)
            ax.plot(offsets, arms["shuffled"], "--", color=f"C{i}", lw=1)
        ax.plot(offsets, np.full(len(offsets), np.mean(1 / (q + 1))), color="grey", lw=1, label="uniform")
        ax.set(xlabel="key offset (places before the query)", ylabel="mean attention weight", yscale="log",
               title=CORPUS_NAMES[corpus])
        ax.legend(fontsize=8)
    return fig
