"""The explorer and the next-token view inline in a Jupyter notebook.

Claims C13 (attention maps are a window into what a model learned), C14 (over an image's patches)
and C12 (sampling reshapes P(token | context)), where learners already work:

    import redthread as rt
    rt.show_attention("runs/demo", "To be, or not to be")            # a cell's value: the explorer
    rt.show_attention(model, "the cat sat", tokenizer=tok)            # a model in memory, with its tokenizer
    rt.show_attention("minilm", "The animal didn't cross the street because it was too tired.")
    rt.show_image_attention("runs/vit", index=3)                      # a ViT or captioner run's test image
    rt.show_next_token("runs/demo", "To be, or not", top_p=0.9)       # P(next) before and after the filters

Each returns a `View`: `_repr_html_()` is an `<iframe srcdoc=...>` holding the complete offline
page (the one `redthread attention` writes, or the next-token page), so several in one notebook
never share an id, a style or a script; `.html` is that page and `.save(path)` writes it.
The iframe's sandbox lets the page run its own script and nothing else: it cannot reach the
notebook, and its Content-Security-Policy lets it load nothing.
"""

from __future__ import annotations

import html
import json
import os
import re
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from torch import nn

from redthread.errors import InvalidType, InvalidValue, MissingFile
from redthread.files import atomic_write_text, check_writable
from redthread.generate.config import SampleConfig
from redthread.lang import html_lang
from redthread.viz.explorer import ASSETS, explorer_assets, render_explorer, script_json
from redthread.viz.inspector import ImageInspector, Inspector, inspect_model, load_inspector

MAX_HEIGHT = 720  # px: the tallest iframe an explorer gets by itself; a longer text scrolls inside its head view


@dataclass(frozen=True)
class View:
    """A complete offline page, shown inline by Jupyter (IPython calls `_repr_html_`)."""

    html: str  # the whole page, as `redthread attention` writes it
    title: str
    height: int  # of the iframe, in CSS pixels

    def _repr_html_(self) -> str:
        # srcdoc is an attribute: quote=True escapes " and ' as well as & < >, and the browser reads the page back
        # unchanged; sandbox without allow-same-origin keeps the page's script away from the notebook
        return (f'<iframe srcdoc="{html.escape(self.html, quote=True)}" sandbox="allow-scripts" '
                f'title="{html.escape(self.title, quote=True)}" '
                f'style="width: 100%; height: {self.height}px; border: 1px solid #e5e7eb; border-radius: 4px;">'
                "</iframe>")

    def __repr__(self) -> str:
        return f"<redthread page {self.title!r}: {len(self.html):,} characters; .save(path) writes it>"

    def save(self, path: str | os.PathLike) -> Path:
        """Write the page to a new file; an existing one is never replaced."""
        if not isinstance(path, (str, os.PathLike)):
            raise InvalidType(f"path must be a file path, got {type(path).__name__}")
        path = Path(path)
        if path.exists():
            raise InvalidValue(f"{path} already exists: save the page to a new path (nothing is overwritten)")
        check_writable(path.parent)
        atomic_write_text(path, self.html)
        return path


def show_attention(model_or_path, text: str, *, tokenizer=None, target: str | None = None, title: str | None = None,
                   height: int | None = None) -> View:
    """The attention explorer of `text`: every layer x head of a trained redthread model (with its `tokenizer`),
    a run folder or checkpoint file, or a pretrained name ("minilm") or Hugging Face folder. An encoder-decoder
    reads `text` as its source and `target` as the decoder's input. `height`: the frame's, in pixels (by
    default sized to the text, at most MAX_HEIGHT)."""
    _check_text(text, "text")
    if target is not None:
        _check_text(target, "target")
    if title is not None and not isinstance(title, str):
        raise InvalidType(f"title must be a string or None, got {type(title).__name__}")
    height = _check_height(height)
    inspector = _inspector(model_or_path, tokenizer, rungs=False)
    with _evaluating(inspector.model):
        payload = inspector.attention_payload(text, target, title)
    return View(render_explorer(payload), payload["title"], height or explorer_height(payload))


def show_image_attention(run: str | os.PathLike, index: int | None = None, *, image: str | os.PathLike | None = None,
                         height: int | None = None) -> View:
    """The explorer of one image through a ViT or captioner run: test image `index` of its own data, or an
    image file (resized to what the model takes, said on the page)."""
    if not isinstance(run, (str, os.PathLike)):
        raise InvalidType(f"run must be the path of a ViT or captioner run, got {type(run).__name__}")
    if (index is None) == (image is None):
        raise InvalidValue("give an index of the run's test images or an image file, not both or neither")
    height = _check_height(height)
    inspector = ImageInspector(Path(run))
    if index is not None:
        if not isinstance(index, int) or isinstance(index, bool):
            raise InvalidType(f"index must be an integer, got {index!r}")
        payload = inspector.image_payload(index)
    else:
        if not isinstance(image, (str, os.PathLike)):
            raise InvalidType(f"image must be the path of an image file, got {type(image).__name__}")
        image = Path(image)
        if not image.is_file():
            raise MissingFile(f"no image file {image}")
        payload = inspector.upload_payload(image.read_bytes(), image.name)
    return View(render_explorer(payload), payload["title"], height or explorer_height(payload))


def show_next_token(model_or_path, text: str, *, tokenizer=None, top_k: int | None = None, top_p: float | None = None,
                    temperature: float = 1.0, min_p: float | None = None, candidates: int = 20,
                    height: int | None = None) -> View:
    """P(next token | text) from a language model (as `show_attention` takes one, or a ladder rung without
    attention), and the distribution sampling with these settings draws from, after temperature, top-k,
    top-p and min-p: the numbers `Inspector.next_token` returns, drawn as bars."""
    _check_text(text, "text")
    sampling = SampleConfig(temperature=temperature, top_k=top_k, top_p=top_p, min_p=min_p)  # validates them
    height = _check_height(height)
    inspector = _inspector(model_or_path, tokenizer, rungs=True)
    with _evaluating(inspector.model):
        dist = inspector.next_token(text, sampling, candidates)
    title = text.strip()
    height = height or 230 + 24 * len(dist["candidates"]) + 30 * bool(dist["notice"])  # a row is ~24 px
    page = render_next_token(dist, title, inspector.description, inspector.description_zh or None,
                             inspector.tokens(text).notice_zh if dist["notice"] else None)
    return View(page, title, height)


def explorer_height(payload: dict) -> int:
    """An iframe height (px) that shows the explorer of this payload whole, up to MAX_HEIGHT: the header and
    controls, then the taller of the head view (20 px a token, an image ~190 px wide) and the side column: the
    model view (48 px a layer: every layer's row is shown, never clipped) above the neuron view (~210 px, when
    the payload carries query and key vectors). Past MAX_HEIGHT the side column scrolls inside the frame."""
    rows = 0
    for tab in payload["tabs"]:
        image = tab.get("image")
        keys = len(tab["keys"]) if image is None else image["offset"] + 10 * image["grid"][0] / image["grid"][1]
        rows = max(rows, len(tab["queries"]), keys)
    layers = max(len(tab["weights"]) for tab in payload["tabs"])
    neuron = 210 if any("vectors" in tab for tab in payload["tabs"]) else 0
    top = 150 + 30 * bool(payload["notice"])
    return int(min(MAX_HEIGHT, top + max(16 + 20 * rows, 40 + 48 * layers + neuron)))


# --- the next-token page ---------------------------------------------------------------------


def render_next_token(dist: dict, title: str, model: str, model_zh: str | None = None,
                      notice_zh: str | None = None) -> str:
    """The next-token page of `Inspector.next_token`'s answer: the answer embedded as JSON, drawn by the script
    the web app draws its next-token panel with (next_token.js: one row per candidate, p and p sample as bars).
    It opens in the language chosen (redthread.lang) and its 中文 / English button switches: its fixed words are
    next_token.js's and page/words.js's; the model's description and the notice come in both (model_zh, notice_zh)."""
    s = dist["settings"]
    values = {key: None if s[key] is None else str(s[key]) for key in ("temperature", "top_k", "top_p", "min_p")}
    settings = " · ".join(f"{name} {values[key] or 'off'}" for key, name in
                          (("temperature", "temperature"), ("top_k", "top-k"), ("top_p", "top-p"), ("min_p", "min-p")))
    if s["temperature"] == 0:
        settings += " (greedy: the most probable token)"
    notice = dist["notice"]
    css, js, _ = explorer_assets()  # the explorer's header and colours, and its way of drawing a token
    parts = {
        "lang": html_lang(), "title": html.escape(title), "model": html.escape(model),
        "model_zh": html.escape(model_zh or model), "settings": html.escape(settings),
        "values": html.escape(json.dumps({**values, "greedy": s["temperature"] == 0})),
        "notice": (f'<p id="notice" data-zh="{html.escape(notice_zh or notice)}">{html.escape(notice)}</p>'
                   if notice else ""),
        "css": css, "js": js, "dist": script_json(dist),
    }
    template = (ASSETS / "next_token.html").read_text(encoding="utf-8")
    return re.sub(r"\{\{(\w+)\}\}", lambda m: parts[m.group(1)], template)  # one pass: nothing is substituted twice


# --- arguments -------------------------------------------------------------------------------


def _inspector(model_or_path, tokenizer, rungs: bool) -> Inspector:
    """An Inspector of a model in memory (with its tokenizer), a run folder or checkpoint, or a pretrained model."""
    from redthread.train.checkpoint import FILENAME

    if isinstance(model_or_path, Inspector):
        return model_or_path
    if isinstance(model_or_path, nn.Module):
        if type(model_or_path).__name__ in ("ViT", "Captioner"):
            raise InvalidValue(f"a {type(model_or_path).__name__} is an image model: save it as a run and show an "
                               "image with rt.show_image_attention(run, index)")
        if tokenizer is None:
            raise InvalidValue("a model in memory needs its tokenizer to read the text: pass tokenizer=")
        return inspect_model(model_or_path, tokenizer, type(model_or_path).__name__, rungs=rungs)
    if not isinstance(model_or_path, (str, os.PathLike)):
        raise InvalidType("expected a redthread model, a run folder or checkpoint path, or a pretrained model's name "
                          f"or folder, got {type(model_or_path).__name__}")
    if tokenizer is not None:
        raise InvalidValue("tokenizer= goes with a model in memory; a run or a pretrained model brings its own")
    path = Path(model_or_path)
    if path.is_file() or (path.is_dir() and (path / FILENAME).is_file()):  # a redthread run
        return load_inspector(checkpoint=path, rungs=rungs)
    if path.suffix == ".safetensors" or (not path.exists() and os.sep in str(model_or_path)):
        raise MissingFile(f"no run or checkpoint at {path}")
    return load_inspector(pretrained=model_or_path)  # a known name or a Hugging Face folder; else one line


def _check_text(text, name: str) -> None:
    if not isinstance(text, str):
        raise InvalidType(f"{name} must be a string, got {type(text).__name__}")
    if not text.strip():
        raise InvalidValue(f"{name} is empty")


def _check_height(height) -> int | None:
    if height is None:  # sized to the page
        return None
    if not isinstance(height, int) or isinstance(height, bool):
        raise InvalidType(f"height must be a whole number of pixels, got {height!r}")
    if not 100 <= height <= 10_000:
        raise InvalidValue(f"height must be from 100 to 10000 pixels, got {height}")
    return height


@contextmanager
def _evaluating(model: nn.Module):
    """The model in eval mode (no dropout) while it is looked into, then back in the mode it was in."""
    was = model.training
    model.eval()
    try:
        yield
    finally:
        model.train(was)
