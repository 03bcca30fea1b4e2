"""The pre-registered criteria: each experiment declares its own, in one place in its module
(`CRITERIA`, beside `HYPOTHESIS`, `BUDGET` and `GRID`), before anything runs.

    CRITERIA = {
        "gap": Criterion("C7", "trainability", "test NLL without 1/sqrt(d_k) minus with, nats", 0.1, ABOVE,
                         "5% of the gap from log 16 (no attention) to the Bayes limit: the least that counts"),
    }

A criterion's `floor` is the smallest effect size of interest, and `why` says where it comes from: a
theoretical bound, a chance level, a noise floor measured on a control, or a fraction of a known
gap. It is never 0 unless the claim is an exact identity (`identity=True`). `direction` is the side
of the floor the claim needs: ABOVE, BELOW, or WITHIN ±floor (a claim of no difference, decided by
two one-sided tests). `bounds` is the quantity's known range (an accuracy's [0, 1]).

A criterion changed after a result had been seen is a row of `experiments/history.py`, with the
result that came before; `fingerprint` is what its test compares (tests/experiments/test_history.py).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

from redthread.errors import InvalidValue
from redthread.experiments.stats import ABOVE, BELOW, WITHIN

__all__ = ["Criterion", "CRITERIA", "criterion", "fingerprint", "ABOVE", "BELOW", "WITHIN"]


@dataclass(frozen=True)
class Criterion:
    claim: str  # the claim this check tests: "C7"
    part: str  # which part of the claim, for a claim with several ("residuals", "LayerNorm"); "" for one part
    what: str  # the quantity measured, with its unit
    floor: float  # the smallest effect size of interest: the threshold the interval must clear
    direction: str  # ABOVE, BELOW or WITHIN: where the claim needs the value
    why: str  # why this floor: a bound, a chance level, a control's noise floor, a fraction of a known gap
    identity: bool = False  # the claim is an exact identity: the only kind whose floor may be 0
    bounds: tuple[float, float] | None = None  # the quantity's known range; intervals are clipped to it

    def __post_init__(self):
        if self.direction not in (ABOVE, BELOW, WITHIN):
            raise InvalidValue(f"direction must be {ABOVE}, {BELOW} or {WITHIN}, got {self.direction!r}")
        if self.floor == 0 and not self.identity:
            raise InvalidValue(f"a floor of 0 is only for an exact identity: {self.what}")
        if not self.why.strip():
            raise InvalidValue(f"a criterion needs its reason: {self.what}")


class _Registry(dict):
    """experiment -> its CRITERIA, read from the experiment's module the first time it is asked for."""

    def __missing__(self, experiment: str) -> dict[str, Criterion]:
        from redthread.experiments import load

        found = getattr(load(experiment), "CRITERIA", None)
        if found is None:
            raise KeyError(experiment)
        self[experiment] = found
        return found


CRITERIA: dict[str, dict[str, Criterion]] = _Registry()


def criterion(experiment: str, name: str) -> Criterion:
    try:
        return CRITERIA[experiment][name]
    except (KeyError, InvalidValue):
        raise InvalidValue(f"no criterion {name!r} for experiment {experiment!r} (its module's CRITERIA)") from None


def fingerprint(criteria: dict[str, Criterion]) -> str:
    """12 hex digits that change whenever a check is added, removed or changes its claim, part, quantity, floor or
    direction (not when only the words of its reason change)."""
    rows = sorted([name, c.claim, c.part, c.what, repr(float(c.floor)), c.direction] for name, c in criteria.items())
    return hashlib.sha256(json.dumps(rows).encode()).hexdigest()[:12]
