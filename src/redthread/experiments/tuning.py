"""Tuning a setting (a learning rate) on validation, on seeds that never enter a verdict, with a grid
that extends itself until the pick is interior.

    tuned = tune(lambda lr: val_nll(train(lr, seed=tuning_seed(seed))), grid=(1e-3, 3e-3, 1e-2))
    report.tuned("lr, sinusoidal", tuned)      # grid, scores, pick and whether it is still on an edge

A pick on the grid's edge says the best value may lie beyond it, so the arm was not given its best
setting: the grid grows by one step past that edge (the grid's own ratio, or difference for an
arithmetic grid) and the new value is scored, up to `extend` times. A pick still on an edge after
that is flagged (`edge`), and the report makes that run's verdicts inconclusive.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from redthread.errors import InvalidValue


@dataclass(frozen=True)
class Tuned:
    pick: float
    grid: list[float]  # every value scored, in increasing order
    scores: list[float]  # validation score of each (lower is better)
    edge: bool  # the pick is still the smallest or largest value scored


def tune(score: Callable[[float], float], grid: Sequence[float], extend: int = 2) -> Tuned:
    """The value of `grid` with the lowest score(value), extending the grid past an edge pick up to `extend` times."""
    values = sorted(float(v) for v in grid)
    if len(values) < 2 or len(set(values)) != len(values):
        raise InvalidValue(f"a tuning grid needs at least two distinct values, got {list(grid)}")
    scores = {v: float(score(v)) for v in values}
    for _ in range(extend):
        best = min(scores, key=scores.get)
        if best not in (values[0], values[-1]):
            break
        values.append(_beyond(values, upper=best == values[-1]))
        values.sort()
        new = values[-1] if best == values[-2] else values[0]
        scores[new] = float(score(new))
    best = min(scores, key=scores.get)
    return Tuned(best, values, [scores[v] for v in values], best in (values[0], values[-1]))


def _beyond(values: list[float], upper: bool) -> float:
    """One step past an edge of a sorted grid: geometric when every value is positive, else arithmetic."""
    a, b = (values[-2], values[-1]) if upper else (values[1], values[0])
    if all(v > 0 for v in values):
        return b * (b / a)
    return b + (b - a)
