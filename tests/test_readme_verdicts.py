"""The verdict tables of README.md and README.zh-CN.md are what the committed reports say: each row's verdict is
docs/experiments' (run 1, in the glossary's Chinese in the Chinese README), its second verdict results/run-2's, its
parts and the number of criterion changes after a result are the report's. A report run again without the READMEs
written again fails here; `python -m redthread.experiments.compare docs/experiments results/run-2 --verdicts
[--lang zh]` prints the table again."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from redthread.experiments.compare import verdict_text
from redthread.lang import speaking

ROOT = Path(__file__).resolve().parents[1]
ROW = re.compile(r"^\| \[([a-z-]+)\]\(docs/experiments/\1/report\.md\) \| ([^|]+) \| ([^|]+) \| ([^|]+) \| (.+) \| (\d+) \|$", re.M)


@pytest.mark.parametrize("readme, lang", [("README.md", "en"), ("README.zh-CN.md", "zh")])
def test_each_verdict_row_is_what_the_reports_say(readme, lang):
    rows = ROW.findall((ROOT / readme).read_text(encoding="utf-8"))
    reports = sorted(p.parent.name for p in (ROOT / "docs" / "experiments").glob("*/report.json"))
    assert sorted(name for name, *_ in rows) == reports, f"{readme}: one row per report in docs/experiments"
    with speaking(lang):
        for name, claims, first, second, parts, changes in rows:
            run1 = json.loads((ROOT / "docs" / "experiments" / name / "report.json").read_text(encoding="utf-8"))
            assert claims == run1["claims"] and first == verdict_text(run1["verdict"]), (readme, name)
            run2 = ROOT / "results" / "run-2" / name / "report.json"
            if run2.is_file():
                assert second == verdict_text(json.loads(run2.read_text(encoding="utf-8"))["verdict"]), (readme, name)
            expected = "; ".join(f"`{k}`: {verdict_text(v)}" for k, v in (run1.get("parts") or {}).items() if k)
            assert parts == (expected.replace("|", "\\|") or "—"), (readme, name)
            assert int(changes) == len(run1.get("history") or []), (readme, name)


def test_docs_experiments_is_run_one():
    """docs/experiments is a copy of results/run-1 (results/README.md): the same report for every experiment."""
    for path in (ROOT / "docs" / "experiments").glob("*/report.json"):
        assert path.read_bytes() == (ROOT / "results" / "run-1" / path.parent.name / "report.json").read_bytes(), path
