"""Shared checks for every experiment's quick run: a verdict, a report, and every number in its JSON."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

from redthread.commands.experiment import run_one
from redthread.experiments.stats import VERDICTS, Estimate, combine, verdict


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


CHECK_FIELDS = {"name", "claim", "part", "value", "interval", "seeds", "threshold", "direction", "verdict"}


def assert_verdicts_are_computed(data: dict) -> None:
    """Each check's verdict is one of the three and follows from its interval and threshold; each part's
    and the claim's verdict follow from the checks (never asserting which outcome today's run gives)."""
    parts: dict[str, list[str]] = {}
    for c in data["checks"]:
        assert CHECK_FIELDS <= set(c), f"check {c.get('name')} lacks {CHECK_FIELDS - set(c)}"
        assert c["verdict"] in VERDICTS, c
        if c["interval"] is not None:  # a measurement over seeds: at least two, and the interval around the mean
            lo, hi = c["interval"]
            assert len(c["seeds"]) >= 2 and lo <= c["value"] <= hi, c
            assert c["verdict"] == verdict(Estimate(c["value"], lo, hi, len(c["seeds"])), c["threshold"], c["direction"]), c
        parts.setdefault(c["part"], []).append(c["verdict"])
    assert data["parts"] == {p: combine(v) for p, v in parts.items()}
    assert data["verdict"] == combine(data["parts"].values())


def assert_parts(report, data: dict, parts: dict[str, tuple[str, ...]]) -> None:
    """Each named check sits in its part, over at least two seeds with an interval; the report has exactly these parts."""
    by_name = {c.name: c for c in report.checks}
    for part, names in parts.items():
        for name in names:
            assert by_name[name].part == part and len(by_name[name].seeds) >= 2 and by_name[name].interval is not None
    assert set(data["parts"]) == set(parts)


@pytest.fixture
def quick_report(tmp_path):
    """Run an experiment in quick mode; check the report files and that every table number is in report.json."""

    def run(name: str):
        report, _ = run_one(name, tmp_path / name, quick=True, seed=0, progress=None)
        md = (tmp_path / name / "report.md").read_text(encoding="utf-8")
        data = json.loads((tmp_path / name / "report.json").read_text(encoding="utf-8"))
        assert data["verdict"] == report.verdict and data["quick"] is True
        assert data["checks"], "a verdict needs at least one check"
        assert_verdicts_are_computed(data)
        for fig in re.findall(r"\]\(([^)]+\.png)\)", md):
            assert (tmp_path / name / fig).read_bytes().startswith(b"\x89PNG")
        known = flat_numbers(data["numbers"])
        for x in table_numbers(md.split("## Checks", 1)[-1].split("## Results", 1)[-1]):
            assert any(math.isclose(x, k, rel_tol=2e-3, abs_tol=1e-4) for k in known), f"{x} in report.md is not in report.json"
        return report, md, data, Path(tmp_path / name)

    return run
