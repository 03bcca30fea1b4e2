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

CRITERIA["calibration"] = {}

# -- coreference (C13) -----------------------------------------------------------------------------------------------

CRITERIA["coreference"] = {}

# -- classification (C2) ---------------------------------------------------------------------------------------------

CRITERIA["classification"] = {
    "kl_slope_softmax": Criterion(
        "C2", "known posterior, softmax regression", "slope of log KL(true posterior || learned) against log n", 0.0, BELOW,
        "any fall: a softmax layer that estimates P(class | x) converges to it as n grows (theory for this well-specified "
        "model: about -1); one that does not stalls at a KL floor (slope 0)"),
    "kl_slope_mlp": Criterion(
        "C2", "known posterior, MLP", "slope of log KL(true posterior || learned) against log n", 0.0, BELOW,
        "any fall: a softmax layer that estimates P(class | x) converges to it as n grows; slope 0 is no convergence"),
    "ece_excess_softmax": Criterion(
        "C2", "calibration, softmax regression", "test ECE on digits minus the 95% quantile of a calibrated control's ECE",
        0.0, BELOW, "the noise floor measured on a control: labels drawn from the model's own probabilities, same images"),
    "ece_excess_mlp": Criterion(
        "C2", "calibration, MLP", "test ECE on digits minus the 95% quantile of a calibrated control's ECE",
        0.0, BELOW, "the noise floor measured on a control: labels drawn from the model's own probabilities, same images"),
}

# -- memory (C5) -----------------------------------------------------------------------------------------------------

CRITERIA["memory"] = {}

# -- locality (C8) ---------------------------------------------------------------------------------------------------

CRITERIA["locality"] = {}

# -- ensemble (C9) ---------------------------------------------------------------------------------------------------

CRITERIA["ensemble"] = {}

# -- vision (C14) ----------------------------------------------------------------------------------------------------

CRITERIA["vision"] = {
    "vit_nll_below_linear": Criterion(
        "C14", "patches (ViT on digits)", "softmax regression's test NLL minus the ViT's, nats per image", 0.0, ABOVE,
        "the linear rung on the same pixels, each arm with its own tuned learning rate: a patch model that carries "
        "the machinery to images must estimate P(class | image) better than a linear function of the pixels"),
    "order_drop_fixed": Criterion(
        "C14", "patch order", "ViT test accuracy, unpermuted minus one fixed patch permutation", 0.0, ABOVE,
        "the control's drop: a ViT without positions is exactly invariant to patch order (checked exactly), so any "
        "drop is the positions' use"),
    "order_drop_random": Criterion(
        "C14", "patch order", "ViT test accuracy, unpermuted minus a random patch permutation per image", 0.0, ABOVE,
        "the control's drop: a ViT without positions is exactly invariant to patch order (checked exactly), so any "
        "drop is the positions' use"),
    "grounding_gain": Criterion(
        "C14", "cross-attention grounding", "grounding score minus uniform attention's share of the object", 0.0, ABOVE,
        "the chance level: uniform attention puts exactly |object patches| / P on the named object"),
    "vit_ece_excess": Criterion(
        "C2", "calibration (C2, ViT)", "ViT test ECE on digits minus the 95% quantile of a calibrated control's ECE",
        0.0, BELOW, "the noise floor measured on a control: labels drawn from the model's own probabilities, same images"),
}


def criterion(experiment: str, name: str) -> Criterion:
    try:
        return CRITERIA[experiment][name]
    except KeyError:
        raise InvalidValue(f"no criterion {name!r} for experiment {experiment!r} in experiments/criteria.py") from None
