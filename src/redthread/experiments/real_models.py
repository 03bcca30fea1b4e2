"""The real-model tier: claims C8, C9, C11 and C12 measured on models that read real text, not
on toy chains. Three tiers of models:

(a) character Transformers trained on Shakespeare's plays (the shipped corpus, `load_splits(None)`)
    with the speedrun's recipe (`redthread.train.recipe`, as the demo trains it: 2 layers, 4 heads, d_model 64, context
    128, rotary positions, Muon, the rsqrt schedule on the clock; docs/benchmarks.md), one model per
    verdict seed, each trained for BUDGET["minutes"] of one CPU thread; beside each, the same
    architecture with no positions (pos="none"), same seed, recipe and budget: the control for C8;
(b) the pretrained MiniLM encoder (all-MiniLM-L6-v2, 6 layers x 12 heads, bidirectional), read as
    the coreference experiment reads it, on the texts of the Winograd pairs
    (`experiments/winograd.py`); skipped, with a note, where it is not installed;
(c) a larger character Transformer on the same plays (LARGE_MODEL: 4 layers, 4 heads, d_model 128,
    context 128, rotary positions; about 8 times (a)'s parameters), the speedrun's recipe as it is
    (Muon at its peak rate: with `match_rms_adamw` its step has an AdamW step's size at any width),
    trained for BUDGET["large_minutes"] of one CPU thread on the clock: ONE model per seed set (the
    set's first seed), with no trained control (a no-positions twin would double the cost). On a
    busy shared machine it took 1.3-1.4 steps a second on one thread, so 30 minutes give some 2,500
    steps or more (about 8 M characters, two passes over the training plays). The rate was checked
    once by hand, not tuned: 400 steps on the step schedule, seed 0, trained stably at the recipe's
    0.05 (validation 1.71 nats/char) and a little better at 0.02 (1.67); what suits 30 minutes is
    not known, so the recipe is kept as it is.

Validation windows: 2 x N windows of 128 characters spread evenly over the validation plays, never
overlapping; the even ones are the SELECTION windows (a head is chosen there, the temperature is
fitted there), the odd ones the SCORING windows (every check is read there). The same windows for
every seed: what varies is the model.

The measurements, for a trained model with layer l's attention A_l (B, H, T, T):

    C8   offset profile(o) = mean over windows, heads and queries i >= T/2 of A[i, i - o]
         (`locality.offset_profile`); near mass = the profile's sum over o < 3 (the character
         itself and the two before it), mean over layers; the check: rotary minus no positions.
         MiniLM: the mass on keys within 2 places (|i - j| <= 2) of each word piece, all heads,
         minus the uniform level (the same count of keys over the sentence's length).
    C9   two head roles, each a mean weight on one key per query:
             previous character   A[i, i - 1]
             word start           A[i, j], j the last space or newline before the query, for a query
                                  inside a word at least 2 characters past it (so neither the
                                  previous character nor the query itself)
         the best head for a role is chosen on the selection windows and read on the scoring ones:
         its score minus the median head's; and a dissociation: each role's chosen head beats the
         other role's chosen head at its own role (the smaller of the two margins; 0 when one head
         is chosen for both). A margin, not a count of seeds whose two heads differ: two heads
         drawn at random from 8 differ 7 times in 8, so "different heads" alone shows little.
         MiniLM: previous-token and next-token heads, A[i, i - 1] and A[i, i + 1] over the word
         pieces whose two neighbours are word pieces; the head is chosen on the even pairs and
         read on the odd ones, and the other way round (as coreference.py).
    C11  token identity of the residual stream (`depth.token_identity`): the share of the
         variance of the vectors explained by the current character, after the embedding and
         after each block; the check reads the stream leaving the last block. (With rotary
         positions nothing is added to the embedding, so there it is exactly 1; each block adds
         context, and the question is how much of the character is left at the top.)
    C12  calibration (`experiments/calibration.py`): the top-1 ECE on the scoring positions minus a
         calibrated control's (the same predictions, labels drawn from them); reported beside it:
         the NLL and the temperature fitted on the selection positions.

    (c) reads the same quantities, with two differences: C8's reference is the uniform causal level
    (`locality.uniform_near_mass`: each query's weight spread evenly over itself and the keys before
    it), as MiniLM's is an even spread; and every check is read on the scoring windows only, per
    group of them (below).

The unit of variation: the seed for tier (a) (a t-interval over the seeds of `run_seeds`); the
pair of texts for MiniLM, a fixed model with nothing random in it, so both seed sets of a full run
measure the same numbers; for tier (c), one model per set, a group of scoring windows (GROUPS
groups of consecutive scoring windows, each a stretch of the validation plays; the heads are
still chosen once, on every selection window): that interval is over text, not over training
runs, and the two seed sets of a full run are its two independent trainings.

Verdict per tier: each check's part names its tier, so the report's verdict line gives every
tier's verdict per claim; the first table of the results sets the tiers' verdicts side by side,
claim by claim, and says where they disagree (`conclude`, which the runner calls on the final
report: in a full run, from the verdicts over both seed sets).

Nothing is tuned (GRID is empty): the recipe was tuned on its own runs (docs/benchmarks.md, the
speedrun) and is used as it is for both arms and for (c); neither the control with no positions
nor the larger model is tuned for.
The budget is the recipe's own kind, wall-clock seconds of training on one thread
(TrainConfig.max_time, the schedule on the clock): a busy machine trains fewer steps in it, so
every model's steps are recorded.

Time: a full single-set run is about 5 seeds x 2 models x 3 minutes = 30 minutes of training for
(a), 30 minutes for (c)'s one model, and two to three minutes of measurement; a full run (two seed
sets) about 2 x 62 = 125 minutes (2 x 30 minutes more than before tier (c)). The quick run (a
smoke test: 20 steps per model, 32 windows) takes about a minute on one thread.
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from redthread.data.dataset import TokenSplit
from redthread.data.lm import LMData, load_splits
from redthread.errors import InvalidValue, RedthreadError
from redthread.experiments.calibration import CONTROL_DRAWS, N_BINS, calibration_gap, fit_temperature
from redthread.experiments.coreference import halves
from redthread.experiments.criteria import ABOVE, BELOW, Criterion
from redthread.experiments.depth import token_identity
from redthread.experiments.locality import offset_profile, uniform_near_mass
from redthread.experiments.report import Report
from redthread.experiments.stats import SMOKE, combine, estimate, run_seeds
from redthread.experiments.winograd import PAIRS
from redthread.interop.huggingface import resolve_pretrained
from redthread.lang import say
from redthread.models.transformer import TransformerConfig, TransformerLM, softcap
from redthread.plotting import pyplot
from redthread.train.loop import TrainConfig, train
from redthread.train.recipe import MODEL as RECIPE_MODEL
from redthread.train.recipe import training_recipe
from redthread.viz.inspector import load_inspector
from redthread.viz.record import record_attention

plt = pyplot()

NAME, CLAIMS = "real-models", "C8, C9, C11, C12"

HYPOTHESIS = ("On real models the architecture claims hold as they do at toy scale: a character Transformer trained on "
              "Shakespeare's plays with rotary positions puts more attention on nearby characters than the same model "
              "with no positions, and a pretrained encoder (MiniLM) more on nearby word pieces than an even spread; "
              "heads take distinct roles (previous character / word start; previous / next token) that a head chosen "
              "on held-out text keeps; the residual stream keeps the current character's identity to the last layer; "
              "and the trained model's next-character probabilities are calibrated to within one point. A larger "
              "character model trained ten times longer shows the same, its locality measured against an even "
              "spread over the keys the causal mask allows.")

_MASS = "5% of the attention mass (1), the least that counts (as in the locality and heads experiments)"
_HELD = ("the head is chosen on other text than it is scored on, so the choice cannot flatter it; the median head is "
         "what a head without the role gives; the claim needs the chosen head above it by " + _MASS)
_APART = ("different roles in different heads: each role's chosen head beats the other role's chosen head at its own "
          "role by " + _MASS + "; one head chosen for both roles scores 0 and fails")
_GROUP = "; per group of scoring windows (tier (c): one model, the unit is a stretch of text)"
# The pre-registered criteria: each floor is the smallest effect size of interest, with its reason.
CRITERIA: dict[str, Criterion] = {
    "near_plays": Criterion(
        "C8", "C8 locality (Shakespeare model)",
        "mean attention mass on the 3 nearest keys (the character itself and the two before it), queries in the "
        "window's second half, mean over layers and heads: rotary positions minus no positions (same seed, recipe and "
        "budget)", 0.05, ABOVE,
        "the control is the same model with no positions: a causal model can still find order from the mask, and its "
        "near mass is what that gives; the claim needs more than it by " + _MASS, bounds=(-1.0, 1.0)),
    "near_minilm": Criterion(
        "C8", "C8 locality (MiniLM)",
        "mean attention mass on the keys within 2 places of each word piece (|offset| <= 2), all layers and heads, "
        "minus the uniform level (the same number of keys over the sentence's length); mean over a pair's two texts",
        0.05, ABOVE,
        "a pretrained model has no trained control: the reference is attention spread evenly over the sentence, what an "
        "order-blind reading gives, and the claim needs more mass nearby than that by " + _MASS, bounds=(-1.0, 1.0)),
    "previous_plays": Criterion(
        "C9", "C9 head roles (Shakespeare model)",
        "weight on the previous character's key, the head chosen for it on the selection windows minus the median "
        "head, read on the scoring windows", 0.05, ABOVE, _HELD, bounds=(-1.0, 1.0)),
    "word_start_plays": Criterion(
        "C9", "C9 head roles (Shakespeare model)",
        "weight on the last space or newline before the current word (at least 2 characters back), the head chosen "
        "for it on the selection windows minus the median head, read on the scoring windows", 0.05, ABOVE, _HELD,
        bounds=(-1.0, 1.0)),
    "dissociation_plays": Criterion(
        "C9", "C9 head roles (Shakespeare model)",
        "the smaller of: the previous-character head's score minus the word-start head's at the previous-character "
        "role, and the word-start head's minus the previous-character head's at the word-start role; heads chosen on "
        "the selection windows, read on the scoring windows", 0.05, ABOVE, _APART, bounds=(-1.0, 1.0)),
    "previous_minilm": Criterion(
        "C9", "C9 head roles (MiniLM)",
        "weight on the previous word piece, the head chosen on the other half of the pairs minus the median head; mean "
        "over a pair's two texts", 0.05, ABOVE, _HELD, bounds=(-1.0, 1.0)),
    "next_minilm": Criterion(
        "C9", "C9 head roles (MiniLM)",
        "weight on the next word piece, the head chosen on the other half of the pairs minus the median head; mean "
        "over a pair's two texts", 0.05, ABOVE, _HELD, bounds=(-1.0, 1.0)),
    "dissociation_minilm": Criterion(
        "C9", "C9 head roles (MiniLM)",
        "the smaller of: the previous-token head's score minus the next-token head's at the previous-token role, and "
        "the next-token head's minus the previous-token head's at the next-token role; heads chosen on the other half "
        "of the pairs; mean over a pair's two texts", 0.05, ABOVE, _APART, bounds=(-1.0, 1.0)),
    "identity_plays": Criterion(
        "C11", "C11 token identity (Shakespeare model)",
        "share of the variance of the residual stream leaving the last block (before the final LayerNorm) explained "
        "by the current character, trained rotary model, scoring windows", 0.5, ABOVE,
        "half-way between total collapse (0: nothing of the character is left) and vectors that are a function of the "
        "character alone (1), as in the depth experiment: the character's identity reaches the top of the stack",
        bounds=(0.0, 1.0)),
    "calibration_plays": Criterion(
        "C12", "C12 calibration (Shakespeare model)",
        "ECE gap: top-1 ECE of the trained rotary model on the scoring positions minus a calibrated control's (the same "
        f"predictions, labels drawn from them, mean over {CONTROL_DRAWS} draws), probability", 0.01, BELOW,
        "one point of probability, the least miscalibration that counts (as in the calibration experiment); the gap is "
        "about 0 for a calibrated model at any number of positions, so the bar does not move with it",
        bounds=(-1.0, 1.0)),
    "near_large": Criterion(
        "C8", "C8 locality (larger Shakespeare model)",
        "mean attention mass on the 3 nearest keys (the character itself and the two before it), queries in the "
        "window's second half, mean over layers and heads, minus the uniform causal level (each query's weight spread "
        "evenly over itself and the keys before it)" + _GROUP, 0.05, ABOVE,
        "a no-positions twin trained for 30 minutes more would double the cost, so the reference is attention spread "
        "evenly over the keys the mask allows, what an order-blind reading gives (as MiniLM's); weaker than tier (a)'s "
        "control, since a causal model can find order from the mask alone: this asks for locality, (a) asks that "
        "positions add it; the claim needs more mass nearby than the even spread by " + _MASS, bounds=(-1.0, 1.0)),
    "previous_large": Criterion(
        "C9", "C9 head roles (larger Shakespeare model)",
        "weight on the previous character's key, the head chosen for it on the selection windows minus the median "
        "head, read on the scoring windows" + _GROUP, 0.05, ABOVE, _HELD, bounds=(-1.0, 1.0)),
    "word_start_large": Criterion(
        "C9", "C9 head roles (larger Shakespeare model)",
        "weight on the last space or newline before the current word (at least 2 characters back), the head chosen "
        "for it on the selection windows minus the median head, read on the scoring windows" + _GROUP, 0.05, ABOVE,
        _HELD, bounds=(-1.0, 1.0)),
    "dissociation_large": Criterion(
        "C9", "C9 head roles (larger Shakespeare model)",
        "the smaller of: the previous-character head's score minus the word-start head's at the previous-character "
        "role, and the word-start head's minus the previous-character head's at the word-start role; heads chosen on "
        "the selection windows, read on the scoring windows" + _GROUP, 0.05, ABOVE, _APART, bounds=(-1.0, 1.0)),
    "identity_large": Criterion(
        "C11", "C11 token identity (larger Shakespeare model)",
        "share of the variance of the residual stream leaving the last block (before the final LayerNorm) explained "
        "by the current character, trained larger model" + _GROUP, 0.5, ABOVE,
        "half-way between total collapse (0: nothing of the character is left) and vectors that are a function of the "
        "character alone (1), as in the depth experiment: the character's identity reaches the top of the stack",
        bounds=(0.0, 1.0)),
    "calibration_large": Criterion(
        "C12", "C12 calibration (larger Shakespeare model)",
        "ECE gap: top-1 ECE of the trained larger model minus a calibrated control's (the same predictions, labels "
        f"drawn from them, mean over {CONTROL_DRAWS} draws), probability" + _GROUP, 0.01, BELOW,
        "one point of probability, the least miscalibration that counts (as in the calibration experiment); the gap is "
        "about 0 for a calibrated model at any number of positions, so the bar does not move with it",
        bounds=(-1.0, 1.0)),
}
TIERS = {"plays": "(a) speedrun models", "minilm": "(b) MiniLM", "large": "(c) larger model"}  # check-name suffix
GRID: dict = {}  # nothing tuned: the speedrun recipe was tuned on its own runs (docs/benchmarks.md)
# training per model: minutes of one CPU thread ((a) each, (c) its one model); --quick: steps, every model
BUDGET = {"minutes": 3, "large_minutes": 30, "quick_steps": 20}
LARGE_MODEL = {**RECIPE_MODEL, "n_layer": 4, "d_model": 128}  # tier (c): twice (a)'s depth and width
WINDOWS = {"full": 256, "quick": 16}  # validation windows per half (selection, scoring)
GROUPS = {"full": 16, "quick": 4}  # tier (c)'s unit: groups of consecutive scoring windows
NEAR, RADIUS = 3, 2  # C8: nearest keys counted (Shakespeare, as in locality.py); |offset| <= RADIUS (MiniLM)
PRETRAINED = "minilm"
BATCH = 64  # windows per forward pass when measuring
SHOWN_OFFSETS = 8  # MiniLM's profile is drawn for offsets -8 .. 8


# ---- validation windows -------------------------------------------------------------------------

def val_windows(split: TokenSplit, n: int, T: int) -> Tensor:
    """n windows of T + 1 tokens spread evenly over the split, never overlapping: (n, T + 1)."""
    tokens = torch.as_tensor(np.asarray(split.tokens, dtype=np.int64))  # (N,)
    starts = np.linspace(0, len(tokens) - T - 1, n).astype(int)
    if n > 1 and np.diff(starts).min() < T + 1:
        raise RedthreadError(f"the split is too short for {n} windows of {T + 1} tokens that do not overlap")
    return torch.stack([tokens[s: s + T + 1] for s in starts])


# ---- role scores: the weight each query puts on one key -------------------------------------------

def offset_keys(T: int, offset: int, queries) -> Tensor:
    """(T,): the key `offset` places before each query in `queries` (negative: after it), -1 for the others."""
    keys = torch.full((T,), -1, dtype=torch.long)
    q = torch.as_tensor(list(queries), dtype=torch.long)
    keys[q] = q - offset
    return keys


def word_start_keys(x: Tensor, spaces: list[int], min_gap: int = 2) -> Tensor:
    """(B, T): for a query inside a word, the last space or newline before it, if it lies at least `min_gap`
    places back; -1 elsewhere (a space itself, a word's first characters, a window that starts mid-word)."""
    B, T = x.shape
    is_space = torch.isin(x, torch.tensor(spaces))  # (B, T)
    pos = torch.arange(T).expand(B, T)
    last = torch.where(is_space, pos, torch.full_like(pos, -1)).cummax(1).values  # (B, T): last space at or before i
    keep = ~is_space & (last >= 0) & (pos - last >= min_gap)
    return torch.where(keep, last, torch.full_like(last, -1))


def key_weights(att: Tensor, keys: Tensor) -> Tensor:
    """The weight each query puts on its key: att (B, H, T, S), keys (B, T) or (T,) (-1: no key) -> (B, H, T),
    NaN where a query has no key."""
    B, H, T, _ = att.shape
    keys = keys.expand(B, T)
    w = att.gather(-1, keys.clamp(min=0)[:, None, :, None].expand(B, H, T, 1))[..., 0]  # (B, H, T)
    return w.masked_fill((keys < 0)[:, None, :], float("nan"))


def role_score(weights: Tensor) -> Tensor:
    """Each head's mean weight on its role's key: (B, H, T) with NaN where no key -> (H,)."""
    return weights.transpose(0, 1).flatten(1).nanmean(1)


def best_head(scores: Tensor) -> tuple[int, int]:
    """The (layer, head) with the largest role score (L, H)."""
    i = int(scores.argmax())
    return i // scores.size(1), i % scores.size(1)


def over_median(scores: Tensor, head: tuple[int, int]) -> float:
    """A head's role score minus the median head's (the mean of the middle two for an even count), scores (L, H)."""
    return float(scores[head] - torch.quantile(scores.flatten().double(), 0.5))


def dissociation(a: Tensor, b: Tensor, head_a: tuple[int, int], head_b: tuple[int, int]) -> float:
    """Each role's head against the other role's, at its own role, scores (L, H) of roles a and b: the smaller margin
    (0 when one head serves both)."""
    return float(min(a[head_a] - a[head_b], b[head_b] - b[head_a]))


# ---- (a) the Shakespeare models -------------------------------------------------------------------

def train_char_lm(data: LMData, vocab: int, arch: dict, seed: int, quick: bool,
                  minutes: float) -> tuple[TransformerLM, dict]:
    """A character model of `arch` (TransformerConfig fields) trained with the speedrun's recipe for `minutes` of the
    clock (--quick: BUDGET's steps)."""
    torch.manual_seed(seed)
    model = TransformerLM(TransformerConfig(vocab_size=vocab, **arch))
    recipe = {**training_recipe(), "seed": seed, "device": "cpu", "eval_interval": 10**9, "eval_batches": 1,
              "log_interval": 50}
    if quick:
        recipe.update(max_iters=BUDGET["quick_steps"], warmup_iters=1)
    else:
        recipe.update(max_iters=10**9, max_time=60.0 * minutes)
    result = train(model, data, TrainConfig(**recipe), progress=False)
    return model.eval(), {"steps": result.step, "seconds": result.elapsed}


@torch.no_grad()
def measure_lm(model: TransformerLM, windows: Tensor, spaces: list[int]) -> dict:
    """One forward pass over windows (N, T + 1), BATCH at a time, recording what every check reads:

    profile     (L, T // 2 + 1)   each layer's offset profile over the queries i >= T / 2
    previous    (L, H)            each head's mean weight on the previous character
    word_start  (L, H)            each head's mean weight on the last space before the current word
    streams     L + 1 of (N T, C) the residual stream after the embedding and after each block
    tokens      (N T,)            the current character at each of those positions
    logits      (N T, V), targets (N T,)
    """
    x, y = windows[:, :-1], windows[:, 1:]  # (N, T) each: the input and the next character
    T = x.size(1)
    previous_key = offset_keys(T, 1, range(1, T))  # (T,)
    profiles, previous, word, streams, logits = [], [], [], [], []
    for b in range(0, len(x), BATCH):
        xb = x[b: b + BATCH]  # (B, T)
        with record_attention(model) as maps:
            h = model.embed(xb)  # (B, T, C)
            stream = [h]
            for block in model.blocks:
                h = block(h)
                stream.append(h)
        logits.append(softcap(model.lm_head(model.norm_f(h)), model.cfg.logit_softcap).flatten(0, 1))  # (B T, V)
        streams.append([s.flatten(0, 1) for s in stream])
        att = maps.decoder  # L of (B, H, T, T)
        profiles.append(torch.stack([offset_profile(a, T // 2) for a in att]) * len(xb))  # (L, O), weighted by B
        previous.append(torch.stack([key_weights(a, previous_key) for a in att]))  # (L, B, H, T)
        word.append(torch.stack([key_weights(a, word_start_keys(xb, spaces)) for a in att]))  # (L, B, H, T)
    previous, word = torch.cat(previous, 1), torch.cat(word, 1)  # (L, N, H, T)
    return {
        "profile": sum(profiles) / len(x),
        "previous": torch.stack([role_score(w) for w in previous]),  # (L, H)
        "word_start": torch.stack([role_score(w) for w in word]),  # (L, H)
        "streams": [torch.cat(layer) for layer in zip(*streams)],
        "tokens": x.flatten(), "logits": torch.cat(logits), "targets": y.flatten(),
    }


def near_mass(profile: Tensor, k: int = NEAR) -> float:
    """The mass on the k nearest keys, mean over layers: profile (L, O) -> a number."""
    return float(profile[:, :k].sum(1).mean())


def identities(m: dict, seed: int) -> tuple[list[float], list[float]]:
    """Token identity of each stream (embedding, block 1, ...), and its chance level: the same vectors grouped by
    shuffled characters."""
    shuffled = m["tokens"][torch.randperm(len(m["tokens"]), generator=torch.Generator().manual_seed(seed))]
    return ([token_identity(h, m["tokens"]) for h in m["streams"]],
            [token_identity(h, shuffled) for h in m["streams"]])


def calibration_of(select: dict, score: dict, seed: int) -> dict:
    """C12 on the scoring positions, the temperature fitted on the selection positions."""
    z, y = score["logits"], score["targets"]  # (N, V), (N,)
    t = fit_temperature(select["logits"], select["targets"])
    before, after = calibration_gap(z.softmax(-1), y, seed), calibration_gap((z / t).softmax(-1), y, seed)
    return {"nll": float(F.cross_entropy(z, y)), "nll_scaled": float(F.cross_entropy(z / t, y)), "temperature": t,
            "ece": before["ece"], "control": before["control"], "gap": before["gap"], "ece_scaled": after["ece"],
            "gap_scaled": after["gap"], "reliability": before["reliability"], "reliability_scaled": after["reliability"]}


def shakespeare_seed(data: LMData, vocab: int, halves_: tuple[Tensor, Tensor], spaces: list[int], seed: int,
                     quick: bool) -> dict:
    """Train the rotary model and its no-positions control on one seed, and measure everything the checks read."""
    select, score = halves_
    out = {}
    for pos in ("rope", "none"):
        model, out[f"train_{pos}"] = train_char_lm(data, vocab, {**RECIPE_MODEL, "pos": pos}, seed, quick,
                                                   BUDGET["minutes"])
        m_select, m_score = measure_lm(model, select, spaces), measure_lm(model, score, spaces)
        out[f"profile_{pos}"] = (m_select["profile"] + m_score["profile"]) / 2  # (L, O): every window, halves equal
        out[f"near_{pos}"] = near_mass(out[f"profile_{pos}"])
        if pos == "rope":
            rope_select, rope_score = m_select, m_score
    head_p, head_w = best_head(rope_select["previous"]), best_head(rope_select["word_start"])  # chosen on selection
    out.update({
        "head_previous": head_p, "head_word_start": head_w,
        "scores_previous": rope_score["previous"], "scores_word_start": rope_score["word_start"],  # (L, H), scoring
        "previous": over_median(rope_score["previous"], head_p),
        "word_start": over_median(rope_score["word_start"], head_w),
        "dissociation": dissociation(rope_score["previous"], rope_score["word_start"], head_p, head_w),
    })
    out["identity"], out["identity_chance"] = identities(rope_score, seed)
    out["calibration"] = calibration_of(rope_select, rope_score, seed)
    return out


# ---- (c) the larger model, one per seed set ----------------------------------------------------------

def window_groups(n: int, k: int) -> list[slice]:
    """k groups of n / k consecutive windows: the windows are spread evenly over the text in order, so each group is
    one stretch of it."""
    if k < 2 or n % k:
        raise InvalidValue(f"{n} windows do not split into {k} equal groups (and k must be 2 or more)")
    size = n // k
    return [slice(i * size, (i + 1) * size) for i in range(k)]


def group_values(m: dict, head_p: tuple[int, int], head_w: tuple[int, int], uniform: float, seed: int) -> dict:
    """Every check's value on one group of scoring windows (measure_lm's output), the heads chosen before."""
    shuffled = m["tokens"][torch.randperm(len(m["tokens"]), generator=torch.Generator().manual_seed(seed))]
    return {
        "near": near_mass(m["profile"]) - uniform,
        "previous": over_median(m["previous"], head_p), "word_start": over_median(m["word_start"], head_w),
        "dissociation": dissociation(m["previous"], m["word_start"], head_p, head_w),
        "identity": token_identity(m["streams"][-1], m["tokens"]),
        "identity_chance": token_identity(m["streams"][-1], shuffled),
        "gap": calibration_gap(m["logits"].softmax(-1), m["targets"], seed)["gap"],
    }


def larger_model(data: LMData, vocab: int, halves_: tuple[Tensor, Tensor], spaces: list[int], seed: int, quick: bool,
                 n_groups: int) -> dict:
    """Train tier (c)'s one model and measure it: the heads chosen on every selection window, each check's value per
    group of scoring windows, and the whole scoring set's numbers beside them."""
    select, score = halves_
    T = LARGE_MODEL["block_size"]
    model, trained = train_char_lm(data, vocab, LARGE_MODEL, seed, quick, BUDGET["large_minutes"])
    m_select, m_score = measure_lm(model, select, spaces), measure_lm(model, score, spaces)
    head_p, head_w = best_head(m_select["previous"]), best_head(m_select["word_start"])  # chosen once, on selection
    uniform = uniform_near_mass(NEAR, T // 2, T)
    per_group = [group_values(measure_lm(model, score[g], spaces), head_p, head_w, uniform, seed)
                 for g in window_groups(len(score), n_groups)]
    identity, chance = identities(m_score, seed)
    return {
        "seed": seed, "train": trained, "groups": {k: [g[k] for g in per_group] for k in per_group[0]},
        "profile": m_score["profile"], "near_mass": near_mass(m_score["profile"]), "uniform": uniform,
        "head_previous": head_p, "head_word_start": head_w,
        "scores_previous": m_score["previous"], "scores_word_start": m_score["word_start"],  # (L, H), scoring
        "identity": identity, "identity_chance": chance, "calibration": calibration_of(m_select, m_score, seed),
    }


# ---- (b) MiniLM ----------------------------------------------------------------------------------

def band(n: int, radius: int) -> Tensor:
    """(n, n): True where key j lies within `radius` places of query i."""
    i = torch.arange(n)
    return (i[:, None] - i[None, :]).abs() <= radius


def band_mass(att: Tensor, queries, radius: int) -> float:
    """Mean attention mass on the keys within `radius` places of each query: att (..., n, n), over every map and the
    queries given."""
    q = list(queries)
    return float((att[..., q, :] * band(att.size(-1), radius)[q]).sum(-1).mean())


def uniform_band(n: int, queries, radius: int) -> float:
    """The same mass for attention spread evenly over the n keys: the mean share of keys within `radius`."""
    q = list(queries)
    return float(band(n, radius)[q].sum(-1).double().mean() / n)


def signed_profile(att: Tensor, queries, max_offset: int) -> Tensor:
    """Mean weight on the key `o` places before the query (o < 0: after it), o = -max_offset .. max_offset:
    att (L, H, n, n) -> (2 max_offset + 1,), over layers, heads and the queries that have such a key (NaN: none)."""
    n, out = att.size(-1), []
    for o in range(-max_offset, max_offset + 1):
        q = torch.tensor([i for i in queries if 0 <= i - o < n], dtype=torch.long)
        out.append(att[..., q, q - o].mean() if len(q) else torch.tensor(float("nan")))
    return torch.stack(out)


def minilm_text(att: Tensor) -> dict:
    """One text's measurements from its attention (L, H, n, n), [CLS] first and [SEP] last: the queries are the word
    pieces; the role queries those whose two neighbours are word pieces too."""
    n = att.size(-1)
    words, inner = range(1, n - 1), range(2, n - 2)
    return {
        "near": band_mass(att, words, RADIUS), "uniform": uniform_band(n, words, RADIUS),
        "profile": signed_profile(att, words, SHOWN_OFFSETS), "uniform_key": 1 / n,
        "previous": key_weights(att, offset_keys(n, 1, inner)).nanmean(-1),  # (L, H)
        "next": key_weights(att, offset_keys(n, -1, inner)).nanmean(-1),  # (L, H)
    }


def held_out_pairs(a: Tensor, b: Tensor) -> dict:
    """Roles a and b, scores (P, 2, L, H) per pair and text: each role's head chosen on one half of the pairs (largest
    mean score), read on the other half, both ways round. Per pair (mean over its two texts): each chosen head's score
    minus the median head's, and the dissociation; and the heads each half chose."""
    P = len(a)
    value_a, value_b, apart, chosen = [0.0] * P, [0.0] * P, [0.0] * P, []
    for select, score in (halves(P), halves(P)[::-1]):
        head_a, head_b = best_head(a[select].mean((0, 1))), best_head(b[select].mean((0, 1)))
        chosen.append((head_a, head_b))
        for p in score:
            value_a[p] = float(np.mean([over_median(a[p, t], head_a) for t in range(2)]))
            value_b[p] = float(np.mean([over_median(b[p, t], head_b) for t in range(2)]))
            apart[p] = float(np.mean([dissociation(a[p, t], b[p, t], head_a, head_b) for t in range(2)]))
    return {"a": value_a, "b": value_b, "dissociation": apart, "chosen": chosen}


def minilm_part() -> dict | None:
    """Every pair's texts read by MiniLM; None where it is not installed."""
    try:
        resolve_pretrained(PRETRAINED)
    except RedthreadError:
        return None
    inspector = load_inspector(pretrained=PRETRAINED)
    texts = [[minilm_text(inspector.attention(text)[1].stacked("encoder")[:, 0]) for text in pair.texts]
             for pair in PAIRS]  # P x 2; each map (L, H, n, n)
    stack = lambda key: torch.stack([torch.stack([t[key] for t in pair]) for pair in texts])  # noqa: E731
    previous, following = stack("previous"), stack("next")  # (P, 2, L, H)
    roles = held_out_pairs(previous, following)
    return {
        "near": [float(np.mean([t["near"] - t["uniform"] for t in pair])) for pair in texts],  # per pair
        "near_mass": float(np.mean([t["near"] for pair in texts for t in pair])),
        "uniform": float(np.mean([t["uniform"] for pair in texts for t in pair])),
        "profile": stack("profile").flatten(0, 1).nanmean(0),  # (2 SHOWN_OFFSETS + 1,)
        "uniform_key": float(np.mean([t["uniform_key"] for pair in texts for t in pair])),
        "previous_scores": previous.mean((0, 1)), "next_scores": following.mean((0, 1)),  # (L, H), every text
        "previous": roles["a"], "next": roles["b"], "dissociation": roles["dissociation"], "chosen": roles["chosen"],
    }


# ---- the run -------------------------------------------------------------------------------------

def run(quick: bool = False, seed: int = 0, progress=None) -> Report:
    seeds = run_seeds(seed, quick)
    mode = "quick" if quick else "full"
    n_windows, n_groups = WINDOWS[mode], GROUPS[mode]
    report = Report(NAME, CLAIMS, quick=quick, setup=setup_text(seeds, n_windows, n_groups, quick), criterion=(
        HYPOTHESIS + " Checked, each against a floor fixed in advance: C8, the rotary model's near mass minus the "
        "no-positions model's > 0.05, MiniLM's mass within 2 places minus the uniform level > 0.05, and the larger "
        "model's near mass minus the uniform causal level > 0.05; C9, each role's held-out head above the median head "
        "by > 0.05 and each role's head beating the other role's head at its own role by > 0.05 (every tier); C11, the "
        "token identity of the last block's output > 0.5; C12, the ECE gap < 0.01 (both Shakespeare tiers). "
        "Intervals: over seeds (tier (a)), over pairs of texts (MiniLM, a fixed model), over groups of scoring windows "
        "(tier (c), one model per seed set: an interval over text, not over trainings)."))
    try:
        train_split, val_split, tokenizer = load_splits(None)
    except RedthreadError as e:
        report.skip(f"the default corpus is not installed here ({e})")
        return report
    T = RECIPE_MODEL["block_size"]
    data = LMData(train_split, val_split, T)
    windows = val_windows(val_split, 2 * n_windows, T)  # (2n, T + 1)
    select_score = (windows[0::2], windows[1::2])  # selection and scoring windows, disjoint
    spaces = [tokenizer.encode(c)[0] for c in (" ", "\n")]
    results = []
    share = 2 * len(seeds) * BUDGET["minutes"] / (2 * len(seeds) * BUDGET["minutes"] + BUDGET["large_minutes"])
    for i, s in enumerate(seeds):
        results.append(shakespeare_seed(data, tokenizer.vocab_size, select_score, spaces, s, quick))
        if progress is not None:
            progress.update(0.95 * share * (i + 1) / len(seeds), f"seed {s}: rotary and no-positions models")
    large = larger_model(data, tokenizer.vocab_size, select_score, spaces, seeds[0], quick, n_groups)
    if progress is not None:
        progress.update(0.95, f"seed {seeds[0]}: the larger model")
    minilm = minilm_part()
    decide(report, results, seeds, minilm, large)
    describe(report, results, seeds, minilm, large, T)
    if progress is not None:
        progress.update(1.0)
    return report


def body_params(arch: dict) -> int:
    """Parameters of a character model of `arch` (TransformerConfig fields) besides its character embedding (which
    the output layer shares): what does not depend on the corpus's vocabulary."""
    model = TransformerLM(TransformerConfig(vocab_size=2, **arch))
    return sum(p.numel() for p in model.parameters()) - model.embed.tok_emb.weight.numel()


def setup_text(seeds: list[int], n_windows: int, n_groups: int, quick: bool) -> str:
    recipe = training_recipe()
    clock = ("of training on one CPU thread (TrainConfig.max_time: the schedule runs on the clock, so the steps taken "
             "depend on the machine; each model's are recorded)")
    budget = (f"{BUDGET['quick_steps']} steps (quick run: a smoke test)" if quick else
              f"{BUDGET['minutes']} minutes {clock}")
    large_budget = (f"{BUDGET['quick_steps']} steps (quick run: a smoke test)" if quick else
                    f"{BUDGET['large_minutes']} minutes {clock}")
    small, large = body_params(RECIPE_MODEL), body_params(LARGE_MODEL)
    return (
        f"(a) Character Transformers on Shakespeare's plays (the shipped corpus, vocabulary of its characters): the "
        f"speedrun's recipe (docs/benchmarks.md), {RECIPE_MODEL['n_layer']} layers, {RECIPE_MODEL['n_head']} heads, "
        f"d_model {RECIPE_MODEL['d_model']}, context {RECIPE_MODEL['block_size']}, rotary positions, optimizer "
        f"{recipe['optimizer']} at lr {recipe['lr']:g}, batch {recipe['batch_size']}, schedule {recipe['schedule']} "
        f"with a cool-down over the last {recipe['cooldown_frac']:.0%}; budget per model: {budget}. One model per seed "
        f"({', '.join(map(str, seeds))}), and beside it the same model with no positions (same seed, recipe and "
        f"budget), the control for C8. Nothing is tuned: the recipe was tuned on its own runs. Measured on "
        f"{2 * n_windows} validation windows of {RECIPE_MODEL['block_size']} characters spread over the validation "
        f"plays, never overlapping: {n_windows} selection windows (heads chosen, temperature fitted) and {n_windows} "
        f"scoring windows (every check read), the same for every seed. "
        f"(b) MiniLM (all-MiniLM-L6-v2, pretrained, 6 layers x 12 heads, bidirectional), on the {2 * len(PAIRS)} texts "
        f"of the {len(PAIRS)} Winograd pairs (experiments/winograd.py), word pieces from [CLS] to [SEP]; heads chosen "
        "on the even pairs are read on the odd ones and the other way round; the unit is the pair (the model is fixed: "
        "the seed changes nothing). C12's control: the same predictions with labels drawn from them "
        f"({CONTROL_DRAWS} draws), top-1 confidence in {N_BINS} equal bins. "
        f"(c) A larger character Transformer on the same plays: {LARGE_MODEL['n_layer']} layers, "
        f"{LARGE_MODEL['n_head']} heads, d_model {LARGE_MODEL['d_model']}, context {LARGE_MODEL['block_size']}, rotary "
        f"positions ({large / 1e6:.2f} M parameters besides the character embedding, against (a)'s "
        f"{small / 1e6:.2f} M), the same recipe as it is (with Muon's match_rms_adamw scaling, its step has an AdamW "
        f"step's size at any width, so the rate is kept; not tuned for this size); budget: {large_budget}. ONE model "
        f"per seed set, on the set's first seed ({seeds[0]}), and no trained control: C8 is read against the uniform "
        "causal level instead. Every check is read on the scoring windows, per group: "
        f"{n_groups} groups of {n_windows // n_groups} consecutive scoring windows (each a stretch "
        "of the validation plays), the heads chosen once on all the selection windows. Its interval is over text, not "
        "over training runs: it says how well the text pins down this one model's value, not how far another training "
        "would move it; a full run's two seed sets are two independent trainings, and only their agreement speaks for "
        "training."
    )


def per_seed(results: list[dict], key: str) -> list[float]:
    return [r[key] for r in results]


def decide(report: Report, results: list[dict], seeds: list[int], minilm: dict | None, large: dict) -> None:
    excess = [r["near_rope"] - r["near_none"] for r in results]
    report.check("near_plays", excess, seeds, seen=(
        f"{estimate(excess, (-1, 1))}: near mass {np.mean(per_seed(results, 'near_rope')):.3f} with rotary positions, "
        f"{np.mean(per_seed(results, 'near_none')):.3f} without"))
    for name in ("previous", "word_start", "dissociation"):
        report.check(f"{name}_plays", per_seed(results, name), seeds)
    last, chance = [r["identity"][-1] for r in results], [r["identity_chance"][-1] for r in results]
    report.check("identity_plays", last, seeds,
                 seen=f"{estimate(last, (0, 1))}; chance (shuffled characters) {np.mean(chance):.3f}")
    gaps = [r["calibration"]["gap"] for r in results]
    report.check("calibration_plays", gaps, seeds, seen=(
        f"{estimate(gaps, (-1, 1))}: ECE {np.mean([r['calibration']['ece'] for r in results]):.4f}, control "
        f"{np.mean([r['calibration']['control'] for r in results]):.4f}"))
    decide_large(report, large)
    if minilm is None:
        report.note(f"MiniLM is not installed here ({PRETRAINED}: setup.sh installs it): its checks were not made.")
        return
    pairs = list(range(len(PAIRS)))  # the pairs are the unit of variation
    report.check("near_minilm", minilm["near"], pairs, seen=(
        f"{estimate(minilm['near'], (-1, 1))} over pairs: mass {minilm['near_mass']:.3f} within {RADIUS} places, "
        f"uniform {minilm['uniform']:.3f}"))
    for name in ("previous", "next", "dissociation"):
        report.check(f"{name}_minilm", minilm[name], pairs, seen=f"{estimate(minilm[name], (-1, 1))} over pairs")


def decide_large(report: Report, large: dict) -> None:
    """Tier (c)'s checks, one value per group of scoring windows: the groups are the unit, as MiniLM's pairs are."""
    g = large["groups"]
    groups = list(range(len(g["near"])))
    over = "over groups of scoring windows (text, not trainings)"
    report.check("near_large", g["near"], groups, seen=(
        f"{estimate(g['near'], (-1, 1))} {over}: near mass {large['near_mass']:.3f}, uniform {large['uniform']:.3f}"))
    for name in ("previous", "word_start", "dissociation"):
        report.check(f"{name}_large", g[name], groups, seen=f"{estimate(g[name], (-1, 1))} {over}")
    report.check("identity_large", g["identity"], groups, seen=(
        f"{estimate(g['identity'], (0, 1))} {over}; chance (shuffled characters) {np.mean(g['identity_chance']):.3f}"))
    c = large["calibration"]
    report.check("calibration_large", g["gap"], groups, seen=(
        f"{estimate(g['gap'], (-1, 1))} {over}; all scoring positions: ECE {c['ece']:.4f}, control {c['control']:.4f}"))


def head_name(head) -> str:
    return f"L{head[0]}.H{head[1]}"


def describe(report: Report, results: list[dict], seeds: list[int], minilm: dict | None, large: dict,
             T: int) -> None:
    report.number("seeds", seeds)
    report.number("recipe", {"model": RECIPE_MODEL, "train": training_recipe()})
    report.number("budget", BUDGET)
    for key in ("near_rope", "near_none", "previous", "word_start", "dissociation", "identity", "identity_chance"):
        report.number(key, per_seed(results, key))
    for pos in ("rope", "none"):
        report.number(f"train_{pos}", per_seed(results, f"train_{pos}"))
        report.number(f"profile_{pos}", torch.stack(per_seed(results, f"profile_{pos}")).mean((0, 1)))  # (O,)
    report.number("heads", [[r["head_previous"], r["head_word_start"]] for r in results])
    report.number("scores_previous", per_seed(results, "scores_previous"))
    report.number("scores_word_start", per_seed(results, "scores_word_start"))
    report.number("calibration", per_seed(results, "calibration"))
    uniform = uniform_near_mass(NEAR, T // 2, T)
    report.number("uniform_near_mass", uniform)
    report.table(
        ["seed", "steps, rotary", "steps, no positions", f"near mass ({NEAR} keys), rotary", "no positions",
         "previous-character head", "over the median", "word-start head", "over the median", "dissociation"],
        [[s, r["train_rope"]["steps"], r["train_none"]["steps"], r["near_rope"], r["near_none"],
          head_name(r["head_previous"]), r["previous"], head_name(r["head_word_start"]), r["word_start"],
          r["dissociation"]] for s, r in zip(seeds, results)],
        title=f"C8 and C9 on the Shakespeare models, per seed (uniform near mass {uniform:.4f}; heads chosen on the "
              "selection windows, scores on the scoring windows)")
    c = [r["calibration"] for r in results]
    report.table(
        ["seed", "NLL (nats/char)", "ECE", "control ECE", "ECE gap", "fitted T", "NLL at T", "ECE gap at T",
         "identity, last block", "chance"],
        [[s, x["nll"], x["ece"], x["control"], x["gap"], x["temperature"], x["nll_scaled"], x["gap_scaled"],
          r["identity"][-1], r["identity_chance"][-1]] for s, r, x in zip(seeds, results, c)],
        title="C11 and C12 on the Shakespeare rotary models, per seed (scoring windows)")
    names = ["embedding"] + [f"block {i + 1}" for i in range(len(results[0]["identity"]) - 1)]
    report.table(["stream", "token identity (mean over seeds)", "chance (shuffled characters)"],
                 [[name, float(np.mean([r["identity"][j] for r in results])),
                   float(np.mean([r["identity_chance"][j] for r in results]))] for j, name in enumerate(names)],
                 title="C11: share of the residual stream's variance explained by the current character")
    different = sum(r["head_previous"] != r["head_word_start"] for r in results)
    report.number("different_heads", different)
    k = results[0]["scores_previous"].numel()  # heads in the model
    report.note(f"The previous-character and word-start heads chosen on the selection windows differ in {different} "
                f"of {len(results)} seeds (two heads drawn at random from {k} differ {k - 1} times in {k}: the "
                "dissociation check asks more, a margin at both roles).")
    report.note("The validation NLL is reported, not decided on: nothing known bounds it here (the plays' entropy "
                "rate is unknown). A fitted T above 1 says the model is over-confident, below 1 under-confident.")
    if minilm is not None:
        report.number("minilm", {k: v for k, v in minilm.items() if k != "chosen"})
        report.number("minilm_chosen", minilm["chosen"])
        report.table(
            ["pairs that choose", "previous-token head", "its score (all texts)", "next-token head",
             "its score (all texts)"],
            [[half, head_name(hp), float(minilm["previous_scores"][hp]), head_name(hn), float(minilm["next_scores"][hn])]
             for half, (hp, hn) in zip(("even", "odd"), minilm["chosen"])],
            title=f"C9 on MiniLM: the heads each half of the pairs chooses (median head: previous "
                  f"{float(minilm['previous_scores'].median()):.3f}, next {float(minilm['next_scores'].median()):.3f})")
        report.note(f"MiniLM: mean mass within {RADIUS} places of a word piece {minilm['near_mass']:.3f}, uniform level "
                    f"{minilm['uniform']:.3f}. Heads are written L<layer>.H<head>, from 0.")
    describe_large(report, large)
    report.figure("profiles", lambda: plot_profiles(results, minilm, large, T),
                  "Mean attention weight against the key's offset. Left: the Shakespeare models (tier (a): mean over "
                  "seeds and layers, rotary positions against none; tier (c), the larger model: mean over layers, "
                  "scoring windows), uniform causal attention in grey. Right: MiniLM (mean over texts, layers and "
                  "heads; offset > 0: a key before the query), the uniform level in grey.",
                  "平均注意力权重随键的偏移的变化。左：莎士比亚模型（(a)：对种子和层取平均，比较旋转位置编码和无位置编码；"
                  "(c) 即更大的模型：在打分窗口上对层取平均），灰线是均匀的因果注意力。右：MiniLM（对句子、层和头取平均；"
                  "偏移 > 0 表示键在查询之前），灰线是均匀注意力的水平。")
    report.figure("head_roles", lambda: plot_roles(results[0], large, minilm),
                  f"Role scores of every head. Top: the speedrun-recipe model of seed {seeds[0]}; middle: the larger "
                  "model; both on the scoring windows, the head chosen on the selection windows circled. Bottom: MiniLM "
                  "over every text, the heads chosen by the even (circle) and odd (square) pairs marked.",
                  f"每个头的角色得分。上：种子 {seeds[0]} 按速通配方训练的模型；中：更大的模型；两者都在打分窗口上计算，"
                  "在选择窗口上选出的头画了圆圈。下：MiniLM 在全部句子上的得分，标出了偶数句对（圆圈）和奇数句对（方块）"
                  "各自选出的头。")
    report.figure("token_identity", lambda: plot_identity(results, large),
                  "Share of the residual stream's variance explained by the current character, after the embedding and "
                  "each block (grey: each seed of tier (a); black: their mean; blue: the larger model; dashed: "
                  "shuffled characters; red: the check's floor).",
                  "嵌入之后和每一层之后，残差流的方差中能由当前字符解释的比例（灰色：(a) 的每个种子；黑色：各种子的平均；"
                  "蓝色：更大的模型；虚线：打乱的字符；红色：这项检查的下限）。")
    report.figure("reliability", lambda: plot_reliability(c[0]),
                  f"Reliability on seed {seeds[0]}'s scoring positions, before and after temperature scaling: accuracy "
                  "per confidence bin (bars), share of positions (grey), calibrated (red).",
                  f"种子 {seeds[0]} 在打分位置上的可靠性图，温度缩放之前和之后：每个置信度区间里的准确率（柱）、"
                  "位置所占的比例（灰色）、完全校准（红色）。")

def describe_large(report: Report, large: dict) -> None:
    g, c = large["groups"], large["calibration"]
    report.number("large", {k: v for k, v in large.items() if k != "groups"})
    report.number("large_groups", {"group": list(range(len(g["near"]))), **g})
    report.table(
        ["seed", "steps", "seconds", f"near mass ({NEAR} keys)", "uniform", "previous-character head",
         "word-start head", "NLL (nats/char)", "ECE", "control ECE", "ECE gap", "fitted T", "identity, last block",
         "chance"],
        [[large["seed"], large["train"]["steps"], large["train"]["seconds"], large["near_mass"], large["uniform"],
          head_name(large["head_previous"]), head_name(large["head_word_start"]), c["nll"], c["ece"], c["control"],
          c["gap"], c["temperature"], large["identity"][-1], large["identity_chance"][-1]]],
        title="Tier (c), the larger model: its training and every scoring window at once (heads chosen on the "
              "selection windows)")
    report.table(
        ["group", "near mass minus uniform", "previous over the median", "word start over the median",
         "dissociation", "identity, last block", "chance", "ECE gap"],
        [[i, *(g[k][i] for k in ("near", "previous", "word_start", "dissociation", "identity", "identity_chance",
                                 "gap"))] for i in range(len(g["near"]))],
        title="Tier (c), per group of consecutive scoring windows: the values its checks are decided on")
    names = ["embedding"] + [f"block {i + 1}" for i in range(len(large["identity"]) - 1)]
    report.table(["stream", "token identity, larger model", "chance (shuffled characters)"],
                 [[name, large["identity"][j], large["identity_chance"][j]] for j, name in enumerate(names)],
                 title="C11 on the larger model: share of the residual stream's variance explained by the current "
                       "character (every scoring window)")
    report.note(f"Tier (c)'s intervals are over {len(g['near'])} groups of scoring windows, stretches of text read by "
                f"one model (seed {large['seed']}): they say how well the text pins that model's values down, not how "
                "much another training would move them. A full run trains two such models, one per seed set, "
                "independently: the replication of a verdict across the two sets is the only evidence over trainings.")


def tier_verdicts(report: Report) -> dict[str, dict[str, str]]:
    """claim -> tier -> the verdict of that tier's checks of the claim in this run (combined as a part's are; "smoke"
    in a quick run). Tiers are named by their checks' suffixes (TIERS)."""
    report.settle()
    found: dict[str, dict[str, list[str]]] = {}
    for c in report.checks:
        found.setdefault(c.claim, {}).setdefault(TIERS[c.name.rsplit("_", 1)[1]], []).append(c.verdict)
    return {claim: {tier: SMOKE if report.quick else combine(v) for tier, v in tiers.items()}
            for claim, tiers in found.items()}


def disagreements(verdicts: dict[str, dict[str, str]]) -> dict[str, dict[str, str]]:
    """The claims on which the tiers measured reach different verdicts, with each tier's."""
    return {claim: tiers for claim, tiers in verdicts.items() if len(set(tiers.values())) > 1}


def conclude(report: Report) -> None:
    """Called by the runner on the final report, its checks decided over both seed sets (experiments/replication.py):
    the verdict per tier, first among the results."""
    if report.skipped:
        return
    n = len(report.sections)
    compare_tiers(report)
    added = report.sections[n:]
    del report.sections[n:]
    report.sections[:0] = added


def compare_tiers(report: Report) -> None:
    """Verdict per tier, claim by claim, and where the tiers disagree: computed from the report's checks."""
    verdicts = tier_verdicts(report)
    report.number("tier_verdicts", verdicts)
    tiers = list(TIERS.values())
    differ = disagreements(verdicts)
    report.table(["claim", *tiers, "the tiers"],
                 [[claim, *(found.get(t, "not measured") for t in tiers),
                   SMOKE if report.quick else "**disagree**" if claim in differ else "agree" if len(found) > 1
                   else "one tier"]
                  for claim, found in sorted(verdicts.items(), key=lambda kv: int(kv[0][1:]))],
                 title="Verdict per tier; where tiers disagree, say so")
    scope = "both seed sets (a verdict holds or does not hold only where both sets reach it)"
    if report.quick:
        report.note("Verdict per tier: none, a quick run is a smoke test.")
    elif differ:
        report.note("Where the tiers disagree, in " + scope + ": " + "; ".join(
            f"{claim}: " + ", ".join(f"{t} {v}" for t, v in found.items()) for claim, found in differ.items()) + ".")
    else:
        report.note(f"The tiers agree on every claim that more than one of them measures, in {scope}.")


# ---- figures -------------------------------------------------------------------------------------

def plot_profiles(results: list[dict], minilm: dict | None, large: dict, T: int) -> plt.Figure:
    fig, axes = plt.subplots(1, 2, figsize=(11, 4), layout="constrained")
    ax = axes[0]
    for pos, colour in (("rope", "C0"), ("none", "black")):
        profile = torch.stack(per_seed(results, f"profile_{pos}")).mean((0, 1))  # (O,)
        ax.plot(np.arange(len(profile)), profile, "-o", ms=2, color=colour,
                label=say("(a) rotary", "(a) 旋转位置编码") if pos == "rope" else say("(a) no positions", "(a) 无位置编码"))
    profile = large["profile"].mean(0)  # (O,)
    ax.plot(np.arange(len(profile)), profile, "-o", ms=2, color="C2", label=say("(c) larger, rotary", "(c) 更大的模型，旋转位置编码"))
    ax.axhline(np.mean(1 / (np.arange(T // 2, T) + 1)), color="grey", lw=1, label=say("uniform", "均匀注意力"))
    ax.set(xlabel=say("key offset (places before the query)", "键的偏移（键在查询之前的位置数）"),
           ylabel=say("mean attention weight", "平均注意力权重"), yscale="log",
           title=say("Shakespeare models", "莎士比亚模型"))
    ax.legend(fontsize=8)
    ax = axes[1]
    if minilm is None:
        ax.axis("off")
        ax.set_title(say("MiniLM: not installed", "MiniLM：未安装"))
        return fig
    offsets = np.arange(-SHOWN_OFFSETS, SHOWN_OFFSETS + 1)
    ax.plot(offsets, minilm["profile"], "-o", ms=3, color="C1", label="MiniLM")
    ax.axhline(minilm["uniform_key"], color="grey", lw=1, label=say("uniform (1 / n)", "均匀注意力（1 / n）"))
    ax.axvspan(-RADIUS - 0.5, RADIUS + 0.5, color="C1", alpha=0.1, label=say(f"|offset| <= {RADIUS}", f"|偏移| <= {RADIUS}"))
    ax.set(xlabel=say("key offset (places before the query; < 0: after)", "键的偏移（键在查询之前的位置数；< 0 表示在之后）"),
           ylabel=say("mean attention weight", "平均注意力权重"),
           title=say("MiniLM, Winograd texts", "MiniLM，Winograd 句子"))
    ax.legend(fontsize=8)
    return fig


def _heatmap(ax, scores: Tensor, title: str, marks: list[tuple[tuple[int, int], str]]) -> None:
    image = ax.imshow(scores, vmin=0, vmax=1, cmap="viridis", aspect="auto")
    for (layer, head), marker in marks:
        ax.scatter([head], [layer], s=200, marker=marker, facecolors="none", edgecolors="r", linewidths=2)
    ax.set(title=title, xlabel=say("head", "头"), ylabel=say("layer", "层"), xticks=range(scores.size(1)),
           yticks=range(scores.size(0)))
    ax.figure.colorbar(image, ax=ax)


def plot_roles(first: dict, large: dict, minilm: dict | None) -> plt.Figure:
    rows = 2 if minilm is None else 3
    fig, axes = plt.subplots(rows, 2, figsize=(11, 3.6 * rows), layout="constrained", squeeze=False)
    for row, (r, tier) in enumerate(((first, "(a)"), (large, say("(c) larger", "(c) 更大的模型")))):
        _heatmap(axes[row, 0], r["scores_previous"], say(f"{tier}: previous character", f"{tier}：前一个字符"),
                 [(r["head_previous"], "o")])
        _heatmap(axes[row, 1], r["scores_word_start"], say(f"{tier}: word start", f"{tier}：词的开头"),
                 [(r["head_word_start"], "o")])
    if minilm is not None:
        (even_p, even_n), (odd_p, odd_n) = minilm["chosen"]
        _heatmap(axes[2, 0], minilm["previous_scores"], say("MiniLM: previous token", "MiniLM：前一个词元"),
                 [(even_p, "o"), (odd_p, "s")])
        _heatmap(axes[2, 1], minilm["next_scores"], say("MiniLM: next token", "MiniLM：后一个词元"),
                 [(even_n, "o"), (odd_n, "s")])
    return fig


def plot_identity(results: list[dict], large: dict) -> plt.Figure:
    fig, ax = plt.subplots(figsize=(6.5, 4), layout="constrained")
    small = np.arange(len(results[0]["identity"]))  # the embedding, then each block of (a)'s model
    for r in results:
        ax.plot(small, r["identity"], "-", color="grey", lw=0.8, alpha=0.7)
    ax.plot(small, np.mean([r["identity"] for r in results], 0), "-o", color="black",
            label=say("(a), mean over seeds", "(a)，各种子的平均"))
    ax.plot(small, np.mean([r["identity_chance"] for r in results], 0), "--", color="black",
            label=say("shuffled characters", "打乱的字符"))
    x = np.arange(len(large["identity"]))  # the larger model's streams: more blocks
    ax.plot(x, large["identity"], "-o", color="C0", label=say("(c) larger model", "(c) 更大的模型"))
    ax.plot(x, large["identity_chance"], "--", color="C0", lw=0.8)
    ax.axhline(CRITERIA["identity_plays"].floor, color="r", ls=":", label=say("the check's floor", "这项检查的下限"))
    names = [say("embedding", "嵌入")] + [say(f"after block {i}", f"层 {i} 之后") for i in range(len(x) - 1)]
    ax.set(xticks=x, xticklabels=names, ylabel=say("share of variance explained by the character", "字符能解释的方差比例"),
           ylim=(-0.02, 1.02), title=say("Token identity through the residual stream", "残差流里的词元身份"))
    ax.legend(fontsize=8)
    return fig


def plot_reliability(c: dict) -> plt.Figure:
    fig, axes = plt.subplots(1, 2, figsize=(9, 4.2), layout="constrained")
    centres = [(i + 0.5) / N_BINS for i in range(N_BINS)]
    for ax, key, when, gap in ((axes[0], "reliability", "T = 1", c["gap"]),
                               (axes[1], "reliability_scaled", f"T = {c['temperature']:.3f}", c["gap_scaled"])):
        r = c[key]
        ax.bar(centres, [0.0 if math.isnan(a) else a for a in r["accuracy"]], width=1 / N_BINS, edgecolor="k", lw=0.4,
               alpha=0.8, label=say("accuracy", "准确率"))
        ax.bar(centres, [n / r["n"] for n in r["counts"]], width=1 / N_BINS, color="grey", alpha=0.4,
               label=say("share of positions", "位置所占的比例"))
        ax.plot([0, 1], [0, 1], "r--", lw=1, label=say("calibrated", "完全校准"))
        ax.set(xlim=(0, 1), ylim=(0, 1), xlabel=say("confidence (top probability)", "置信度（最大概率）"),
               ylabel=say("accuracy", "准确率"), title=say(f"{when}: ECE {r['ece']:.4f}, gap {gap:.4f}",
                                                          f"{when}：ECE {r['ece']:.4f}，差距 {gap:.4f}"))

        ax.legend(fontsize=8, loc="upper left")
    return fig
