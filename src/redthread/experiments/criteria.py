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

S_KEYS_SCALING, N_DRAWS_SCALING = 32, 20000  # keys per softmax, draws of q and k per d_k (experiments/scaling.py)
UNIFORM_JACOBIAN = (S_KEYS_SCALING - 1) ** 0.5 / S_KEYS_SCALING  # ‖diag(p) − p pᵀ‖_F at p uniform over S keys
CRITERIA["scaling"] = {
    "variance": Criterion(
        "C7", "variance", "largest |Var(q·k) / d_k − 1| over d_k ∈ {4, …, 1024}, q, k ~ N(0, I), 20000 draws per seed",
        4 * (3.5 / N_DRAWS_SCALING) ** 0.5, BELOW,
        "four standard errors of a sample variance: for Gaussian q, k, Var((q·k)²) = 2d_k² + 6d_k, so Var(q·k) / d_k "
        "from N = 20000 draws has standard error √((2 + 6/d_k) / N) ≤ 0.0132 (at d_k = 4); a larger deviation means "
        "Var(q·k) ≠ d_k"),
    "one_hot": Criterion(
        "C7", "saturation", "mean largest softmax weight over 32 keys without the scale, d_k = 1024",
        (1 + 1 / S_KEYS_SCALING) / 2, ABOVE,
        "half-way between the uniform softmax's largest weight (1/32) and one-hot (1): closer to one-hot"),
    "jacobian_unscaled": Criterion(
        "C7", "saturation", "mean ‖∂softmax/∂scores‖_F without the scale, d_k = 1024",
        UNIFORM_JACOBIAN / 2, BELOW,
        "half the uniform softmax's Jacobian norm √(S − 1)/S = 0.174 (S = 32); a one-hot softmax's is 0: closer to "
        "a vanished gradient than to the uniform's"),
    "jacobian_scaled": Criterion(
        "C7", "saturation", "mean ‖∂softmax/∂scores‖_F with the scale 1/√d_k, d_k = 1024",
        UNIFORM_JACOBIAN / 2, ABOVE,
        "the same half-way point between one-hot (0) and uniform (0.174): with the scale the gradient through the "
        "softmax stays nearer the uniform's"),
    "scaled_trains": Criterion(
        "C7", "trainability", "fraction of the gap from log 16 (no attention) to the Bayes limit the scaled model "
        "closes on the test split", 0.5, ABOVE,
        "half-way between the best model without attention (0) and the Bayes limit (1): the scaled model is trainable"),
    "gap": Criterion(
        "C7", "trainability", "test NLL without the scale minus with, each arm at its own learning rate picked on "
        "validation, nats/token", 0.0, ABOVE,
        "any positive gap: the claim is that the scale helps (the 95% interval over seeds carries the seed-to-seed "
        "noise of training)"),
}

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

CRITERIA["depth"] = {
    "residual_trains": Criterion(
        "C11", "residuals", "fraction of the unigram-to-Bayes gap the deep residual + LayerNorm stack closes on the "
        "test split", 0.5, ABOVE,
        "half-way between the unigram NLL (no context used: 0) and the Bayes limit (1): the deep stack is trainable"),
    "residual_gap": Criterion(
        "C11", "residuals", "test NLL without residual connections (LayerNorm only) minus with (residual + LayerNorm), "
        "same depth, each arm at its own learning rate picked on validation, nats/token", 0.0, ABOVE,
        "any positive gap: the claim is that residual connections help (the 95% interval over seeds carries the "
        "seed-to-seed noise of training)"),
    "identity_residual": Criterion(
        "C11", "residuals", "share of the variance of the last block's output vectors explained by the current token, "
        "residual + LayerNorm, at initialisation", 0.5, ABOVE,
        "half-way between total collapse (0: nothing of the token is left) and vectors that are a function of the "
        "token alone (1): the token's identity reaches the head"),
    "identity_no_residual": Criterion(
        "C11", "residuals", "the same share without residual connections (LayerNorm only), at initialisation",
        0.5, BELOW,
        "the same half-way point: without residual connections the token's identity is mostly lost on the way up "
        "(rank collapse, Dong et al. 2021)"),
    "layernorm_gap": Criterion(
        "C11", "LayerNorm", "test NLL without LayerNorm (residual only) minus with (residual + LayerNorm) in the "
        "stress regime (deeper, wider, no gradient clipping, larger learning rates in the sweep), each arm at its own "
        "learning rate picked on validation, nats/token", 0.0, ABOVE,
        "any positive gap: the claim is that LayerNorm helps (the 95% interval over seeds carries the seed-to-seed "
        "noise of training)"),
}

# -- sampling (C12) --------------------------------------------------------------------------------------------------

CRITERIA["sampling"] = {}

# -- calibration (C12) -----------------------------------------------------------------------------------------------

CRITERIA["calibration"] = {}

# -- coreference (C13) -----------------------------------------------------------------------------------------------

CRITERIA["coreference"] = {}

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
