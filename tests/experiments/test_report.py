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


def test_a_figure_is_saved_in_both_languages_and_shown_on_the_chinese_page(tmp_path):
    import matplotlib.figure
    from PIL import Image

    from redthread.lang import say

    def draw():
        fig = matplotlib.figure.Figure(figsize=(3, 2))
        ax = fig.add_subplot()
        ax.plot([0, 1], [1, 0], label=say("falls", "下降"))
        ax.set(xlabel=say("step", "步数"), title=say("Loss", "损失"), xticks=[0, 1],
               xticklabels=[say("start", "开始"), say("end", "结束")])
        ax.legend()
        return fig

    (tmp_path / "old.zh.png").write_bytes(b"an earlier run's Chinese drawing")
    r = Report("scaling", "C7")
    r.figure("loss", draw, "The loss falls.", "损失下降。")
    r.figure("old", matplotlib.figure.Figure(figsize=(1, 1)), "Drawn in one language.")
    with pytest.raises(RedthreadError, match="added twice"):
        r.figure("loss", draw)
    r.decide(True, "a", "1")
    r.write(tmp_path)
    fig = r.figures["loss"]
    assert fig.axes[0].get_title() not in ("Loss", "损失")  # both, until drawn in one
    en, zh = Image.open(tmp_path / "loss.png"), Image.open(tmp_path / "loss.zh.png")
    assert en.size == zh.size and en.tobytes() != zh.tobytes()
    assert not (tmp_path / "old.zh.png").exists()  # it would no longer match old.png
    figures = json.loads((tmp_path / "report.json").read_text())["figures"]
    assert figures == [{"stem": "loss", "caption": "The loss falls.", "caption_zh": "损失下降。", "zh": True},
                       {"stem": "old", "caption": "Drawn in one language.", "caption_zh": "", "zh": False}]
    md, zh_md = (tmp_path / "report.md").read_text(), (tmp_path / "report.zh.md").read_text()
    assert "![The loss falls.](loss.png)" in md and "![Drawn in one language.](old.png)" in md
    assert "## 图\n\n![损失下降。](loss.zh.png)\n\n*损失下降。*" in zh_md and "old.png" not in zh_md


def test_a_figure_drawn_in_one_language_shows_each_side():
    import matplotlib.figure

    from redthread.lang import both_languages, figure_in, say

    with both_languages():
        fig = matplotlib.figure.Figure()
        ax = fig.add_subplot()
        ax.set(title=say("Loss", "损失"), xticks=[0, 1], xticklabels=[say("start", "开始"), say("end", "结束")])
    for lang, title, ticks in (("en", "Loss", ["start", "end"]), ("zh", "损失", ["开始", "结束"])):
        with figure_in(fig, lang):
            fig.canvas.draw()
            assert ax.get_title() == title and [t.get_text() for t in ax.get_xticklabels()] == ticks
    assert ax.get_title() == say("Loss", "损失") or "\ue000" in ax.get_title()  # as it was: both
    fig.text(0, 0, "by hand: " + ax.get_title()[1:])  # a pair's string broken by hand cannot be drawn in one language
    with pytest.raises(ValueError, match="kept both languages"), figure_in(fig, "en"):
        fig.canvas.draw()


@pytest.mark.slow  # runs experiments; the report asks git for the history
def test_experiment_all_writes_an_index(tmp_path, monkeypatch):
    import redthread.commands.experiment as command

    monkeypatch.setattr(command, "available", lambda: ["regression"])
    code, _, err = cli("experiment", "all", "--quick", "--out", tmp_path / "all", "--no-progress")
    assert code == 0, err
    index = (tmp_path / "all" / "index.md").read_text()
    verdict = json.loads((tmp_path / "all" / "regression" / "report.json").read_text())["verdict"]
    assert f"| [regression](regression/report.md) | C1 | {verdict} |" in index
    assert "| [线性回归估计条件期望](regression/report.md) | C1 |" in (tmp_path / "all" / "index.zh.md").read_text()
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


@pytest.mark.slow  # runs experiments; the report asks git for the history
def test_experiment_all_resumes_per_experiment(tmp_path, monkeypatch):
    import redthread.commands.experiment as command

    monkeypatch.setattr(command, "available", lambda: ["regression", "attention-as-regression"])
    out = tmp_path / "all"
    code, first, err = cli("experiment", "all", "--quick", "--out", out, "--no-progress")
    assert code == 0, err
    kept = (out / "regression" / "report.json").read_text()
    assert json.loads(kept)["numbers"]["code_commit"] not in ("", None)  # the commit, or "unknown" outside git
    where = json.loads(kept)["numbers"]["environment"]  # and the machine: one commit gave other numbers on another
    assert where["torch_threads"] == "1" and where["torch"] and where["cpu"] and where["cpu_capability"]
    (out / "attention-as-regression" / "report.json").unlink()  # as if the run had stopped inside it
    code, again, err = cli("experiment", "all", "--quick", "--out", out, "--no-progress", "--resume")
    assert code == 0, err
    assert "regression" in again and "kept from the earlier run" in again.splitlines()[0]
    assert (out / "regression" / "report.json").read_text() == kept  # not run again
    assert (out / "attention-as-regression" / "report.json").is_file() and (out / "index.md").is_file()
    stale = json.loads(kept)  # a report made under criteria that have changed since is not kept
    stale["criteria_commit"] = "0000000 2026-01-01 (criteria fingerprint 0)"
    (out / "regression" / "report.json").write_text(json.dumps(stale))
    code, third, err = cli("experiment", "all", "--quick", "--out", out, "--no-progress", "--resume")
    assert code == 0, err
    assert "kept" not in third.splitlines()[0] and "kept from the earlier run" in third.splitlines()[1]
    assert json.loads((out / "regression" / "report.json").read_text())["criteria_commit"] != stale["criteria_commit"]
    code, _, err = cli("experiment", "all", "--quick", "--out", out, "--resume", "--overwrite")
    assert_one_line_error(code, err, "--resume", "--overwrite")


def test_two_runs_compare_check_by_check(tmp_path):
    from redthread.experiments.compare import compare, load_run, main

    def report(value, verdict):
        return {"verdict": verdict, "checks": [{"name": "gap", "verdict": verdict, "sets": [
            {"value": value}, {"value": 0.5}]}]}

    for run, value, verdict in (("r1", 0.25, "holds"), ("r2", 0.2500001, "inconclusive (does not replicate)")):
        (tmp_path / run / "toy").mkdir(parents=True)
        (tmp_path / run / "toy" / "report.json").write_text(json.dumps(report(value, verdict)))
    text, counts = compare(load_run(tmp_path / "r1"), load_run(tmp_path / "r2"))
    assert counts == {"values": 2, "identical": 1, "verdicts": 1, "same verdict": 0, "experiments": 1,
                      "same claim verdict": 0}
    assert "| toy | gap | A | 0.25 | 0.25 | 1e-07 | **holds** |" in text and "identical" in text
    assert main([str(tmp_path / "r1"), str(tmp_path / "nope")]) == 2


def test_the_comparison_writes_into_its_block_only_and_speaks_chinese(tmp_path):
    from redthread.experiments.compare import BEGIN, END, main, verdict_text
    from redthread.lang import speaking

    for run, value in (("r1", 0.25), ("r2", 0.25)):
        (tmp_path / run / "toy").mkdir(parents=True)
        (tmp_path / run / "toy" / "report.json").write_text(json.dumps({"verdict": "holds", "checks": [
            {"name": "gap", "verdict": "inconclusive (does not replicate)", "sets": [{"value": value}]}]}))
    doc = tmp_path / "doc.md"
    r1, r2 = str(tmp_path / "r1"), str(tmp_path / "r2")
    other = BEGIN.format(r2, r1) + "\nkept\n" + END
    doc.write_text(f"# before\n\n{BEGIN.format(r1, r2)}\nold table\n{END}\n\n{other}\n", encoding="utf-8")
    assert main([r1, r2, "--into", str(doc), "--lang", "zh"]) == 0
    text = doc.read_text(encoding="utf-8")
    assert text.startswith("# before\n\n" + BEGIN.format(r1, r2)) and "old table" not in text
    assert text.endswith(f"{END}\n\n{other}\n")  # the block naming other runs is left alone
    assert "| toy | gap |  | 0.25 | 0.25 | 完全相同 | 无定论（不能复现） | 无定论（不能复现） |" in text
    with speaking("zh"):
        assert verdict_text("does not hold") == "不成立" and verdict_text("smoke") == "smoke"
    assert verdict_text("inconclusive (does not replicate)") == "inconclusive (does not replicate)"
    doc.write_text("no block here\n", encoding="utf-8")
    assert main([r1, r2, "--into", str(doc)]) == 2
    assert doc.read_text(encoding="utf-8") == "no block here\n"  # nothing lost


def test_the_index_gives_every_check_with_both_sets_and_the_history(tmp_path):
    from redthread.commands.experiment import write_index

    check = {"name": "gap", "part": "speed", "floor": 0.05, "direction": "above", "verdict": "inconclusive (does not replicate)",
             "sets": [{"value": 0.25, "interval": [0.2, 0.3]}, {"value": 0.04, "interval": [-0.01, 0.09]}]}
    same = {**check, "name": "same", "direction": "within", "floor": 0.1, "verdict": "holds"}
    report = {"claims": "C4", "verdict": "inconclusive (does not replicate)", "parts": {"speed": "inconclusive"},
              "checks": [check, same], "history": [{"date": "2026-12-02"}], "numbers": {"seconds": 60.0}}
    (tmp_path / "toy").mkdir()
    (tmp_path / "toy" / "report.json").write_text(json.dumps(report))
    (tmp_path / "later").mkdir()  # a report that records its commit: the index says which code made it
    later = {**report, "numbers": {"seconds": 1.0, "code_commit": "b961436" + "0" * 33}}
    (tmp_path / "later" / "report.json").write_text(json.dumps(later))
    text = write_index(tmp_path, ["toy", "later"], False, 0).read_text()
    assert "| [toy](toy/report.md) | C4 | inconclusive (does not replicate) | speed: inconclusive | 1 | 60.0 | — |" \
        in text
    assert "| 1 | 1.0 | b961436 |" in text and "| 1.0 | b961436 |" in (tmp_path / "index.zh.md").read_text()
    assert "| toy | speed | gap | > 0.05 | 0.25 [0.2, 0.3] | 0.04 [-0.01, 0.09] | inconclusive (does not replicate) |" in text
    assert "| toy | speed | same | \\|·\\| < 0.1 |" in text


def test_the_verdict_table_gives_one_row_per_experiment_of_run_one(tmp_path, capsys):
    from redthread.experiments.compare import main

    report = {"claims": "C1", "verdict": "holds", "parts": {"E[y|x]": "holds"}, "checks": [], "history": [{}, {}]}
    for run in ("r1", "r2"):
        (tmp_path / run / "regression").mkdir(parents=True)
        (tmp_path / run / "regression" / "report.json").write_text(json.dumps(report))
    (tmp_path / "r1" / "depth").mkdir()
    (tmp_path / "r1" / "depth" / "report.json").write_text(json.dumps({**report, "verdict": "inconclusive"}))
    for run in ("run-1", "run-4"):  # folders named as results/ names its runs
        (tmp_path / run).symlink_to(tmp_path / ("r1" if run == "run-1" else "r2"))
    r1, runs = str(tmp_path / "r1"), [str(tmp_path / "run-1"), str(tmp_path / "run-4")]
    assert main([r1, *runs, "--verdicts", "--lang", "zh"]) == 0
    out = capsys.readouterr().out
    assert "| 实验 | 论点 | 第 1 次运行 | 第 4 次运行 | 各部分 |" in out  # one verdict column per run after the first folder
    assert f"| [regression]({(tmp_path / 'r1').as_posix()}/regression/report.md) | C1 | 成立 | 成立 | `E[y\\|x]`: 成立 | 2 |" in out
    assert "| 无定论 | 尚未运行 | " in out  # depth: in run 1 only
    assert main([r1, *runs]) == 2  # a check-by-check comparison is of two runs
    assert "compare takes two runs; 3 were given" in capsys.readouterr().err
