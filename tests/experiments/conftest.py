"""Shared checks for every experiment's quick run: a verdict, a report, and every number in its JSON."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

from redthread.commands.experiment import run_one


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


@pytest.fixture
def quick_report(tmp_path):
    """Run an experiment in quick mode; check the report files and that every table number is in report.json."""

    def run(name: str):
        report, _ = run_one(name, tmp_path / name, quick=True, seed=0, progress=None)
        md = (tmp_path / name / "report.md").read_text(encoding="utf-8")
        data = json.loads((tmp_path / name / "report.json").read_text(encoding="utf-8"))
        assert data["verdict"] == report.verdict and data["quick"] is True
        assert data["checks"], "a verdict needs at least one check"
        for fig in re.findall(r"\]\(([^)]+\.png)\)", md):
            assert (tmp_path / name / fig).read_bytes().startswith(b"\x89PNG")
        known = flat_numbers(data["numbers"])
        for x in table_numbers(md.split("## Checks", 1)[-1].split("## Results", 1)[-1]):
            assert any(math.isclose(x, k, rel_tol=2e-3, abs_tol=1e-4) for k in known), f"{x} in report.md is not in report.json"
        return report, md, data, Path(tmp_path / name)

    return run
