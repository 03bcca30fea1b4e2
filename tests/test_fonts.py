"""Chinese tokens in figures: drawn with an installed CJK font, or one line saying how to get one."""

from __future__ import annotations

import io
import logging
import warnings

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch

from redthread import fonts
from redthread.viz.figures import plot_grid, plot_head

POEM = list("床前明月光，疑是地上霜")


@pytest.fixture(autouse=True)
def fresh_lookup(monkeypatch):
    monkeypatch.setattr(fonts, "_warned", False)
    fonts.cjk_font.cache_clear()
    yield
    fonts.cjk_font.cache_clear()


@pytest.fixture
def no_cjk_font(monkeypatch):
    monkeypatch.setattr(fonts, "_installed_families", lambda: {"DejaVu Sans", "DejaVu Serif"})
    monkeypatch.setattr(fonts, "_add_new_system_fonts", lambda: None)


def attention(n: int) -> torch.Tensor:
    return torch.softmax(torch.randn(n, n, generator=torch.Generator().manual_seed(0)), -1)  # (T, S)


def glyph_warnings(draw) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        draw()
    return [str(w.message) for w in caught if "missing from" in str(w.message)]


def pixels(fig) -> np.ndarray:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=60)
    plt.close(fig)
    return plt.imread(io.BytesIO(buffer.getvalue()))


def test_has_cjk_finds_chinese_japanese_korean_and_full_width_punctuation():
    assert fonts.has_cjk(["a", "月"]) and fonts.has_cjk(["かな"]) and fonts.has_cjk(["한"]) and fonts.has_cjk(["，"])
    assert not fonts.has_cjk(["To be, or not to be", "é", "→", ""])


def test_chinese_tokens_draw_with_no_missing_glyph_when_a_cjk_font_is_installed(tmp_path):
    if fonts.cjk_font() is None:
        pytest.skip("no CJK font installed (sudo apt-get install fonts-wqy-microhei)")
    plain = glyph_warnings(lambda: pixels(plt.figure(figsize=(2, 1)).text(0, 0.5, "".join(POEM)).figure))
    assert plain, "matplotlib's default font should lack these glyphs: the check below would prove nothing"
    assert glyph_warnings(lambda: plot_head(attention(len(POEM)), POEM, POEM, tmp_path / "head.png", title="静夜思")) == []
    grid = torch.stack([attention(len(POEM))] * 2).view(1, 2, len(POEM), len(POEM))  # (L, H, T, S)
    assert glyph_warnings(lambda: plot_grid(grid, POEM, POEM, tmp_path / "grid.svg")) == []
    assert (tmp_path / "head.png").stat().st_size > 0 and (tmp_path / "grid.svg").stat().st_size > 0


def test_without_a_cjk_font_one_line_says_how_to_get_one_and_no_glyph_warnings(no_cjk_font, tmp_path, caplog):
    assert fonts.cjk_font() is None
    with caplog.at_level(logging.WARNING, logger="redthread"):
        for i in range(3):  # three figures, one line
            drawn = glyph_warnings(lambda i=i: plot_head(attention(len(POEM)), POEM, POEM, tmp_path / f"{i}.png"))
            assert drawn == []
    lines = [r.getMessage() for r in caplog.records if r.name == "redthread"]
    assert len(lines) == 1 and "\n" not in lines[0]
    assert "no CJK font" in lines[0] and "apt-get install fonts-noto-cjk" in lines[0] and "brew install" in lines[0]


def test_a_latin_figure_looks_for_no_font_and_warns_nothing(no_cjk_font, tmp_path, caplog):
    tokens = list("To be, or not")
    with caplog.at_level(logging.WARNING, logger="redthread"):
        plot_head(attention(len(tokens)), tokens, tokens, tmp_path / "latin.png")
    assert caplog.records == [] and fonts.cjk_font.cache_info().currsize == 0  # never looked up


def test_latin_text_looks_the_same_with_the_cjk_fallback():
    if fonts.cjk_font() is None:
        pytest.skip("no CJK font installed")

    def figure():
        fig = plt.figure(figsize=(3, 1))
        fig.text(0.05, 0.4, "query (attending) 0.25", fontsize=14)
        return fig

    plain = pixels(figure())
    with fonts.cjk_fallback(["月"]):  # the fallback active, on a figure with no CJK character
        assert matplotlib.rcParams["font.family"][-1] == fonts.cjk_font()
        with_fallback = pixels(figure())
    assert np.array_equal(plain, with_fallback)
    with fonts.cjk_fallback(["月"]):  # and the control: a CJK glyph does change the picture
        fig = figure()
        fig.text(0.8, 0.4, "月", fontsize=14)
        assert not np.array_equal(plain, pixels(fig))


@pytest.mark.slow  # child processes
def test_the_module_run_as_a_file_answers_setup_sh_without_importing_torch():
    import subprocess
    import sys
    from pathlib import Path

    script = Path(fonts.__file__)
    probe = f"import runpy, sys; runpy.run_path({str(script)!r}, run_name='not main'); print('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.strip() == "False"
    found = subprocess.run([sys.executable, str(script)], capture_output=True, text=True)
    assert found.returncode == (0 if fonts.cjk_font() is not None else 1), found.stderr
