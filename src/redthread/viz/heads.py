"""Which heads send a word to which: the source's example, "The animal didn't cross the street
because it was too tired", where 'it' should attend to 'animal' (and in "... too wide", to 'street').

Claim C13 of the essay. `rank_heads` reads one forward pass of an `Inspector` (`redthread.viz.inspector`):
for the source word (default: the first pronoun), the weight it puts on each target word, summed
over the target's tokens, in every layer and head, ranked; `heads_report` and `contrast_report`
write it as Markdown (`redthread attention --source/--targets/--contrast`, the coreference
experiment). Shape legend: L layers, H heads, S keys.
"""

from __future__ import annotations

import re

import torch

from redthread.errors import InvalidValue
from redthread.viz.inspector import Inspector, Tokens

PRONOUNS = ("it", "he", "she", "they", "him", "her", "them", "its")
STOPWORDS = {"the", "a", "an", "and", "or", "but", "because", "was", "were", "is", "are", "too", "very",
             "did", "didn", "not", "to", "of", "in", "on", "at", "for", "with", "that", "this", "so", "be"}


def word_spans(text: str) -> list[tuple[str, int, int]]:
    return [(m.group(0), m.start(), m.end()) for m in re.finditer(r"[A-Za-z]+", text)]


def token_positions(toks: Tokens, start: int, end: int) -> list[int]:
    """The tokens whose spans overlap the characters start .. end of the text."""
    return [i for i, (a, b) in enumerate(toks.spans) if b > a and a < end and b > start]


def rank_heads(
    inspector: Inspector, text: str, source: str | None = None, targets: list[str] | None = None, top: int = 5,
    target_text: str | None = None,
) -> dict:
    """How much weight the word `source` (default: the first pronoun) puts on each target word, per
    layer and head, ranked. A word split into several tokens: the query is its last token (in a
    causal model it has seen the whole word) and the weight on a target is summed over its tokens."""
    toks, maps, _ = inspector.attention(text, target_text)  # an encoder-decoder: its encoder's self-attention
    # every occurrence of every word, with the tokens it covers inside the context
    seen = [(w.lower(), token_positions(toks, a, b)) for w, a, b in word_spans(text)]
    seen = [(w, pos) for w, pos in seen if pos]
    lower = [w for w, _ in seen]
    if source is None:
        source = next((w for w in lower if w in PRONOUNS), None)
        if source is None:
            raise InvalidValue(f"no pronoun ({', '.join(PRONOUNS)}) in the text; name the source word")
    source = source.lower()
    if source not in lower:
        raise InvalidValue(f"the word {source!r} is not in the text (or fell outside the model's context)")
    s_at = len(lower) - 1 - lower[::-1].index(source)  # its last occurrence
    query = seen[s_at][1][-1]
    kind = maps.kinds[0]
    if targets is None:  # the content words; a causal model sees only those before the source word
        seen_by_source = lower[:s_at] if kind == "decoder" else lower
        targets = list(dict.fromkeys(w for w in seen_by_source if w != source and len(w) >= 3 and w not in STOPWORDS))
    att = maps.stacked(kind)[:, 0, :, query, :]  # (L, H, S): the source token's row in every head
    L, H, _ = att.shape
    result = {"text": text, "source": source, "query_token": toks.labels[query], "kind": kind,
              "layers": L, "heads": H, "targets": {}}
    for target in [t.lower() for t in targets]:
        where = [i for i, w in enumerate(lower) if w == target]
        if not where:
            raise InvalidValue(f"the word {target!r} is not in the text (or fell outside the model's context)")
        if kind == "decoder" and any(i < s_at for i in where):
            where = [i for i in where if i < s_at]  # a causal model sees only what came before
        keys = seen[min(where, key=lambda i: abs(i - s_at))][1]  # the occurrence nearest the source word
        weight = att[:, :, keys].sum(-1)  # (L, H)
        flat = weight.flatten().argsort(descending=True)[:top]
        result["targets"][target] = {
            "mean": float(weight.mean()),
            "top": [{"layer": int(i // H), "head": int(i % H), "weight": float(weight.flatten()[i])} for i in flat],
            "weights": weight.tolist(),
        }
    return result


def heads_report(ranking: dict) -> str:
    """The ranking as a short Markdown report."""
    lines = [
        f"# Where '{ranking['source']}' looks",
        "",
        f"> {ranking['text']}",
        "",
        (
            f"Weight from the token '{ranking['query_token']}' to each word (summed over the word's tokens), per layer "
            f"and head of the {ranking['kind']} self-attention ({ranking['layers']} layers x {ranking['heads']} heads). "
            "Layers and heads count from 0."
        ),
        "",
        "| word | mean over heads | top heads (layer.head: weight) |",
        "|---|---|---|",
    ]
    for word, r in ranking["targets"].items():
        tops = ", ".join(f"{t['layer']}.{t['head']}: {t['weight']:.3f}" for t in r["top"])
        lines.append(f"| {word} | {r['mean']:.3f} | {tops} |")
    return "\n".join(lines) + "\n"


def contrast_report(a: dict, b: dict, top: int = 5) -> str:
    """What moves between two rankings of the same source word over two texts (the source's
    'tired' / 'wide' pair): for each word both rank, the mean weight in each text and the heads
    whose weight changes most."""
    common = [w for w in a["targets"] if w in b["targets"]]
    lines = [
        f"## What moves: '{a['source']}' in the two texts",
        "",
        f"- A: {a['text']}",
        f"- B: {b['text']}",
        "",
        "| word | mean A | mean B | heads that move most (layer.head: A -> B) |",
        "|---|---|---|---|",
    ]
    for w in common:
        wa, wb = torch.tensor(a["targets"][w]["weights"]), torch.tensor(b["targets"][w]["weights"])  # (L, H)
        H = wa.size(1)
        moved = (wb - wa).abs().flatten().argsort(descending=True)[:top]
        heads = ", ".join(f"{int(i) // H}.{int(i) % H}: {wa.flatten()[i]:.3f} -> {wb.flatten()[i]:.3f}" for i in moved)
        lines.append(f"| {w} | {a['targets'][w]['mean']:.3f} | {b['targets'][w]['mean']:.3f} | {heads} |")
    if not common:
        lines.append("| (no word is ranked in both texts) | | | |")
    return "\n".join(lines) + "\n"
