"""Every threshold an experiment decides a claim by, in one place, each with why that value.

A threshold is fixed before the measurement it judges and never taken from the result: its reason
is a theoretical bound, a chance level, or the noise floor measured on a control. Changing one is a
visible change to this file, with its reason in the commit.

    CRITERIA["scaling"]["gap"] = Criterion("C7", "the scale", "val NLL without 1/sqrt(d_k) minus with, nats",
                                           0.0, ABOVE, "any positive gap: the claim is that the scale helps")

`Report.check(name, values, seeds)` looks its criterion up here, computes the mean and 95% interval
over the seeds (`experiments/stats.py`) and the verdict: holds when the whole interval lies on the
`direction` side of `threshold`, does not hold when it lies on the other, inconclusive otherwise.
Each experiment's section below is its own; keep them in the order of `EXPERIMENTS`.
"""

from __future__ import annotations

from dataclasses import dataclass

from redthread.errors import InvalidValue
from redthread.experiments.stats import ABOVE, BELOW  # noqa: F401 (the sections below use them)


@dataclass(frozen=True)
class Criterion:
    claim: str  # the claim this check tests: "C7"
    part: str  # which part of the claim, for a claim with several ("residuals", "LayerNorm"); "" for one part
    what: str  # the quantity measured, with its unit
    threshold: float
    direction: str  # ABOVE or BELOW: the side of the threshold the claim needs
    why: str  # why this value: a bound, a chance level, a control's noise floor; never the result


CRITERIA: dict[str, dict[str, Criterion]] = {}

# -- regression (C1) -------------------------------------------------------------------------------------------------

CRITERIA["regression"] = {}

# -- attention-as-regression (C6) ------------------------------------------------------------------------------------

CRITERIA["attention-as-regression"] = {}

# -- scaling (C7) ----------------------------------------------------------------------------------------------------

CRITERIA["scaling"] = {}

# -- rnn-gradients (C3) ----------------------------------------------------------------------------------------------

CRITERIA["rnn-gradients"] = {}

# -- long-range (C3, C5, C6) -----------------------------------------------------------------------------------------

CRITERIA["long-range"] = {}

# -- sequential (C4) -------------------------------------------------------------------------------------------------

CRITERIA["sequential"] = {}

# -- permutation (C8) ------------------------------------------------------------------------------------------------

CRITERIA["permutation"] = {}

# -- heads (C9) ------------------------------------------------------------------------------------------------------

CRITERIA["heads"] = {}

# -- ffn (C10) -------------------------------------------------------------------------------------------------------

CRITERIA["ffn"] = {}

# -- depth (C11) -----------------------------------------------------------------------------------------------------

CRITERIA["depth"] = {}

# -- sampling (C12) --------------------------------------------------------------------------------------------------

CRITERIA["sampling"] = {}

# -- calibration (C12) -----------------------------------------------------------------------------------------------

_NOISE_FLOOR = (
    "the noise floor, measured on a control: the same model scored on labels drawn from its own predicted distribution "
    "at the same positions is perfectly calibrated by construction, yet its ECE is not zero (finite bins of finite "
    "counts); its mean over draws is the floor (1 in this unit). A calibrated model's ECE scatters around the floor, so "
    "twice the floor is where the miscalibration itself becomes as large as the noise it is measured with"
)
CRITERIA["calibration"] = {
    f"ece_{key}": Criterion("C12", part, f"the {part}'s top-1 ECE on held-out positions, in units of the noise floor "
                            "(its ECE on labels drawn from its own prediction)", 2.0, BELOW, _NOISE_FLOOR)
    for key, part in (("bigram", "bigram"), ("mlp", "MLP"), ("transformer", "Transformer"))
}

# -- coreference (C13) -----------------------------------------------------------------------------------------------

CRITERIA["coreference"] = {
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

# -- classification (C2) ---------------------------------------------------------------------------------------------

CRITERIA["classification"] = {}

# -- memory (C5) -----------------------------------------------------------------------------------------------------

CRITERIA["memory"] = {}

# -- locality (C8) ---------------------------------------------------------------------------------------------------

CRITERIA["locality"] = {}

# -- ensemble (C9) ---------------------------------------------------------------------------------------------------

CRITERIA["ensemble"] = {}

# -- vision (C14) ----------------------------------------------------------------------------------------------------

CRITERIA["vision"] = {}


def criterion(experiment: str, name: str) -> Criterion:
    try:
        return CRITERIA[experiment][name]
    except KeyError:
        raise InvalidValue(f"no criterion {name!r} for experiment {experiment!r} in experiments/criteria.py") from None
