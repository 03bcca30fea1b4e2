"""The web app's page in a real browser (Chromium, see tests/conftest.py) against the real server.

uvicorn serves create_app() from a background thread over a runs folder holding a tiny
random-init Transformer and a tiny captioner; each test opens the page at http://127.0.0.1:<port>/ and drives it as a
user would. body[data-busy] counts the requests in flight, so a test waits for "0". The last tests switch the
page to Chinese and back (its 中文 / English button) and look for English prose left in what it shows.
"""

import json
import re
import threading
import time

import httpx
import numpy as np
import pytest
import uvicorn
from matplotlib.image import imsave

from redthread.lang import speaking
from redthread.serve.app import app_page, create_app
from tests.chinese_text import prose
from tests.tiny import save_tiny_captioner_run, save_tiny_run

TEXT = "to be or not to be"
MAX_CHARS = 300
# the head view's drawing: every line's opacity, in document order
DRAWING = "() => [...document.querySelectorAll('#head-svg line')].map(e => e.getAttribute('stroke-opacity')).join(',')"
# Chromium's own console line for an HTTP error answer; the page shows the message itself
HTTP_ERROR = "Failed to load resource: the server responded with a status of 4"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    tok = save_tiny_run(root / "tiny", TEXT + "\n")
    save_tiny_captioner_run(root / "images" / "captioner")
    import redthread as rt  # a ladder rung without attention: the bigram

    rt.save_checkpoint(root / "ladder" / "rungs" / "bigram", rt.build_model("bigram", vocab_size=tok.vocab_size),
                       tokenizer=tok, extra={"rung": "bigram"})
    # port 0: the system picks a free port, read back once the server listens
    config = uvicorn.Config(create_app(root, max_chars=MAX_CHARS), host="127.0.0.1", port=0, log_level="warning")
    srv = uvicorn.Server(config)
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not srv.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the server did not start"
        time.sleep(0.02)
    base = f"http://127.0.0.1:{srv.servers[0].sockets[0].getsockname()[1]}"
    assert httpx.get(f"{base}/api/models", timeout=10).status_code == 200  # it answers
    yield base
    srv.should_exit = True
    thread.join(timeout=10)


class App:
    """The app's page, recording console errors, page errors and requests."""

    def __init__(self, browser, base, query=""):
        self.base = base
        self.context = browser.new_context(viewport={"width": 1280, "height": 800})
        self.context.set_default_timeout(10_000)
        self.page = self.context.new_page()
        self.console, self.page_errors, self.requests = [], [], []
        self.page.on("console", lambda m: m.type == "error" and self.console.append(m.text))
        self.page.on("pageerror", lambda e: self.page_errors.append(str(e)))
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.page.goto(f"{base}/{query}")
        self.page.wait_for_selector("body[data-ready='1']")

    def settle(self):  # every request answered and drawn
        self.page.wait_for_selector("body[data-busy='0']", state="attached")

    def show(self, text):
        self.page.select_option("#model-select", "tiny")
        self.page.fill("#text-input", text)
        self.page.click("#run-button")
        self.settle()

    def view(self, name):
        return self.page.get_attribute("#head-view", f"data-{name}")

    def drawing(self):
        return self.page.evaluate(DRAWING)

    def next_api(self, text, **settings):
        body = {"model": "tiny", "text": text, "candidates": 20, **settings}
        return httpx.post(f"{self.base}/api/next", json=body, timeout=10).json()

    def rows(self):
        """The candidates as shown: id, token title, p and p sample as numbers (None where cut)."""
        return self.page.eval_on_selector_all("#candidates .cand", """els => els.map(e => ({
            id: +e.dataset.id, cut: e.classList.contains('cut'),
            p: parseFloat(e.querySelector('.num.p').textContent),
            ps: e.classList.contains('cut') ? null : parseFloat(e.querySelector('.num.ps').textContent)}))""")

    def error(self):
        return self.page.text_content("#error") if self.page.is_visible("#error") else None

    def assert_clean(self, http_errors=False):
        """No uncaught exception; no console error (but Chromium's line for a 4xx, where one was
        asked for); no request anywhere but this server."""
        assert self.page_errors == []
        assert [m for m in self.console if not (http_errors and m.startswith(HTTP_ERROR))] == []
        assert [u for u in self.requests if not u.startswith(f"{self.base}/") and not u.startswith("data:")] == []


@pytest.fixture
def app(browser, server):
    opened = App(browser, server)
    yield opened
    opened.context.close()


def test_app_loads_without_errors(app):
    models = app.page.eval_on_selector_all("#model-select option", "os => os.map(o => o.value)")
    assert models[:3] == ["images/captioner", "ladder/rungs/bigram", "tiny"]  # then minilm where installed
    assert set(models) <= {"images/captioner", "ladder/rungs/bigram", "tiny", "minilm"}
    assert app.page.is_visible("#index-box") and app.page.is_hidden("#text-box")  # the first model reads images
    app.page.select_option("#model-select", "tiny")
    assert app.page.is_visible("#text-box") and app.page.is_hidden("#index-box")
    assert app.page.is_hidden("#error") and app.page.is_hidden("#no-models")
    assert app.page.is_hidden("#explorer") and app.page.is_visible("#placeholder")
    assert app.page.get_attribute("#text-input", "maxlength") == str(MAX_CHARS)
    assert app.page.is_disabled("#step-button")  # nothing to step from yet
    assert app.requests == [f"{app.base}/", f"{app.base}/api/models"]
    app.assert_clean()


def test_app_round_trip_shows_attention_and_next_token(app):
    app.show("to be or no")
    assert app.page.is_visible("#explorer") and app.error() is None
    assert (app.view("kind"), app.view("layer"), app.view("head")) == ("decoder", "0", "0")
    assert app.page.locator("#head-svg .tok.q").count() == len("to be or no")
    assert app.page.locator("#head-svg line").count() > 0
    assert app.page.locator("#thumbs canvas").count() == 2 * 2
    assert app.page.text_content("#char-count").startswith(f"11 / {MAX_CHARS}")
    # the panel shows what /api/next answers for the same text, rounded to 0.1%
    want = app.next_api("to be or no")
    rows = app.rows()
    assert [r["id"] for r in rows] == [c["id"] for c in want["candidates"]]
    for row, c in zip(rows, want["candidates"]):
        assert row["p"] == pytest.approx(100 * c["p"], abs=0.051)
        assert row["ps"] == pytest.approx(100 * c["p_sample"], abs=0.051)
    stats = app.page.text_content("#next-stats")  # the model's entropy, and the sampled distribution's
    assert f"the model: entropy {want['entropy']:.3f} nats" in stats
    assert f"sampled from: entropy {want['entropy_sample']:.3f} nats" in stats
    assert app.page.text_content("#kept-count") == "— no cut: all 8 tokens kept —"
    app.assert_clean()


def test_app_settings_move_the_cut(app):
    app.show(TEXT)
    app.page.fill("#top-k", "3")
    app.settle()
    assert app.page.text_content("#kept-count") == "— cut: 3 of 8 tokens kept —"
    assert [r["cut"] for r in app.rows()] == [False] * 3 + [True] * 5
    # the cut line sits between the third and the fourth candidate
    after = app.page.evaluate("() => document.querySelector('#kept-count').previousElementSibling.dataset.id")
    assert int(after) == app.next_api(TEXT)["candidates"][2]["id"]
    # temperature 0: greedy, one token kept with all the mass
    app.page.fill("#top-k", "")
    app.page.fill("#temperature", "0")
    app.settle()
    assert app.page.text_content("#temperature-value") == "0 greedy"
    assert app.page.text_content("#kept-count") == "— cut: 1 of 8 tokens kept —"
    assert app.rows()[0]["ps"] == 100.0
    stats = app.page.text_content("#next-stats")  # the model's entropy stays; the sampled one is 0 when greedy
    assert f"the model: entropy {app.next_api(TEXT)['entropy']:.3f} nats" in stats
    assert "sampled from: entropy 0.000 nats · perplexity 1.00" in stats
    app.assert_clean()


def test_app_step_and_candidate_click_append_a_token(app):
    app.show(TEXT)
    app.page.click("#step-button")
    app.settle()
    stepped = app.page.input_value("#text-input")
    assert len(stepped) == len(TEXT) + 1 and stepped.startswith(TEXT)
    assert app.page.locator("#head-svg .tok.q").count() == len(stepped)  # attention redrawn
    token = app.next_api(stepped)["candidates"][1]["token"]
    app.page.click("#candidates .cand >> nth=1")
    app.settle()
    assert app.page.input_value("#text-input") == stepped + token
    assert app.page.locator("#head-svg .tok.q").count() == len(stepped) + 1
    app.assert_clean()


def test_app_shows_api_errors(app):
    app.show(TEXT)
    app.page.evaluate("t => { const box = document.querySelector('#text-input');"
                      " box.value = t; box.dispatchEvent(new Event('input')); }", "to be " * 60)
    assert app.page.text_content("#char-count").startswith(f"360 / {MAX_CHARS}")
    app.page.click("#run-button")
    app.settle()
    assert app.error() == f"the text is 360 characters; the limit is {MAX_CHARS}"
    app.page.fill("#text-input", "QQ")  # not in the tiny model's vocabulary: its 422 message
    app.page.click("#run-button")
    app.settle()
    assert "Q" in app.error()
    app.page.fill("#top-k", "0")  # the API's check of the settings
    app.settle()
    assert "top_k" in app.error()
    app.page.fill("#top-k", "2")
    app.show(TEXT)  # a good request clears the error
    assert app.error() is None and app.page.text_content("#kept-count") == "— cut: 2 of 8 tokens kept —"
    app.assert_clean(http_errors=True)


def test_app_layer_select_changes_the_drawing(app):
    app.show(TEXT)
    first = app.drawing()
    app.page.select_option("#layer-select", "1")
    assert app.view("layer") == "1" and app.drawing() != first
    app.page.select_option("#head-select", "all")
    assert app.view("head") == "all"
    # drawn again for a longer text, the explorer keeps the layer and head, and reacts once per event
    app.page.click("#step-button")
    app.settle()
    assert (app.view("layer"), app.view("head")) == ("1", "all")
    app.page.click("#head-svg .tok.q[data-i='2']")
    assert (app.view("focus"), app.view("pinned")) == ("q:2", "1")
    app.assert_clean()


def test_app_encoder_has_no_next_token_panel(app):
    # no encoder under the test runs folder: the attention answer is replaced by an encoder's
    payload = httpx.post(f"{app.base}/api/attention", json={"model": "tiny", "text": TEXT}, timeout=10).json()
    payload.update(kind="encoder", tabs=[{**payload["tabs"][0], "kind": "encoder"}])
    app.page.route("**/api/attention", lambda route: route.fulfill(
        status=200, content_type="application/json", body=json.dumps(payload)))
    app.show(TEXT)
    assert app.view("kind") == "encoder"
    assert "gives no next-token distribution" in app.page.text_content("#next-message")
    assert app.page.get_attribute("#next-panel", "data-kind") == "encoder"
    assert app.page.is_disabled("#step-button") and app.page.is_disabled("#temperature")
    assert app.page.locator("#candidates .cand").count() == 0
    assert not any("/api/next" in u for u in app.requests)
    app.assert_clean()


def test_app_image_run_shows_a_test_scene_and_its_caption(app):
    app.page.select_option("#model-select", "images/captioner")
    app.page.fill("#index-input", "2")
    app.page.click("#run-button")
    app.settle()
    assert app.error() is None and app.page.is_visible("#explorer")
    assert app.page.text_content("h1").startswith("test scene 2 of caption-shapes")
    assert app.page.locator("#tabs button").count() == 3 and app.view("kind") == "cross"
    assert app.page.locator("#head-svg image").count() == 1 and app.page.locator("#head-svg .patch").count() == 36
    app.page.hover("#head-svg .patch[data-i='5']")  # a patch is a key: the words' weights on it
    assert app.view("focus") == "k:5" and app.page.locator("#bars .pct").count() >= 1
    app.page.click("#tab-encoder")  # the ViT encoder: patches over patches
    assert app.view("kind") == "encoder" and app.page.locator("#head-svg .tok.q").count() == 36
    heat = "() => [...document.querySelectorAll('#head-svg .patch')].map(e => e.getAttribute('fill-opacity')).join()"
    first = app.page.evaluate(heat)  # no focus: the first patch's heat
    app.page.hover("#head-svg .tok.q[data-i='20']")
    assert app.view("focus") == "q:20" and app.page.evaluate(heat) != first
    assert app.page.get_attribute("#next-panel", "data-kind") == "image"
    assert "is an image model" in app.page.text_content("#next-message") and app.page.is_disabled("#step-button")
    # a number past the test split: the server's one-line answer, shown on the page
    app.page.fill("#index-input", "99")
    app.page.press("#index-input", "Enter")
    app.settle()
    assert app.error() == "index 99 is out of range: the test split has 16 scenes (0-15)"
    assert [u for u in app.requests if "/api/" in u].count(f"{app.base}/api/image") == 2
    assert not any("/api/next" in u or "/api/attention" in u for u in app.requests)
    app.assert_clean(http_errors=True)


def test_app_image_run_shows_an_uploaded_file(app, tmp_path):
    picture = tmp_path / "my drawing.png"
    imsave(picture, np.random.default_rng(0).random((12, 12, 3)))
    app.page.select_option("#model-select", "images/captioner")
    assert app.page.is_visible("#upload-box")
    app.page.set_input_files("#image-file", str(picture))
    app.settle()
    assert app.error() is None and app.page.text_content("h1") == "my drawing.png"
    assert "resized the image from 12x12 to 24x24 pixels" in app.page.text_content("#notice")
    app.page.click("#lang-toggle")
    assert "图像从 12x12 像素缩放为 24x24 像素" in app.page.text_content("#notice")
    app.page.click("#lang-toggle")
    assert app.page.locator("#head-svg image").count() == 1 and app.view("kind") == "cross"
    broken = tmp_path / "broken.png"
    broken.write_bytes(b"not a png")
    app.page.set_input_files("#image-file", str(broken))
    app.settle()
    assert app.error().startswith("cannot read broken.png as an image")
    assert [u for u in app.requests if "/api/" in u].count(f"{app.base}/api/image") == 2
    app.assert_clean(http_errors=True)


def test_app_without_models_says_how_to_train_one(browser, server):
    context = browser.new_context()
    try:
        page = context.new_page()
        page.route("**/api/models", lambda route: route.fulfill(status=200, content_type="application/json", body="[]"))
        page.goto(f"{server}/")
        page.wait_for_selector("body[data-ready='1']")
        assert page.text_content("#no-models") == (
            "no Transformer, ViT or captioner runs under the runs folder: train one with `redthread train` or `redthread demo`")
        assert page.is_visible("#no-models") and page.is_disabled("#run-button") and page.is_disabled("#model-select")
    finally:
        context.close()


def test_app_lists_an_unavailable_run_greyed_out_with_the_reason(browser, server):
    listed = [
        {"name": "bad", "source": "run", "input": None, "available": False,
         "reason": "bad is unavailable: corrupt checkpoint runs/bad/checkpoint.safetensors: metadata 'step' is missing"},
        {"name": "tiny", "source": "run", "input": "text", "available": True},
    ]
    context = browser.new_context()
    try:
        page = context.new_page()
        page.route("**/api/models", lambda route: route.fulfill(status=200, content_type="application/json",
                                                                 body=json.dumps(listed)))
        page.goto(f"{server}/")
        page.wait_for_selector("body[data-ready='1']")
        bad = page.locator("#model-select option[value='bad']")
        assert bad.is_disabled() and bad.get_attribute("title") == listed[0]["reason"]
        assert bad.text_content() == "bad — unavailable: corrupt checkpoint runs/bad/checkpoint.safetensors: metadata 'step' is missing"
        # the first available model is the one selected, ready to run
        assert page.input_value("#model-select") == "tiny" and page.is_visible("#text-box")
        assert page.is_enabled("#run-button") and page.is_hidden("#error")
    finally:
        context.close()


def test_the_api_docs_page_works_offline(browser, server):
    """/docs (Swagger UI) draws every endpoint with every request outside the server refused."""
    context = browser.new_context()
    try:
        page = context.new_page()
        outside = []

        def only_the_server(route):
            if route.request.url.startswith(server):
                return route.continue_()
            outside.append(route.request.url)
            return route.abort()

        page.route("**/*", only_the_server)
        page.goto(f"{server}/docs")
        page.wait_for_selector(".opblock-summary-path", timeout=20_000)
        paths = page.eval_on_selector_all(".opblock-summary-path", "els => els.map(e => e.textContent)")
        assert {"/api/models", "/api/attention", "/api/next", "/api/step"} <= set(paths) and outside == []
    finally:
        context.close()


def test_a_rung_without_attention_shows_its_next_token_and_compares_with_the_transformer(app):
    """The ladder's bigram: no map to draw, its P(next | text) in the panel; Compare models puts it beside the
    Transformer, each with its most probable tokens and entropy."""
    app.page.select_option("#model-select", "ladder/rungs/bigram")
    app.page.fill("#text-input", TEXT)
    app.page.click("#run-button")
    app.settle()
    assert app.page.is_hidden("#explorer") and "without attention" in app.page.text_content("#placeholder")
    assert app.page.locator("#candidates .cand").count() > 0 and "entropy" in app.page.text_content("#next-stats")
    app.page.click("#compare-button")
    app.settle()
    columns = app.page.locator("#compare-columns .rung")
    assert columns.count() == 2
    names = [columns.nth(i).get_attribute("data-model") for i in range(2)]
    assert set(names) == {"tiny", "ladder/rungs/bigram"}
    for i in range(2):
        assert columns.nth(i).locator(".row").count() == 8 and "entropy" in columns.nth(i).text_content()
    assert "no attention" in app.page.text_content("#compare-columns .rung[data-model='ladder/rungs/bigram']")
    assert app.page.is_hidden("#compare-unreadable-box")
    app.page.click("#compare-close")
    assert app.page.is_hidden("#compare")
    # a text with a character neither model has seen: no columns, each model listed with what it lacks
    app.page.fill("#text-input", "to be Q")
    app.page.click("#compare-button")
    app.settle()
    assert app.page.locator("#compare-columns .rung").count() == 0 and app.error() is None
    listed = app.page.locator("#compare-unreadable li")
    assert listed.count() == 2 and "never seen 1 character of the text: 'Q'" in listed.nth(0).text_content()
    app.assert_clean()


def test_app_neuron_view_shows_q_k_and_asks_for_another_layer(app):
    """The neuron view in the app: the last layer's q and k come with the answer; another layer's are one click away
    (asked of /api/attention again); the softmax recomputed from q and k is the head view's weight."""
    app.show(TEXT)
    view = lambda name: app.page.get_attribute("#neuron-view", f"data-{name}")  # noqa: E731
    assert app.page.is_visible("#neuron-view") and view("layer") == "1" and app.view("layer") == "0"
    assert app.page.text_content("#neuron-message button") == "record layer 0"
    app.page.click("#neuron-message button")
    app.settle()
    assert view("layer") == "0" and app.view("layer") == "0" and app.page.is_visible("#neuron-body")
    app.page.click("#head-svg .tok.q[data-i='9']")
    app.page.hover("#head-svg .tok.k[data-i='4']")
    assert (view("query"), view("key")) == ("9", "4")
    soft, weight = (float(app.page.text_content(f"#neuron-{n}")) for n in ("softmax", "weight"))
    assert soft == pytest.approx(weight, abs=1e-3) and weight > 0
    requests = [u for u in app.requests if u.endswith("/api/attention")]
    assert len(requests) == 2
    app.page.select_option("#layer-select", "1")  # layer 1's vectors are no longer on the page: asked again
    app.page.click("#neuron-message button")
    app.settle()
    assert view("layer") == "1" and app.page.is_visible("#neuron-body")
    app.assert_clean()


# --- the language: 中文 / English ------------------------------------------------------------------------------

# what a person sees: each visible text node, and the placeholders, tooltips and labels of visible elements; model
# text (tokens, the text box, the explorer's title: the user's text) and what is not drawn (scripts, the model list)
# left out. The words a Chinese page may show as they are: the toggle's own name, key names, the tiny run's name.
SHOWN = """() => {
    const out = [];
    const drawn = (el) => el.getClientRects().length && getComputedStyle(el).visibility !== 'hidden';
    const model = '.tok, [translate="no"], textarea, script, style, title, select, option';
    const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
        const el = n.parentElement;
        if (el && n.textContent.trim() && !el.closest(model) && drawn(el)) out.push(n.textContent.trim());
    }
    for (const el of document.querySelectorAll('[placeholder], [title], [aria-label]')) {
        if (!drawn(el) || el.closest('select, .tok')) continue;
        for (const name of ['placeholder', 'title', 'aria-label']) if (el.getAttribute(name)) out.push(el.getAttribute(name));
    }
    out.push(document.title);
    return out;
}"""
PAGE_WORDS = {"English", "Ctrl", "Enter", "Esc", "tiny"}
NUMBERS = r"-?\d+(?:[.,]\d+)*%?"


def english(app):
    """Each text shown with the English prose words it holds."""
    return {t: words for t in app.page.evaluate(SHOWN) if (words := prose(t, PAGE_WORDS))}


def numbers(text):
    return re.findall(NUMBERS, text)


def shown_numbers(app):
    """Every number of the next-token panel and of the comparison, as drawn: the stats, each row's p and p sample,
    the cut line (sorted: the two languages put "3 of 8" in other orders); each model's entropy, perplexity and rows."""
    stats = sorted(numbers(app.page.text_content("#next-stats")) + numbers(app.page.text_content("#kept-count")))
    rows = app.page.eval_on_selector_all("#candidates .cand", "els => els.map(e => [e.dataset.id, "
                                         "e.querySelector('.num.p').textContent, e.querySelector('.num.ps').textContent])")
    columns = app.page.eval_on_selector_all("#compare-columns .rung", "els => els.map(e => [e.dataset.model, "
                                            "e.querySelector('.stats').textContent, "
                                            "[...e.querySelectorAll('.num')].map(n => n.textContent)])")
    return stats, [[i, p, ps if "%" in ps else None] for i, p, ps in rows], \
        [[m, numbers(s), nums] for m, s, nums in columns]


def test_the_app_switches_to_chinese_and_back(app):
    """中文: no English prose in any control, label, message or view; <html lang> zh-CN; the same numbers as in
    English. English again: the English words, and no Chinese but the button's own name."""
    assert app.page.get_attribute("html", "lang") == "en" and app.page.text_content("#lang-toggle") == "中文"
    placeholder = app.page.text_content("#placeholder")
    app.show(TEXT)
    app.page.fill("#top-k", "3")  # a cut: the rows' p sample and the cut line
    app.settle()
    app.page.click("#compare-button")
    app.settle()
    before, stats = shown_numbers(app), app.page.text_content("#next-stats")
    assert before[1] and len(before[2]) == 2 and "nats" in stats

    app.page.click("#lang-toggle")
    assert app.page.get_attribute("html", "lang") == "zh-CN"
    assert app.page.text_content("#lang-toggle") == "English" and app.page.get_attribute("#lang-toggle", "lang") == "en"
    assert app.page.text_content("#run-button") == "显示注意力" and "奈特" in app.page.text_content("#next-stats")
    assert shown_numbers(app) == before  # the same answers, drawn again in Chinese: not asked again
    assert english(app) == {}
    assert app.page.title() == "redthread · 看看 Transformer 的内部"
    app.page.select_option("#layer-select", "0")  # the neuron view holds the last layer: the button asks for this one
    assert app.page.text_content("#neuron-message button") == "取出层 0 的 q 和 k"
    app.page.click("#neuron-message button")
    app.settle()
    app.page.click("#head-svg .tok.q[data-i='9']")
    app.page.hover("#head-svg .tok.k[data-i='4']")
    assert english(app) == {}
    app.page.fill("#temperature", "0")  # greedy: the settings' words, and a new answer drawn in Chinese
    app.settle()
    assert app.page.text_content("#temperature-value") == "0 贪心" and english(app) == {}
    app.page.fill("#temperature", "1")
    app.settle()
    assert shown_numbers(app)[:2] == before[:2]
    # a rung without attention, the comparison of a text no model can read, an image run, an empty text
    app.page.select_option("#model-select", "ladder/rungs/bigram")
    app.page.click("#run-button")
    app.settle()
    assert "没有注意力" in app.page.text_content("#placeholder") and english(app) == {}
    app.page.fill("#text-input", "to be Q")
    app.page.click("#compare-button")
    app.settle()
    assert app.page.is_visible("#compare-unreadable-box") and english(app) == {}
    app.page.click("#compare-close")
    app.page.fill("#text-input", " ")
    app.page.click("#run-button")
    app.settle()
    assert app.error() == "文本是空的" and english(app) == {}
    app.page.select_option("#model-select", "tiny")
    app.page.fill("#text-input", "QQ")  # the server's answer, in Chinese
    app.page.click("#run-button")
    app.settle()
    assert app.error() == "tiny 读不了这段文本：它的分词器从没见过文本中的 1 个字符：'Q'" and english(app) == {}
    app.page.click("#lang-toggle")  # the message on show, in the other language
    assert app.error() == "tiny cannot read this text: its tokenizer has never seen 1 character of the text: 'Q'"
    app.page.click("#lang-toggle")
    app.page.select_option("#model-select", "images/captioner")
    app.page.fill("#index-input", "2")
    app.page.click("#run-button")
    app.settle()
    assert app.error() is None and "图像模型" in app.page.text_content("#next-message") and english(app) == {}
    assert "的测试场景 2（参考描述：“" in app.page.text_content("h1")  # an image's title is ours, not the user's text

    app.page.click("#lang-toggle")
    assert app.page.get_attribute("html", "lang") == "en" and app.page.text_content("#lang-toggle") == "中文"
    assert "is an image model" in app.page.text_content("#next-message")
    assert app.page.text_content("h1").startswith("test scene 2 of ")
    assert app.page.text_content("#run-button") == "Show attention"
    han = [t for t in app.page.evaluate(SHOWN) if re.search(r"[\u3400-\u9fff]", t) and t not in ("中文", "中文 / English")]
    assert han == []
    app.page.select_option("#model-select", "tiny")
    app.show(TEXT)
    assert app.page.text_content("#next-stats") == stats and shown_numbers(app)[:2] == before[:2]
    assert placeholder.startswith("Pick a model")
    app.assert_clean(http_errors=True)


def test_the_app_opens_in_the_language_asked_for(browser, server):
    """?lang=zh opens it in Chinese; without it, the language redthread speaks (--lang, REDTHREAD_LANG) is the
    page's <html lang>, which the page follows."""
    app = App(browser, server, "?lang=zh")
    try:
        assert app.page.get_attribute("html", "lang") == "zh-CN" and app.page.text_content("#lang-toggle") == "English"
        assert app.page.text_content("#run-button") == "显示注意力" and english(app) == {}
        assert "个字符" in app.page.text_content("#char-count")
        app.assert_clean()
    finally:
        app.context.close()
    with speaking("zh"):
        assert '<html lang="zh-CN">' in app_page(MAX_CHARS)
    with speaking("en"):
        assert '<html lang="en">' in app_page(MAX_CHARS)


def test_the_app_has_one_set_of_chinese_words():
    """The app's Chinese is page/words.js's (zh.app), shared with the live page and the explorer: app.js holds
    no Chinese of its own."""
    from importlib import resources

    script = (resources.files("redthread.serve") / "assets" / "app.js").read_text(encoding="utf-8")
    assert not re.findall(r"[\u3400-\u9fff]+", script.replace("中文 / English", ""))
    assert "zh.app = {" in (resources.files("redthread.viz") / "assets" / "page" / "words.js").read_text(encoding="utf-8")
