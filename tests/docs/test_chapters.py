"""Every chapter of the tour ends the same way (issue 28, item 4), and its numbers are the reports' numbers.

The end of a chapter, in both languages: a box "Measured against the essay" / "实测与原文" (where the project's
experiments disagree with the essay or qualify it), a "Summary" / "小结", and the exercises, "Try this" / "试一试",
of three kinds, each with its answer folded in a <details> block. Each chapter shows at least one concept figure,
docs/img/NAME.svg, drawn by docs/img/concepts.py in both languages (NAME.zh.svg for the Chinese page).

A number in a box is cited where it stands: the number is a link to the report it comes from, and the link's
title says where in that report's JSON it is,

    [0.0643](../experiments/long-range/report.md "report.json: numbers/recall_accuracy/Transformer/2/2")

(a path through the JSON: keys, list indices, `name=X` for the element of a list whose "name" is X, and a last
`mean` for the mean of a list). A number linked to a Markdown page with no title (docs/ladder.md) must appear in
that page as written. The test reads the chapters' files only: nothing is executed.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import jupytext
import pytest

from tests.docs.conftest import DOCS, REPO, build_tour, load

CHAPTERS = build_tour.chapters(DOCS / "tour")
IMG = DOCS / "img"
HEADINGS = {"box": ("## Measured against the essay", "## 实测与原文"), "summary": ("## Summary", "## 小结"),
            "exercises": ("## Try this", "## 试一试")}
KINDS = {"en": ("Run and observe", "Change and predict", "Derive"), "zh": ("运行并观察", "修改并预测", "推导")}
ANSWER = {"en": "<summary>Answer</summary>", "zh": "<summary>答案</summary>"}
NAMED_FIGURES = {"ladder", "rnn-unrolled", "lstm-cell", "multi-head", "transformer-block"}  # the issue's five
CITED = re.compile(r"\[([−+-]?\d[\d,]*(?:\.\d+)?)\]\(([^)\s]+)(?:\s+\"([^\"]*)\")?\)")
DECIMAL = re.compile(r"(?<![\w.§])[−+-]?\d+\.\d+")
FIGURE = re.compile(r"!\[[^\]]*\]\(\.\./img/([a-z0-9-]+)\.svg\)")
CJK = re.compile(r"[\u4e00-\u9fff]")


def markdown(chapter: Path) -> list[tuple[str, str]]:
    """(lang, source) of each markdown cell, in order."""
    cells = jupytext.read(chapter).cells
    return [(c.metadata.get("lang"), c.source) for c in cells if c.cell_type == "markdown"]


def cell(chapter: Path, kind: str, lang: str) -> str:
    heading = HEADINGS[kind][lang == "zh"]
    found = [src for lg, src in markdown(chapter) if lg == lang and src.lstrip().startswith(heading)]
    assert len(found) == 1, f"{chapter.name}: {len(found)} cells open with {heading!r}"
    return found[0]


def resolve(data, pointer: str):
    """The value at a path such as numbers/recall_accuracy/Transformer/2/2 or checks/name=gap/budgets/2/sets/0/value."""
    value = data
    for part in pointer.split("/"):
        if part == "mean" and isinstance(value, list):
            value = sum(value) / len(value)
        elif isinstance(value, list) and part.startswith("name="):
            (value,) = [v for v in value if v.get("name") == part[5:]]
        elif isinstance(value, list):
            value = value[int(part)]
        else:
            value = value[part]
    return value


def as_float(text: str) -> float:
    return float(text.replace("−", "-").replace(",", ""))


def citation_problems(chapter: Path, text: str) -> list[str]:
    """What in a box's text is not a report's number; [] when every cited number matches its report."""
    problems = []
    for number, url, title in CITED.findall(text):
        target = (chapter.parent / url.split("#")[0]).resolve()
        if not target.is_file() or not target.is_relative_to(REPO):
            problems.append(f"{number}: {url} is not a file of the repository")
            continue
        if title.startswith("report.json: "):
            report = json.loads(target.with_name("report.json").read_text(encoding="utf-8"))
            try:
                value = resolve(report, title.removeprefix("report.json: "))
            except (KeyError, IndexError, ValueError, TypeError) as e:
                problems.append(f"{number}: {title!r} is not in {target.parent.name}/report.json ({e!r})")
                continue
            decimals = len(number.split(".")[1]) if "." in number else 0
            if abs(as_float(number) - float(value)) > 0.5 * 10**-decimals + 1e-12:
                problems.append(f"{number}: {target.parent.name}/report.json says {value} at {title[13:]}")
        elif title:
            problems.append(f"{number}: a title that is not 'report.json: PATH' ({title!r})")
        elif number.replace("−", "-") not in target.read_text(encoding="utf-8").replace("−", "-"):
            problems.append(f"{number}: not written in {url}")
    uncited = [m for m in DECIMAL.findall(CITED.sub("", re.sub(r"\$[^$]*\$", "", text)))]
    problems += [f"{m}: a number in the box that cites no report" for m in uncited]
    return problems


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.name)
def test_every_chapter_ends_with_its_box_its_summary_and_its_exercises(chapter):
    last = markdown(chapter)[-6:]
    expected = [(lang, HEADINGS[kind][lang == "zh"]) for kind in ("box", "summary", "exercises") for lang in ("en", "zh")]
    assert [(lang, src.lstrip().split("\n")[0]) for lang, src in last] == expected


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.name)
def test_the_exercises_are_of_three_kinds_each_with_its_answer(chapter):
    counts = {}
    for lang in ("en", "zh"):
        text = cell(chapter, "exercises", lang)
        items = re.split(r"^\d+\. ", text, flags=re.M)[1:]
        assert len(items) >= 3, f"{chapter.name} ({lang}): fewer than three exercises"
        kinds = [re.match(r"\*\*([^*.。]+)[.。]?\*\*", item) for item in items]
        assert all(kinds), f"{chapter.name} ({lang}): an exercise does not open with its kind in bold"
        assert {k.group(1) for k in kinds} == set(KINDS[lang]), f"{chapter.name} ({lang}): {[k.group(1) for k in kinds]}"
        for i, item in enumerate(items, 1):
            assert item.count(ANSWER[lang]) == 1 and item.count("<details>") == 1 and item.count("</details>") == 1, \
                f"{chapter.name} ({lang}): exercise {i} has no folded answer"
            answer = item[item.index(ANSWER[lang]) + len(ANSWER[lang]):item.index("</details>")]
            assert len(answer.strip()) > 40, f"{chapter.name} ({lang}): exercise {i}'s answer is empty"
        counts[lang] = [k.group(1) for k in kinds]
    assert [KINDS["en"].index(k) for k in counts["en"]] == [KINDS["zh"].index(k) for k in counts["zh"]], \
        f"{chapter.name}: the two languages list different exercises"


def test_the_derivations_the_issue_asks_for_are_set():
    derive = {lang: "".join(item for chapter in CHAPTERS
                            for item in re.split(r"^\d+\. ", cell(chapter, "exercises", lang), flags=re.M)
                            if item.startswith(f"**{KINDS[lang][2]}"))
              for lang in ("en", "zh")}
    for lang, text in derive.items():
        text = text.replace(" ", "")
        assert r"\operatorname{diag}(p)-pp^\top" in text, f"{lang}: the softmax Jacobian"
        assert r"\hat\sigma^2=\text{RSS}/n" in text, f"{lang}: the noise variance's maximum-likelihood estimate"
        assert r"\operatorname{Var}(q\cdotk)=d_k" in text, f"{lang}: the variance of a dot product"


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.name)
def test_every_chapter_shows_a_concept_figure_in_both_languages(chapter):
    figures = {lang: [name for lg, src in markdown(chapter) if lg == lang for name in FIGURE.findall(src)]
               for lang in ("en", "zh")}
    assert figures["en"], f"{chapter.name}: no concept figure (![...](../img/NAME.svg))"
    assert figures["en"] == figures["zh"], f"{chapter.name}: the two languages show different figures"
    concepts = load("img/concepts", as_name="docs_img_concepts")
    for name in figures["en"]:
        assert name in concepts.FIGURES, f"{name}: not drawn by docs/img/concepts.py"
        english, chinese = ((IMG / f"{name}{suffix}.svg").read_text(encoding="utf-8") for suffix in ("", ".zh"))
        assert CJK.search(chinese) and not CJK.search(english), f"{name}: the two versions are not in their languages"


def test_the_tour_draws_the_ladder_the_unrolled_rnn_the_lstm_cell_the_heads_and_the_block():
    shown = {name for chapter in CHAPTERS for _, src in markdown(chapter) for name in FIGURE.findall(src)}
    assert NAMED_FIGURES <= shown, NAMED_FIGURES - shown


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.name)
def test_the_numbers_in_the_box_are_the_reports_numbers(chapter):
    cited = {}
    for lang in ("en", "zh"):
        text = cell(chapter, "box", lang)
        assert CITED.search(text), f"{chapter.name} ({lang}): the box cites no report"
        assert citation_problems(chapter, text) == [], chapter.name
        cited[lang] = sorted(CITED.findall(text))
    assert cited["en"] == cited["zh"], f"{chapter.name}: the two languages cite different numbers"


def test_the_citation_check_sees_a_wrong_number_and_an_uncited_one():
    chapter = DOCS / "tour" / "01-regression.py"
    text = cell(chapter, "box", "en")
    number, url, title = CITED.findall(text)[0]
    assert citation_problems(chapter, text) == []
    wrong = text.replace(f"[{number}]({url}", f"[{as_float(number) + 1:.4f}]({url}", 1)
    assert citation_problems(chapter, wrong) != []
    assert citation_problems(chapter, text + "\nIt was 0.123 on Tuesday.") != []
    assert citation_problems(chapter, text.replace(title, "report.json: checks/name=no_such_check/value", 1)) != []
    assert resolve({"checks": [{"name": "gap", "value": [1, 2, 3]}]}, "checks/name=gap/value/mean") == 2


def chinese_prose(text: str) -> str:
    """A Chinese cell without its code, formulas, HTML tags and link titles: where quote marks are prose."""
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    text = re.sub(r"`[^`]*`", "", text)
    text = re.sub(r"\$\$.*?\$\$|\$[^$]*\$", "", text, flags=re.S)
    text = re.sub(r"<[^>]+>", "", text)
    return re.sub(r'\]\(([^)\s]+)\s+"[^"]*"\)', "", text)


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.name)
def test_the_chinese_text_quotes_with_one_kind_of_mark(chapter):
    for lang, src in markdown(chapter):
        if lang == "zh":
            prose = chinese_prose(src)
            assert '"' not in prose and "「" not in prose, f"{chapter.name}: {prose[max(0, prose.find(chr(34)) - 40):][:80]!r}"
