"""Shared checks for every experiment's quick run: a verdict, a report, and every number in its JSON."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

from redthread.commands.experiment import run_one
from redthread.experiments.report import SMOKE_LINE
from redthread.experiments.stats import EDGE, FAILS, HOLDS, SMOKE, across_budgets, combine, replicate


def flat_numbers(obj) -> list[float]:
    if isinstance(obj, bool):
        return []
    if isinstance(obj, (int, float)):
        return [float(obj)]
    if isinstance(obj, dict):
        return [x for v in obj.values() for x in flat_numbers(v)]
    if isinstance(obj, list):
        return [x for v in obj for x in flat_numbers(v)]
    return []


def table_numbers(markdown: str) -> list[float]:
    """Every number in the report's tables (rows starting with '|', header and rule lines excluded)."""
    out = []
    for line in markdown.splitlines():
        if not line.startswith("|") or set(line) <= set("|-: "):
            continue
        for cell in re.split(r"(?<!\\)\|", line)[1:-1]:
            cell = cell.strip()
            if re.fullmatch(r"-?\d+(\.\d+)?(e[-+]?\d+)?", cell):
                out.append(float(cell))
    return out


CHECK_FIELDS = {"name", "claim", "part", "what", "floor", "direction", "why", "sets", "verdict"}
SET_FIELDS = {"seeds", "value", "interval", "kind", "p_holds", "p_fails", "verdict"}


def assert_smoke(data: dict) -> None:
    """A --quick report: every check measured on one seed set, and no verdict anywhere."""
    assert data["quick"] is True and data["verdict"] == SMOKE
    assert all(v == SMOKE for v in data["parts"].values())
    for c in data["checks"]:
        assert CHECK_FIELDS <= set(c), f"check {c.get('name')} lacks {CHECK_FIELDS - set(c)}"
        assert c["verdict"] == SMOKE and len(c["sets"]) == 1 and SET_FIELDS <= set(c["sets"][0]), c
        m = c["sets"][0]
        if m["interval"] is not None and m["kind"] == "t":  # a measurement over seeds: at least two
            lo, hi = m["interval"]
            assert len(m["seeds"]) >= 2 and lo <= m["value"] <= hi, c


def assert_verdicts_are_computed(data: dict) -> None:
    """A full report: each set's verdict follows from its p-values (Holm over the run's checks for 'does not hold'),
    each check's from its sets' (and budgets'), each part's and the claim's from the checks (never asserting which
    outcome a run gives)."""
    parts: dict[str, list[str]] = {}
    for c in data["checks"]:
        assert CHECK_FIELDS <= set(c), f"check {c.get('name')} lacks {CHECK_FIELDS - set(c)}"
        assert len(c["sets"]) == 2, c
        for m in c["sets"]:
            if m["verdict"] == HOLDS:
                assert m["p_holds"] <= 0.025
            elif m["verdict"] == FAILS:
                assert m["p_fails"] <= 0.025
            else:
                assert m["p_holds"] > 0.025 or m["verdict"] == EDGE
        if c["budgets"]:
            per_budget = [b["verdict"] for b in c["budgets"].values()]
            assert all(b["verdict"] == replicate(*(m["verdict"] for m in b["sets"])) for b in c["budgets"].values())
            assert c["verdict"] == across_budgets(per_budget)
        else:
            assert c["verdict"] == replicate(*(m["verdict"] for m in c["sets"]))
        parts.setdefault(c["part"], []).append(c["verdict"])
    assert data["parts"] == {p: combine(v) for p, v in parts.items()}
    assert data["verdict"] == combine(data["parts"].values())


def flat_checks(data: dict) -> None:
    """For the tests' convenience: each check's first set's seeds, value and interval beside its own fields."""
    for c in data["checks"]:
        c.update({k: c["sets"][0][k] for k in ("seeds", "value", "interval")})


def assert_parts(report, data: dict, parts: dict[str, tuple[str, ...]]) -> None:
    """Each named check sits in its part, over at least two seeds with an interval; the report has exactly these parts."""
    by_name = {c.name: c for c in report.checks}
    for part, names in parts.items():
        for name in names:
            m = by_name[name].sets[0]
            assert by_name[name].part == part and len(m.seeds) >= 2 and m.estimate.interval is not None
    assert set(data["parts"]) == set(parts)


@pytest.fixture
def quick_report(tmp_path):
    """Run an experiment in quick mode; check the report files and that every table number is in report.json."""

    def run(name: str):
        report, _ = run_one(name, tmp_path / name, quick=True, seed=0, progress=None)
        md = (tmp_path / name / "report.md").read_text(encoding="utf-8")
        data = json.loads((tmp_path / name / "report.json").read_text(encoding="utf-8"))
        assert data["verdict"] == report.verdict and data["quick"] is True
        assert data["checks"], "a report needs at least one check"
        assert md.startswith(SMOKE_LINE)
        assert_smoke(data)
        flat_checks(data)
        zh = (tmp_path / name / "report.zh.md").read_text(encoding="utf-8")
        for fig in re.findall(r"\]\(([^)]+\.png)\)", md + zh):  # report.zh.md shows the Chinese drawings
            assert (tmp_path / name / fig).read_bytes().startswith(b"\x89PNG")
        assert data.get("skipped") or ("## 图" in zh and ".zh.png)" in zh)
        known = flat_numbers(data["numbers"])
        for x in table_numbers(md.split("## Checks", 1)[-1].split("## Results", 1)[-1]):
            assert any(math.isclose(x, k, rel_tol=2e-3, abs_tol=1e-4) for k in known), f"{x} in report.md is not in report.json"
        return report, md, data, Path(tmp_path / name)

    return run
