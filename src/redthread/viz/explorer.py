"""The attention explorer: one self-contained HTML page that shows attention weights.

Rung on the ladder: attention and the Transformer. Claim C13 of the essay: attention maps are
a window into what the model learned ("it" should attend to "animal" more than to "street").
Claim C9: heads differ, so the page shows every layer x head at once (the model view) and one
of them, or their mean, in detail (the head view). Claim C14: the keys of a tab may be the
patches of an image, drawn as the image with a heat overlay.

The page is `assets/explorer.html` with `explorer.css` and `explorer.js` inlined and the
payload embedded as JSON. It needs no network: no CDN, no font, no request of any kind, and
its Content-Security-Policy tells the browser so. The web app (`redthread serve`) inlines the
same style and script (`explorer_assets`) and draws each answer of its API with them; they carry the
next-token view's too (`next_token.css` and `.js`), which the web app and the notebook's next-token
page (viz/notebook.py) both draw with.
The payload is the contract with the code that records attention (`payload_tab` builds one
tab from a tensor):

    {"title": str, "model": str, "notice": str | None,
     "zh": {"model": str, "notice": str | None, "title": str},  # optional: the same in Chinese, for the 中文 view
     "tabs": [{"kind": "encoder" | "decoder" | "cross",
               "queries": [T strings], "keys": [S strings],
               "weights": L x H x T x S nested lists of floats, each row summing to 1,
               "image": {"src": "data:image/png;base64,...", "grid": [rows, cols], "offset": 1},
               "vectors": {"layer": l, "scale": float, "q": H x T x D numbers, "k": H x S x D numbers}}]}

`image` is optional: the keys are then `offset` leading tokens (a class token) followed by
rows x cols image patches in row-major order.

`vectors` is optional: the per-head queries and keys of layer l (0 <= l < L) exactly as its
scores use them (after any rotary rotation), for the neuron view. The page recomputes each
score q[t] . k[s] * scale (scale is 1/sqrt(D) unless the model sets another), masks the keys a
query may not see (a decoder tab is causal: query t sees keys up to t + S - T) and takes the
softmax over the keys: the weight of layer l in `weights`, up to the rounding of both. One layer
only: the vectors are 2 x H x D numbers per token, so every layer would be as large as the weights.

Shape legend: L layers, H heads, T query length, S key length, D head dimension.
"""

from __future__ import annotations

import html
import json
import math
import os
import re
from pathlib import Path

import numpy as np

from redthread.errors import InvalidType, InvalidValue
from redthread.files import atomic_write_text
from redthread.lang import html_lang


KINDS = ("encoder", "decoder", "cross")
ASSETS = Path(__file__).parent / "assets"
DECIMALS = 4  # weights are rounded to keep pages small; 1e-4 is below what a line or a bar shows
VECTOR_DECIMALS = 4  # the neuron view's q and k: MiniLM's weights come back from them to within 9e-5 (D = 32)


def payload_tab(kind: str, queries: list[str], keys: list[str], weights, image: dict | None = None,
                vectors: dict | None = None) -> dict:
    """One tab of the payload from weights of shape (L, H, T, S): a torch.Tensor or an array; `vectors`:
    {"layer": l, "scale": s, "q": (H, T, D), "k": (H, S, D)} for the neuron view, tensors or arrays."""
    tab = {"kind": kind, "queries": list(queries), "keys": list(keys), "weights": _array(weights)}
    if image is not None:
        tab["image"] = image
    if isinstance(vectors, dict):
        tab["vectors"] = {**vectors, "q": _array(vectors.get("q")), "k": _array(vectors.get("k"))}
    elif vectors is not None:
        tab["vectors"] = vectors  # not an object: _check_tab names it
    return _check_tab(tab, 0)  # checks the shapes and rounds the numbers into nested lists


def _array(x):
    if hasattr(x, "detach"):  # a torch.Tensor, without importing torch here
        return x.detach().float().cpu().numpy()
    return x


def render_explorer(payload: dict) -> str:
    """The HTML text of the explorer page for a payload (validated first), opening in the language chosen
    (redthread.lang); its 中文 / English button switches."""
    payload = _check_payload(payload)
    css, js, body = explorer_assets()
    parts = {"title": html.escape(payload["title"]), "css": css, "js": js, "body": body, "payload": script_json(payload),
             "lang": html_lang()}
    template = (ASSETS / "explorer.html").read_text(encoding="utf-8")
    # one pass, so nothing inserted (a token spelling "{{js}}") is substituted again
    return re.sub(r"\{\{(title|css|js|body|payload|lang)\}\}", lambda m: parts[m.group(1)], template)


def script_json(data) -> str:
    """`data` as JSON to put inside a `<script type="application/json">` element of a page."""
    # inside <script>, "</script>" or "<!--" in a token would end or derail the element:
    # JSON may spell <, > and & as \u escapes, and JSON.parse reads them back unchanged
    text = json.dumps(data, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def explorer_assets() -> tuple[str, str, str]:
    """The explorer's style, script and markup, (css, js, body), for a page to inline: this one, the web app's or
    the notebook's next-token page. The style and script hold the next-token view's after the explorer's.

    The script defines `window.RedthreadExplorer.render(root, payload)`, which draws a payload into
    an element holding the explorer's markup (explorer_body.html) and may be called again with new
    payloads; on a page with a `<script id="payload">` it draws that payload by itself. It also defines
    `window.RedthreadNextToken.render(root, dist, options)` (next_token.js), which draws an answer of
    `Inspector.next_token`; on a page with a `<script id="next-token">` it draws that one by itself.
    """
    css, js, body = ((ASSETS / name).read_text(encoding="utf-8") for name in
                     ("explorer.css", "explorer.js", "explorer_body.html"))
    next_css, next_js = ((ASSETS / name).read_text(encoding="utf-8") for name in ("next_token.css", "next_token.js"))
    # the Chinese words, shared with the live page; its note on file:// names an address, which a page that loads
    # nothing should not spell out ("http:\/\/" is the same string to JavaScript)
    words = (ASSETS / "page" / "words.js").read_text(encoding="utf-8").replace("http://", "http:\\/\\/")

    return css + next_css, words + js + next_js, body  # next_token.js draws tokens with explorer.js's shown(): after it


def write_explorer(payload: dict, path: str | os.PathLike) -> Path:
    """Write the page to `path` atomically (a temporary file in the same folder, then a rename)."""
    text = render_explorer(payload)  # first, so a bad payload writes nothing
    path = Path(path)
    atomic_write_text(path, text)
    return path


def _check_payload(payload) -> dict:
    """A clean copy of the payload, or RedthreadError naming the first problem."""
    if not isinstance(payload, dict):
        raise InvalidType(f"explorer payload must be a dict, got {type(payload).__name__}")
    _check_keys(payload, {"title", "model", "tabs"}, {"notice", "zh"}, "explorer payload")
    for name in ("title", "model"):
        if not isinstance(payload[name], str):
            raise InvalidType(f"explorer payload {name!r} must be a string, got {type(payload[name]).__name__}")
    notice = payload.get("notice")
    if notice is not None and not isinstance(notice, str):
        raise InvalidType(f"explorer payload 'notice' must be a string or None, got {type(notice).__name__}")
    tabs = payload["tabs"]
    if not isinstance(tabs, list):
        raise InvalidType("explorer payload 'tabs' must be a non-empty list")
    if not tabs:
        raise InvalidValue("explorer payload 'tabs' must be a non-empty list")
    tabs = [_check_tab(tab, i) for i, tab in enumerate(tabs)]
    kinds = [tab["kind"] for tab in tabs]
    if len(set(kinds)) != len(kinds):
        raise InvalidValue(f"explorer payload has a kind twice in its tabs: {kinds}")
    clean = {"title": payload["title"], "model": payload["model"], "notice": notice, "tabs": tabs}
    if "zh" in payload:
        clean["zh"] = _check_chinese(payload["zh"])
    return clean


def _check_chinese(zh) -> dict:
    """The model's description, the notice and (an image's) title in Chinese: {"model": str, "notice": str | None,
    "title": str (optional)}."""
    if not isinstance(zh, dict):
        raise InvalidType(f"explorer payload 'zh' must be a dict, got {type(zh).__name__}")
    _check_keys(zh, {"model"}, {"notice", "title"}, "explorer payload 'zh'")
    if not isinstance(zh["model"], str):
        raise InvalidType(f"explorer payload 'zh' model must be a string, got {type(zh['model']).__name__}")
    for key in ("notice", "title"):
        if zh.get(key) is not None and not isinstance(zh[key], str):
            raise InvalidType(f"explorer payload 'zh' {key} must be a string or None, got {type(zh[key]).__name__}")
    clean = {"model": zh["model"], "notice": zh.get("notice")}
    if zh.get("title") is not None:
        clean["title"] = zh["title"]
    return clean


def _check_tab(tab, i: int) -> dict:
    where = f"explorer tab {i}"
    if not isinstance(tab, dict):
        raise InvalidType(f"{where} must be a dict, got {type(tab).__name__}")
    _check_keys(tab, {"kind", "queries", "keys", "weights"}, {"image", "vectors"}, where)
    if tab["kind"] not in KINDS:
        raise InvalidValue(f"{where} has unknown kind {tab['kind']!r}; kinds: {', '.join(KINDS)}")
    where = f"explorer tab {i} ({tab['kind']})"
    for name in ("queries", "keys"):
        tokens = tab[name]
        if not isinstance(tokens, list):
            raise InvalidType(f"{where} {name!r} must be a non-empty list of strings")
        if not tokens:
            raise InvalidValue(f"{where} {name!r} must be a non-empty list of strings")
        if not all(isinstance(t, str) for t in tokens):
            raise InvalidType(f"{where} {name!r} must hold strings only")
    T, S = len(tab["queries"]), len(tab["keys"])
    try:
        att = np.asarray(tab["weights"])  # (L, H, T, S)
    except ValueError:  # ragged nesting
        raise InvalidValue(f"{where} 'weights' is ragged; expected L x H x T={T} x S={S} numbers") from None
    if att.ndim != 4 or att.shape[2:] != (T, S) or 0 in att.shape:
        raise InvalidValue(f"{where} 'weights' has shape {att.shape}; expected (L, H, T={T}, S={S})")
    if att.dtype.kind not in "iuf":
        raise InvalidType(f"{where} 'weights' must hold numbers, got dtype {att.dtype}")
    att = att.astype(np.float64)
    if not np.isfinite(att).all() or att.min() < 0 or att.max() > 1 + 1e-3:
        raise InvalidValue(f"{where} 'weights' must be finite and within [0, 1]")
    # rows are distributions over keys; rounding each weight to DECIMALS may move a sum by S/2 units
    worst = np.abs(att.sum(-1) - 1).max()
    if worst > 1e-3 + S * 0.5 * 10**-DECIMALS:
        raise InvalidValue(f"{where} 'weights' rows must sum to 1 over the keys (one is off by {worst:.3g})")
    clean = {"kind": tab["kind"], "queries": tab["queries"], "keys": tab["keys"],
             "weights": np.round(att, DECIMALS).tolist()}
    if "image" in tab:
        clean["image"] = _check_image(tab["image"], S, where)
    if "vectors" in tab:
        clean["vectors"] = _check_vectors(tab["vectors"], att.shape, where)
    return clean


def _check_vectors(vectors, shape: tuple[int, ...], where: str) -> dict:
    """One layer's queries (H, T, D) and keys (H, S, D), with the scores' scale."""
    L, H, T, S = shape
    where = f"{where} 'vectors'"
    if not isinstance(vectors, dict):
        raise InvalidType(f"{where} must be a dict, got {type(vectors).__name__}")
    _check_keys(vectors, {"layer", "scale", "q", "k"}, set(), where)
    layer, scale = vectors["layer"], vectors["scale"]
    if not isinstance(layer, int) or isinstance(layer, bool):
        raise InvalidType(f"{where} layer must be an integer, got {layer!r}")
    if not 0 <= layer < L:
        raise InvalidValue(f"{where} layer {layer} is out of range: the tab has {L} layers (0 to {L - 1})")
    if not isinstance(scale, (int, float)) or isinstance(scale, bool):
        raise InvalidType(f"{where} scale must be a number, got {scale!r}")
    if not (math.isfinite(scale) and scale > 0):
        raise InvalidValue(f"{where} scale must be a finite number > 0, got {scale!r}")
    clean = {"layer": layer, "scale": float(scale)}
    for name, n, side in (("q", T, "T"), ("k", S, "S")):
        try:
            x = np.asarray(vectors[name])  # (H, T or S, D)
        except ValueError:  # ragged nesting
            raise InvalidValue(f"{where} {name!r} is ragged; expected H={H} x {side}={n} x D numbers") from None
        if x.ndim != 3 or x.shape[:2] != (H, n) or x.shape[2] == 0:
            raise InvalidValue(f"{where} {name!r} has shape {x.shape}; expected (H={H}, {side}={n}, D)")
        if x.dtype.kind not in "iuf":
            raise InvalidType(f"{where} {name!r} must hold numbers, got dtype {x.dtype}")
        if not np.isfinite(x).all():
            raise InvalidValue(f"{where} {name!r} must be finite numbers")
        clean[name] = np.round(x.astype(np.float64), VECTOR_DECIMALS).tolist()
    D = (len(clean["q"][0][0]), len(clean["k"][0][0]))
    if D[0] != D[1]:
        raise InvalidValue(f"{where} 'q' and 'k' must have the same head dimension D, got {D[0]} and {D[1]}")
    return clean


def _check_image(image, S: int, where: str) -> dict:
    """The keys are `offset` tokens then rows x cols patches; the picture is a data: URI (no network)."""
    if not isinstance(image, dict):
        raise InvalidType(f"{where} 'image' must be a dict, got {type(image).__name__}")
    _check_keys(image, {"src", "grid"}, {"offset"}, f"{where} 'image'")
    src, grid, offset = image["src"], image["grid"], image.get("offset", 0)
    if not isinstance(src, str):
        raise InvalidType(f"{where} 'image' src must be a data:image/... URI (the page loads nothing)")
    if not src.startswith("data:image/"):
        raise InvalidValue(f"{where} 'image' src must be a data:image/... URI (the page loads nothing)")
    if not isinstance(grid, (list, tuple)) or not all(isinstance(n, int) and not isinstance(n, bool) for n in grid):
        raise InvalidType(f"{where} 'image' grid must be [rows, cols] of positive integers, got {grid!r}")
    if len(grid) != 2 or not all(n > 0 for n in grid):
        raise InvalidValue(f"{where} 'image' grid must be [rows, cols] of positive integers, got {grid!r}")
    if not isinstance(offset, int) or isinstance(offset, bool):
        raise InvalidType(f"{where} 'image' offset must be an integer >= 0, got {offset!r}")
    if offset < 0:
        raise InvalidValue(f"{where} 'image' offset must be an integer >= 0, got {offset!r}")
    if offset + math.prod(grid) != S:
        raise InvalidValue(f"{where} 'image' has {offset} + {grid[0]}x{grid[1]} keys but the tab has S={S}")
    return {"src": src, "grid": list(grid), "offset": offset}


def _check_keys(d: dict, required: set[str], optional: set[str], where: str) -> None:
    missing = sorted(required - d.keys())
    if missing:
        raise InvalidValue(f"{where} is missing {', '.join(map(repr, missing))}")
    unknown = sorted(d.keys() - required - optional, key=str)
    if unknown:
        raise InvalidValue(f"{where} has unknown key(s) {', '.join(map(repr, unknown))}")
