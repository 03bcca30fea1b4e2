"""Chinese, Japanese and Korean characters in matplotlib figures: drawn with a CJK font, not as boxes.

matplotlib's default font, DejaVu Sans, has no CJK glyphs: a token such as '月' becomes a box and
matplotlib warns once per missing glyph. Since matplotlib 3.6 a text may name a list of families
and takes each glyph from the first family that has it, so inside `cjk_fallback()` the figure's
families are the usual ones followed by the first installed font of `CJK_FAMILIES`: Latin text keeps
its font, and only the glyphs DejaVu Sans lacks come from the CJK one. A figure whose texts hold no
CJK character is drawn exactly as before (nothing is looked up).

Where no CJK font is installed and a figure's text holds CJK characters, one line is logged, once
per process, saying how to install one, instead of matplotlib's warning per glyph.

    with cjk_fallback(tokens):        # the texts the figure will draw
        fig = ...; fig.savefig(path)  # texts are created and drawn inside: a text keeps the families
                                      # it was created with, and missing glyphs are found when drawn
"""

from __future__ import annotations

import functools
import logging
import re
import warnings
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

# Simplified Chinese first, then fonts that cover it on Linux, macOS and Windows
CJK_FAMILIES = (
    "Noto Sans CJK SC", "Noto Sans SC", "Source Han Sans SC", "Source Han Sans CN", "WenQuanYi Micro Hei",
    "WenQuanYi Zen Hei", "SimHei", "Microsoft YaHei", "PingFang SC", "Hiragino Sans GB", "Heiti SC",
    "Noto Sans CJK JP", "Noto Sans CJK TC", "Noto Sans CJK KR", "Arial Unicode MS",
)
INSTALL_HINT = (
    "warning: no CJK font found, so Chinese characters in figures are drawn as boxes; install one "
    "(Debian/Ubuntu: sudo apt-get install fonts-noto-cjk, or fonts-wqy-microhei; "
    "macOS: brew install --cask font-noto-sans-cjk-sc)"
)
# CJK punctuation and kana, unified ideographs and extension A, Hangul, compatibility ideographs,
# full-width forms, and the ideographs beyond the basic plane
CJK = re.compile("[\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef\U00020000-\U0003134f]")
GLYPH_MISSING = r"Glyph \d+ .* missing from"  # matplotlib's warning, one per glyph

log = logging.getLogger("redthread")
_warned = False


def has_cjk(texts: Iterable[str]) -> bool:
    return any(CJK.search(str(t)) for t in texts)


def _installed_families() -> set[str]:
    from matplotlib import font_manager

    return {f.name for f in font_manager.fontManager.ttflist}


def _add_new_system_fonts() -> None:
    """Fonts installed after matplotlib cached its font list are not in it: add them."""
    from matplotlib import font_manager

    known = {f.fname for f in font_manager.fontManager.ttflist}
    for path in font_manager.findSystemFonts():
        if path not in known:
            try:
                font_manager.fontManager.addfont(path)
            except (OSError, RuntimeError, ValueError):  # a font file matplotlib cannot read is skipped
                continue


@functools.cache
def cjk_font() -> str | None:
    """The first of `CJK_FAMILIES` that matplotlib can use, or None."""
    for attempt in range(2):
        installed = _installed_families()
        found = next((family for family in CJK_FAMILIES if family in installed), None)
        if found is not None or attempt:
            return found
        _add_new_system_fonts()
    return None


@contextmanager
def cjk_fallback(texts: Iterable[str] = ()) -> Iterator[None]:
    """Inside: when `texts` hold CJK characters, matplotlib texts fall back to a CJK font, or, with none
    installed, one line is logged (once per process) in place of matplotlib's warning per glyph."""
    import matplotlib

    global _warned
    if not has_cjk(texts):  # nothing to change: no font lookup either
        yield
        return
    font = cjk_font()
    if font is not None:
        families = [f for f in matplotlib.rcParams["font.family"] if f != font]
        with matplotlib.rc_context({"font.family": [*families, font]}):
            yield
        return
    if not _warned:
        _warned = True
        log.warning(INSTALL_HINT)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=GLYPH_MISSING)
        yield


if __name__ == "__main__":  # setup.sh runs this file (no torch import): exit status 1 when no CJK font is found
    raise SystemExit(cjk_font() is None)
