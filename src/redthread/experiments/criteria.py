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

_RECALL_CHANCE = 1 / 16  # RecallSource(vocab_size=16): s_(t-L) is uniform and independent of the tokens between
_ATTENTION, _RECURRENT = "attention reaches any distance (C6)", "recurrent models lose long-range recall (C3, C5)"
CRITERIA["long-range"] = {
    "transformer_longest": Criterion(
        "C6", _ATTENTION, "Transformer's test recall accuracy at the longest distance", _RECALL_CHANCE, ABOVE,
        "chance, 1/V for V = 16: a model that has not reached back L positions names s_(t-L) with probability 1/V"),
    **{f"{m.lower()}_drop": Criterion(
        "C3", _RECURRENT, f"{m}'s test recall accuracy at the shortest distance minus at the longest", 0.0, ABOVE,
        "zero: the claim is that recall gets harder with distance, so any fall beyond seed noise")
       for m in ("RNN", "LSTM")},
    **{f"{m.lower()}_gap": Criterion(
        "C3", _RECURRENT, f"Transformer's minus {m}'s test recall accuracy at the longest distance (same seed)", 0.0,
        ABOVE, "zero: the claim is that the distance the Transformer bridges defeats the recurrent model, each tuned "
        "on validation")
       for m in ("RNN", "LSTM")},
}

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

CRITERIA["classification"] = {}

# -- memory (C5) -----------------------------------------------------------------------------------------------------

_STATE, _LOAD = "state size", "load"
CRITERIA["memory"] = {}
for _m in ("RNN", "LSTM", "GRU"):
    CRITERIA["memory"].update({
        f"{_m.lower()}_state": Criterion(
            "C5", _STATE, f"{_m}'s test excess NLL at the smallest state minus at the largest (highest load), nats",
            0.0, ABOVE, "zero: the claim is that a smaller state loses more of the past, so any rise beyond seed noise"),
        f"{_m.lower()}_state_vs_transformer": Criterion(
            "C5", _STATE, f"that rise for the {_m} minus the same rise for the parameter-matched Transformers, nats",
            0.0, ABOVE, "zero: a Transformer keeps its whole window, so shrinking it should cost it less than "
            "shrinking a recurrent state; without this control the rise could be a plain effect of model size"),
        f"{_m.lower()}_load": Criterion(
            "C5", _LOAD, f"{_m}'s test excess NLL at the highest load minus at the lowest (smallest state), nats",
            0.0, ABOVE, "zero: the claim is that a fixed state loses detail as more must be held, so any rise beyond "
            "seed noise"),
        f"{_m.lower()}_load_vs_transformer": Criterion(
            "C5", _LOAD, f"that rise for the {_m} minus the same rise for the matched Transformer, nats",
            0.0, ABOVE, "zero: the Transformer's window holds every item, so a harder task alone should raise its "
            "excess less; without this control the rise could be the task's difficulty, not the state"),
    })

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
