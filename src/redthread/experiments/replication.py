"""A full run of one experiment: two independent seed sets, and for a comparative claim three training
budgets, merged into one report whose verdicts say where they replicate.

    report = run_experiment("depth", quick=False, seed=0)

    for budget in module.BUDGETS (half, one and twice the training; (1,) if the module has none):
        for offset in SEED_SETS (0 and 100):          # disjoint seeds, fresh initialisations and data
            run = module.run(seed=seed + offset, budget=budget)
    each check, per budget:  replicate(set A's verdict, set B's)   holds / does not hold only if both agree
    each check, overall:     across_budgets(per-budget verdicts)   holds only if it holds at every budget

The merged report keeps the first set's figures, tables and numbers at budget 1 (the others' numbers
go to report.json under `runs`), every set's measurement of every check, the tuning picks of every
run, and the criteria's history (experiments/history.py). --quick runs one set at budget 1 and is a
smoke test: its report carries no verdict.
"""

from __future__ import annotations

import inspect

import torch

from redthread.experiments import load
from redthread.experiments.history import criteria_commit, history_of
from redthread.experiments.report import Report
from redthread.experiments.stats import SEED_SETS, TUNING_OFFSET, across_budgets, replicate, run_seeds


def budgets_of(module) -> tuple[float, ...]:
    return tuple(getattr(module, "BUDGETS", (1.0,)))


def run_once(module, quick: bool, seed: int, budget: float, progress=None) -> Report:
    torch.manual_seed(seed)
    kwargs = {"budget": budget} if "budget" in inspect.signature(module.run).parameters else {}
    report = module.run(quick=quick, seed=seed, progress=progress, **kwargs)
    report.settle()
    return report


def run_experiment(name: str, quick: bool, seed: int, progress=None) -> Report:
    module = load(name)
    if quick:
        report = run_once(module, True, seed, 1.0, progress)
    else:
        budgets = budgets_of(module)
        plan = [(b, seed + offset) for b in budgets for offset in SEED_SETS]
        runs: dict[tuple[float, int], Report] = {}
        for i, (b, s) in enumerate(plan):
            part = _Part(progress, i, len(plan))
            runs[b, s] = run_once(module, False, s, b, part)
        report = merge(runs, budgets, [seed + o for o in SEED_SETS])
    if hasattr(module, "conclude"):  # what the module says of its final verdicts, both sets and budgets merged
        module.conclude(report)
    report.plan = preregistration(module, quick, seed)
    report.history = history_of(name)
    report.criteria_commit = criteria_commit(name)
    return report


def merge(runs: dict[tuple[float, int], Report], budgets: tuple[float, ...], set_seeds: list[int]) -> Report:
    """One report from the runs (budget, first seed of a set) -> Report; see the module's docstring."""
    main = runs[1.0 if 1.0 in budgets else budgets[0], set_seeds[0]]
    if main.skipped:
        return main
    for check in main.checks:
        per_budget = {}
        for b in budgets:
            sets = [_named(runs[b, s], check.name).sets[0] for s in set_seeds]
            per_budget[b] = {"sets": sets, "verdict": replicate(*(m.verdict for m in sets))}
        check.sets = per_budget[1.0 if 1.0 in budgets else budgets[0]]["sets"]
        check.verdict = across_budgets([v["verdict"] for v in per_budget.values()])
        if len(budgets) > 1:
            check.budgets = {f"{b:g}": {"sets": [m.to_json() for m in v["sets"]], "verdict": v["verdict"]}
                             for b, v in per_budget.items()}
    main.tunings = [{**t, "budget": b, "set_seed": s} for (b, s), r in runs.items() for t in r.tunings]
    main.numbers["runs"] = [{"budget": b, "set_seed": s, "numbers": r.numbers} for (b, s), r in runs.items()
                            if r is not main]
    main.replication = _summary(main, budgets, set_seeds)
    return main


def preregistration(module, quick: bool, seed: int) -> dict:
    """What the module declared before running, as the report prints it."""
    plan = {}
    if getattr(module, "HYPOTHESIS", None):
        plan["hypothesis"] = module.HYPOTHESIS
    if quick:
        plan["seeds"] = f"{run_seeds(seed, True)} (one set: a smoke test)"
    else:
        plan["seeds"] = (f"set A {run_seeds(seed + SEED_SETS[0], False)}, set B {run_seeds(seed + SEED_SETS[1], False)}; "
                         f"tuning on seeds {seed + SEED_SETS[0] + TUNING_OFFSET} and {seed + SEED_SETS[1] + TUNING_OFFSET}")
    if hasattr(module, "BUDGET"):
        plan["budget"] = ", ".join(f"{k} {v}" for k, v in module.BUDGET.items()) or "none"
    if len(budgets_of(module)) > 1:
        plan["budgets"] = ", ".join(f"×{b:g}" for b in budgets_of(module)) + " of the training budget"
    if hasattr(module, "GRID"):
        plan["tuning grid"] = ("; ".join(f"{k}: {', '.join(f'{x:g}' for x in v)}" for k, v in module.GRID.items())
                               + " (extended past an edge pick, at most twice)") if module.GRID else "nothing tuned"
    return plan


def _named(report: Report, name: str):
    for c in report.checks:
        if c.name == name:
            return c
    raise KeyError(f"run of {report.name} has no check {name!r}")


def _summary(report: Report, budgets: tuple[float, ...], set_seeds: list[int]) -> list[str]:
    lines = [f"Two independent seed sets: A starts at seed {set_seeds[0]}, B at seed {set_seeds[1]} (disjoint seeds, "
             "fresh initialisations and data draws; each set tuned on its own seed that enters no verdict). A check "
             "holds or does not hold only where both sets reach that verdict."]
    if all(len({m.estimate.mean for m in c.sets}) == 1 and len({m.estimate.interval and tuple(m.estimate.interval)
                                                                for m in c.sets}) == 1 for c in report.checks):
        lines[0] += (" Here both sets measured exactly the same values: nothing in this experiment depends on the seed "
                     "(a pretrained model, fixed items, exact quantities), so their agreement is no replication; "
                     "the intervals are over its items, not over seeds.")
    if len(budgets) > 1:
        lines[0] += (f" A comparative claim is measured at {', '.join(f'{b:g}' for b in budgets)} times the training "
                     "budget and holds only where it holds at every budget.")
        lines += ["", "| check | " + " | ".join(f"budget ×{b:g}" for b in budgets) + " | verdict |",
                  "|---|" + "---|" * len(budgets) + "---|"]
        for c in report.checks:
            lines.append(f"| {c.name} | " + " | ".join(
                " / ".join(m["verdict"] for m in c.budgets[f"{b:g}"]["sets"]) for b in budgets) + f" | {c.verdict} |")
    return lines


class _Part:
    """Progress of one run of several: update(fraction) of the run becomes a fraction of the whole."""

    def __init__(self, progress, index: int, total: int):
        self.progress, self.index, self.total = progress, index, total

    def update(self, fraction: float, text: str = "") -> None:
        if self.progress is not None:
            self.progress.update((self.index + min(max(fraction, 0.0), 1.0)) / self.total,
                                 f"run {self.index + 1}/{self.total} {text}".strip())
