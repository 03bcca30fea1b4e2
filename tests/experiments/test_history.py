"""The pre-registration rule: no criterion changes without a history row, no floor is 0 unless the
claim is an exact identity, every floor says why, and the registered fingerprints never move."""

from __future__ import annotations

import inspect
import re
import subprocess
from pathlib import Path

import pytest

from redthread.experiments import available, load
from redthread.experiments.criteria import CRITERIA, fingerprint
from redthread.experiments.history import HISTORY, REGISTERED, criteria_commit, recorded_fingerprint

HISTORY_FILE = Path(__file__).parents[2] / "src" / "redthread" / "experiments" / "history.py"


@pytest.mark.parametrize("name", available())
def test_no_criterion_changes_without_a_history_row(name):
    assert fingerprint(CRITERIA[name]) == recorded_fingerprint(name), (
        f"the criteria of {name} changed (fingerprint {fingerprint(CRITERIA[name])}) without a row in "
        f"experiments/history.py recording the change, the result before it and why")


@pytest.mark.parametrize("name", available())
def test_each_experiment_declares_its_plan_and_floors(name):
    module = load(name)
    assert module.CRITERIA, name
    assert isinstance(module.HYPOTHESIS, str) and len(module.HYPOTHESIS) > 40, f"{name}: HYPOTHESIS"
    assert isinstance(module.BUDGET, dict) and isinstance(module.GRID, dict), f"{name}: BUDGET and GRID are dicts"
    assert all(len(v) >= 2 for v in module.GRID.values()), f"{name}: a tuning grid needs two values or more"
    if hasattr(module, "BUDGETS"):  # a comparative claim: half, one and twice the training budget
        assert tuple(module.BUDGETS) == (0.5, 1.0, 2.0) and "budget" in inspect.signature(module.run).parameters
    for key, c in module.CRITERIA.items():
        assert c.floor != 0 or c.identity, f"{name}.{key}: a floor of 0 is only for an exact identity"
        assert len(c.why) > 20, f"{name}.{key}: its floor's reason is missing"


def test_history_rows_are_complete():
    for name, rows in HISTORY.items():
        assert name in available(), name
        for row in rows:
            assert row.date and row.change and row.before and row.reason, (name, row)


@pytest.mark.slow  # asks git for the history
def test_the_fingerprint_follows_a_change():
    c = next(iter(CRITERIA["scaling"].items()))
    changed = {**CRITERIA["scaling"], c[0]: type(c[1])(**{**c[1].__dict__, "floor": c[1].floor * 2})}
    assert fingerprint(changed) != fingerprint(CRITERIA["scaling"])
    reworded = {**CRITERIA["scaling"], c[0]: type(c[1])(**{**c[1].__dict__, "why": c[1].why + " (reworded)"})}
    assert fingerprint(reworded) == fingerprint(CRITERIA["scaling"])
    assert "fingerprint" in criteria_commit("scaling")


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=HISTORY_FILE.parent, capture_output=True, text=True, timeout=30).stdout


@pytest.mark.slow  # asks git for the history
def test_registered_fingerprints_never_change_in_git():
    first = _git("log", "--format=%H", "--reverse", "--", HISTORY_FILE.name).split()
    if not first:
        pytest.skip("no git history of experiments/history.py here (an install, or not committed yet)")
    text = _git("show", f"{first[0]}:src/redthread/experiments/history.py")
    block = text.split("REGISTERED = {", 1)[1].split("}", 1)[0]
    then = dict(re.findall(r'"([a-z-]+)": "([0-9a-f]{12})"', block))
    assert then, "the first committed history.py has no REGISTERED fingerprints"
    for name, fp in then.items():
        assert REGISTERED.get(name) == fp, f"REGISTERED[{name!r}] changed: add a history row instead"
