"""The Complete Tang Poems (全唐诗) as a corpus: built once from the chinese-poetry package, split by poem.

`tang300` (the anthology, 320 poems, shipped in the package) is too small to learn Chinese from:
27,628 characters. This module builds the real corpus, `--data tang`: every Tang poem of the
chinese-poetry database (its `quantangshi/poet.tang.*.json`, 57,607 entries in traditional
characters), cleaned as `data/make_tang300.py` cleans the anthology and written in simplified
characters, one poem per block (title, poet, lines, a blank line): 54,888 poems, 4,134,928
characters, 8,744 distinct.

The validation split of a single file is its last tenth (`corpus.split_corpus`), so the order of
the poems decides what is held out. The database's order is by poet and genre, so its last tenth
would be one group of poets, a shift rather than a held-out sample. The poems are written in an
order drawn by a fixed seed instead: the last tenth of the file is a random tenth of the poems,
and no poem is cut by the split except the one that straddles it.

What is dropped, and why:
- editors' notes in brackets (variant readings, "（一作「東風細雨」）"), as in tang300;
- poems whose text, title or poet keeps a mark that is not part of the poem after that: a lost
  character (□, ○, ●), the database's own markup ([...], {...}, 〖...〗, "/", "=", digits), and
  entries with no text — 1,769 entries;
- poems whose lines (after simplification) repeat an earlier poem's, under another title or poet,
  so that no poem is both trained on and held out — 950.

Built by `bash setup.sh` (npm installs chinese-poetry 2.0.1, pip installs OpenCC 1.4.2 for the
traditional -> simplified conversion), or by hand:

    python -m redthread.data.tang [PACKAGE_DIR]    # PACKAGE_DIR: node_modules/chinese-poetry

into `<sys.prefix>/share/redthread/texts/tang.txt`, where `--data tang` finds it
(REDTHREAD_TANG names another file). Origin, licence and checksum: `data/texts/README.md`.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
import sys
from pathlib import Path

from redthread.errors import MissingFile, RedthreadError

NAME = "tang"
PACKAGE = "chinese-poetry"  # the npm package, pinned by package.json / package-lock.json
SOURCE_GLOB = "dist/quantangshi/poet.tang.*.json"
INSTALL = Path("share") / "redthread" / "texts" / "tang.txt"  # under sys.prefix: setup.sh writes it there
NPM_INSTALL = Path("share") / "redthread" / "web" / "node_modules" / PACKAGE  # where setup.sh's npm ci puts it
SEED = 0  # the order of the poems, hence the split (see the module docstring)

NOTE = re.compile(r"\s*[（(][^）)]*[）)]")  # an editor's note: （一作「東風細雨」）
FULL_WIDTH = str.maketrans({",": "，", "!": "！", "?": "？", ":": "：", ";": "；"})
PUNCTUATION = set("，。《》「」、：？；！『』·…")  # what a poem's text may hold besides Chinese characters


def is_han(ch: str) -> bool:
    """A Chinese character: the CJK Unified Ideographs, Extension A, the extensions beyond the BMP, compatibility."""
    return "\u3400" <= ch <= "\u9fff" or "\uf900" <= ch <= "\ufaff" or "\U00020000" <= ch <= "\U0003ffff"


def clean(text: str) -> list[str]:
    """The text's lines without notes (a note may run over a line break), spaces or empty lines."""
    text = NOTE.sub("", text).translate(FULL_WIDTH).replace(" ", "").replace("\u3000", "")
    return [line.strip() for line in text.split("\n") if line.strip()]


def readable(lines: list[str]) -> bool:
    """Whether every character is a Chinese character or punctuation a poem uses (no lost character, no markup)."""
    return bool(lines) and all(is_han(ch) or ch in PUNCTUATION for line in lines for ch in line)


def poems(package: Path) -> list[tuple[str, str, list[str]]]:
    """(title, poet, lines) of every readable Tang poem in the package's files, in traditional characters."""
    files = sorted(package.glob(SOURCE_GLOB), key=lambda p: int(p.stem.rsplit(".", 1)[1]))
    if not files:
        raise MissingFile(f"no {SOURCE_GLOB} in {package}: is it the {PACKAGE} npm package (version 2.0.1)?")
    out = []
    for path in files:
        for entry in json.loads(path.read_text(encoding="utf-8")):
            title, poet = clean(entry.get("title") or ""), clean(entry.get("author") or "")
            lines = clean("\n".join(entry.get("paragraphs") or []))
            if readable(lines) and readable(title) and readable(poet):
                out.append(("".join(title), "".join(poet), lines))
    return out


def build_text(package: Path, to_simplified=None) -> tuple[str, dict]:
    """The corpus's text and what building it counted; `to_simplified`: OpenCC's t2s (None: made here)."""
    if to_simplified is None:
        to_simplified = opencc_t2s().convert
    entries = poems(package)
    seen, blocks = set(), []
    for title, poet, lines in entries:
        title, poet, lines = to_simplified(title), to_simplified(poet), to_simplified("\n".join(lines))
        if lines in seen:  # the same poem again (under another title or poet): held out and trained on otherwise
            continue
        seen.add(lines)
        blocks.append(f"{title}\n{poet}\n{lines}")
    random.Random(SEED).shuffle(blocks)
    text = "\n\n".join(blocks) + "\n"
    return text, {"readable": len(entries), "poems": len(blocks), "repeats": len(entries) - len(blocks),
                  "characters": len(text)}


def opencc_t2s():
    try:
        import opencc
    except ImportError:
        raise RedthreadError("building the Tang corpus needs OpenCC: pip install opencc==1.4.2") from None
    return opencc.OpenCC("t2s")


def installed_path() -> Path:
    """Where `--data tang` reads the corpus: $REDTHREAD_TANG, else setup.sh's build under sys.prefix."""
    return Path(os.environ.get("REDTHREAD_TANG") or Path(sys.prefix) / INSTALL)


def corpus_path() -> Path:
    """The built corpus's file, or a one-line error saying how to build it."""
    path = installed_path()
    if not path.is_file():
        raise MissingFile(f"the Tang corpus (--data tang) is not built at {path}: run bash setup.sh, "
                          f"or python -m redthread.data.tang with the {PACKAGE} npm package")
    return path


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    package = Path(args[0]) if args else Path(sys.prefix) / NPM_INSTALL
    out = installed_path()
    try:
        text, counts = build_text(package)
    except RedthreadError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(out.name + ".partial")  # written whole, then moved: a stopped build leaves no half corpus
    partial.write_text(text, encoding="utf-8")
    partial.replace(out)
    print(f"{out}: {counts['poems']:,} poems ({counts['repeats']:,} repeats dropped), "
          f"{counts['characters']:,} characters, sha256 {sha256(out)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
