"""A measurement as an estimate with a 95% interval, a verdict with three outcomes, and the
rules that turn two independent seed sets into one replicated verdict.

A check compares an estimate with a threshold, the smallest effect size of interest, fixed in
advance (each experiment's `CRITERIA`). At the 2.5% level on each side (a two-sided 95% interval):

    holds          the whole interval is on the side the claim needs
    does not hold  the whole interval is on the other side (Holm-corrected over the experiment's checks)
    inconclusive   the interval straddles the threshold: the seeds do not decide it

Directions: ABOVE or BELOW the threshold, or WITHIN ±threshold for a claim of "no difference"
(two one-sided tests, TOST: the interval inside the band holds, wholly outside it does not hold).

Intervals:
    mean over seeds      Student's t, mean ± t(0.975, n - 1) s / √n, the quantile at every n
                         (scipy); clipped to the quantity's known range where it has one
    a proportion k / n   Wilson's score interval (default) or Clopper–Pearson's exact one
    an exact quantity    no interval: a bound, a count, a property with nothing random in it

Replication: a full run measures two disjoint seed sets (`SEED_SETS`); a check holds or does not
hold only where both sets reach that verdict, and is `NOT_REPLICATED` otherwise.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from scipy import stats as scipy_stats

from redthread.errors import InvalidValue

HOLDS, FAILS, INCONCLUSIVE = "holds", "does not hold", "inconclusive"
NOT_REPLICATED = "inconclusive (does not replicate)"
EDGE = "inconclusive (tuning pick on the grid's edge)"
SMOKE = "smoke"  # what a --quick report prints where a verdict would stand: it carries none
VERDICTS = (HOLDS, FAILS, INCONCLUSIVE)
ABOVE, BELOW, WITHIN = "above", "below", "within"  # where the claim needs the value: > t, < t, or inside ±t
ALPHA = 0.025  # each one-sided test; two of them make the 95% interval

FULL_SEEDS, QUICK_SEEDS = 5, 2  # seeds per set: a full run, and --quick
SEED_SETS = (0, 100)  # a full run's two independent seed sets start at seed + 0 and seed + 100
TUNING_OFFSET = 50  # tuning (a learning-rate sweep) runs on seed + 50: a seed no verdict is measured on


def run_seeds(seed: int, quick: bool) -> list[int]:
    """The seeds of one set, starting at `seed`: FULL_SEEDS of them, or QUICK_SEEDS with --quick."""
    return [seed + i for i in range(QUICK_SEEDS if quick else FULL_SEEDS)]


def tuning_seed(seed: int) -> int:
    """The seed a set's settings are tuned on; it never enters that set's (or the other set's) verdict."""
    return seed + TUNING_OFFSET


def t_quantile(df: int, level: float = 1 - ALPHA) -> float:
    return float(scipy_stats.t.ppf(level, df))


@dataclass(frozen=True)
class Estimate:
    """A value with its 95% interval and the one-sided tests behind it.

    kind: "t" (a mean over n seeds, sd their standard deviation), "wilson" or "clopper-pearson"
    (k successes of n trials), or "exact" (no randomness: lo = hi = None)."""

    mean: float
    lo: float | None
    hi: float | None
    n: int
    kind: str = "exact"
    sd: float = 0.0
    successes: int = 0

    @property
    def interval(self) -> list[float] | None:
        return None if self.lo is None else [self.lo, self.hi]

    def p_greater(self, x: float) -> float:
        """One-sided p-value of H0: the true value <= x (small when the data say it is above x)."""
        if self.kind == "exact":
            return 0.0 if self.mean > x else 1.0
        if self.kind == "t":
            if self.n < 2:
                return 1.0
            if self.sd == 0:
                return 0.0 if self.mean > x else 1.0
            return float(scipy_stats.t.sf((self.mean - x) / (self.sd / math.sqrt(self.n)), self.n - 1))
        if x <= 0:
            return 0.0 if self.successes > 0 else 1.0
        if x >= 1:
            return 1.0
        if self.kind == "wilson":  # the score test the Wilson interval inverts
            return float(scipy_stats.norm.sf((self.mean - x) / math.sqrt(x * (1 - x) / self.n)))
        return float(scipy_stats.binom.sf(self.successes - 1, self.n, x))  # Clopper-Pearson: P(K >= k | x)

    def p_less(self, x: float) -> float:
        """One-sided p-value of H0: the true value >= x."""
        if self.kind == "exact":
            return 0.0 if self.mean < x else 1.0
        if self.kind == "t":
            if self.n < 2:
                return 1.0
            if self.sd == 0:
                return 0.0 if self.mean < x else 1.0
            return float(scipy_stats.t.cdf((self.mean - x) / (self.sd / math.sqrt(self.n)), self.n - 1))
        if x >= 1:
            return 0.0 if self.successes < self.n else 1.0
        if x <= 0:
            return 1.0
        if self.kind == "wilson":
            return float(scipy_stats.norm.cdf((self.mean - x) / math.sqrt(x * (1 - x) / self.n)))
        return float(scipy_stats.binom.cdf(self.successes, self.n, x))

    def __str__(self) -> str:
        if self.lo is None:
            return f"{self.mean:.4g}"
        unit = "values" if self.kind == "t" else "trials"  # values: seeds, or items where an experiment says so
        return f"{self.mean:.4g} [{self.lo:.4g}, {self.hi:.4g}] ({self.n} {unit})"


def estimate(values, bounds: tuple[float, float] | None = None) -> Estimate:
    """Mean and 95% t-interval of per-seed values; a single number (not a list) is an exact quantity.
    bounds: the quantity's known range (an accuracy's [0, 1]); the interval is clipped to it, which keeps
    its coverage (the true value is in the range)."""
    if isinstance(values, (int, float)):
        return Estimate(float(values), None, None, 0)
    values = [float(v) for v in values]
    if not values or not all(math.isfinite(v) for v in values):
        raise InvalidValue(f"an estimate needs finite values, got {values}")
    n, mean = len(values), sum(values) / len(values)
    if n == 1:  # one seed: no spread to measure, so nothing is decided on it
        return Estimate(mean, -math.inf, math.inf, 1, "t")
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    half = t_quantile(n - 1) * sd / math.sqrt(n)
    lo, hi = mean - half, mean + half
    if bounds is not None:
        lo, hi = max(lo, bounds[0]), min(hi, bounds[1])
    return Estimate(mean, lo, hi, n, "t", sd)


def proportion(successes: int, trials: int, method: str = "wilson") -> Estimate:
    """k successes in n independent 0/1 trials: the share with Wilson's or Clopper-Pearson's 95% interval
    (never outside [0, 1], unlike a t-interval over 0/1 outcomes)."""
    if trials < 1 or not 0 <= successes <= trials:
        raise InvalidValue(f"a proportion needs 0 <= successes <= trials and trials >= 1, got {successes} of {trials}")
    if method not in ("wilson", "clopper-pearson"):
        raise InvalidValue(f"method must be wilson or clopper-pearson, got {method!r}")
    k, n = int(successes), int(trials)
    p = k / n
    if method == "wilson":
        z = scipy_stats.norm.ppf(1 - ALPHA)
        centre = (p + z * z / (2 * n)) / (1 + z * z / n)
        half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
        lo = 0.0 if k == 0 else max(0.0, centre - half)  # exact at the ends, where rounding would leave p outside
        hi = 1.0 if k == n else min(1.0, centre + half)
    else:
        lo = 0.0 if k == 0 else float(scipy_stats.beta.ppf(ALPHA, k, n - k + 1))
        hi = 1.0 if k == n else float(scipy_stats.beta.ppf(1 - ALPHA, k + 1, n - k))
    return Estimate(p, lo, hi, n, method, successes=k)


def p_holds(est: Estimate, threshold: float, direction: str) -> float:
    """The p-value against "the claim's side is not reached": small when the check holds."""
    if direction == ABOVE:
        return est.p_greater(threshold)
    if direction == BELOW:
        return est.p_less(threshold)
    if direction == WITHIN:  # TOST: both one-sided tests must reject
        return max(est.p_greater(-threshold), est.p_less(threshold))
    raise InvalidValue(f"direction must be {ABOVE}, {BELOW} or {WITHIN}, got {direction!r}")


def p_fails(est: Estimate, threshold: float, direction: str) -> float:
    """The p-value against "the claim's side may be reached": small when the check does not hold."""
    if direction == ABOVE:
        return est.p_less(threshold) if est.kind != "exact" else (0.0 if est.mean <= threshold else 1.0)
    if direction == BELOW:
        return est.p_greater(threshold) if est.kind != "exact" else (0.0 if est.mean >= threshold else 1.0)
    if direction == WITHIN:
        if est.kind == "exact":
            return 0.0 if abs(est.mean) >= threshold else 1.0
        return min(est.p_greater(threshold), est.p_less(-threshold))
    raise InvalidValue(f"direction must be {ABOVE}, {BELOW} or {WITHIN}, got {direction!r}")


def verdict(est: Estimate, threshold: float, direction: str, fail_alpha: float = ALPHA) -> str:
    """holds / does not hold / inconclusive for one check; fail_alpha is the level left to this check by a
    correction over several (holm)."""
    if p_holds(est, threshold, direction) <= ALPHA:
        return HOLDS
    if p_fails(est, threshold, direction) <= fail_alpha:
        return FAILS
    return INCONCLUSIVE


def holm(p_values: Sequence[float], alpha: float = ALPHA) -> list[bool]:
    """Holm's step-down correction: which of m hypotheses are rejected with the family-wise error kept at alpha.
    The smallest p is compared with alpha / m, the next with alpha / (m - 1), ..., stopping at the first that is not
    below its bar."""
    order = sorted(range(len(p_values)), key=lambda i: p_values[i])
    rejected = [False] * len(p_values)
    for rank, i in enumerate(order):
        if p_values[i] > alpha / (len(p_values) - rank):
            break
        rejected[i] = True
    return rejected


def holm_adjusted(p_values: Sequence[float]) -> list[float]:
    """Holm-adjusted p-values: p_(j) * (m - j + 1), made monotone, at most 1; rejected at alpha iff <= alpha."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted, running = [1.0] * m, 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted


def combine(verdicts) -> str:
    """Several checks, one verdict that hides none: any that fails fails it; then any undecided one leaves it open.
    Every check must hold for the whole to hold (an intersection-union test: no correction needed); a failure is
    already Holm-corrected at the check."""
    verdicts = list(verdicts)
    if FAILS in verdicts:
        return FAILS
    undecided = [v for v in verdicts if v != HOLDS]
    if undecided:
        return NOT_REPLICATED if all(v == NOT_REPLICATED for v in undecided) else (
            EDGE if all(v == EDGE for v in undecided) else INCONCLUSIVE)
    return HOLDS


def replicate(first: str, second: str) -> str:
    """Two independent seed sets' verdicts on one check: a verdict only where both reach it."""
    if first == second:
        return first
    return NOT_REPLICATED


def across_budgets(verdicts: Sequence[str]) -> str:
    """A comparative check at half, one and twice the training budget: it holds (or does not) only where it does at
    every budget; a verdict that moves with the budget leaves it inconclusive (the report states the dependence)."""
    verdicts = list(verdicts)
    return verdicts[0] if verdicts and all(v == verdicts[0] for v in verdicts) else INCONCLUSIVE


def is_inconclusive(v: str) -> bool:
    return v not in (HOLDS, FAILS)
