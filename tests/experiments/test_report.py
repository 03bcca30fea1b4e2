"""The report machinery and `redthread experiment`: computed verdicts, index page, one-line errors."""

import json

import pytest

from redthread.errors import RedthreadError
from redthread.experiments import available
from redthread.experiments.report import FAILS, HOLDS, Report
from tests.cli_helpers import assert_one_line_error, cli


def test_verdict_comes_from_the_checks():
    r = Report("x", "C7")
    with pytest.raises(RedthreadError, match="no check"):
        _ = r.verdict
    r.decide(True, "a", "1")
    assert r.verdict == HOLDS
    r.decide(False, "b", "2")
    assert r.verdict == FAILS
    assert "**does not hold**" in r.markdown() and "C7" in r.markdown()


def test_tables_escape_pipes_and_land_in_json(tmp_path):
    r = Report("x", "C1, C2")
    r.table(["E[y|x]", "v"], [["a|b", 0.5]], title="t")
    r.decide(True, "a", "b")
    r.write(tmp_path)
    md = (tmp_path / "report.md").read_text()
    assert "E[y\\|x]" in md and "a\\|b" in md and "**C2**" in md
    assert json.loads((tmp_path / "report.json").read_text())["numbers"]["tables"]["t"]["rows"] == [["a|b", 0.5]]


def test_experiment_all_writes_an_index(tmp_path, monkeypatch):
    import redthread.commands.experiment as command

    monkeypatch.setattr(command, "available", lambda: ["regression"])
    code, _, err = cli("experiment", "all", "--quick", "--out", tmp_path / "all", "--no-progress")
    assert code == 0, err
    index = (tmp_path / "all" / "index.md").read_text()
    verdict = json.loads((tmp_path / "all" / "regression" / "report.json").read_text())["verdict"]
    assert f"| [regression](regression/report.md) | C1 | {verdict} |" in index
    assert (tmp_path / "all" / "regression" / "report.json").is_file()


def test_bad_input_is_one_line(tmp_path):
    code, _, err = cli("experiment", "nonsense", "--out", tmp_path / "x")
    assert_one_line_error(code, err, "unknown experiment 'nonsense'", "regression")
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "report.md").write_text("keep")
    code, _, err = cli("experiment", "regression", "--quick", "--out", tmp_path / "full")
    assert_one_line_error(code, err, "already holds a report", "--overwrite")
    assert (tmp_path / "full" / "report.md").read_text() == "keep"
    assert "regression" in available()


def test_experiment_all_resumes_per_experiment(tmp_path, monkeypatch):
    import redthread.commands.experiment as command

    monkeypatch.setattr(command, "available", lambda: ["regression", "attention-as-regression"])
    out = tmp_path / "all"
    code, first, err = cli("experiment", "all", "--quick", "--out", out, "--no-progress")
    assert code == 0, err
    kept = (out / "regression" / "report.json").read_text()
    (out / "attention-as-regression" / "report.json").unlink()  # as if the run had stopped inside it
    code, again, err = cli("experiment", "all", "--quick", "--out", out, "--no-progress", "--resume")
    assert code == 0, err
    assert "regression" in again and "kept from the earlier run" in again.splitlines()[0]
    assert (out / "regression" / "report.json").read_text() == kept  # not run again
    assert (out / "attention-as-regression" / "report.json").is_file() and (out / "index.md").is_file()
    code, _, err = cli("experiment", "all", "--quick", "--out", out, "--resume", "--overwrite")
    assert_one_line_error(code, err, "--resume", "--overwrite")
