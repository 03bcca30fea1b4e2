"""Claim C9 on real language, with ground truth: do the heads of a character Transformer trained on
Tang regulated verse specialise in the dependencies the verse form fixes?

Regulated verse (律诗, eight lines; 绝句, four) is written in couplets of two half-lines of 5 (五言) or
7 (七言) characters, "XXXXX，XXXXX。". Its form names two dependencies with known positions:

    对仗 (parallelism)  the character at position i of a couplet's second half-line answers the one at
                        position i of the first: the same part of speech, the same kind of meaning,
                        the opposite tone. It is required in the middle two couplets of a 律诗 (颔联
                        and 颈联), and is what the checks read; every couplet is reported beside it.
    rhyme (押韵)        each couplet's last character (the end of an even line) rhymes with the
                        previous couplet's last character.

Data: the Complete Tang Poems (`tang`, built by setup), the poems whose every verse line is one or
more whole couplets of one length, 5 or 7, with 2 (绝句) or 4 (律诗) couplets in all (`parse_poem`; a
line of the database may hold two couplets). The form is read from the shape alone: the tonal rules
are not checked, so some 古体 poems of the same shape are among them. Titles and poets are dropped;
each poem is written one couplet a line, poems a blank line apart. Per seed, a seeded shuffle of the
poems gives the training poems, the SELECTION poems (where a head is chosen) and the EVALUATION poems
(where every check is read): the head is never scored on the text that chose it.

Models: a character Transformer (MODEL: 2 layers x 4 heads, d_model 64, context 96, rotary
positions) trained with the speedrun's recipe (`redthread.train.recipe`: Muon, the rsqrt schedule)
on BUDGET["steps"] steps, one per seed; beside it, same seed, recipe and steps:
- the SHUFFLED control: the same model trained on the training poems with their second half-lines
  shuffled across poems (among couplets of the same length, each with its end mark), read on the
  evaluation poems shuffled the same way. The layout (half-lines, commas, line ends, every position)
  is kept; the dependency between the halves of a couplet (对仗) and between line ends (rhyme) is
  broken. This is the control that answers the claim: a head that attends from position i of the
  second half to position i of the first only because the layout is periodic (a head at a fixed
  offset, a local head whose decay reaches there) does so in this model as well; what the real
  model shows beyond it is learned from the dependency.
- the model with NO POSITIONS (pos="none") on the real poems: reported, not checked. It asks whether
  positions carry the head (C8's question, not C9's): a head can also find a parallel character by
  its content (the two are of one kind), and finding it that way would not contradict C9.
Also reported: the real model read on the shuffled evaluation poems (its chosen head at the same
positions): what is left there says how much of the head's choice is position, how much content.

The measures, for attention A (B, H, T, T) of each layer on windows of T characters that end at an
evaluation poem's last character (the poem and what comes before it in the stream, as in training),
per head: the mean over pairs (query q, key k) of A[q, k], where for each couplet

    对仗, aligned     q: position i of the second half, k: position i of the first (i = 0 .. n-1)
    对仗, predictive  q: the character before position i of the second half (the comma for i = 0),
                      k: position i of the first: the query that PREDICTS position i
    rhyme, aligned    q: the couplet's last character, k: the previous couplet's last character
    rhyme, predictive q: the character before the couplet's last, k: the previous couplet's last

A next-character model predicts the character after its query, so it may serve a dependency from
either place; the reading is chosen with the head (below), and both are reported. The uniform
level of a pair: 1 / (q + 1), attention spread evenly over the keys the causal mask leaves.

A head is chosen per measure on the selection poems: the (reading, layer, head) with the largest
mass; the checks read that head at that reading on the evaluation poems. The shuffled control and
the no-positions model choose theirs the same way on their own selection poems.

Protocol (experiments/replication.py): two independent seed sets (`run_seeds(seed)`,
`run_seeds(seed + 100)`), every seed a fresh split of the poems, shuffle, initialisation and
training; a t-interval over each set's seeds; nothing tuned (GRID is empty: the speedrun recipe was
tuned on its own runs and is used as it is, for every arm).

Time (one CPU thread): a full run trains 2 sets x 5 seeds x 3 models of BUDGET["steps"] steps. Timed
on a busy 2-core machine (two other runs beside it), a step took about 0.37 s with the corpus's 6,672
characters (the output layer is most of it), and measuring a seed's three models about a minute: some
16 minutes a seed, 2.6 hours in all; less on an idle core. --quick (a smoke test: 2 seeds, 25 steps,
the first 1,200 poems) runs in about a minute, on tang300 where the full corpus is not built.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import Tensor

from redthread.data.corpus import text_path
from redthread.data.dataset import TokenSplit
from redthread.data.lm import LMData
from redthread.data.tokenizers import CharTokenizer
from redthread.errors import InvalidValue, RedthreadError
from redthread.experiments.criteria import ABOVE, Criterion
from redthread.experiments.report import Report
from redthread.experiments.stats import EDGE, FAILS, HOLDS, INCONCLUSIVE, NOT_REPLICATED, SMOKE, run_seeds
from redthread.lang import both_languages, figure_fonts, figure_in, layer_head, say
from redthread.models.transformer import TransformerConfig, TransformerLM
from redthread.plotting import pyplot
from redthread.train.loop import TrainConfig, evaluate, train
from redthread.train.recipe import training_recipe
from redthread.viz.record import record_attention

plt = pyplot()

NAME, CLAIMS = "poetry-heads", "C9"

HYPOTHESIS = ("In a character Transformer trained on Tang regulated verse, heads specialise in the dependencies the "
              "form fixes: a head chosen on held-out poems attends from each character of a couplet's second half-line "
              "to its parallel in the first (对仗), another from each couplet's end to the previous couplet's end "
              "(rhyme), each well above attention spread evenly and above the same model trained on text whose "
              "half-lines were shuffled across poems (the layout kept, the dependency broken), and the two are "
              "different heads.")

_CHANCE = ("the uniform level, 1 / (keys the causal mask leaves), is what a head that does not single the key out "
           "gives; the claim needs the chosen head to put at least twice that on it, the least that counts as "
           "attending to that key rather than among the others")
_CONTROL = ("the same model trained on text with the same layout and the dependency broken (second half-lines shuffled "
            "across poems) gives what the layout alone makes a head put there (fixed-offset and local heads); the claim "
            "needs more than it by 5% of the attention mass (1), the least that counts (as in the heads, locality and "
            "real-models experiments)")
# The pre-registered criteria: each floor is the smallest effect size of interest, with its reason.
CRITERIA: dict[str, Criterion] = {
    "parallel_chance": Criterion(
        "C9", "对仗 (parallelism)",
        "the 对仗 head's mass on the parallel key (middle couplets of the 律诗, evaluation poems) over the uniform "
        "level at the same pairs, a ratio; head and reading chosen on the selection poems", 2.0, ABOVE, _CHANCE),
    "parallel_control": Criterion(
        "C9", "对仗 (parallelism)",
        "the 对仗 head's mass on the parallel key (middle couplets of the 律诗, evaluation poems) minus the shuffled "
        "control's (its own head and reading chosen on its selection poems, read on the shuffled evaluation poems)",
        0.05, ABOVE, _CONTROL, bounds=(-1.0, 1.0)),
    "rhyme_chance": Criterion(
        "C9", "rhyme",
        "the rhyme head's mass on the previous couplet's last character (every couplet after the first, evaluation "
        "poems) over the uniform level at the same pairs, a ratio; head and reading chosen on the selection poems",
        2.0, ABOVE, _CHANCE),
    "rhyme_control": Criterion(
        "C9", "rhyme",
        "the rhyme head's mass on the previous couplet's last character (evaluation poems) minus the shuffled "
        "control's (its own head and reading chosen on its selection poems, read on the shuffled evaluation poems)",
        0.05, ABOVE, _CONTROL, bounds=(-1.0, 1.0)),
    "dissociation": Criterion(
        "C9", "different heads",
        "the smaller of: the 对仗 head's 对仗 mass minus the rhyme head's (at the 对仗 reading), and the rhyme head's "
        "rhyme mass minus the 对仗 head's (at the rhyme reading); heads chosen on the selection poems, read on the "
        "evaluation poems", 0.05, ABOVE,
        "different dependencies in different heads: each role's head beats the other role's head at its own role by "
        "5% of the attention mass (as real-models' dissociation); one head chosen for both scores 0 and fails",
        bounds=(-1.0, 1.0)),
}
GRID: dict = {}  # nothing tuned: the speedrun recipe was tuned on its own runs (docs/benchmarks.md), used for every arm
BUDGET = {"steps": 800, "quick_steps": 25}  # optimizer steps per model (recipe batch 24 windows of 96 characters)
MODEL = dict(n_layer=2, n_head=4, d_model=64, block_size=96, dropout=0.0)  # TransformerConfig fields; pos per arm
ARMS = {"real": "rope", "shuffled": "rope", "none": "none"}  # arm -> positions; "shuffled" trains on shuffled poems
HELD_OUT = {"full": 2000, "quick": 150}  # poems in each of the selection and evaluation sets (at most 10% each)
QUICK_POEMS = 1200  # --quick: the first poems of the corpus's regulated verse, a smoke test's share
MEASURES = ("parallel", "parallel_all", "rhyme")  # parallel: middle couplets of the 律诗 (checked); _all: every couplet
READINGS = ("aligned", "predictive")
READINGS_ZH = {"aligned": "对齐读法", "predictive": "预测读法"}
BATCH = 128  # windows per forward pass when measuring
NLL_BATCHES = 20  # batches of the validation NLL reported per model


# ---- the verse form --------------------------------------------------------------------------------

HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f"  # CJK ideographs, the extensions included
_COUPLET = re.compile(rf"([{HAN}]+)，([{HAN}]+)([。？！])")
LENGTHS = (5, 7)  # 五言, 七言
COUPLETS = (2, 4)  # 绝句, 律诗
FORMS = {(5, 2): "五言绝句", (7, 2): "七言绝句", (5, 4): "五言律诗", (7, 4): "七言律诗"}


@dataclass(frozen=True)
class Couplet:
    first: str  # the half-line before the comma
    second: str  # the half-line after it
    end: str  # its end mark: 。 ？ or ！

    @property
    def text(self) -> str:
        return f"{self.first}，{self.second}{self.end}"


@dataclass(frozen=True)
class Poem:
    title: str
    poet: str
    couplets: tuple[Couplet, ...]

    @property
    def n(self) -> int:
        """Characters per half-line: 5 or 7."""
        return len(self.couplets[0].first)

    @property
    def form(self) -> str:
        return FORMS[self.n, len(self.couplets)]

    @property
    def text(self) -> str:
        """One couplet a line, as the model reads it."""
        return "\n".join(c.text for c in self.couplets)

    def line_start(self, k: int) -> int:
        """Where couplet k's line starts in `text`: each line is 2n + 2 characters and a newline."""
        return k * (2 * self.n + 3)


def parse_couplets(line: str) -> list[Couplet] | None:
    """A verse line as its couplets (one line may hold several), or None where the line is not made of whole
    couplets "X…，X…。" of two half-lines of one length, 5 or 7."""
    out, at = [], 0
    for m in _COUPLET.finditer(line):
        if m.start() != at:
            return None
        first, second, end = m.groups()
        if len(first) != len(second) or len(first) not in LENGTHS:
            return None
        out.append(Couplet(first, second, end))
        at = m.end()
    return out if out and at == len(line) else None


def parse_poem(block: str) -> Poem | None:
    """A poem of the corpus (title line, poet line, verse lines) as regulated verse by its form, or None: every verse
    line whole couplets, all half-lines of one length (5 or 7), 2 couplets (绝句) or 4 (律诗) in all."""
    lines = [line.strip() for line in block.strip("\n").split("\n")]
    if len(lines) < 3:
        return None
    couplets = []
    for line in lines[2:]:
        found = parse_couplets(line)
        if found is None:
            return None
        couplets += found
    if len(couplets) not in COUPLETS or len({len(c.first) for c in couplets}) != 1:
        return None
    return Poem(lines[0], lines[1], tuple(couplets))


def regulated_poems(text: str) -> list[Poem]:
    """The regulated verse of a corpus in the tang format (poems a blank line apart), in the corpus's order."""
    return [p for p in (parse_poem(b) for b in text.split("\n\n") if b.strip()) if p is not None]


def corpus_file(quick: bool) -> tuple[Path, str]:
    """The Complete Tang Poems (`tang`), or with --quick the shipped tang300 where it is not built (with a note); a full
    run without it is a one-line error that says how to build it."""
    try:
        return text_path("tang"), ""
    except RedthreadError as e:
        if not quick:
            raise RedthreadError(f"experiment {NAME} needs the Complete Tang Poems (tang): {e}") from None
        return text_path("tang300"), ("The Complete Tang Poems (tang) is not built here (bash setup.sh builds it): this "
                                      "quick run reads the shipped tang300 instead.")


def shuffle_second_halves(poems: list[Poem], rng: np.random.Generator) -> list[Poem]:
    """The poems with every couplet's second half-line (and its end mark) drawn, without replacement, from the couplets
    of the same length across all the poems: the layout kept, 对仗 and rhyme broken."""
    out = [list(p.couplets) for p in poems]
    for n in LENGTHS:
        slots = [(i, k) for i, p in enumerate(poems) if p.n == n for k in range(len(p.couplets))]
        halves = [(poems[i].couplets[k].second, poems[i].couplets[k].end) for i, k in slots]
        for (i, k), j in zip(slots, rng.permutation(len(slots))):
            out[i][k] = Couplet(poems[i].couplets[k].first, *halves[j])
    return [Poem(p.title, p.poet, tuple(c)) for p, c in zip(poems, out)]


def split_poems(poems: list[Poem], seed: int, held_out: int) -> tuple[list[Poem], list[Poem], list[Poem]]:
    """A seeded shuffle of the poems: (training, selection, evaluation), the held-out sets `held_out` poems each (at
    most a tenth of the poems)."""
    k = min(held_out, len(poems) // 10)
    if k < 2:
        raise InvalidValue(f"{len(poems)} regulated poems are too few to hold out selection and evaluation poems")
    order = np.random.default_rng(seed).permutation(len(poems))
    picked = [poems[i] for i in order]
    return picked[2 * k:], picked[:k], picked[k: 2 * k]


# ---- streams and windows ---------------------------------------------------------------------------

SEPARATOR = "\n\n"  # between poems, as in the corpus


def stream(poems: list[Poem], tokenizer: CharTokenizer) -> tuple[np.ndarray, list[int]]:
    """The poems' text, a blank line apart, as ids (N,), and where each poem ends (exclusive)."""
    ends, at = [], 0
    for p in poems:
        at += len(p.text)
        ends.append(at)
        at += len(SEPARATOR)
    return tokenizer.encode_array(SEPARATOR.join(p.text for p in poems)).astype(np.int64), ends


@dataclass
class Windows:
    """Windows of T characters, each ending at one poem's last character, with that poem: x (W, T), poems (W)."""

    x: Tensor
    poems: list[Poem]


def poem_windows(poems: list[Poem], tokenizer: CharTokenizer, T: int) -> Windows:
    """For each poem (after the first few, which have fewer than T characters before their end), the T characters of the
    stream that end at its last character: the poem and what precedes it, as a training window would hold it."""
    ids, ends = stream(poems, tokenizer)
    keep = [i for i, e in enumerate(ends) if e >= T and len(poems[i].text) <= T]
    x = torch.from_numpy(np.stack([ids[ends[i] - T: ends[i]] for i in keep])) if keep else torch.zeros(0, T, dtype=torch.long)
    return Windows(x, [poems[i] for i in keep])


def pairs(poem: Poem, measure: str, reading: str, offset: int) -> list[tuple[int, int]]:
    """The (query, key) positions of one measure and reading in a window where the poem starts at `offset`."""
    n, K = poem.n, len(poem.couplets)
    out = []
    if measure in ("parallel", "parallel_all"):
        couplets = range(K) if measure == "parallel_all" else ((1, 2) if K == 4 else ())  # 颔联 and 颈联 of a 律诗
        for k in couplets:
            a = offset + poem.line_start(k)  # the first half-line's first character
            b = a + n + 1  # the second's
            out += [(b + i - (reading == "predictive"), a + i) for i in range(n)]
    elif measure == "rhyme":
        for k in range(1, K):
            end, before = offset + poem.line_start(k) + 2 * n, offset + poem.line_start(k - 1) + 2 * n
            out.append((end - (reading == "predictive"), before))
    else:
        raise InvalidValue(f"unknown measure {measure!r}; measures: {', '.join(MEASURES)}")
    return out


def pair_index(windows: Windows, measure: str, reading: str) -> tuple[Tensor, Tensor, Tensor]:
    """Every pair of the windows: window index, query position, key position, each (P,)."""
    T = windows.x.size(1)
    rows = [(w, q, k) for w, p in enumerate(windows.poems) for q, k in pairs(p, measure, reading, T - len(p.text))]
    if not rows:
        return (torch.zeros(0, dtype=torch.long),) * 3
    return tuple(torch.tensor(c, dtype=torch.long) for c in zip(*rows))


# ---- what a head does at the pairs -------------------------------------------------------------------

def pair_masses(att: Tensor, w: Tensor, q: Tensor, k: Tensor) -> Tensor:
    """The weight each head puts on each pair's key: att (L, B, H, T, T) and pairs (P,) -> (P, L, H)."""
    return att[:, w, :, q, k]  # the advanced indices first: (P, L, H)


@torch.no_grad()
def attention_maps(model: TransformerLM, x: Tensor) -> Tensor:
    """Every layer's attention on windows x (B, T): (L, B, H, T, T). No logits are computed: only the blocks run."""
    with record_attention(model) as maps:
        h = model.embed(x)  # (B, T, C)
        for block in model.blocks:
            h = block(h)
    return maps.stacked("decoder")


def head_scores(maps, windows: Windows) -> dict:
    """Each head's mean weight on its pairs' keys per (measure, reading): scores (L, H), the uniform level (the mean of
    1 / (q + 1) over the same pairs) and the count of pairs. `maps(x) -> (L, B, H, T, T)` gives the attention of a batch
    of windows."""
    index = {(m, r): pair_index(windows, m, r) for m in MEASURES for r in READINGS}
    sums: dict = {}
    for b in range(0, len(windows.x), BATCH):
        att = maps(windows.x[b: b + BATCH])  # (L, B, H, T, T)
        for key, (w, q, k) in index.items():
            inside = (w >= b) & (w < b + BATCH)
            mass = pair_masses(att, w[inside] - b, q[inside], k[inside]).sum(0)  # (L, H)
            sums[key] = sums.get(key, 0) + mass
    out = {}
    for (m, r), (w, q, k) in index.items():
        if len(w) == 0:
            raise InvalidValue(f"no pairs for {m} ({r}) among {len(windows.poems)} poems: too few poems of that form")
        out[m, r] = {"scores": sums[m, r] / len(w), "uniform": float((1.0 / (q.double() + 1)).mean()), "pairs": len(w)}
    return out


def choose(select: dict, measure: str) -> tuple[str, tuple[int, int]]:
    """The (reading, (layer, head)) with the largest mass on the measure's keys, on the selection poems."""
    best = max(READINGS, key=lambda r: float(select[measure, r]["scores"].max()))
    scores = select[measure, best]["scores"]
    i = int(scores.argmax())
    return best, (i // scores.size(1), i % scores.size(1))


def read(scores: dict, measure: str, reading: str, head: tuple[int, int]) -> float:
    return float(scores[measure, reading]["scores"][head])


def role_values(select: dict, score: dict) -> dict:
    """Each role's head chosen on the selection scores and read on the scoring ones, with the uniform level there, and
    the dissociation of the 对仗 and rhyme heads."""
    out = {}
    for m in MEASURES:
        reading, head = choose(select, m)
        out[m] = {"reading": reading, "head": head, "mass": read(score, m, reading, head),
                  "uniform": score[m, reading]["uniform"], "pairs": score[m, reading]["pairs"]}
        out[m]["ratio"] = out[m]["mass"] / out[m]["uniform"]
    p, r = out["parallel"], out["rhyme"]
    out["dissociation"] = min(p["mass"] - read(score, "parallel", p["reading"], r["head"]),
                              r["mass"] - read(score, "rhyme", r["reading"], p["head"]))
    return out


def check_values(real: dict, shuffled: dict) -> dict[str, float]:
    """One seed's value of every check, from the real model's roles and the shuffled control's."""
    return {"parallel_chance": real["parallel"]["ratio"],
            "parallel_control": real["parallel"]["mass"] - shuffled["parallel"]["mass"],
            "rhyme_chance": real["rhyme"]["ratio"],
            "rhyme_control": real["rhyme"]["mass"] - shuffled["rhyme"]["mass"],
            "dissociation": real["dissociation"]}


# ---- one seed ----------------------------------------------------------------------------------------

def train_model(train_ids: np.ndarray, val_ids: np.ndarray, vocab: int, pos: str, seed: int,
                steps: int) -> tuple[TransformerLM, LMData, dict]:
    """The character model of MODEL with positions `pos`, trained with the speedrun's recipe for `steps` steps."""
    T = MODEL["block_size"]
    data = LMData(TokenSplit(train_ids, len(train_ids), "train"), TokenSplit(val_ids, len(val_ids), "validation"), T)
    torch.manual_seed(seed)
    model = TransformerLM(TransformerConfig(vocab_size=vocab, pos=pos, **MODEL))
    recipe = {**training_recipe(), "seed": seed, "device": "cpu", "max_iters": steps, "eval_interval": 10**9,
              "eval_batches": 1, "log_interval": max(1, steps // 10),
              "warmup_iters": max(1, round(steps * training_recipe()["warmup_frac"]))}
    result = train(model, data, TrainConfig(**recipe), progress=False)
    return model.eval(), data, {"steps": result.step, "seconds": result.elapsed}


def seed_run(poems: list[Poem], tokenizer: CharTokenizer, seed: int, steps: int, held_out: int) -> dict:
    """One seed: split and shuffle the poems, train the three arms, choose each arm's heads on its selection poems and
    read them on its evaluation poems."""
    T, vocab = MODEL["block_size"], tokenizer.vocab_size
    train_poems, select_poems, eval_poems = split_poems(poems, seed, held_out)
    rng = np.random.default_rng(seed + 1)  # the shuffle's own stream: the split above does not move it
    texts = {"real": (train_poems, select_poems, eval_poems),
             "shuffled": tuple(shuffle_second_halves(ps, rng) for ps in (train_poems, select_poems, eval_poems))}
    out = {"split": {"train": len(train_poems), "select": len(select_poems), "eval": len(eval_poems)},
           "forms": {f: sum(p.form == f for p in eval_poems) for f in FORMS.values()}}
    windows = {kind: (poem_windows(ps[1], tokenizer, T), poem_windows(ps[2], tokenizer, T)) for kind, ps in texts.items()}
    for arm, pos in ARMS.items():
        kind = "shuffled" if arm == "shuffled" else "real"
        train_ids, _ = stream(texts[kind][0], tokenizer)
        val_ids, _ = stream(texts[kind][2], tokenizer)
        model, data, trained = train_model(train_ids, val_ids, vocab, pos, seed, steps)
        maps = lambda x, model=model: attention_maps(model, x)  # noqa: E731
        select, score = head_scores(maps, windows[kind][0]), head_scores(maps, windows[kind][1])
        out[arm] = {"train": trained, "roles": role_values(select, score),
                    "scores": {f"{m}/{r}": score[m, r]["scores"] for m in MEASURES for r in READINGS},
                    "nll": evaluate(model, data, "val", 32, NLL_BATCHES)["nll"]}
        if arm == "real":  # the real model's chosen heads at the same positions of the shuffled evaluation poems
            on_shuffled = head_scores(maps, windows["shuffled"][1])
            out["real_on_shuffled"] = {m: read(on_shuffled, m, out["real"]["roles"][m]["reading"],
                                               out["real"]["roles"][m]["head"]) for m in MEASURES}
            out["example"] = example_maps(model, windows["real"][1], out["real"]["roles"])
    out["values"] = check_values(out["real"]["roles"], out["shuffled"]["roles"])
    return out


def example_maps(model: TransformerLM, windows: Windows, roles: dict) -> dict:
    """The chosen 对仗 and rhyme heads' attention over the first 律诗 among the evaluation windows (the poem's own rows
    and columns), for the figure."""
    i = next((j for j, p in enumerate(windows.poems) if len(p.couplets) == 4), 0)
    poem = windows.poems[i]
    att = attention_maps(model, windows.x[i: i + 1])[:, 0]  # (L, H, T, T)
    T, L = windows.x.size(1), len(poem.text)
    (lp, hp), (lr, hr) = roles["parallel"]["head"], roles["rhyme"]["head"]
    return {"text": poem.text, "form": poem.form, "parallel": att[lp, hp, T - L:, T - L:],
            "rhyme": att[lr, hr, T - L:, T - L:],
            "pairs": {m: pairs(poem, m, roles[m]["reading"], 0) for m in ("parallel", "rhyme")}}


# ---- the run -----------------------------------------------------------------------------------------

def load_poems(quick: bool) -> tuple[list[Poem], str, str]:
    """The regulated verse of the corpus (with --quick the first QUICK_POEMS), the corpus's name, and a note."""
    path, note = corpus_file(quick)
    poems = regulated_poems(path.read_text(encoding="utf-8"))
    if quick:
        poems = poems[:QUICK_POEMS]
    return poems, path.stem, note


def run(quick: bool = False, seed: int = 0, progress=None) -> Report:
    seeds = run_seeds(seed, quick)
    steps = BUDGET["quick_steps" if quick else "steps"]
    held_out = HELD_OUT["quick" if quick else "full"]
    poems, corpus, note = load_poems(quick)
    alphabet = sorted({c for p in poems for c in p.text} | set(SEPARATOR))
    tokenizer = CharTokenizer("".join(alphabet))
    report = Report(NAME, CLAIMS, quick=quick, setup=setup_text(poems, corpus, tokenizer, seeds, steps, held_out, quick),
                    criterion=criterion_text())
    if note:
        report.note(note)
    runs = []
    for i, s in enumerate(seeds):
        runs.append(seed_run(poems, tokenizer, s, steps, held_out))
        if progress is not None:
            progress.update((i + 1) / len(seeds), f"seed {s}: real, shuffled and no-positions models")
    decide(report, [r["values"] for r in runs], seeds)
    describe(report, runs, seeds, poems)
    return report


def decide(report: Report, values: list[dict[str, float]], seeds: list[int]) -> None:
    """Every check over the seeds' values (`check_values`)."""
    for name in CRITERIA:
        report.check(name, [v[name] for v in values], seeds)


def criterion_text() -> str:
    c = CRITERIA
    return (HYPOTHESIS + " Each check over the seeds of a set, its 95% interval above its floor, fixed before any run: "
            f"(1) 对仗: the chosen head's mass on the parallel key over the uniform level > {c['parallel_chance'].floor:g}, "
            f"and minus the shuffled control's chosen head > {c['parallel_control'].floor:g}; (2) rhyme: the same two, "
            f"> {c['rhyme_chance'].floor:g} and > {c['rhyme_control'].floor:g}; (3) different heads: each role's head "
            f"beats the other's at its own role by > {c['dissociation'].floor:g}. Heads are chosen on the selection "
            "poems and read on the evaluation poems; the no-positions model and the real model read on shuffled text are "
            "reported, not checked.")


def setup_text(poems: list[Poem], corpus: str, tokenizer: CharTokenizer, seeds: list[int], steps: int,
               held_out: int, quick: bool) -> str:
    counts = ", ".join(f"{f} {sum(p.form == f for p in poems):,}" for f in FORMS.values())
    recipe = training_recipe()
    k = min(held_out, len(poems) // 10)
    return (
        f"Corpus: {corpus}, its regulated verse by form ({len(poems):,} poems{' (quick: the first ones only)' if quick else ''}: "
        f"{counts}): every verse line whole couplets of two half-lines of 5 or 7 characters, 2 or 4 couplets; tonal rules "
        f"not checked. Titles and poets dropped; one couplet a line, poems a blank line apart; {tokenizer.vocab_size:,} "
        f"characters. Per seed ({', '.join(map(str, seeds))}): a seeded shuffle of the poems, {k:,} selection poems, {k:,} "
        f"evaluation poems, the rest for training. Three models per seed, same seed, recipe and steps: a character "
        f"Transformer ({MODEL['n_layer']} layers x {MODEL['n_head']} heads, d_model {MODEL['d_model']}, context "
        f"{MODEL['block_size']}, rotary positions) on the training poems; the same on the training poems with their second "
        "half-lines shuffled across poems (among couplets of one length, each with its end mark: the layout kept, 对仗 and "
        "rhyme broken), read on the evaluation poems shuffled the same way: the control; and the same with no positions "
        f"on the real poems (reported). Training: the speedrun's recipe ({recipe['optimizer']} at lr {recipe['lr']:g}, "
        f"batch {recipe['batch_size']}, schedule {recipe['schedule']} with a cool-down over the last "
        f"{recipe['cooldown_frac']:.0%}), {steps} steps{' (quick run: a smoke test)' if quick else ''}; nothing tuned. "
        f"Measured on windows of {MODEL['block_size']} characters that end at an evaluation poem's last character. "
        "对仗: from position i of a couplet's second half-line to position i of the first (aligned), or from the character "
        "before it (predictive: the query that predicts position i), over the middle two couplets of the 律诗 (where the form "
        "requires 对仗; every couplet reported beside it). Rhyme: from a couplet's last character (aligned), or the one "
        "before it (predictive), to the previous couplet's last character. Uniform level: 1 / (q + 1) at each pair. Per "
        "role the (reading, layer, head) with the largest mass on the selection poems is read on the evaluation poems."
    )


def head_label(head) -> str:
    return f"L{head[0]}.H{head[1]}"


def describe(report: Report, runs: list[dict], seeds: list[int], poems: list[Poem]) -> None:
    report.number("seeds", seeds)
    report.number("budget", BUDGET)
    report.number("model", MODEL)
    report.number("poems", {f: sum(p.form == f for p in poems) for f in FORMS.values()})
    for key in CRITERIA:
        report.number(key, [r["values"][key] for r in runs])
    report.number("runs", [{k: v for k, v in r.items() if k not in ("values", "example")} for r in runs])
    rows = []
    for s, r in zip(seeds, runs):
        for m, label in (("parallel", "对仗"), ("rhyme", "rhyme")):
            real, shuf, none = (r[arm]["roles"][m] for arm in ARMS)
            rows.append([s, label, f"{head_label(real['head'])} {real['reading']}", real["mass"], real["uniform"],
                         real["ratio"], f"{head_label(shuf['head'])} {shuf['reading']}", shuf["mass"],
                         r["real_on_shuffled"][m], f"{head_label(none['head'])} {none['reading']}", none["mass"]])
    report.table(["seed", "role", "head, reading", "mass", "uniform", "over uniform", "shuffled control: head",
                  "its mass", "real head on shuffled text", "no positions: head", "its mass"], rows,
                 title="Per seed and role: the head chosen on the selection poems, read on the evaluation poems")
    report.table(["seed", "dissociation", "对仗, every couplet", "NLL real", "NLL shuffled", "NLL no positions",
                  "steps", "seconds (three models)", "evaluation poems"],
                 [[s, r["real"]["roles"]["dissociation"], r["real"]["roles"]["parallel_all"]["mass"], r["real"]["nll"],
                   r["shuffled"]["nll"], r["none"]["nll"], r["real"]["train"]["steps"],
                   sum(r[a]["train"]["seconds"] for a in ARMS), r["split"]["eval"]] for s, r in zip(seeds, runs)],
                 title="Per seed: the two roles' heads apart, 对仗 over every couplet, and each model's validation NLL "
                       "(nats/char, on its own evaluation text)")
    report.note("The no-positions model and the real model read on shuffled text are reported, not checked: the first "
                "asks whether positions carry a head (C8), the second how much of the chosen head's weight stays at the "
                "same positions once the content no longer pairs (position, not dependency). Heads are written "
                "L<layer>.H<head>, from 0.")
    report.figure("head_masses", lambda: plot_masses(runs),
                  "Each head's mass on the 对仗 key (middle couplets of the 律诗) and on the rhyme key, evaluation poems, "
                  "mean over seeds, at both readings: the real model, the shuffled control, the model with no positions; "
                  "dashed: the uniform level, dotted: twice it.",
                  "每个头落在对仗的键（律诗的中间两联）和押韵的键上的平均注意力权重，取自评估用的诗，对种子取平均，"
                  "两种读法各一行，比较在真实的诗上训练的模型、打乱的对照和无位置编码的模型；虚线是均匀分布的水平，"
                  "点线是它的两倍。")
    ex = runs[0]["example"]
    report.figure("maps", lambda: plot_example(ex, runs[0]["real"]["roles"]),
                  f"Seed {seeds[0]}: the chosen 对仗 and rhyme heads' attention over one evaluation poem ({ex['form']}), "
                  "the poem's rows and columns (queries down, keys across).",
                  f"种子 {seeds[0]}：选出的对仗头和押韵头在一首评估用的诗（{ex['form']}）上的注意力权重，"
                  "行和列都是这首诗的字（查询从上往下，键从左往右）。")


def plot_masses(runs: list[dict]) -> plt.Figure:
    arms = {"real": say("real poems", "真实的诗"), "shuffled": say("shuffled control", "打乱的对照"),
            "none": say("no positions", "无位置编码")}
    with figure_fonts(["对仗"]):  # the English titles name 对仗 too: a CJK font in both languages
        fig, axes = plt.subplots(2, 2, figsize=(11, 6.5), layout="constrained", squeeze=False)
        for row, reading in enumerate(READINGS):
            shown = (("parallel", say("对仗 (parallel key)", "对仗（平行位置的键）")),
                     ("rhyme", say("rhyme (previous couplet's end)", "押韵（上一联的末字）")))
            for col, (m, name) in enumerate(shown):
                ax = axes[row, col]
                for j, (arm, label) in enumerate(arms.items()):
                    s = torch.stack([r[arm]["scores"][f"{m}/{reading}"] for r in runs]).mean(0).flatten()  # (L H,)
                    ax.bar(np.arange(len(s)) + (j - 1) * 0.27, s.numpy(), width=0.27, label=label, color=f"C{j}")
                uniform = float(np.mean([r["real"]["roles"][m]["uniform"] for r in runs]))
                ax.axhline(uniform, color="grey", ls="--", lw=1, label=say("uniform", "均匀分布"))
                ax.axhline(2 * uniform, color="grey", ls=":", lw=1, label=say("twice uniform", "均匀分布的两倍"))
                L, H = MODEL["n_layer"], MODEL["n_head"]
                ax.set_xticks(range(L * H), [say(f"layer {i // H}\nhead {i % H}", f"层 {i // H}·头 {i % H}")
                                             for i in range(L * H)], fontsize=7)
                reading_name = say(reading, READINGS_ZH[reading])
                ax.set(ylabel=say("mean attention weight", "平均注意力权重"),
                       title=say(f"{name}, {reading_name}", f"{name}，{reading_name}"))
                ax.legend(fontsize=7)
    return fig


def plot_example(ex: dict, roles: dict) -> plt.Figure:
    chars = [c if c != "\n" else "↵" for c in ex["text"]]
    with figure_fonts(chars):  # the poem's characters, in both languages
        fig, axes = plt.subplots(1, 2, figsize=(12, 6), layout="constrained")
        for ax, m, name in ((axes[0], "parallel", say("对仗 head", "对仗的头")),
                            (axes[1], "rhyme", say("rhyme head", "押韵的头"))):
            head = roles[m]["head"]
            image = ax.imshow(ex[m], cmap="viridis", vmin=0)
            q, k = zip(*ex["pairs"][m])  # the pairs the role is read at, at the head's chosen reading
            ax.scatter(k, q, s=30, marker="s", facecolors="none", edgecolors="r", linewidths=0.8,
                       label=say(f"the pairs read ({roles[m]['reading']})",
                                 f"读取的位置对（{READINGS_ZH[roles[m]['reading']]}）"))
            ax.legend(fontsize=7, loc="upper right")
            ax.set_xticks(range(len(chars)), chars, fontsize=5)
            ax.set_yticks(range(len(chars)), chars, fontsize=5)
            ax.set(title=say(f"{name}: {layer_head(*head)}", f"{name}：{layer_head(*head)}"), xlabel=say("key", "键"),
                   ylabel=say("query", "查询"))
            fig.colorbar(image, ax=ax, shrink=0.7, label=say("attention weight", "注意力权重"))
    return fig


# ---- the conclusion, in both languages ---------------------------------------------------------------

VERDICT_ZH = {HOLDS: "成立", FAILS: "不成立", INCONCLUSIVE: "无定论", NOT_REPLICATED: "无定论（不能复现）",
              EDGE: "无定论（调参选在网格边上）", SMOKE: "冒烟测试，没有结论"}
PARTS_ZH = {"对仗 (parallelism)": "对仗", "rhyme": "押韵", "different heads": "不同的头"}


def conclude(report: Report) -> None:
    """Called by the runner on the final report (a full run: both seed sets merged): the conclusion, in English and in
    Chinese, first among the results."""
    parts, verdict = report.parts, report.verdict
    en = "; ".join(f"{p}: {v}" for p, v in parts.items())
    zh = "；".join(f"{PARTS_ZH.get(p, p)}：{VERDICT_ZH.get(v, v)}" for p, v in parts.items())
    said = "carries no verdict (a smoke test)" if report.quick else verdict
    text = (f"**Conclusion.** C9 on real language, with the verse form's ground truth: the claim {said} ({en}). "
            "A part holds only where its head, chosen on held-out poems, beats both attention spread evenly and the same "
            "model trained on text with the dependency broken, in both seed sets.\n\n"
            f"**结论。** 论点 C9（多头注意力让不同的头学到不同类型的依存关系），在真实语言上、以格律诗的形式为标准答案检验："
            f"{VERDICT_ZH.get(verdict, verdict)}（{zh}）。只有在两个种子组里，在留出的诗上选出的头都既高于均匀分布、又高于"
            "在依存关系被打乱的文本上训练的同一模型时，一个部分才算成立。")
    report.sections.insert(0, text)


# ---- the example map in Chinese, for a run already made -------------------------------------------------------

def maps_zh(folder: Path) -> Path:
    """Draw a full run's example map (maps.png: the first seed's chosen heads over one poem) again in Chinese beside it,
    maps.zh.png. The report does not keep the first seed's model, so it is trained again (one model, a few minutes of one
    thread): training is deterministic on the CPU, so it is the run's own model, checked against the report's tables
    (its chosen heads, readings and masses, and its validation NLL) before anything is drawn."""
    report = json.loads((folder / "report.json").read_text(encoding="utf-8"))
    if report.get("quick"):
        raise RedthreadError(f"{folder} holds a --quick run: its figures are a smoke test's")
    numbers = report["numbers"]
    seed, tables = numbers["seeds"][0], list(numbers["tables"].values())
    recorded = {row[1]: row for row in tables[0]["rows"] if row[0] == seed}  # role -> its row for this seed
    recorded_nll = next(row[3] for row in tables[1]["rows"] if row[0] == seed)
    poems, _, _ = load_poems(False)
    tokenizer = CharTokenizer("".join(sorted({c for p in poems for c in p.text} | set(SEPARATOR))))
    train_poems, select_poems, eval_poems = split_poems(poems, seed, HELD_OUT["full"])
    T = MODEL["block_size"]
    select, evaluation = poem_windows(select_poems, tokenizer, T), poem_windows(eval_poems, tokenizer, T)
    model, data, _ = train_model(stream(train_poems, tokenizer)[0], stream(eval_poems, tokenizer)[0],
                                 tokenizer.vocab_size, ARMS["real"], seed, numbers["budget"]["steps"])
    maps = lambda x: attention_maps(model, x)  # noqa: E731
    roles = role_values(head_scores(maps, select), head_scores(maps, evaluation))
    nll = evaluate(model, data, "val", 32, NLL_BATCHES)["nll"]
    for m, label in (("parallel", "对仗"), ("rhyme", "rhyme")):
        now = (f"{head_label(roles[m]['head'])} {roles[m]['reading']}", roles[m]["mass"])
        if now[0] != recorded[label][2] or abs(now[1] - recorded[label][3]) > 1e-6 or abs(nll - recorded_nll) > 1e-6:
            raise RedthreadError(f"seed {seed}'s model trained again is not the run's ({label}: {now[0]} {now[1]:.6f}, NLL "
                                 f"{nll:.6f}; the report: {recorded[label][2]} {recorded[label][3]:.6f}, {recorded_nll:.6f})")
    target = folder / "maps.zh.png"
    ex = example_maps(model, evaluation, roles)
    with both_languages():  # drawn as the report draws it, then saved in its Chinese side
        fig = plot_example(ex, roles)
    try:
        with figure_in(fig, "zh"):
            fig.savefig(target, format="png", dpi=110)
    finally:
        plt.close(fig)
    return target


if __name__ == "__main__":  # python -m redthread.experiments.poetry_heads DIR: a full run's example map, in Chinese
    import sys

    print(maps_zh(Path(sys.argv[1])))
