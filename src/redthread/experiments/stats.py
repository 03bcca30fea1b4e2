"""A measurement over seeds as a mean with a 95% interval, and a verdict with three outcomes.

A claim is decided by where the interval lies against a threshold fixed in advance
(`experiments/criteria.py`):

    holds          the whole interval is on the side the claim needs
    does not hold  the whole interval is on the other side
    inconclusive   the interval straddles the threshold: the seeds do not decide it

The interval is Student's t for the mean of n independent seeds, mean ± t(0.975, n - 1) s / sqrt(n):
with few seeds it is wide, and a verdict that rests on one lucky seed comes out inconclusive. An
exact quantity (no randomness: a bound, a count) has no interval and is compared as it is.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

from redthread.errors import InvalidValue

HOLDS, FAILS, INCONCLUSIVE = "holds", "does not hold", "inconclusive"
FULL_SEEDS, QUICK_SEEDS = 5, 2  # seeds of every random measurement: a full run, and --quick
VERDICTS = (HOLDS, FAILS, INCONCLUSIVE)
ABOVE, BELOW = "above", "below"  # which side of the threshold the claim needs the value on

# t(0.975, df) for df = 1 .. 30 (two-sided 95%); beyond, the normal quantile is within 2%
T_975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
         2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042)


@dataclass(frozen=True)
class Estimate:
    """A mean over n seeds with its 95% interval; lo = hi = None for an exact quantity (n = 0 seeds)."""

    mean: float
    lo: float | None
    hi: float | None
    n: int

    @property
    def interval(self) -> list[float] | None:
        return None if self.lo is None else [self.lo, self.hi]

    def __str__(self) -> str:
        if self.lo is None:
            return f"{self.mean:.4g}"
        return f"{self.mean:.4g} [{self.lo:.4g}, {self.hi:.4g}] ({self.n} seeds)"


def run_seeds(seed: int, quick: bool) -> list[int]:
    """The seeds an experiment measures over: seed, seed + 1, ... (FULL_SEEDS, or QUICK_SEEDS with --quick)."""
    return [seed + i for i in range(QUICK_SEEDS if quick else FULL_SEEDS)]


def t_quantile(df: int) -> float:
    return T_975[df - 1] if df <= len(T_975) else NormalDist().inv_cdf(0.975)


def estimate(values) -> Estimate:
    """Mean and 95% t-interval of per-seed values; a single number (not a list) is an exact quantity."""
    if isinstance(values, (int, float)):
        return Estimate(float(values), None, None, 0)
    values = [float(v) for v in values]
    if not values or not all(math.isfinite(v) for v in values):
        raise InvalidValue(f"an estimate needs finite values, got {values}")
    n, mean = len(values), sum(values) / len(values)
    if n == 1:  # one seed: no spread to measure, so nothing is decided on it
        return Estimate(mean, -math.inf, math.inf, 1)
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    half = t_quantile(n - 1) * sd / math.sqrt(n)
    return Estimate(mean, mean - half, mean + half, n)


def verdict(est: Estimate, threshold: float, direction: str) -> str:
    """holds / does not hold / inconclusive: where the interval (or the exact value) lies against the threshold."""
    if direction not in (ABOVE, BELOW):
        raise InvalidValue(f"direction must be {ABOVE} or {BELOW}, got {direction!r}")
    lo, hi = (est.mean, est.mean) if est.lo is None else (est.lo, est.hi)
    if direction == ABOVE:
        return HOLDS if lo > threshold else FAILS if hi <= threshold else INCONCLUSIVE
    return HOLDS if hi < threshold else FAILS if lo >= threshold else INCONCLUSIVE


def combine(verdicts) -> str:
    """Several checks, one verdict that hides none: any part that fails fails it; then any undecided one leaves it open."""
    verdicts = list(verdicts)
    if FAILS in verdicts:
        return FAILS
    if INCONCLUSIVE in verdicts:
        return INCONCLUSIVE
    return HOLDS
