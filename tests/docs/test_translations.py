"""The Chinese guides (NAME.zh.md beside NAME.md, issue 28) say what the English ones say: the same figures, the same
code and the same sections. A translation that drops or changes a number, edits a code block or loses a heading
fails here. Only what carries over unchanged between the languages is compared: numbers, fenced code, the shape of
the headings; the prose itself is for a reader to judge (and tests/docs/test_glossary.py checks its terms)."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"
PAIRS = ["ladder", "attention", "replication"]

# A figure: a number with thousands separators (485,433; 76,457,536; 1,234.5), a decimal (1.4883), a number in
# scientific notation (1e-12, 1.3e-6) or a percentage (48%); a dotted address or version (127.0.0.1) is one figure.
NUMBER = re.compile(
    r"(?<![\d.,])(?:\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)+(?:e[-+]?\d+)?|\d+e[-+]?\d+|\d+%)(?!\d|[.,]\d)"
)
FENCE = re.compile(r"^([ \t]*)(`{3,}|~{3,})[^\n]*\n.*?^\1\2[ \t]*$", re.M | re.S)
HEADING = re.compile(r"^(#{1,6})[ \t]+\S", re.M)

# Figures of an English page that may legitimately be missing from its Chinese page, as {page: {figure: why}}.
# Empty: every figure carries over. Add one only with the reason it cannot.
ALLOWED_MISSING: dict[str, dict[str, str]] = {
    "ladder": {},
    "attention": {},
    "replication": {},
}


def numbers(text: str) -> Counter:
    return Counter(NUMBER.findall(text))


def fenced(text: str) -> list[str]:
    return [m.group(0) for m in FENCE.finditer(text)]


def headings(text: str) -> list[str]:
    """The level of every heading outside fenced code, in order ('#' lines inside a bash block are comments)."""
    return HEADING.findall(FENCE.sub("", text))


def missing_numbers(english: str, chinese: str, allowed: dict[str, str] = {}) -> dict[str, tuple[int, int]]:
    """{figure: (times in the English page, times in the Chinese page)} for each figure the Chinese page has fewer of."""
    en, zh = numbers(english), numbers(chinese)
    return {n: (c, zh[n]) for n, c in en.items() if zh[n] < c and n not in allowed}


def missing_code(english: str, chinese: str) -> list[str]:
    return [block for block in fenced(english) if block not in chinese]


def pages(name: str) -> tuple[str, str]:
    english, chinese = DOCS / f"{name}.md", DOCS / f"{name}.zh.md"
    assert chinese.is_file(), f"docs/{name}.zh.md, the Chinese version of docs/{name}.md, is missing"
    return english.read_text(encoding="utf-8"), chinese.read_text(encoding="utf-8")


@pytest.mark.parametrize("name", PAIRS)
def test_the_chinese_page_exists(name):
    pages(name)


@pytest.mark.parametrize("name", PAIRS)
def test_every_figure_of_the_english_page_is_in_the_chinese_page(name):
    english, chinese = pages(name)
    assert sum(numbers(english).values()) > 20, "the number pattern finds the English page's figures"
    allowed = ALLOWED_MISSING[name]
    assert set(allowed) <= set(numbers(english)), "an allowed figure that the English page no longer has"
    missing = missing_numbers(english, chinese, allowed)
    assert not missing, f"docs/{name}.zh.md lacks figures of docs/{name}.md (figure: (English, Chinese)): {missing}"


@pytest.mark.parametrize("name", PAIRS)
def test_every_code_block_of_the_english_page_is_in_the_chinese_page_verbatim(name):
    english, chinese = pages(name)
    assert fenced(english), "the fence pattern finds the English page's code"
    missing = missing_code(english, chinese)
    assert not missing, f"docs/{name}.zh.md changes or lacks these code blocks:\n" + "\n\n".join(missing)


@pytest.mark.parametrize("name", PAIRS)
def test_the_chinese_page_has_the_same_headings(name):
    english, chinese = pages(name)
    assert headings(chinese) == headings(english), (Counter(headings(english)), Counter(headings(chinese)))


ENGLISH = """# Title

Trained on 485,433 characters: 1.4883 nats, 48% of them, tested to 1e-12.

## A section

```bash
redthread ladder --steps 1500   # comment
```
"""


@pytest.mark.parametrize("chinese, fails", [
    ("# 标题\n\n在 485,433 个字符上训练：1.4883 奈特，占 48%，测试精度 1e-12。\n\n## 一节\n\n"
     "```bash\nredthread ladder --steps 1500   # comment\n```\n", None),
    ("# 标题\n\n在 48.5 万个字符上训练：1.4883 奈特，占 48%，测试精度 1e-12。\n\n## 一节\n\n"
     "```bash\nredthread ladder --steps 1500   # comment\n```\n", "numbers"),  # a figure rewritten
    ("# 标题\n\n在 485,433 个字符上训练：1.488 奈特，占 48%，测试精度 1e-12。\n\n## 一节\n\n"
     "```bash\nredthread ladder --steps 1500   # comment\n```\n", "numbers"),  # a figure rounded
    ("# 标题\n\n在 485,433 个字符上训练：1.4883 奈特，占 48%，测试精度 1e-12。\n\n## 一节\n\n"
     "```bash\nredthread ladder --steps 1500   # 注释\n```\n", "code"),  # a code block edited
    ("# 标题\n\n在 485,433 个字符上训练：1.4883 奈特，占 48%，测试精度 1e-12。\n\n"
     "```bash\nredthread ladder --steps 1500   # comment\n```\n", "headings"),  # a section lost
])
def test_a_translation_that_drops_or_changes_something_is_caught(chinese, fails):
    caught = {
        "numbers": bool(missing_numbers(ENGLISH, chinese)),
        "code": bool(missing_code(ENGLISH, chinese)),
        "headings": headings(chinese) != headings(ENGLISH),
    }
    assert caught == {k: k == fails for k in caught}, caught


def test_a_hash_line_in_a_code_block_is_not_a_heading():
    assert headings("## A\n\n```bash\n# a comment\n## another\n```\n\n### B\n") == ["##", "###"]


def test_the_number_pattern_takes_whole_figures():
    assert numbers("485,433 and 76,457,536 chars, 1.4883, 1.3e-6, 1e-12, 68%, 1.2.3, 1500 steps").keys() == {
        "485,433", "76,457,536", "1.4883", "1.3e-6", "1e-12", "68%", "1.2.3"}


def anchors(text: str) -> list[str]:
    """The id of every heading as the site's Markdown (toc, attr_list) makes it, fenced code left out."""
    import markdown

    md = markdown.Markdown(extensions=["toc", "attr_list"])
    md.convert(FENCE.sub("", text))
    out, stack = [], list(reversed(md.toc_tokens))
    while stack:
        token = stack.pop()
        out.append(token["id"])
        stack += reversed(token["children"])
    return out


@pytest.mark.parametrize("name", PAIRS)
def test_the_chinese_headings_keep_the_english_anchors(name):
    """`## 标题 {#english-anchor}`: a link to NAME.md#anchor leads to the same section in either language."""
    english, chinese = pages(name)
    assert anchors(chinese) == anchors(english)
