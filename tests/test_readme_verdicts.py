"""The verdict tables of README.md and README.zh-CN.md are what the committed reports say: each row gives the
experiment's verdict in runs 1, 2 and 4 (results/run-N, in the glossary's Chinese in the Chinese README; "not yet run"
where run 4 has not reached it), and docs/experiments' parts and number of criterion changes after a result.
docs/experiments is run 4's report where run 4 has one and run 1's otherwise (results/README.md). A report run again
without the READMEs written again fails here; `python -m redthread.experiments.compare docs/experiments results/run-1
results/run-2 results/run-4 --verdicts [--lang zh]` prints the table again."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from redthread.experiments.compare import verdict_text
from redthread.lang import say, speaking

ROOT = Path(__file__).resolve().parents[1]
RUNS = ("run-1", "run-2", "run-4")
ROW = re.compile(r"^\| \[([a-z-]+)\]\(docs/experiments/\1/report\.md\) \| ([^|]+) \| ([^|]+) \| ([^|]+) \| ([^|]+) "
                 r"\| (.+) \| (\d+) \|$", re.M)


def report(folder: Path, name: str) -> dict | None:
    path = folder / name / "report.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


@pytest.mark.parametrize("readme, lang", [("README.md", "en"), ("README.zh-CN.md", "zh")])
def test_each_verdict_row_is_what_the_reports_say(readme, lang):
    rows = ROW.findall((ROOT / readme).read_text(encoding="utf-8"))
    reports = sorted(p.parent.name for p in (ROOT / "docs" / "experiments").glob("*/report.json"))
    assert sorted(name for name, *_ in rows) == reports, f"{readme}: one row per report in docs/experiments"
    with speaking(lang):
        for name, claims, *verdicts, parts, changes in rows:
            shown = report(ROOT / "docs" / "experiments", name)
            assert claims == shown["claims"], (readme, name)
            for run, verdict in zip(RUNS, verdicts):
                r = report(ROOT / "results" / run, name)
                assert verdict == (verdict_text(r["verdict"]) if r else say("not yet run", "尚未运行")), (readme, name, run)
            expected = "; ".join(f"`{k}`: {verdict_text(v)}" for k, v in (shown.get("parts") or {}).items() if k)
            assert parts == (expected.replace("|", "\\|") or "—"), (readme, name)
            assert int(changes) == len(shown.get("history") or []), (readme, name)


def test_docs_experiments_is_run_four_where_run_four_has_finished_and_run_one_elsewhere():
    """Every file of run 4's folder for an experiment (the report in both languages, every figure in both) is in
    docs/experiments as it is; an experiment run 4 has not reached keeps run 1's report."""
    docs = ROOT / "docs" / "experiments"
    for path in docs.glob("*/report.json"):
        name = path.parent.name
        run4 = ROOT / "results" / "run-4" / name
        source = run4 if (run4 / "report.json").is_file() else ROOT / "results" / "run-1" / name
        assert path.read_bytes() == (source / "report.json").read_bytes(), path
        if source == run4:
            files = sorted(f.name for f in run4.iterdir() if f.is_file())
            assert sorted(f.name for f in path.parent.iterdir() if f.is_file()) == files, name
            assert all((docs / name / f).read_bytes() == (run4 / f).read_bytes() for f in files), name
    finished = {p.parent.name for p in (ROOT / "results" / "run-4").glob("*/report.json")}
    assert finished <= {p.parent.name for p in docs.glob("*/report.json")}
