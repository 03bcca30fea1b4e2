"""The explorer page in a real browser (Chromium, see conftest.py): offline, and it reacts.

Each test writes a page from a hand-made random payload, opens it from a file:// URL and checks
that the drawing (the SVG's line and patch opacities) follows the selection.
"""

import base64
import io

import numpy as np
import pytest
from matplotlib.image import imsave

from redthread.viz.explorer import payload_tab, write_explorer

QUERIES = ["[CLS]", "the", "</script><b>cat</b>", "sat 🐈", "on", "the", "mat", "[SEP]"]
KEYS = ["le", "chat", "<!--", "s'est", "assis", "[SEP]", "."]
# the drawing: every line's and patch's opacity, in document order
DRAWING = """() => [...document.querySelectorAll('#head-svg line, #head-svg .patch')]
    .map(e => e.getAttribute('stroke-opacity') ?? e.getAttribute('fill-opacity')).join(',')"""


def distributions(rng, *shape):
    x = np.exp(rng.normal(size=shape) * 2)
    return x / x.sum(-1, keepdims=True)  # (L, H, T, S), rows sum to 1


def two_tabs():
    rng = np.random.default_rng(0)
    return {"title": "the cat sat on the mat", "model": "random (2 layers x 3 heads)", "notice": "made by hand",
            "tabs": [payload_tab("encoder", QUERIES, QUERIES, distributions(rng, 2, 3, 8, 8)),
                     payload_tab("cross", QUERIES, KEYS, distributions(rng, 2, 3, 8, 7))]}


class Page:
    """A page opened from a file, recording console errors, page errors and requests."""

    def __init__(self, browser, tmp_path, payload):
        path = write_explorer(payload, tmp_path / "explorer.html")
        self.url = path.as_uri()
        self.context = browser.new_context(viewport={"width": 1280, "height": 800})
        self.page = self.context.new_page()
        self.errors, self.requests = [], []
        self.page.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.page.goto(self.url)
        self.page.wait_for_selector("body[data-ready='1']", timeout=10_000)

    def view(self, name):
        return self.page.get_attribute("#head-view", f"data-{name}")

    def drawing(self):
        return self.page.evaluate(DRAWING)

    def assert_clean(self):
        assert self.errors == []
        assert [u for u in self.requests if u != self.url and not u.startswith("data:")] == []


@pytest.fixture
def opened(browser, tmp_path):
    pages = []

    def open_page(payload):
        pages.append(Page(browser, tmp_path, payload))
        return pages[-1]

    yield open_page
    for p in pages:
        p.context.close()


def test_explorer_loads_offline_without_errors(opened):
    p = opened(two_tabs())
    p.assert_clean()
    assert p.requests == [p.url]
    assert p.page.text_content("h1") == "the cat sat on the mat"
    assert p.page.is_visible("#notice") and p.page.text_content("#notice") == "made by hand"
    # the tokens came through the JSON whole: the </script> one and the emoji one
    titles = p.page.eval_on_selector_all("#head-svg .tok.q title", "els => els.map(e => e.textContent)")
    assert titles[2] == "query 2: </script><b>cat</b>" and titles[3] == "query 3: sat 🐈"
    assert p.page.locator("#thumbs canvas").count() == 2 * 3
    assert (p.view("kind"), p.view("layer"), p.view("head")) == ("encoder", "0", "0")


def test_explorer_selects_change_the_drawing(opened):
    p = opened(two_tabs())
    seen = [p.drawing()]
    p.page.select_option("#layer-select", "1")
    assert p.view("layer") == "1"
    seen.append(p.drawing())
    p.page.select_option("#head-select", "2")
    assert p.view("head") == "2"
    seen.append(p.drawing())
    p.page.select_option("#head-select", "all")
    assert p.view("head") == "all"
    seen.append(p.drawing())
    assert len(set(seen)) == 4 and all(seen)
    p.assert_clean()


def test_explorer_hover_focuses_a_token(opened):
    p = opened(two_tabs())
    p.page.hover("#head-svg .tok.q[data-i='3']")
    assert p.view("focus") == "q:3"
    assert p.page.is_hidden("#lines-all")
    assert p.page.locator("#lines-focus line").count() == len(QUERIES)  # one line to every key
    pcts = p.page.eval_on_selector_all("#bars .pct", "els => els.map(e => parseFloat(e.textContent))")
    assert len(pcts) == len(QUERIES) and sum(pcts) == pytest.approx(100, abs=1)
    p.page.hover("h1")  # away: every line again
    assert p.view("focus") == "" and p.page.is_visible("#lines-all")
    # a click pins: hovering another token leaves the focus where it was
    p.page.click("#head-svg .tok.k[data-i='5']")
    p.page.hover("#head-svg .tok.q[data-i='1']")
    assert (p.view("focus"), p.view("pinned")) == ("k:5", "1")
    pinned = p.drawing()
    p.page.select_option("#head-select", "1")  # the pin holds across heads; the weights follow
    assert p.view("focus") == "k:5" and p.drawing() != pinned
    # Escape with the pointer off the drawing: with it still over a token, Chromium's synthetic
    # mouse moves (sent after a redraw) may focus that token again right after the unpin
    p.page.hover("h1")
    assert p.view("focus") == "k:5"
    p.page.keyboard.press("Escape")
    assert (p.view("focus"), p.view("pinned")) == ("", "0")
    p.assert_clean()


def test_explorer_thumbnail_click_selects_that_head(opened):
    p = opened(two_tabs())
    before = p.drawing()
    p.page.click("#thumbs canvas[data-layer='1'][data-head='2']")
    assert (p.view("layer"), p.view("head")) == ("1", "2")
    assert p.page.input_value("#layer-select") == "1" and p.page.input_value("#head-select") == "2"
    assert p.page.get_attribute("#thumbs canvas[data-layer='1'][data-head='2']", "class") == "selected"
    assert p.drawing() != before
    p.page.click("#thumbs .row-label >> text=layer 0")  # a layer's name: the mean of its heads
    assert (p.view("layer"), p.view("head")) == ("0", "all")
    p.assert_clean()


def test_explorer_tabs_switch_the_attention_kind(opened):
    p = opened(two_tabs())
    assert p.page.locator("#tabs button").count() == 2 and p.page.locator("#tab-decoder").count() == 0
    before = p.drawing()
    p.page.click("#tab-cross")
    assert p.view("kind") == "cross"
    assert p.page.get_attribute("#tab-cross", "aria-selected") == "true"
    assert p.page.locator("#head-svg .tok.k").count() == len(KEYS)
    assert p.drawing() != before
    p.page.click("#tab-encoder")
    assert p.view("kind") == "encoder" and p.drawing() == before
    p.assert_clean()


def test_explorer_long_input_renders(opened):
    tokens = [f"tok{i}" for i in range(130)]
    att = distributions(np.random.default_rng(2), 1, 1, 130, 130)
    p = opened({"title": "long", "model": "random (1 layer x 1 head)", "notice": "input truncated to 130 tokens",
                "tabs": [payload_tab("encoder", tokens, tokens, att)]})
    assert p.page.locator("#tabs button").count() == 0 and p.page.is_hidden("#tabs")  # one kind: no tabs
    assert p.page.locator("#head-svg .tok.q").count() == 130
    assert p.page.evaluate("() => { const s = document.querySelector('#head-view .scroll');"
                           " return s.scrollHeight > s.clientHeight; }")  # scrolls inside the window
    p.page.hover("#head-svg .tok.q[data-i='129']")  # scrolled into view by playwright
    assert p.view("focus") == "q:129"
    assert p.page.locator("#lines-focus line").count() == 130
    p.assert_clean()


def test_explorer_image_keys_draw_a_patch_overlay(opened):
    rng = np.random.default_rng(3)
    buf = io.BytesIO()
    imsave(buf, rng.random((4, 6, 3)), format="png")
    image = {"src": "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode(), "grid": [2, 3], "offset": 1}
    keys = ["[CLS]"] + [f"patch {i}" for i in range(6)]
    p = opened({"title": "an image", "model": "random ViT", "notice": None,
                "tabs": [payload_tab("encoder", keys, keys, distributions(rng, 1, 2, 7, 7), image=image)]})
    assert p.page.locator("#head-svg image").count() == 1
    assert p.page.locator("#head-svg .patch").count() == 6
    first = p.drawing()  # with no focus the class token's heat is shown
    assert any(float(o) > 0 for o in first.split(","))
    p.page.hover("#head-svg .tok.q[data-i='4']")
    assert p.view("focus") == "q:4" and p.drawing() != first
    p.page.select_option("#head-select", "1")
    assert p.view("head") == "1"
    p.page.hover("#head-svg .patch[data-i='2']")  # a patch is a key: the queries show their weights
    assert p.view("focus") == "k:2" and p.page.locator("#bars .pct").count() == 7
    p.assert_clean()


@pytest.mark.parametrize("width", [1400, 1000])
def test_the_model_grid_fits_the_page_width(browser, tmp_path, width):
    """MiniLM's 6 layers x 12 heads: every head's thumbnail in view without scrolling sideways."""
    rng = np.random.default_rng(1)
    payload = {"title": "a twelve-head model", "model": "random (6 layers x 12 heads)", "notice": None,
               "tabs": [payload_tab("encoder", QUERIES, QUERIES, distributions(rng, 6, 12, 8, 8))]}
    path = write_explorer(payload, tmp_path / "grid.html")
    context = browser.new_context(viewport={"width": width, "height": 900})
    try:
        page = context.new_page()
        page.goto(path.as_uri())
        page.wait_for_selector("body[data-ready='1']", timeout=10_000)
        grid = page.evaluate("() => { const b = document.querySelector('#thumbs'); return [b.scrollWidth, b.clientWidth]; }")
        assert grid[0] <= grid[1] + 1, grid
        last = page.locator("#thumbs canvas[data-layer='5'][data-head='11']").bounding_box()
        assert last["x"] + last["width"] <= width and last["width"] >= 14  # in view, and still a heatmap
        page.click("#thumbs canvas[data-layer='5'][data-head='11']")  # and it still selects its head
        assert page.get_attribute("#thumbs canvas[data-layer='5'][data-head='11']", "class") == "selected"
    finally:
        context.close()


def test_a_long_text_gets_a_compact_head_view(browser, tmp_path):
    """300 characters: rows shrink (at least 9 px) so the view is under half its old height; short texts keep 20 px rows."""
    rng = np.random.default_rng(2)
    chars = list("to be or not to be, that is the question: " * 8)[:300]
    causal = np.tril(distributions(rng, 1, 2, 300, 300))
    causal /= causal.sum(-1, keepdims=True)  # (1, 2, 300, 300): each query over the keys up to it
    payload = {"title": "a long character text", "model": "random", "notice": None,
               "tabs": [payload_tab("decoder", chars, chars, causal)]}
    path = write_explorer(payload, tmp_path / "long.html")
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    try:
        page = context.new_page()
        errors = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(path.as_uri())
        page.wait_for_selector("body[data-ready='1']", timeout=10_000)
        height = float(page.get_attribute("#head-svg", "height"))
        assert height <= 0.5 * 300 * 20 and height >= 300 * 9
        page.hover("#head-svg .tok.q[data-i='150']")  # still a hover target: its lines are drawn
        assert page.locator("#lines-focus line").count() > 0 and errors == []
    finally:
        context.close()


def test_each_head_in_its_own_colour_with_toggles(opened):
    """bertviz's head view: every head of a layer at once, one colour each; a toggle hides a head's lines;
    hovering a token shows each shown head's lines from it in that head's colour."""
    p = opened(two_tabs())  # 3 heads
    p.page.select_option("#head-select", "each")
    colours = p.page.eval_on_selector_all("#lines-all line", "ls => [...new Set(ls.map(l => l.style.stroke))]")
    assert len(colours) == 3 and p.page.is_visible("#head-toggles")
    heads = p.page.eval_on_selector_all("#lines-all .head-lines", "gs => gs.map(g => g.dataset.head)")
    assert heads == ["0", "1", "2"]
    p.page.uncheck("#head-toggles input[data-head='1']")
    heads = p.page.eval_on_selector_all("#lines-all .head-lines", "gs => gs.map(g => g.dataset.head)")
    assert heads == ["0", "2"]
    p.page.hover("#head-svg .tok.q[data-i='3']")
    focus = p.page.eval_on_selector_all("#lines-focus line", "ls => [...new Set(ls.map(l => l.style.stroke))]")
    assert len(focus) == 2  # the two heads still shown
    p.page.select_option("#head-select", "0")
    assert p.page.is_hidden("#head-toggles")
    p.assert_clean()


def neuron_payload():
    """A decoder tab whose layer 1 weights are the causal softmax of hand-made q and k: 3 heads, D = 6."""
    rng = np.random.default_rng(4)
    H, T, D = 3, len(QUERIES), 6
    q, k = np.round(rng.normal(size=(H, T, D)) * 1.5, 4), np.round(rng.normal(size=(H, T, D)) * 1.5, 4)
    scores = q @ k.transpose(0, 2, 1) * D**-0.5  # (H, T, S)
    scores[:, np.triu(np.ones((T, T), dtype=bool), 1)] = -np.inf  # query t sees keys up to t
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    weights /= weights.sum(-1, keepdims=True)
    layers = np.stack([np.tril(distributions(rng, H, T, T)), weights])
    layers /= layers.sum(-1, keepdims=True)  # (2, H, T, T)
    vectors = {"layer": 1, "scale": D**-0.5, "q": q, "k": k}
    return {"title": "the neuron view", "model": "hand-made (2 layers x 3 heads)", "notice": None,
            "tabs": [payload_tab("decoder", QUERIES, QUERIES, layers, vectors=vectors)]}


def neuron_numbers(payload, head, t, s):
    """What the neuron view should say for one pair: q.k, the score, the softmax and the payload's weight."""
    tab = payload["tabs"][0]
    v = tab["vectors"]
    q, k = np.array(v["q"][head][t]), np.array(v["k"][head])
    scores = k @ q * v["scale"]  # (S,)
    seen = np.arange(len(k)) <= t
    soft = np.where(seen, np.exp(scores - scores[seen].max()), 0)
    return q @ k[s], scores[s], soft[s] / soft.sum(), tab["weights"][v["layer"]][head][t][s]


def test_the_neuron_view_shows_q_k_the_score_and_the_softmax(opened):
    """bertviz's neuron view: pick a query (click) and a key (hover) in the head view; the panel shows
    q, k and q⊙k, q·k × scale = the score, and the softmax over the keys the query sees, which is the
    weight the head view shows (both rounded to 1e-4 in the payload: equal within 1e-3)."""
    payload = neuron_payload()
    p = opened(payload)
    view = lambda name: p.page.get_attribute("#neuron-view", f"data-{name}")  # noqa: E731
    assert p.page.is_visible("#neuron-view") and view("layer") == "1"
    # layer 0 is on show: the page has q and k for layer 1 only, one click away
    assert "q and k are here for layer 1 only" in p.page.text_content("#neuron-message")
    assert p.page.is_hidden("#neuron-body")
    p.page.click("#neuron-message button")
    assert p.view("layer") == "1" and p.page.is_visible("#neuron-body")
    # the first pair: the last query and the key it attends to most
    row = payload["tabs"][0]["weights"][1][0][7]
    assert (view("query"), view("key")) == ("7", str(row.index(max(row))))
    # click a query, then hover keys: the query holds, the key follows
    p.page.click("#head-svg .tok.q[data-i='3']")
    p.page.hover("#head-svg .tok.k[data-i='2']")
    p.page.hover("#head-svg .tok.q[data-i='5']")  # the pinned side holds
    assert (view("head"), view("query"), view("key")) == ("0", "3", "2")
    dot, score, soft, weight = neuron_numbers(payload, 0, 3, 2)
    shown = {name: float(p.page.text_content(f"#neuron-{name}")) for name in ("dot", "score", "softmax", "weight")}
    assert shown["dot"] == pytest.approx(dot, abs=1e-4) and shown["score"] == pytest.approx(score, abs=1e-4)
    assert shown["softmax"] == pytest.approx(soft, abs=1e-4)
    assert shown["weight"] == pytest.approx(weight, abs=1e-4) and shown["softmax"] == pytest.approx(weight, abs=1e-3)
    # the whole softmax row: 8 keys, 4 seen by query 3, the chosen one marked, equal to the head view's weights
    computed = [float(x) for x in p.page.get_attribute("#neuron-table", "data-weights").split(",")]
    assert computed == pytest.approx(payload["tabs"][0]["weights"][1][0][3], abs=1e-3)
    assert p.page.locator("#neuron-table .tok.masked").count() == 4
    assert p.page.eval_on_selector_all("#neuron-table .tok.chosen", "els => els.map(e => e.dataset.key)") == ["2"]
    # hovering a strip reads out one dimension
    strip = p.page.locator("#neuron-table canvas.strip.qk[data-key='2']")
    box = strip.bounding_box()
    p.page.mouse.move(box["x"] + box["width"] * 4.5 / 6, box["y"] + box["height"] / 2)
    q, k = payload["tabs"][0]["vectors"]["q"][0][3][4], payload["tabs"][0]["vectors"]["k"][0][2][4]
    assert p.page.text_content("#neuron-readout") == f"dimension 4: q = {q:.4f} · k (key 2) = {k:.4f} · q⊙k = {q * k:.4f}"
    # a key after the query is masked; hovering a row of the table chooses its key
    p.page.hover("#neuron-table .tok[data-key='6']")
    assert view("key") == "6" and "masked (score −∞)" in p.page.text_content("#neuron-sum")
    assert p.page.text_content("#neuron-softmax") == "0"
    # another head: its own numbers; the mean of the heads: no single q and k to show. The pointer leaves
    # the table first: Chromium's synthetic mouse moves after a redraw would choose the row under it
    p.page.hover("h1")
    p.page.select_option("#head-select", "2")
    p.page.select_option("#neuron-key", "1")
    assert (view("head"), view("key")) == ("2", "1")
    assert float(p.page.text_content("#neuron-softmax")) == pytest.approx(neuron_numbers(payload, 2, 3, 1)[2], abs=1e-4)
    p.page.select_option("#head-select", "all")
    assert "shows one head" in p.page.text_content("#neuron-message") and p.page.is_hidden("#neuron-body")
    p.assert_clean()


def test_a_page_without_vectors_has_no_neuron_view(opened):
    p = opened(two_tabs())
    assert p.page.is_hidden("#neuron-view")
    p.page.click("#head-svg .tok.q[data-i='3']")  # the head view works as before
    assert p.view("focus") == "q:3"
    p.assert_clean()


# the model view's thumbnails in view: inside the frame's window, the side column's box and the grid's own box
THUMBS_IN_VIEW = """() => {
  const boxes = ['#side', '#thumbs'].map(s => document.querySelector(s).getBoundingClientRect());
  return [...document.querySelectorAll('#thumbs canvas')].filter(c => {
    const r = c.getBoundingClientRect();
    return r.height >= 14 && r.bottom <= window.innerHeight + 1
      && boxes.every(b => r.top >= b.top - 1 && r.bottom <= b.bottom + 1);
  }).map(c => `${c.dataset.layer}:${c.dataset.head}`);
}"""


@pytest.mark.parametrize("n_layer", [4, 12])
def test_an_inline_explorer_never_clips_the_model_grid(browser, tmp_path, n_layer):
    """rt.show_attention's frame, as a notebook shows it, for a model with query and key vectors (the neuron view
    below the grid): 4 layers x 4 heads are all in view at once; 12 layers are all reachable by scrolling the side
    column, a row at a time, and none is ever squashed out of sight."""
    import torch

    import redthread as rt
    from redthread.data.tokenizers import CharTokenizer

    tok = CharTokenizer.from_text("the cat sat on the mat")
    torch.manual_seed(1)
    model = rt.TransformerLM(rt.TransformerConfig(vocab_size=tok.vocab_size, block_size=32, n_layer=n_layer, n_head=4,
                                                  d_model=16))
    view = rt.show_attention(model, "the cat sat", tokenizer=tok)
    host = tmp_path / "notebook.html"
    host.write_text(f"<!doctype html><html><body style='width: 900px'>{view._repr_html_()}</body></html>", encoding="utf-8")
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        page = context.new_page()
        page.goto(host.as_uri())
        frame = page.locator("iframe").element_handle().content_frame()
        frame.wait_for_selector("body[data-ready='1']", timeout=10_000)
        every = {f"{layer}:{head}" for layer in range(n_layer) for head in range(4)}
        seen = set(frame.evaluate(THUMBS_IN_VIEW))
        if n_layer == 4:
            assert seen == every
        for layer in range(n_layer):  # scrolled to, each layer's row comes into view whole
            frame.locator(f"#thumbs canvas[data-layer='{layer}'][data-head='3']").scroll_into_view_if_needed()
            seen |= set(frame.evaluate(THUMBS_IN_VIEW))
        assert seen == every
        frame.click(f"#thumbs canvas[data-layer='{n_layer - 1}'][data-head='3']")  # and the last one still selects its head
        assert frame.get_attribute(f"#thumbs canvas[data-layer='{n_layer - 1}'][data-head='3']", "class") == "selected"
    finally:
        context.close()
