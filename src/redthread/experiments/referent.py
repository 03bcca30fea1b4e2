"""Claim C13, a positive control: when a model has learned to resolve a referent, does its attention
show it?

Why this experiment exists. `coreference` reads the attention of a pretrained encoder (MiniLM) on
Winograd pairs and finds that it does not follow the referent. But that encoder has no shown
competence at coreference: if it does not resolve the pronoun, a faithful window shows exactly that
null, and "attention is not a window" does not follow. The claim can only be tested on a model that
is known to have learned the dependency. Here we build one.

The task (a synthetic language, every rule known). Each sequence of T = 12 tokens holds two candidate
entities, one animal and one place ("The animal ... the street"), at random positions among the first
8 (order random); then a cue word among positions 8-10, either an animate cue ("tired") or a place
cue ("wide"); then the pronoun at the last position:

    position  0 .. 7                    8 .. 10         11
    tokens    fillers, animal, place    filler, cue     it        target at 'it': property(referent)

The referent is the candidate whose kind matches the cue: an animate cue -> the animal, a place cue ->
the place. Each entity has a fixed property (one of N_PROP tokens), and the target at the pronoun is
the referent's property; the two candidates always have different properties, so predicting the
target needs the referent resolved. Chance for a model that knows both candidates but not which one
is meant is exactly 0.5. (The cue precedes the pronoun because the model is causal: a token cannot
read words after it.)

The model: a 2-layer, 4-head Transformer LM (`TransformerLM`, no positions: the referent is picked
by what the tokens are, not where they are), trained by `train` on the target at the pronoun only.
Its learning rate is tuned on a seed no verdict uses. Then, for each seed, on fresh items:

1. competence: accuracy at the pronoun. Without it, nothing below can be read either way.
2. attention: for every head, the weight from the pronoun (the query at position 11) to the referent
   minus to the other candidate, the margin. One head is CHOSEN on a selection half of the items
   (largest mean margin) and SCORED on the other half: the share of scoring items where its weight
   favours the referent. Choosing and scoring on the same items would flatter the best of 8 heads.
3. attribution: the gradient of log P(target) with respect to the embedding of each position, times
   the embedding (gradient x input), its norm at each candidate: which candidate the prediction is
   sensitive to. Agreement of attention's pick with attribution's pick, per item, as Cohen's kappa
   (0: no more agreement than two picks with their own first/second biases would reach by chance).
4. ablation: the chosen head's output replaced by its mean (per position, over the selection items),
   and the accuracy lost, minus the mean loss from ablating each of the other 7 heads in the same way
   (what a random other head costs, without the noise of drawing one).

Every check is a per-seed quantity (a trained model is the unit of variation), decided over the
set's seeds with Student's t; two seed sets must agree.
"""

from __future__ import annotations

from contextlib import contextmanager

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from redthread.data.targets import IGNORE_INDEX
from redthread.data.tensors import TensorSplits
from redthread.experiments.criteria import ABOVE, Criterion
from redthread.experiments.report import Report
from redthread.experiments.stats import run_seeds, tuning_seed
from redthread.experiments.tuning import tune
from redthread.lang import say
from redthread.models.transformer import TransformerConfig, TransformerLM
from redthread.plotting import pyplot
from redthread.train.loop import TrainConfig, evaluate, train
from redthread.viz.record import record_attention

plt = pyplot()

NAME, CLAIMS = "referent", "C13"

HYPOTHESIS = ("A small Transformer trained on a task where the pronoun's target is a property of its referent (chosen "
              "between two candidates by a cue word) learns to resolve the referent; then some head, chosen on held-out "
              "items, attends from the pronoun to the referent rather than the other candidate on new items, its pick "
              "agrees with gradient attribution, and ablating it costs more accuracy than ablating another head.")
_HALFWAY = "halfway from the resolution-blind level (0.5: right in exactly one of the two readings) to perfect, 0.75"
# The pre-registered criteria: each floor is the smallest effect size of interest, with its reason.
CRITERIA: dict[str, Criterion] = {
    "competence": Criterion(
        "C13", "competence", "accuracy of the target at the pronoun on held-out scoring items", 0.75, ABOVE,
        "chance is 0.5 for a model that knows both candidates but not which is meant (their properties always "
        "differ); the floor is " + _HALFWAY + ": a model that clears it has learned the referent dependency",
        bounds=(0.0, 1.0)),
    "attention_share": Criterion(
        "C13", "attention points at the referent",
        "share of scoring items where the head chosen on the selection items puts more weight from the pronoun on the "
        "referent than on the other candidate", 0.75, ABOVE,
        "a head blind to the cue favours one candidate by its kind or its place, and the referent is each kind and "
        "each place in half the items: 0.5; the floor is " + _HALFWAY, bounds=(0.0, 1.0)),
    "attribution_kappa": Criterion(
        "C13", "attention agrees with attribution and ablation",
        "Cohen's kappa between the chosen head's pick (the candidate it weights more) and gradient x input's pick "
        "(the candidate whose embedding the target's log-probability is more sensitive to), scoring items",
        0.2, ABOVE,
        "0 is the agreement two picks reach by chance given their own biases (e.g. both always picking the later "
        "candidate agree fully and score 0); 0.2 is the least agreement called more than slight (Landis & Koch 1977)",
        bounds=(-1.0, 1.0)),
    "ablation_excess": Criterion(
        "C13", "attention agrees with attribution and ablation",
        "accuracy lost by mean-ablating the chosen head minus the mean loss from mean-ablating each other head, "
        "scoring items", 0.05, ABOVE,
        "a head that only looks at the referent without carrying it costs no more than any other; the floor is 10% "
        "of the accuracy the referent is worth (chance 0.5 to perfect), the least that counts as carrying it",
        bounds=(-1.0, 1.0)),
}

# The language: token ids in blocks.
N_FILL, N_ENTITY, N_CUE, N_PROP = 8, 8, 3, 4  # fillers; entities of each kind; cues of each kind; properties
FILL = 0  # fillers: FILL .. FILL + N_FILL - 1
ANIMAL = FILL + N_FILL  # animals: ANIMAL .. ANIMAL + N_ENTITY - 1
PLACE = ANIMAL + N_ENTITY  # places
CUE_ANIMAL = PLACE + N_ENTITY  # animate cues ("tired", "hungry", ...)
CUE_PLACE = CUE_ANIMAL + N_CUE  # place cues ("wide", "busy", ...)
PRONOUN = CUE_PLACE + N_CUE  # "it"
PROP = PRONOUN + 1  # the property tokens, the targets
VOCAB = PROP + N_PROP
LENGTH, MENTIONS, CUE_SLOTS = 12, 8, (8, 9, 10)  # candidates among positions 0..7; the cue in 8..10; 'it' at 11
PROPERTY = np.arange(N_ENTITY) % N_PROP  # entity i of either kind has property i mod N_PROP (fixed, known)

N_LAYER, N_HEAD, D_MODEL, BATCH = 2, 4, 32, 64
GRID = {"lr": (1e-3, 3e-3, 1e-2)}  # on the set's tuning seed, by validation NLL; extends past an edge
QUICK_LR = 3e-3
BUDGET = {"steps": 600, "quick_steps": 100, "n_train": 4000, "n_held": 1000, "quick_n_held": 200}


def make_items(n: int, seed: int) -> dict[str, Tensor]:
    """n sequences of the task. Returns x (n, T) tokens, y (n, T) targets (IGNORE_INDEX except at the
    pronoun), pos (n, 2) the candidates' positions in order of mention, referent (n,) which of the two
    mentions (0 or 1) the pronoun refers to, animate (n,) whether the cue is animate."""
    rng = np.random.default_rng(seed)
    x = rng.integers(FILL, FILL + N_FILL, size=(n, LENGTH))  # (n, T): fillers everywhere to start
    y = np.full((n, LENGTH), IGNORE_INDEX)  # (n, T)
    pos, referent, animate = np.zeros((n, 2), np.int64), np.zeros(n, np.int64), rng.random(n) < 0.5
    for i in range(n):
        a = rng.integers(N_ENTITY)
        p = rng.choice([j for j in range(N_ENTITY) if PROPERTY[j] != PROPERTY[a]])  # properties differ
        animal_first = rng.random() < 0.5
        pos[i] = np.sort(rng.choice(MENTIONS, 2, replace=False))
        x[i, pos[i]] = [ANIMAL + a, PLACE + p] if animal_first else [PLACE + p, ANIMAL + a]
        x[i, rng.choice(CUE_SLOTS)] = (CUE_ANIMAL if animate[i] else CUE_PLACE) + rng.integers(N_CUE)
        x[i, -1] = PRONOUN
        referent[i] = 0 if animal_first == animate[i] else 1  # the mention whose kind matches the cue
        y[i, -1] = PROP + PROPERTY[(a if animate[i] else p)]
    return {"x": torch.from_numpy(x), "y": torch.from_numpy(y), "pos": torch.from_numpy(pos),
            "referent": torch.from_numpy(referent), "animate": torch.from_numpy(animate)}


def select(items: dict[str, Tensor], idx) -> dict[str, Tensor]:
    return {k: v[idx] for k, v in items.items()}


class ReferentData(TensorSplits):
    """The task as a data source for the training loop: fixed train and val items."""

    def __init__(self, n_train: int, n_val: int, seed: int):
        items = {"train": make_items(n_train, seed), "val": make_items(n_val, seed + 1_000_003)}
        self.splits = {name: (s["x"], s["y"]) for name, s in items.items()}  # (N, T) inputs, (N, T) targets


def train_model(data: ReferentData, steps: int, lr: float, seed: int) -> TransformerLM:
    torch.manual_seed(seed)
    model = TransformerLM(TransformerConfig(vocab_size=VOCAB, block_size=LENGTH, n_layer=N_LAYER, n_head=N_HEAD,
                                            d_model=D_MODEL, pos="none"))
    train(model, data, TrainConfig(max_iters=steps, batch_size=BATCH, lr=lr, min_lr=lr / 10, warmup_iters=steps // 10,
                                   eval_interval=steps, eval_batches=1, log_interval=steps, seed=seed, device="cpu",
                                   peak_flops=1e12),
          progress=False)
    return model.eval()


# --- the four readings ------------------------------------------------------------------------

@torch.no_grad()
def accuracy(model: nn.Module, items: dict[str, Tensor]) -> float:
    logits = model(items["x"])[:, -1]  # (N, V): the prediction at the pronoun
    return float((logits.argmax(-1) == items["y"][:, -1]).double().mean())


def candidate_values(values: Tensor, items: dict[str, Tensor]) -> tuple[Tensor, Tensor]:
    """values (N, ..., T) over key positions -> (referent's, other's), each (N, ...)."""
    b = torch.arange(len(values))
    ref_pos = items["pos"][b, items["referent"]]  # (N,)
    other_pos = items["pos"][b, 1 - items["referent"]]  # (N,)
    return values[b, ..., ref_pos], values[b, ..., other_pos]


@torch.no_grad()
def pronoun_attention(model: TransformerLM, items: dict[str, Tensor]) -> Tensor:
    """Every head's attention from the pronoun (the last query) to every key: (N, L, H, T)."""
    with record_attention(model) as maps:
        model(items["x"])
    return maps.stacked("decoder")[:, :, :, -1].permute(1, 0, 2, 3)  # (L, N, H, T, T) -> (N, L, H, T)


def choose_head(margins: Tensor) -> tuple[int, int]:
    """The (layer, head) with the largest mean margin over the items given: margins (N, L, H)."""
    L, H = margins.shape[1:]
    best = int(margins.mean(0).argmax())
    return best // H, best % H


def attribution(model: nn.Module, items: dict[str, Tensor]) -> Tensor:
    """Gradient x input at each candidate: || d log P(target) / d e_j  *  e_j || for the embedding e_j (the
    output of `model.embed`) at the two mentions, in order of mention: (N, 2)."""
    kept = {}

    def keep(module, args, out):
        out.retain_grad()
        kept["e"] = out  # (N, T, C)

    handle = model.embed.register_forward_hook(keep)
    try:
        logits = model(items["x"])[:, -1]  # (N, V)
    finally:
        handle.remove()
    logp = F.log_softmax(logits, -1).gather(1, items["y"][:, -1:].clamp(min=0))  # (N, 1): log P(target)
    logp.sum().backward()  # each item's log-prob depends only on its own embeddings
    e = kept["e"]
    score = (e.grad * e).norm(dim=-1).detach()  # (N, T)
    model.zero_grad(set_to_none=True)
    return score.gather(1, items["pos"])  # (N, 2)


def cohen_kappa(a: Tensor, b: Tensor) -> float:
    """Agreement of two 0/1 picks beyond what their own rates give by chance: (p_o - p_e) / (1 - p_e)."""
    a, b = a.double(), b.double()
    p_o = float((a == b).double().mean())
    pa, pb = float(a.mean()), float(b.mean())
    p_e = pa * pb + (1 - pa) * (1 - pb)
    return 0.0 if p_e >= 1 else (p_o - p_e) / (1 - p_e)


@torch.no_grad()
def head_outputs_mean(model: TransformerLM, items: dict[str, Tensor]) -> list[Tensor]:
    """Per layer, the mean over items of the heads' outputs (the input of out_proj) at each position: (T, C)."""
    means = []
    handles = [b.self_attn.out_proj.register_forward_pre_hook(lambda m, args: means.append(args[0].mean(0)))
               for b in model.blocks]
    try:
        model(items["x"])
    finally:
        for h in handles:
            h.remove()
    return means  # in layer order: the blocks run in order


@contextmanager
def mean_ablated(model: TransformerLM, layer: int, head: int, means: list[Tensor]):
    """Within the block, one head outputs its per-position mean: it carries nothing about the item."""
    attn = model.blocks[layer].self_attn
    cols = slice(head * attn.d_head, (head + 1) * attn.d_head)  # head h: columns h*D .. (h+1)*D

    def replace(module, args):
        y = args[0].clone()  # (N, T, C)
        y[..., cols] = means[layer][: y.size(1), cols]
        return (y,)

    handle = attn.out_proj.register_forward_pre_hook(replace)
    try:
        yield
    finally:
        handle.remove()


def measure(model: TransformerLM, items: dict[str, Tensor]) -> dict:
    """One trained model on held-out items: the first half chooses the head, the second half is scored."""
    n = len(items["x"]) // 2
    chooser, scoring = select(items, slice(0, n)), select(items, slice(n, None))
    ref_w, other_w = candidate_values(pronoun_attention(model, chooser), chooser)  # (n, L, H) each
    layer, head = choose_head(ref_w - other_w)
    att = pronoun_attention(model, scoring)  # (m, L, H, T)
    s_ref, s_other = candidate_values(att, scoring)  # (m, L, H)
    favours = s_ref[:, layer, head] > s_other[:, layer, head]  # (m,): the chosen head favours the referent
    # picks as "which mention" (0 first, 1 second), so that kappa sees each method's own order bias
    b = torch.arange(len(att))
    att_pick = (att[b, layer, head, scoring["pos"][:, 1]] > att[b, layer, head, scoring["pos"][:, 0]]).long()
    attr = attribution(model, scoring)  # (m, 2)
    attr_pick = (attr[:, 1] > attr[:, 0]).long()
    base = accuracy(model, scoring)
    means = head_outputs_mean(model, chooser)
    drops = torch.zeros(N_LAYER, N_HEAD)
    for lay in range(N_LAYER):
        for h in range(N_HEAD):
            with mean_ablated(model, lay, h, means):
                drops[lay, h] = base - accuracy(model, scoring)
    others = torch.cat([drops.flatten()[: layer * N_HEAD + head], drops.flatten()[layer * N_HEAD + head + 1 :]])
    return dict(
        accuracy=base, head=(layer, head), share=float(favours.double().mean()),
        kappa=cohen_kappa(att_pick, attr_pick), agreement=float((att_pick == attr_pick).double().mean()),
        attribution_share=float((attr_pick == scoring["referent"]).double().mean()),
        ablation_excess=float(drops[layer, head] - others.mean()), drops=drops,
        ref_weight=s_ref.mean(0), other_weight=s_other.mean(0),  # (L, H) each, scoring items
    )


def run(quick: bool = False, seed: int = 0, progress=None) -> Report:
    steps = BUDGET["quick_steps"] if quick else BUDGET["steps"]
    n_held = BUDGET["quick_n_held"] if quick else BUDGET["n_held"]
    seeds = run_seeds(seed, quick)
    report = Report(
        NAME, CLAIMS, quick=quick,
        setup=(
            "A positive control for `coreference`: a model that is shown to have learned a referent dependency. "
            f"Task: sequences of {LENGTH} tokens; one animal and one place ({N_ENTITY} of each) at random positions "
            f"among the first {MENTIONS}, a cue among positions {CUE_SLOTS[0]}-{CUE_SLOTS[-1]} ({N_CUE} animate cues, "
            f"{N_CUE} place cues), the pronoun last; the target at the pronoun is the property ({N_PROP} values, fixed "
            "table, the two candidates' always differ) of the candidate whose kind matches the cue: chance 0.5 without "
            f"resolving it. Model: {N_LAYER}-layer Transformer LM, {N_HEAD} heads, d_model {D_MODEL}, no positions, "
            f"AdamW, batch {BATCH}, {steps} steps on {BUDGET['n_train']} items, trained on the pronoun's target only. "
            "Learning rate: " + (f"{QUICK_LR} (quick run: no sweep)" if quick else
                                 f"picked from {', '.join(map(str, GRID['lr']))} (extended past an edge) by validation "
                                 f"NLL on seed {tuning_seed(seed)}, which no verdict uses") + ". "
            f"Per seed ({seeds}): {n_held} fresh items, the first half choosing the head (largest mean margin from the "
            "pronoun, referent minus other candidate), the second half scoring it: accuracy, the chosen head's share of "
            "items favouring the referent, Cohen's kappa between its pick and gradient x input's, and the accuracy lost "
            "by mean-ablating it minus the mean over the other heads."
        ),
        criterion=HYPOTHESIS + " Checked per seed, over the set's seeds: accuracy > 0.75 and the chosen head's share "
        "> 0.75 (halfway from chance, 0.5, to perfect); kappa > 0.2; ablation excess > 0.05 accuracy.",
    )
    if quick:
        lr = QUICK_LR
    else:
        tuning_data = ReferentData(BUDGET["n_train"], 500, tuning_seed(seed))

        def val_nll(lr: float) -> float:
            return evaluate(train_model(tuning_data, steps, lr, tuning_seed(seed)), tuning_data, "val")["nll"]

        lr = report.tuned("lr", tune(val_nll, GRID["lr"]))

    runs = []
    for i, s in enumerate(seeds):
        model = train_model(ReferentData(BUDGET["n_train"], 500, s), steps, lr, s)
        runs.append(measure(model, make_items(n_held, s + 2_000_003)))  # items no training or tuning saw
        if progress is not None:
            progress.update((i + 1) / len(seeds), f"seed {s}")

    report.number("seeds", seeds)
    report.number("learning_rate", lr)
    for key in ("accuracy", "share", "kappa", "agreement", "attribution_share", "ablation_excess"):
        report.number(key, [r[key] for r in runs])
    report.number("chosen_heads", [list(r["head"]) for r in runs])
    report.number("ablation_drops", [r["drops"] for r in runs])
    report.check("competence", [r["accuracy"] for r in runs], seeds)
    report.check("attention_share", [r["share"] for r in runs], seeds)
    report.check("attribution_kappa", [r["kappa"] for r in runs], seeds)
    report.check("ablation_excess", [r["ablation_excess"] for r in runs], seeds)
    rows = [[s, r["accuracy"], f"L{r['head'][0]}.H{r['head'][1]}", r["share"], r["agreement"], r["kappa"],
             r["attribution_share"], float(r["drops"][r["head"]]), r["ablation_excess"]] for s, r in zip(seeds, runs)]
    report.table(["seed", "accuracy", "chosen head", "its share for the referent", "agreement with attribution",
                  "kappa", "attribution's share for the referent", "accuracy lost, chosen head ablated",
                  "minus mean over other heads"], rows, title="Per seed, on the scoring items")
    report.number("weights", {"referent": [r["ref_weight"] for r in runs], "other": [r["other_weight"] for r in runs]})
    report.figure("attention", lambda: _figure(runs, seeds),
                  "Left: weight from the pronoun to the referent and to the other "
                  f"candidate in every head (seed {seeds[0]}, scoring items), the chosen head marked. Right: per seed, the "
                  "chosen head against the mean of the other heads.",
                  "左：每个头里从代词到指代对象和到另一个候选的注意力权重"
                  f"（种子 {seeds[0]}，用于打分的那一半句子），标出了选中的头。"
                  "右：逐个种子，把选中的头与其他头的平均相比较。")
    return report


def _figure(runs: list[dict], seeds: list[int]):
    fig, axes = plt.subplots(1, 2, figsize=(12, 4), layout="constrained")
    r = runs[0]
    names = [f"L{lay}.H{h}" for lay in range(N_LAYER) for h in range(N_HEAD)]
    x = np.arange(len(names))
    axes[0].bar(x - 0.2, r["ref_weight"].flatten(), 0.4, label=say("referent", "指代对象"))
    axes[0].bar(x + 0.2, r["other_weight"].flatten(), 0.4, label=say("other candidate", "另一个候选"))
    chosen = r["head"][0] * N_HEAD + r["head"][1]
    axes[0].annotate(say("chosen", "选中的头"), (chosen, float(max(r["ref_weight"].max(), r["other_weight"].max()))),
                     ha="center")
    axes[0].set(xticks=x, xticklabels=names, ylabel=say("mean attention weight from 'it'", "从“it”出发的平均注意力权重"),
                title=say(f"seed {seeds[0]}", f"种子 {seeds[0]}"))
    axes[0].legend(fontsize=8)
    for i, r in enumerate(runs):
        lay, h = r["head"]
        mask = torch.ones(N_LAYER, N_HEAD, dtype=torch.bool)
        mask[lay, h] = False
        axes[1].bar(i - 0.3, float(r["ref_weight"][lay, h]), 0.2, color="C0",
                    label=say("chosen: referent", "选中的头：指代对象") if i == 0 else None)
        axes[1].bar(i - 0.1, float(r["other_weight"][lay, h]), 0.2, color="C1",
                    label=say("chosen: other", "选中的头：另一个候选") if i == 0 else None)
        axes[1].bar(i + 0.1, float(r["ref_weight"][mask].mean()), 0.2, color="C0", alpha=0.4,
                    label=say("other heads: referent", "其他的头：指代对象") if i == 0 else None)
        axes[1].bar(i + 0.3, float(r["other_weight"][mask].mean()), 0.2, color="C1", alpha=0.4,
                    label=say("other heads: other", "其他的头：另一个候选") if i == 0 else None)
    axes[1].set(xticks=range(len(seeds)), xticklabels=[str(s) for s in seeds], xlabel=say("seed", "种子"),
                ylabel=say("mean attention weight from 'it'", "从“it”出发的平均注意力权重"),
                title=say("chosen head vs the others", "选中的头与其他的头"))

    axes[1].legend(fontsize=8)
    return fig
