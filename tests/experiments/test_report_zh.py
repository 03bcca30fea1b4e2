"""experiments/report_zh.py: every experiment report in Chinese (issue 28), rendered from its report.json alone.

Held here: no committed report renders with English prose (tests/chinese_text.py's `prose`); every check and part
of every experiment's CRITERIA has its Chinese name, so a new check without one fails; the committed report.zh.md
files are what the renderer gives from their report.json; a --quick report says it carries no verdict; the numbers
are report.json's; the command's bad input is a one-line error that writes nothing."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

from redthread.experiments import available, load
from redthread.experiments.report import Report
from redthread.experiments.report_zh import CHECKS, NAMES, PARTS, check_zh, claims_zh, main, render_zh
from tests.chinese_text import prose
from tests.cli_helpers import assert_one_line_error

ROOT = Path(__file__).resolve().parents[2]
COMMITTED = sorted([*(ROOT / "docs" / "experiments").glob("*/report.json"), *(ROOT / "results").glob("run-*/*/report.json")])
DOCS = sorted((ROOT / "docs" / "experiments").glob("*/report.json"))
AGAIN = "python -m redthread.experiments.report_zh docs/experiments results/run-1 results/run-2 results/run-3 results/run-4"

# Latin words the Chinese pages may show beyond tests/chinese_text.py's ALLOWED: the name of the docs site's language
# switch entry, and words of docs/claims.md's Chinese wording of the claims, which the pages quote as it stands
QUOTED = {
    "English",  # the docs site's language switch, whose entry mkdocs.yml names English: where the English report is
    # C13: the essay's own English example sentence, quoted in it (“The animal didn't cross the street because it
    # was too tired”), and the words of that sentence it then names
    "The", "animal", "didn", "cross", "the", "street", "because", "it", "was", "too", "tired",
    "wide",  # and the other sentence of its Winograd pair (“…because it was too wide”), named by coreference's figure caption
    "heads", "ensemble", "poetry",  # C9: the names of the experiments that test it (heads, ensemble, poetry-heads)
    "KV",  # C12: the glossary's KV 缓存 (KV cache), a name left untranslated
    "True",  # C6: the Python literal of the mask convention (True = may attend)
    "diag",  # C7: the matrix operator of softmax's Jacobian, diag(α) − ααᵀ
}


def load_report(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("path", COMMITTED, ids=lambda p: p.parent.relative_to(ROOT).as_posix())
def test_a_committed_report_renders_with_no_english_prose(path):
    text = render_zh(load_report(path))
    assert prose(text, QUOTED) == [], prose(text, QUOTED)
    assert "`" + load_report(path)["name"] + "`" in text.splitlines()[0]  # its title: the Chinese name, then the code name
    assert "英文报告，即同一文件夹里的 `report.md`" in text  # for the set-up, the pre-registration and the tables


def test_the_claims_are_docs_claims_mds_chinese_wording():
    wording = claims_zh()
    assert sorted(wording, key=lambda c: int(c[1:])) == [f"C{i}" for i in range(1, 15)]
    for claim, (section, text) in wording.items():
        assert section.startswith("§") and text.startswith("原文："), claim
        assert "原文辨析" not in text.replace("论点页的“原文辨析”一节", ""), claim  # claims.md's "below", redirected
    text = render_zh(load_report(ROOT / "docs" / "experiments" / "long-range" / "report.json"))
    for claim in ("C3", "C5", "C6"):
        assert f"> **{claim}** · {wording[claim][0]} · {wording[claim][1]}" in text


def test_every_check_and_part_of_every_experiment_has_a_chinese_name():
    """A check or a part added to an experiment's CRITERIA without its Chinese name fails here."""
    seen = {}
    for name in available():
        assert name in NAMES and not prose(NAMES[name]), name
        for check, c in load(name).CRITERIA.items():
            assert check in CHECKS.get(name, {}), f"{name}: check {check!r} has no Chinese name in report_zh.CHECKS"
            assert c.part == "" or c.part in PARTS.get(name, {}), f"{name}: part {c.part!r} has none in report_zh.PARTS"
            seen.setdefault(name, set()).add(check)
    for path in COMMITTED:  # checks made by Report.decide are named by the property they state
        report = load_report(path)
        for c in report["checks"]:
            assert c["name"] in CHECKS[report["name"]], (path, c["name"])
            assert c["part"] == "" or c["part"] in PARTS[report["name"]], (path, c["part"])
            seen.setdefault(report["name"], set()).add(c["name"])
    for name, checks in CHECKS.items():  # no name left for a check that no longer exists
        assert set(checks) == seen.get(name, set()), (name, set(checks) ^ seen.get(name, set()))
    for table in (CHECKS, PARTS):
        for name, names in table.items():
            for english, chinese in names.items():
                assert chinese and not prose(chinese), (name, english, chinese)


def test_poetry_heads_is_covered_before_its_report_exists():
    from redthread.experiments import poetry_heads

    assert PARTS["poetry-heads"] == poetry_heads.PARTS_ZH  # the words its own conclusion uses
    report = {"name": "poetry-heads", "claims": "C9", "quick": False, "verdict": "holds", "history": [],
              "parts": {c.part: "holds" for c in poetry_heads.CRITERIA.values()},
              "checks": [{"name": k, "part": c.part, "floor": c.floor, "direction": c.direction, "verdict": "holds",
                          "sets": [{"seeds": [0, 1], "value": 3.0, "interval": [2.5, 3.5], "verdict": "holds"},
                                   {"seeds": [100, 101], "value": 3.25, "interval": [2.75, 3.75], "verdict": "holds"}]}
                         for k, c in poetry_heads.CRITERIA.items()]}
    text = render_zh(report)
    assert prose(text, QUOTED) == [] and "格律诗" in text and "各部分：对仗：成立；押韵：成立；不同的头：成立。" in text
    assert "种子组 A 3 [2.5, 3.5]，种子组 B 3.25 [2.75, 3.75]" in text
    report["conclusion"] = {"en": "Conclusion.", "zh": "**结论。** 模块自己写的结论。"}  # a module's own conclusion, reused
    assert "## 结论\n\n**结论。** 模块自己写的结论。" in render_zh(report)


@pytest.mark.parametrize("path", COMMITTED, ids=lambda p: p.parent.relative_to(ROOT).as_posix())
def test_a_committed_chinese_report_is_what_its_json_renders(path):
    zh = path.with_name("report.zh.md")
    assert zh.is_file(), f"{zh} is missing: {AGAIN}"
    assert zh.read_text(encoding="utf-8") == render_zh(load_report(path)), f"{zh} is stale: {AGAIN}"


@pytest.mark.parametrize("path", DOCS, ids=lambda p: p.parent.name)
def test_the_numbers_are_report_jsons(path):
    """Each check's sentence gives both sets' means and intervals and the floor, as report.json has them."""
    report = load_report(path)
    text = render_zh(report).split("## 结论", 1)[1]
    at = 0
    for c in report["checks"]:
        start = text.index(check_zh(report["name"], c["name"]) + "：", at)
        at = text.index("。", start) + 1  # two checks may share a description (a lower and an upper bound)
        sentence = text[start:at]
        if c["floor"] is None:
            continue
        found = re.findall(r"种子组 ([AB]) (\S+?)(?:（精确值）| \[(\S+), (\S+?)\])", sentence)
        assert [s for s, *_ in found] == ["A", "B"], sentence
        for (_, value, lo, hi), m in zip(found, c["sets"]):
            assert math.isclose(float(value), m["value"], rel_tol=5e-4, abs_tol=1e-300), (sentence, m)
            for shown, actual in zip((lo, hi), m["interval"] or []):
                assert math.isclose(float(shown), actual, rel_tol=5e-4, abs_tol=1e-300), (sentence, m)
        (floor,) = re.findall(r"须(?:高于|低于|小于) (\S+?)；", sentence)
        assert float(floor) == pytest.approx(c["floor"], rel=1e-5), sentence
        assert {"above": "须高于", "below": "须低于", "within": "绝对值须小于"}[c["direction"]] in sentence


def test_verdicts_and_counts_are_the_reports():
    depth = render_zh(load_report(ROOT / "docs" / "experiments" / "depth" / "report.json"))
    assert "**结论：无定论。** 各部分：残差连接：无定论；梯度的流动：无定论；层归一化：无定论。" in depth
    assert "判据修改过 3 次" in depth and "种子组 A（种子 0–4）、种子组 B（种子 100–104）相互独立" in depth
    assert "×2 无定论（不能复现）" in depth  # a comparative check's verdict at each training budget
    classification = render_zh(load_report(ROOT / "docs" / "experiments" / "classification" / "report.json"))
    assert "**结论：无定论（不能复现）。**" in classification and "（A 组无定论，B 组成立）" in classification
    coreference = render_zh(load_report(ROOT / "docs" / "experiments" / "coreference" / "report.json"))
    assert "**结论：不成立。**" in coreference and "没有任何判据是在看到结果之后修改的。" in coreference
    assert "两组一致并不构成复现" in coreference  # a pretrained model: both sets measure the same values
    memory = render_zh(load_report(ROOT / "docs" / "experiments" / "memory" / "report.json"))
    assert "无定论（调参选在网格边上）" in memory and "grid" not in memory  # stats.EDGE, in Chinese


def _quick_report() -> Report:
    report = Report("regression", "C1", setup="s", criterion="c", quick=True)
    report.check("slope_above", [-1.0, -1.1], [0, 1])
    report.check("coef_gap", 1e-15)
    return report


def test_a_quick_report_says_it_carries_no_verdict(tmp_path):
    _quick_report().write(tmp_path)
    zh = (tmp_path / "report.zh.md").read_text(encoding="utf-8")
    assert zh.splitlines()[0].startswith("**冒烟测试（--quick）") and "不给结论" in zh.splitlines()[0]
    assert "**结论：无（冒烟测试）。**" in zh and "成立" not in zh.replace("不成立", "")  # no verdict anywhere
    assert "测得 -1.05 [" in zh and "不作判定（冒烟测试）" in zh
    assert prose(zh, QUOTED) == []
    assert zh == render_zh(json.loads((tmp_path / "report.json").read_text(encoding="utf-8")))  # beside report.md
    assert (tmp_path / "report.md").is_file()


def test_the_command_writes_beside_each_report_and_nothing_else(tmp_path, capsys):
    for name in ("a", "b"):
        _quick_report().write(tmp_path / "run" / name)
        (tmp_path / "run" / name / "report.zh.md").unlink()
    before = {p: p.read_bytes() for p in (tmp_path / "run").rglob("report.*")}
    assert main([str(tmp_path / "run")]) == 0
    assert sorted(p.parent.name for p in (tmp_path / "run").rglob("report.zh.md")) == ["a", "b"]
    assert all(p.read_bytes() == data for p, data in before.items())  # report.md and report.json untouched
    assert main([str(tmp_path / "run" / "a")]) == 0  # one report's folder
    assert capsys.readouterr().out.count("report.zh.md") == 3


def _run(capsys, *args) -> tuple[int, str]:
    code = main([str(a) for a in args])
    return code, capsys.readouterr().err


def test_bad_input_is_a_one_line_error_and_writes_nothing(tmp_path, capsys):
    code, err = _run(capsys, tmp_path / "nowhere")
    assert_one_line_error(code, err, "is not a folder")
    (tmp_path / "empty").mkdir()
    code, err = _run(capsys, tmp_path / "empty")
    assert_one_line_error(code, err, "holds no report.json")
    _quick_report().write(tmp_path / "good")
    (tmp_path / "good" / "report.zh.md").unlink()
    for name, content, needle in (("text", "not json", "is not JSON"), ("list", "[1, 2]", "not a JSON object"),
                                  ("other", '{"name": "x"}', "no 'claims'"),
                                  ("broken", '{"name": "x", "claims": "C1", "verdict": "holds", "checks": [1]}',
                                   "is not an experiment report")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "report.json").write_text(content, encoding="utf-8")
        code, err = _run(capsys, tmp_path / "good", tmp_path / name)
        assert_one_line_error(code, err, str(tmp_path / name / "report.json"), needle)
        assert not (tmp_path / "good" / "report.zh.md").exists()  # every folder is read before any is written
        assert (tmp_path / name / "report.json").read_text(encoding="utf-8") == content
    (tmp_path / "good" / "report.zh.md").mkdir()  # something in the way that is not a file
    code, err = _run(capsys, tmp_path / "good")
    assert_one_line_error(code, err, "report.zh.md")
    with pytest.raises(SystemExit):
        main([])  # argparse: DIR is required


def test_the_chinese_index_lists_every_experiment_in_the_english_order_in_chinese():
    import sys

    from redthread.experiments.report_zh import index_zh

    sys.path.insert(0, str(ROOT))
    from tests.chinese_text import prose_runs

    root = ROOT / "docs" / "experiments"
    text = index_zh(root)
    english = (root / "index.md").read_text(encoding="utf-8")
    order = re.findall(r"^\| \[([\w-]+)\]\(\1/report\.md\)", english, re.M)
    assert re.findall(r"^\| \[[^\]]+\]\(([\w-]+)/report\.md\)", text, re.M) == order and len(order) >= 21
    assert "holds" not in text and "inconclusive" not in text and prose_runs(text) == []
    assert (root / "index.zh.md").read_text(encoding="utf-8") == text  # the committed page is not stale
