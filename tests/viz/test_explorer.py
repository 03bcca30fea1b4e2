"""The explorer page without a browser: the payload contract, escaping, offline, atomic writes."""

import copy
import json
import os
import re

import numpy as np
import pytest
import torch

from redthread.errors import RedthreadError
from redthread.viz.explorer import payload_tab, render_explorer, write_explorer


def distributions(rng, *shape):
    x = np.exp(rng.normal(size=shape) * 2)
    return x / x.sum(-1, keepdims=True)  # (L, H, T, S), rows sum to 1


def small_payload():
    rng = np.random.default_rng(0)
    q, k = ["[CLS]", "the", "cat", "[SEP]"], ["le", "chat", "[SEP]"]
    return {
        "title": "the cat", "model": "tiny (2 layers x 3 heads)", "notice": None,
        "tabs": [payload_tab("encoder", q, q, distributions(rng, 2, 3, 4, 4)),
                 payload_tab("cross", q, k, distributions(rng, 2, 3, 4, 3))],
    }


def embedded(page: str):
    """The payload as the browser reads it: the text of <script id="payload"> up to its end tag."""
    tag = '<script type="application/json" id="payload">'
    start = page.index(tag) + len(tag)
    return page[start:page.index("</script>", start)]


def test_render_explorer_is_one_offline_file():
    page = render_explorer(small_payload())
    assert page.startswith("<!doctype html>")
    for outside in ("http://", "https://", "<link", "@import", "url(", "//cdn"):
        assert outside not in page.lower(), outside
    # no element loads anything: scripts and styles are inline, no src= or href= at all
    assert not re.search(r"\b(src|href)\s*=", page)
    assert "default-src 'none'" in page  # and the browser is told to refuse any load


def test_render_explorer_escapes_script_end_in_tokens():
    tokens = ["</script><script>alert(1)</script>", "<!-- x", "</SCRIPT >", "a & b 🐈", "{{js}}"]
    payload = small_payload()
    payload["tabs"] = [payload_tab("encoder", tokens, tokens, distributions(np.random.default_rng(1), 1, 1, 5, 5))]
    page = render_explorer(payload)
    text = embedded(page)
    assert "<" not in text and ">" not in text
    assert json.loads(text)["tabs"][0]["queries"] == tokens  # read back unchanged
    # the page's own two scripts end where they should: the tokens opened no element
    assert page.lower().count("</script") == 2
    assert page.count("<script") == 2


def test_render_explorer_keeps_the_payload_fields():
    payload = small_payload()
    payload["notice"] = "input truncated to 128 tokens"
    before = copy.deepcopy(payload)
    data = json.loads(embedded(render_explorer(payload)))
    assert payload == before  # not mutated
    assert data["notice"] == "input truncated to 128 tokens"
    assert [t["kind"] for t in data["tabs"]] == ["encoder", "cross"]
    np.testing.assert_allclose(data["tabs"][1]["weights"], payload["tabs"][1]["weights"])


def broken(edit):
    payload = small_payload()
    edit(payload)
    return payload


def set_weight(p, value):
    p["tabs"][0]["weights"][0][0][0][0] = value


MALFORMED = {
    "not a dict": (lambda p: None, "must be a dict"),
    "missing title": (lambda p: p.pop("title"), "missing 'title'"),
    "unknown key": (lambda p: p.update(colour="red"), "unknown key"),
    "title not str": (lambda p: p.update(title=3), "'title' must be a string"),
    "notice not str": (lambda p: p.update(notice=["x"]), "'notice'"),
    "no tabs": (lambda p: p.update(tabs=[]), "non-empty list"),
    "unknown kind": (lambda p: p["tabs"][0].update(kind="vision"), "unknown kind 'vision'"),
    "kind twice": (lambda p: p["tabs"][1].update(kind="encoder", keys=p["tabs"][0]["keys"],
                                                 weights=p["tabs"][0]["weights"]), "kind twice"),
    "empty queries": (lambda p: p["tabs"][0].update(queries=[]), "'queries' must be a non-empty list"),
    "token not str": (lambda p: p["tabs"][0]["keys"].__setitem__(1, 7), "strings only"),
    "wrong T": (lambda p: p["tabs"][0]["queries"].pop(), r"expected \(L, H, T=3, S=4\)"),
    "layer missing a level": (lambda p: p["tabs"][1].update(weights=p["tabs"][1]["weights"][0]), "has shape"),
    "ragged": (lambda p: p["tabs"][0]["weights"][1].pop(), "ragged"),
    "not numbers": (lambda p: set_weight(p, "0.5"), "must hold numbers"),
    "nan": (lambda p: set_weight(p, float("nan")), "finite"),
    "negative": (lambda p: set_weight(p, -0.5), "within"),
    "rows off": (lambda p: p["tabs"][0]["weights"][0][0][0].__setitem__(slice(None), [0.1] * 4), "sum to 1"),
    "image from the web": (lambda p: p["tabs"][1].update(image={"src": "https://x/cat.png", "grid": [1, 3]}),
                           "data:image"),
    "image grid off": (lambda p: p["tabs"][1].update(image={"src": "data:image/png;base64,AA", "grid": [2, 2]}),
                       "S=3"),
}


@pytest.mark.parametrize("name", MALFORMED)
def test_render_explorer_rejects_malformed_payloads(name):
    edit, message = MALFORMED[name]
    payload = None if name == "not a dict" else broken(edit)
    with pytest.raises(RedthreadError, match=message) as err:
        render_explorer(payload)
    assert "\n" not in str(err.value)


def test_render_explorer_accepts_an_image_tab():
    payload = small_payload()
    payload["tabs"][1]["image"] = {"src": "data:image/png;base64,AA", "grid": [1, 2], "offset": 1}
    data = json.loads(embedded(render_explorer(payload)))
    assert data["tabs"][1]["image"] == {"src": "data:image/png;base64,AA", "grid": [1, 2], "offset": 1}


def test_payload_tab_takes_tensors_and_rounds():
    att = torch.softmax(torch.randn(2, 3, 4, 5), dim=-1)  # (L, H, T, S)
    tab = payload_tab("decoder", list("abcd"), list("abcde"), att)
    assert np.array(tab["weights"]).shape == (2, 3, 4, 5)
    flat = np.array(tab["weights"]).ravel()
    assert all(round(w, 4) == w for w in flat)
    np.testing.assert_allclose(flat, att.double().numpy().ravel(), atol=5e-5)
    assert payload_tab("decoder", list("abcd"), list("abcde"), att.numpy()) == tab
    with pytest.raises(RedthreadError, match="has shape"):
        payload_tab("decoder", list("abcd"), list("abcde"), att[0])  # (H, T, S): no layer axis


def test_write_explorer_is_atomic(tmp_path, monkeypatch):
    path = write_explorer(small_payload(), tmp_path / "out" / "page.html")
    assert path.read_text(encoding="utf-8") == render_explorer(small_payload())
    assert os.listdir(path.parent) == ["page.html"]  # no temporary file left
    old = path.read_text(encoding="utf-8")

    def crash(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", crash)
    other = small_payload()
    other["title"] = "another page"
    with pytest.raises(RedthreadError, match="cannot write .*page.html: disk full"):  # one line for the user
        write_explorer(other, path)
    assert path.read_text(encoding="utf-8") == old  # the old page is whole
    assert os.listdir(path.parent) == ["page.html"]
    monkeypatch.undo()
    with pytest.raises(RedthreadError):  # a bad payload writes nothing
        write_explorer({"title": "x"}, tmp_path / "bad.html")
    assert not (tmp_path / "bad.html").exists()
    assert write_explorer(other, path).read_text(encoding="utf-8").count("another page") >= 1  # overwrites
