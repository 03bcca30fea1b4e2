"""The next-token view in a real browser (Chromium, see tests/conftest.py): the page `rt.show_next_token` saves,
opened from a file, draws the inspector's numbers with next_token.js, the script the web app draws its panel
with (the app itself: tests/serve/test_app_browser.py). The texts expected here are written in Python, as the
page was drawn before the script did it: the same rows, numbers, cut line and stats.
"""

import json
import re

import pytest
import torch

import redthread as rt
from redthread.data.tokenizers import CharTokenizer
from redthread.generate.config import SampleConfig
from redthread.lang import speaking
from redthread.viz.inspector import load_inspector
from tests.chinese_text import prose
from tests.tiny import save_tiny_run

TEXT = "to be or not to be"
# every row as drawn: its tag, classes, data attributes, title, token, numbers and bar widths
ROWS = """() => [...document.querySelectorAll('#candidates .cand')].map(e => ({
    tag: e.tagName.toLowerCase(), cls: e.className, id: e.dataset.id, p: e.dataset.p, ps: e.dataset.pSample,
    title: e.title, tok: e.querySelector('.tok').textContent, num_p: e.querySelector('.num.p').textContent,
    num_ps: e.querySelector('.num.ps').textContent, bar_p: e.querySelector('.bar.p').style.width,
    bar_ps: e.querySelector('.bar.ps').style.width}))"""
# what follows each row and the header in #candidates: the cut line is one element, after the last kept row
CHILDREN = "() => [...document.querySelector('#candidates').children].map(e => e.id || e.className)"


def shown(token):
    """A token as the explorer draws one (explorer.js's shown): whitespace made visible."""
    s = token.replace("\n", "↵").replace("\t", "⇥")
    return (s.replace(" ", "␣") or "∅") if not s.strip() else s


def expected_rows(dist, append=False):
    """The rows as the Python renderer drew them before next_token.js did (tag and title: as the app draws them)."""
    top = max(max(c["p"], c["p_sample"]) for c in dist["candidates"]) or 1.0
    return [{"tag": "button" if append else "div", "cls": "cand" if c["kept"] else "cand cut", "id": str(c["id"]),
             "p": c["p"], "ps": c["p_sample"],
             "title": f"token {c['id']}: {json.dumps(c['token'], ensure_ascii=False)}" + (" · click to append it" if append else ""),
             "tok": shown(c["token"]), "num_p": f"{100 * c['p']:.1f}%",
             "num_ps": f"{100 * c['p_sample']:.1f}%" if c["kept"] else "cut",
             "bar_p": float(f"{100 * c['p'] / top:.2f}"), "bar_ps": float(f"{100 * c['p_sample'] / top:.2f}")}
            for c in dist["candidates"]]


def drawn_rows(page):
    rows = page.evaluate(ROWS)
    for r in rows:  # data-p as the number it spells; a width as its percentage (the browser writes 100.00% as 100%)
        r["p"], r["ps"] = float(r["p"]), float(r["ps"])
        r["bar_p"], r["bar_ps"] = float(r["bar_p"].removesuffix("%")), float(r["bar_ps"].removesuffix("%"))
    return rows


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("runs") / "tiny"
    save_tiny_run(folder, TEXT + "\n")
    return folder


@pytest.fixture
def open_page(browser, tmp_path):
    """Save a view and open it: (page, errors, requests)."""
    contexts = []

    def opener(view):
        path = view.save(tmp_path / f"next-{len(contexts)}.html")
        contexts.append(browser.new_context(viewport={"width": 900, "height": 800}))
        page = contexts[-1].new_page()
        errors, requests = [], []
        page.on("console", lambda m: m.type == "error" and errors.append(m.text))
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("dialog", lambda d: errors.append(f"a dialog: {d.message}"))
        page.on("request", lambda r: r.url != path.as_uri() and requests.append(r.url))
        page.goto(path.as_uri())
        page.wait_for_selector("body[data-ready='1']", timeout=10_000)
        return page, errors, requests

    yield opener
    for context in contexts:
        context.close()


def test_the_saved_page_draws_the_inspectors_numbers(run, open_page):
    view = rt.show_next_token(run, "to be or", top_k=3, temperature=0.7, candidates=6)
    dist = load_inspector(checkpoint=run).next_token("to be or", SampleConfig(temperature=0.7, top_k=3), 6)
    page, errors, requests = open_page(view)
    assert drawn_rows(page) == expected_rows(dist)
    assert page.evaluate(CHILDREN) == ["cand-head"] + ["cand"] * 3 + ["kept-count"] + ["cand cut"] * 3
    assert page.text_content("#kept-count") == "— cut: 3 of 8 tokens kept —"
    assert [s.text_content() for s in page.locator(".cand-head span").all()] == ["token", "", "p", "sample"]
    assert page.text_content("#next-stats") == (
        f"the model: entropy {dist['entropy']:.3f} nats · perplexity {dist['perplexity']:.2f} of 8 tokens; "
        f"sampled from: entropy {dist['entropy_sample']:.3f} nats · perplexity {dist['perplexity_sample']:.2f} · "
        f"context: {len(dist['tokens'])} tokens")
    assert page.text_content("#settings") == "sampling with temperature 0.7 · top-k 3 · top-p off · min-p off"
    assert page.text_content("h1") == "to be or"
    assert errors == [] and requests == []  # the page asked for nothing, and its script logged no error


def test_the_cut_line_says_where_the_settings_cut(run, open_page):
    """No cut: after the list; a cut below the list: after it too; a cut within the list: after the last kept row."""
    inspector = load_inspector(checkpoint=run)
    page, errors, _ = open_page(rt.show_next_token(run, TEXT, candidates=8))
    assert page.text_content("#kept-count") == "— no cut: all 8 tokens kept —"
    assert page.evaluate(CHILDREN) == ["cand-head"] + ["cand"] * 8 + ["kept-count"]
    for sampling, candidates, line, rows in [
        (SampleConfig(top_k=5), 3, "— cut below the list: 5 of 8 tokens kept —", ["cand"] * 3 + ["kept-count"]),
        (SampleConfig(temperature=0), 4, "— cut: 1 of 8 tokens kept —", ["cand", "kept-count"] + ["cand cut"] * 3),
    ]:
        dist = inspector.next_token(TEXT, sampling, candidates)  # drawn again on the same page, as the app does
        page.evaluate("d => window.RedthreadNextToken.render(document.body, d, {context: true})", dist)
        assert page.text_content("#kept-count") == line
        assert page.evaluate(CHILDREN) == ["cand-head"] + rows
        assert drawn_rows(page) == expected_rows(dist)
    # a large vocabulary's counts are grouped by thousands, in every browser's locale
    made_up = {**dist, "kept": 1234, "vocab_size": 50257}
    page.evaluate("d => window.RedthreadNextToken.render(document.body, d, {context: true})", made_up)
    assert page.text_content("#kept-count") == "— cut below the list: 1,234 of 50,257 tokens kept —"
    assert " of 50,257 tokens; sampled from" in page.text_content("#next-stats")
    assert errors == []


def test_the_app_draws_its_rows_as_buttons_that_append(run, open_page):
    """What the app asks of the script (its own page: tests/serve/test_app_browser.py): buttons titled for the
    click, which hand their token to the app, and the stats without the context (the app has its text box)."""
    page, errors, _ = open_page(rt.show_next_token(run, TEXT))
    dist = load_inspector(checkpoint=run).next_token(TEXT, SampleConfig(top_p=0.5), 8)
    page.evaluate("""d => { window.appended = [];
        window.RedthreadNextToken.render(document.body, d, {onAppend: (t) => window.appended.push(t)}); }""", dist)
    assert drawn_rows(page) == expected_rows(dist, append=True)
    assert page.text_content("#next-stats").endswith(f"perplexity {dist['perplexity_sample']:.2f}")
    page.click("#candidates .cand >> nth=1")
    page.click("#candidates .cand >> nth=0")
    assert page.evaluate("() => window.appended") == [dist["candidates"][1]["token"], dist["candidates"][0]["token"]]
    assert errors == []


def test_the_page_escapes_its_text_and_tokens(open_page):
    text = "</script><script>alert(1)</script> & \"be\" <!--"
    tok = CharTokenizer.from_text(text)
    torch.manual_seed(0)
    model = rt.TransformerLM(rt.TransformerConfig(vocab_size=tok.vocab_size, block_size=64, n_layer=1, n_head=1, d_model=8))
    view = rt.show_next_token(model, text, tokenizer=tok, candidates=tok.vocab_size)
    page, errors, requests = open_page(view)
    assert page.text_content("h1") == text.strip() and page.title() == text.strip()
    assert sorted(page.evaluate("() => [...document.querySelectorAll('.cand .tok')].map(e => e.textContent)")) == \
        sorted(shown(t) for t in set(text))
    assert page.locator("#candidates b, #candidates script").count() == 0  # text, never markup
    assert errors == [] and requests == []  # no alert ran: a dialog would be an error


# what a person reads on the page, model text aside (the title is the user's text, .tok the model's tokens)
SHOWN = """() => [...document.querySelectorAll('body *')].filter(e => !e.closest('script, style, .tok, [translate="no"]')
    && e.getClientRects().length).flatMap(e => [...e.childNodes].filter(n => n.nodeType === 3 && n.textContent.trim())
    .map(n => n.textContent.trim()).concat(e.title ? [e.title] : []))"""


def page_numbers(page):
    """Every number the page shows, by where: the stats and cut line (sorted: each language orders its own), each
    row's p and p sample, the settings."""
    text = lambda sel: page.text_content(sel)  # noqa: E731
    numbers = lambda t: re.findall(r"\d+(?:[.,]\d+)*%?", t)  # noqa: E731
    rows = page.evaluate(ROWS)
    return (sorted(numbers(text("#next-stats")) + numbers(text("#kept-count"))), numbers(text("#settings")),
            [(r["id"], r["num_p"], r["num_ps"] if "%" in r["num_ps"] else None) for r in rows])


def test_the_page_speaks_the_language_chosen_and_switches(run, open_page):
    """Saved with redthread speaking Chinese: <html lang> zh-CN, no English prose, the same numbers as in English;
    its 中文 / English button gives the English page, word for word as a page saved in English."""
    english_page, errors_en, _ = open_page(rt.show_next_token(run, "to be or", top_k=3, temperature=0.7, candidates=6))
    assert english_page.get_attribute("html", "lang") == "en" and english_page.text_content("#lang-toggle") == "中文"
    english = english_page.evaluate(SHOWN)
    with speaking("zh"):
        view = rt.show_next_token(run, "to be or", top_k=3, temperature=0.7, candidates=6)
    page, errors, requests = open_page(view)
    assert page.get_attribute("html", "lang") == "zh-CN" and page.text_content("#lang-toggle") == "English"
    shown = page.evaluate(SHOWN)
    assert {t: w for t in shown if (w := prose(t, {"English"}))} == {}
    assert "奈特" in page.text_content("#next-stats") and page.text_content("h2") == "下一个词元：P(词元 | 文本)"
    assert page.text_content("#settings") == "采样设置：温度 0.7 · top-k 3 · top-p 关 · min-p 关"
    assert page.text_content("#model").startswith("redthread Transformer 语言模型，2 层 × 2 个头")
    assert page_numbers(page) == page_numbers(english_page)
    page.click("#lang-toggle")
    assert page.get_attribute("html", "lang") == "en" and page.evaluate(SHOWN) == english
    assert errors == errors_en == [] and requests == []


def test_chinese_tokens_keep_chinese_glyphs(open_page):
    text = "床前明月光，疑是地上霜"
    tok = CharTokenizer.from_text(text)
    torch.manual_seed(0)
    model = rt.TransformerLM(rt.TransformerConfig(vocab_size=tok.vocab_size, block_size=32, n_layer=1, n_head=1, d_model=8))
    page, errors, _ = open_page(rt.show_next_token(model, text, tokenizer=tok, candidates=tok.vocab_size))
    langs = page.evaluate("() => [...document.querySelectorAll('.cand .tok')].map(e => [e.textContent, e.lang])")
    assert len(langs) == tok.vocab_size and {lang for _, lang in langs} == {"zh-CN"}  # the full-width comma too
    assert page.get_attribute("h1", "lang") == "zh-CN" and errors == []
