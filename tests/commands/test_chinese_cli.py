"""The Chinese example end to end, through the command line: train a character model on the shipped
Tang poems (`--data tang300`), sample Chinese from it, score it, and see its attention over a line of
poetry as an explorer page (in Chromium) and a figure (drawn with a CJK font, where one is installed)."""

from __future__ import annotations

import warnings

import pytest

from redthread import fonts
from redthread.viz.inspector import load_inspector
from tests.cli_helpers import TINY_MODEL, TINY_TRAIN, cli
from tests.viz.test_explorer_browser import Page

LINE = "床前明月光，疑是地上霜。"


@pytest.fixture(scope="module")
def tang_run(tmp_path_factory):
    import os

    os.environ["REDTHREAD_CACHE"] = str(tmp_path_factory.getbasetemp() / "token-cache")
    out = tmp_path_factory.mktemp("tang") / "run"
    code, stdout, err = cli("train", "--data", "tang300", "--out", out, *TINY_MODEL, *TINY_TRAIN)
    assert code == 0, err
    assert "vocab 2562" in stdout  # the anthology's characters, the tokenizer's alphabet
    return out


def test_sampling_a_run_on_the_tang_poems_prints_chinese(tang_run):
    code, stdout, err = cli("sample", "--checkpoint", tang_run, "--prompt", "床前", "--max-new-tokens", "30", "--seed", "0")
    assert code == 0, err
    new = stdout.strip().removeprefix("床前")
    assert stdout.startswith("床前") and len(new) >= 20
    assert sum(map(bool, map(fonts.CJK.match, new))) >= 15  # mostly Chinese characters and full-width punctuation
    code, stdout, err = cli("eval", "--checkpoint", tang_run)  # the run's own data, found again by its name
    assert code == 0 and "nats/token" in stdout, err


def test_attention_on_a_line_of_poetry_writes_the_page_and_a_figure_with_its_characters(tang_run, tmp_path):
    page, figure = tmp_path / "tang.html", tmp_path / "tang.png"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        code, stdout, err = cli("attention", "--checkpoint", tang_run, "--text", LINE, "--out", page,
                                "--figure", figure, "--layer", "0", "--head", "1")
    assert code == 0, err
    assert LINE in page.read_text(encoding="utf-8") and figure.stat().st_size > 0
    # every character drawn from the CJK font; or, with none installed, one logged line instead of a
    # warning per glyph (tests/test_fonts.py checks that line)
    assert [str(w.message) for w in caught if "missing from" in str(w.message)] == []


def test_the_explorer_shows_the_chinese_characters_in_chromium(tang_run, browser, tmp_path):
    payload = load_inspector(checkpoint=tang_run).attention_payload(LINE)
    p = Page(browser, tmp_path, payload)
    try:
        shown = p.page.eval_on_selector_all("#head-svg .tok.q text", "els => els.map(e => e.textContent)")
        assert shown == list(LINE)
        keys = p.page.eval_on_selector_all("#head-svg .tok.k text", "els => els.map(e => e.textContent)")
        assert keys == list(LINE)
        p.assert_clean()
    finally:
        p.context.close()
