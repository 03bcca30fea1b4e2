"""docs/glossary.md, one Chinese term per concept: its tables are the source of truth, and no spelling a row retires
(its column 不再使用) appears anywhere in the Chinese material — the tour's Chinese cells, README.zh-CN and every
*.zh.md, the Chinese lines and cells of the other pages (docs/claims.md's 中文 column, the glossary's own terms and
notes), and Chinese strings in src/ and docs/*.py. Code, formulas, link targets and an English gloss right after a
Chinese term (独热（one-hot）) are not prose and are left out. A row added to the glossary is a new check."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
GLOSSARY = DOCS / "glossary.md"
CJK = re.compile(r"[\u4e00-\u9fff]")
WORD = re.compile(r"[A-Za-z]+")
CELL = re.compile(r"(?<!\\)\|")
SKIP = {".venv", "build", "site", "tests", "node_modules", ".git"}

# what is not prose, in the order it is removed
NOT_PROSE = [
    re.compile(r"^[ \t]*(`{3,}|~{3,})[^\n]*\n.*?^[ \t]*\1[ \t]*$", re.M | re.S),  # fenced code
    re.compile(r"<!--.*?-->", re.S),
    re.compile(r"``.+?``|`[^`\n]+`"),  # inline code
    re.compile(r"\$\$.+?\$\$", re.S),  # display maths
    re.compile(r"\$[^$\n]+\$"),  # inline maths
    re.compile(r"!\[[^\]\n]*\]\([^)\n]*\)"),  # an image (its alt text is the English one)
    re.compile(r"(?<=\])\([^)\n]*\)"),  # a link's target
    re.compile(r"(?<=[\u4e00-\u9fff])（[A-Za-z][\x20-\x7e]*）"),  # an English gloss: 独热（one-hot）
]


def cells(line: str) -> list[str]:
    return [c.strip() for c in CELL.split(line.strip())[1:-1]]


def glossary() -> list[dict[str, str]]:
    """Every row of the glossary's tables, by its column headers."""
    rows, header = [], None
    for line in GLOSSARY.read_text(encoding="utf-8").splitlines():
        if not line.startswith("|"):
            header = None
        elif header is None:
            header = cells(line)
        elif not set(line) <= set("|-: "):
            rows.append(dict(zip(header, cells(line), strict=True)))
    return rows


def column(row: dict[str, str], starts: str) -> str:
    (name,) = [k for k in row if k.startswith(starts)]
    return row[name]


def retired() -> dict[str, str]:
    """{retired spelling: the term that replaces it}."""
    out = {}
    for row in glossary():
        for spelling in re.findall(r"`([^`]+)`", column(row, "不再使用")):
            out[spelling] = column(row, "中文")
    return out


def pattern(spelling: str) -> re.Pattern:
    """A retired spelling as a regex: N is any number, a space any spacing; an ASCII word stands alone."""
    parts = []
    for i, ch in enumerate(spelling):
        around = spelling[max(i - 1, 0):i] + spelling[i + 1:i + 2]
        if ch == "N" and not re.search(r"[A-Za-z]", around):
            parts.append(r"\d+")
        elif ch == " ":
            parts.append(r"\s*")
        else:
            parts.append(re.escape(ch))
    body = "".join(parts)
    if re.match(r"[A-Za-z]", spelling):
        body = r"(?<![A-Za-z_])" + body
    if re.search(r"[A-Za-z]$", spelling):
        body += r"(?![A-Za-z_])"
    return re.compile(body)


def prose(text: str) -> str:
    for rule in NOT_PROSE:
        text = rule.sub(" ", text)
    return text


def chinese(text: str) -> bool:
    """A line or cell of a bilingual page is Chinese when it has at least as many CJK characters as English words."""
    return len(CJK.findall(text)) >= max(1, len(WORD.findall(text)))


def segments(text: str, drop_columns: frozenset[int] = frozenset()) -> list[str]:
    """The Chinese lines and table cells of a page in two languages."""
    out = []
    for line in prose(text).splitlines():
        parts = [c for i, c in enumerate(cells(line)) if i not in drop_columns] if line.startswith("|") else [line]
        out += [p for p in parts if chinese(p)]
    return out


def tour_chinese(path: Path) -> str:
    cells_ = re.split(r"^# %%", path.read_text(encoding="utf-8"), flags=re.M)
    zh = [c.split("\n", 1)[1] for c in cells_ if c.startswith(' [markdown] lang="zh"')]
    return "\n\n".join(re.sub(r"^# ?", "", c, flags=re.M) for c in zh)


def python_strings(path: Path) -> list[str]:
    """The Chinese lines of a module's strings."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    strings = [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
    return [line for s in strings if CJK.search(s) for line in s.splitlines() if chinese(line)]


def files(pattern_: str) -> list[Path]:
    return sorted(p for p in REPO.rglob(pattern_) if not SKIP & set(p.relative_to(REPO).parts))


def chinese_material() -> list[tuple[str, str]]:
    """(where, text) for every piece of Chinese prose in the repository."""
    out = [(p.relative_to(REPO).as_posix(), prose(tour_chinese(p))) for p in sorted((DOCS / "tour").glob("[0-9]*.py"))]
    for path in files("*.md"):
        where, text = path.relative_to(REPO).as_posix(), path.read_text(encoding="utf-8")
        if path.name.endswith((".zh.md", ".zh-CN.md")):
            out.append((where, prose(text)))
        else:
            drop = frozenset({2, 3}) if path == GLOSSARY else frozenset()  # the D2L and retired columns
            out += [(where, s) for s in segments(text, drop)]
    for path in [*files("src/**/*.py"), *DOCS.glob("*.py")]:
        out += [(path.relative_to(REPO).as_posix(), s) for s in python_strings(path)]
    for suffix in ("js", "html", "json"):
        for path in files(f"src/**/*.{suffix}"):
            text = path.read_text(encoding="utf-8", errors="replace")
            out += [(path.relative_to(REPO).as_posix(), s) for s in text.splitlines() if chinese(s)]
    return out


def hits(material: list[tuple[str, str]], spellings: dict[str, str]) -> list[str]:
    found = []
    for spelling, term in spellings.items():
        rx = pattern(spelling)
        for where, text in material:
            for m in rx.finditer(text):
                context = text[max(m.start() - 20, 0):m.end() + 20].replace("\n", " ")
                found.append(f"{where}: '{m.group(0)}' (write {term}) in …{context}…")
    return found


def test_the_glossary_has_one_term_per_concept():
    rows = glossary()
    assert len(rows) > 100
    terms = [column(r, "中文") for r in rows]
    assert len(terms) == len(set(terms)), [t for t in terms if terms.count(t) > 1]
    for row in rows:
        term, english = column(row, "中文"), column(row, "English")
        assert term and english and not CJK.search(english), row
        assert column(row, "D2L") != term, f"{term}: the D2L column is for a term that differs"
    spellings = retired()
    assert {"不确定", "nats", "噪声底线", "one-hot", "第 N 层", "第二个块"} <= set(spellings)
    for spelling in spellings:
        assert not pattern(spelling).search(" ".join(terms)), f"'{spelling}' is retired but a term uses it"


def test_the_chinese_material_is_all_read():
    where = {w for w, _ in chinese_material()}
    assert {f"docs/tour/{p.name}" for p in (DOCS / "tour").glob("[0-9]*.py")} <= where
    assert len([w for w in where if w.startswith("docs/tour/")]) == 10
    assert {"README.zh-CN.md", "docs/index.zh.md", "docs/classroom.zh.md", "docs/claims.md", "docs/glossary.md",
            "docs/hooks.py"} <= where


def test_no_retired_spelling_in_the_chinese_material():
    found = hits(chinese_material(), retired())
    assert not found, "retired spellings (docs/glossary.md):\n" + "\n".join(found)


@pytest.mark.parametrize("text, caught", [
    ("它在第 1 层里", "第 N 层"), ("第 2 到 5 层", "第 N 到 N 层"), ("第二个块的头", "第二个块"),
    ("结论：不确定", "不确定"), ("0.35 nats", "nats"), ("趋向 one-hot 分布", "one-hot"), ("噪声底线", "噪声底线"),
])
def test_a_retired_spelling_in_prose_is_caught(text, caught):
    assert pattern(caught).search(prose(text))
    assert hits([("x", prose(text))], retired())


@pytest.mark.parametrize("text", [
    "独热（one-hot）目标", "`F.one_hot` 和 `one-hot`", "公式 $\\text{one-hot}$", "层 1·头 3（从 0 计数）",
    "每个字符 2.01 奈特", "[报告](experiments/bigram/nats.md)", "第 3 章、第 300 步", "分词器（tokenizer）切出词元",
])
def test_code_formulas_glosses_and_the_chosen_terms_pass(text):
    assert not hits([("x", prose(text))], retired()), text


def test_an_english_line_of_a_bilingual_page_is_not_chinese():
    assert not segments("The next-token distribution after 我 is in nats.\n")
    assert segments("| 对 FFN 损失 1.61 | the FFN |\n") == ["对 FFN 损失 1.61"]


def test_the_glossary_is_on_the_site_in_both_languages():
    config = yaml.safe_load((REPO / "mkdocs.yml").read_text(encoding="utf-8").replace("!!python", "#"))
    assert {"Glossary": "glossary.md"} in config["nav"]
    (i18n,) = [p["i18n"] for p in config["plugins"] if isinstance(p, dict) and "i18n" in p]
    (zh,) = [lang for lang in i18n["languages"] if lang["locale"] == "zh"]
    assert zh["nav_translations"]["Glossary"] == "术语表"
    for page in ("index.md", "index.zh.md"):
        assert "](glossary.md)" in (DOCS / page).read_text(encoding="utf-8"), page
