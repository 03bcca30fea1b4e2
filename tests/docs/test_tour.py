"""The guided tour: every chapter executes, and every chapter keeps the contract the site is built on.

The contract (docs/tour/NN-slug.py, jupytext percent format): the jupytext header; a title pair first,
`# N · ...` then `# 第 N 章 · ...`; every markdown cell carries lang="en" or lang="zh", each English cell
followed at once by its Chinese one; code cells carry no language and are shared; the last two cells are
`## Try this` and `## 试一试`; links stay inside docs/ (or lead to results/, the committed full runs of the
experiments, which the site shows as source pages); data never from the network.
"""

import re
from pathlib import Path

import jupytext
import nbformat
import pytest

from tests.docs.conftest import CHAPTERS, DOCS, EXAMPLE
from tests.chinese_text import prose_runs

HEADER = """# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---
"""
LINK = re.compile(r"\]\(([^)\s]+)")


def contract_problems(path: Path, text: str | None = None) -> list[str]:
    """What in a chapter breaks the contract; [] when nothing does."""
    text = path.read_text(encoding="utf-8") if text is None else text
    problems = []
    match = re.match(r"^(\d\d)-[a-z0-9-]+\.py$", path.name)
    if not match:
        return [f"{path.name}: not named NN-slug.py"]
    n = int(match.group(1))
    if not text.startswith(HEADER):
        problems.append("the file does not open with the jupytext header")
    try:
        cells = jupytext.reads(text, fmt="py:percent").cells
    except Exception as e:  # jupytext's own errors have no common class
        return [*problems, f"jupytext cannot read it: {e}"]
    markdown = [(i, c) for i, c in enumerate(cells) if c.cell_type == "markdown"]
    for i, cell in markdown:
        if cell.metadata.get("lang") not in ("en", "zh"):
            problems.append(f"markdown cell {i} has no lang=\"en\" or lang=\"zh\"")
    for i, cell in enumerate(cells):
        if cell.cell_type == "code" and "lang" in cell.metadata:
            problems.append(f"code cell {i} has a language: code cells are shared")
    lang = [c.metadata.get("lang") if c.cell_type == "markdown" else None for c in cells]
    for i, here in enumerate(lang):
        if here == "en" and (i + 1 == len(lang) or lang[i + 1] != "zh"):
            problems.append(f"English cell {i} is not followed by its Chinese cell")
        if here == "zh" and (i == 0 or lang[i - 1] != "en"):
            problems.append(f"Chinese cell {i} does not follow an English cell")
    titles = [c.source.strip() for c in cells[:2]]
    if len(titles) < 2 or not re.fullmatch(rf"# {n} · [^\n]+", titles[0]) or not re.fullmatch(rf"# 第 {n} 章 · [^\n]+", titles[1]):
        problems.append(f"the first two cells are not the title pair '# {n} · ...' and '# 第 {n} 章 · ...'")
    last = [c.source.lstrip() for c in cells[-2:]]
    if len(last) < 2 or not last[0].startswith("## Try this") or not last[1].startswith("## 试一试"):
        problems.append("the last two cells are not '## Try this' and '## 试一试'")
    for i, cell in markdown:
        for url in LINK.findall(cell.source):
            if re.match(r"^[a-z]+:", url) or url.startswith("#"):
                continue
            target = (DOCS / "tour" / url.split("#")[0]).resolve()
            if not (target.is_relative_to(DOCS) or target.is_relative_to(DOCS.parent / "results")) or not target.exists():
                problems.append(f"markdown cell {i} links to {url}, which is not a file of docs/")
    code = "\n".join(c.source for c in cells if c.cell_type == "code")
    if "manual_seed(0)" not in code:
        problems.append("no torch.manual_seed(0)")
    for bad in ("http://", "https://"):
        if bad in code:
            problems.append(f"the code reaches for {bad}")
    return problems


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.name)
def test_chapter_keeps_the_contract(chapter):
    assert contract_problems(chapter) == []


BREAKAGES = {
    "no header": lambda t: t.split("# ---\n", 2)[2],
    "a header of another format": lambda t: t.replace("formats: py:percent", "formats: py:light"),
    "an English cell alone": lambda t: t.replace('# %% [markdown] lang="zh"\n# 导览章节', "# %%\n# 导览章节"),
    "no Chinese title": lambda t: t.replace("# # 第 0 章 · 示例章节", "# # 示例章节"),
    "a language on a code cell": lambda t: t.replace("# %%\nplt.figure", '# %% lang="en"\nplt.figure'),
    "Try this not last": lambda t: t + "\n# %%\nprint(1)\n",
    "a link out of docs": lambda t: t.replace("(../claims.md)。", "(../../README.md)。"),
    "a link to nothing": lambda t: t.replace("[the claims](../claims.md)", "[the claims](../claim.md)"),
    "no seed": lambda t: t.replace("torch.manual_seed(0)", "torch.manual_seed(1)"),
}


@pytest.mark.parametrize("breakage", BREAKAGES)
def test_the_contract_check_sees_a_broken_chapter(breakage):
    text = EXAMPLE.read_text(encoding="utf-8")
    broken = BREAKAGES[breakage](text)
    assert broken != text
    assert contract_problems(EXAMPLE, text) == []
    assert contract_problems(EXAMPLE, broken) != []


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.name)
def test_chapter_executes_once_into_both_languages(chapter, executed_tour):
    paths = executed_tour.notebooks(chapter)
    en, zh = (nbformat.read(paths[lang], as_version=4) for lang in ("en", "zh"))
    langs = {lang: {c.metadata.get("lang") for c in nb.cells if c.cell_type == "markdown"} for lang, nb in (("en", en), ("zh", zh))}
    assert langs == {"en": {"en"}, "zh": {"zh"}}
    code = [[c for c in nb.cells if c.cell_type == "code"] for nb in (en, zh)]
    assert [strip_comments(c.source) for c in code[0]] == [strip_comments(c.source) for c in code[1]], "the same code"
    # one run, two languages: the same outputs, each in its language, with the same numbers
    assert [[o.output_type for o in c.outputs] for c in code[0]] == [[o.output_type for o in c.outputs] for c in code[1]]
    for e, z in zip(code[0], code[1]):
        assert sorted(NUMBER.findall(shown_text(e))) == sorted(NUMBER.findall(shown_text(z))), e.source[:200]
    outputs = [o for c in code[0] for o in c.outputs]
    assert outputs, "the chapter printed or drew nothing"
    assert not [o for o in outputs if o.output_type == "error"]
    assert en.metadata["redthread"]["source_sha256"] == zh.metadata["redthread"]["source_sha256"]


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.name)
def test_the_chinese_chapter_shows_no_english_prose(chapter, executed_tour):
    """The Chinese notebook: its code comments and docstrings, printed lines, pages and every figure's texts (as drawn, from the
    kernel's Chinese drawing) hold no English prose (tests/chinese_text.py, prose_runs: names, notation and quoted data aside)."""
    zh = nbformat.read(executed_tour.notebooks(chapter)["zh"], as_version=4)
    found = {}
    for i, cell in enumerate(c for c in zh.cells if c.cell_type == "code"):
        comments = [line.split("#", 1)[1] for line in cell.source.splitlines() if "#" in line and not line.lstrip().startswith("%")]
        comments += re.findall(r'"""(.*?)"""', cell.source, re.S)  # docstrings
        figures = [t for o in cell.outputs if "image/png" in o.get("data", {}) for t in o.metadata["redthread"]["figure_texts"]]
        for text in [*comments, shown_text(cell), *figures]:
            if hits := prose_runs(text):
                found.setdefault(f"code cell {i}", []).extend(hits)
    assert found == {}


NUMBER = re.compile(r"(?<![A-Za-z_])-?\d+(?:\.\d+)?(?:e-?\d+)?")


def strip_comments(source: str) -> str:
    """The code without its comments and one-line docstrings: what both languages must share."""
    return re.sub(r"[ \t]*#[^\n]*", "", re.sub(r'"""[^\n]*?"""', '""""""', source))


def shown_text(cell) -> str:
    """What a code cell's outputs show as text: printed lines, plain results, and pages without their scripts."""
    out = []
    for o in cell.outputs:
        out.append(o.get("text", ""))
        data = o.get("data", {})
        if "text/html" in data:
            html = re.sub(r"<(script|style)\b.*?</\1>", " ", data["text/html"], flags=re.S)
            out.append(re.sub(r"<[^>]+>", " ", html))
        elif "text/plain" in data and "image/png" not in data:
            out.append(data["text/plain"])
    return "\n".join(out)
