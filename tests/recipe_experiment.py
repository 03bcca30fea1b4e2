"""The experiment of docs/architecture.md's recipe, registered by tests/test_recipes.py: least squares
recovers the slope of y = 2x + noise (claim C1), decided on a criterion stated before the fit."""

from __future__ import annotations

import torch

from redthread.experiments.report import Report
from redthread.models.regression import LinearRegression

NAME, CLAIMS = "toy-claim", "C1"


def run(quick: bool = False, seed: int = 0, progress=None) -> Report:
    report = Report(NAME, CLAIMS, setup="y = 2x + N(0, 0.1^2), 200 points, 3 seeds",
                    criterion="the fitted slope is within 0.05 of 2 in every seed", quick=quick)
    slopes = []
    for s in range(seed, seed + 3):
        g = torch.Generator().manual_seed(s)
        x = torch.randn(200, 1, generator=g, dtype=torch.float64)
        y = 2 * x[:, 0] + 0.1 * torch.randn(200, generator=g, dtype=torch.float64)
        slopes.append(float(LinearRegression().fit(x, y).coef_[0]))
    report.number("slopes", slopes)
    worst = max(abs(a - 2) for a in slopes)
    report.decide(worst < 0.05, "|slope - 2| < 0.05 in every seed", f"{worst:.4f} at worst")
    return report
