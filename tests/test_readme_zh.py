"""README.md and README.zh-CN.md stay in step: each links the other at its top, they have the same
sections and the same code blocks in the same order, and every link in either exists in the repository."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
READMES = ("README.md", "README.zh-CN.md")
CODE = re.compile(r"^```[^\n]*\n.*?^```$", re.S | re.M)
LINK = re.compile(r"\]\(([^)\s]+)\)")
CJK = re.compile(r"[\u4e00-\u9fff]")


def read(name: str) -> str:
    return (ROOT / name).read_text(encoding="utf-8")


def prose(text: str) -> str:
    return CODE.sub("", text)


def test_each_readme_links_the_other_right_under_its_title():
    for name, other in (READMES, READMES[::-1]):
        lines = [line for line in read(name).splitlines() if line.strip()]
        assert lines[0] == "# redthread" and f"]({other})" in lines[1], name
        assert lines[2].startswith("```"), f"{name}: the quick start comes right after the link line"


def test_the_same_code_blocks_in_the_same_order():
    english, chinese = (CODE.findall(read(name)) for name in READMES)
    assert len(english) > 10
    for i, (en, zh) in enumerate(zip(english, chinese)):
        assert en == zh, f"code block {i} differs:\n{en[:300]}\n---\n{zh[:300]}"
    assert len(english) == len(chinese)


def test_the_same_sections_and_figures():
    english, chinese = (prose(read(name)) for name in READMES)
    assert len(re.findall(r"^## ", english, re.M)) == len(re.findall(r"^## ", chinese, re.M))
    figures = [re.findall(r"!\[[^\]]*\]\(([^)]+)\)", text) for text in (english, chinese)]
    # the Chinese README may show the Chinese rendering of the same figure: x.zh.png for x.png
    assert figures[0] == [path.replace(".zh.", ".") for path in figures[1]]
    assert len(CJK.findall(chinese)) > 5 * len(CJK.findall(english))  # the Chinese one is in Chinese


@pytest.mark.parametrize("name", READMES)
def test_every_link_exists_in_the_repository(name):
    links = LINK.findall(prose(read(name)))
    assert len(links) > 10
    for link in links:
        assert not link.startswith(("/", "../")), link
        if link.startswith(("http://", "https://")):
            continue
        assert (ROOT / link.split("#")[0]).exists(), f"{name}: {link}"
