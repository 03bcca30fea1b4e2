"""`redthread serve`: a local web app to look inside models, on FastAPI.

Pick a model (a Transformer run found under the runs folder, or a pretrained encoder), type
text, see every layer and head of its attention; for a language model, see P(next token |
context) with the top candidates, where the top-k / top-p / min-p cut falls and what the
temperature does, and step generation one token at a time. For an image run (a ViT or a
captioner), pick one of its test images instead of typing: its attention over the patches, and
a captioner's words over the image.

JSON API (OpenAPI description at /openapi.json, interactive docs at /docs):
    GET  /api/models                    the models on offer, each with its input ("text" or "image")
                                        and whether it is available (a corrupt run: false, and why)
    POST /api/attention {model, text, neuron_layer}
                                        the explorer payload: tabs of (L, H, T, S) weights, and one
                                        layer's per-head q and k for the neuron view (default the last)
    POST /api/image     {model, index}  the same for test image `index` of an image run,
                        {model, image, name}  or for an image file of the user's (a data: URL)
    POST /api/next      {model, text, temperature, top_k, top_p, min_p, candidates}
    POST /api/step      {... the same, seed}   one sampled token appended to the text

Bad requests get a 4xx answer with {"error": "one line"}: text, a body or an image over its limit
(413), an unknown model (404), a model path outside the runs folder (403), anything else the model
cannot read, a corrupt run included (422). The server never answers a client's mistake with a 500.

A server that others can reach (`redthread serve --host 0.0.0.0`) asks for an access token on every
request (AccessToken): `?token=` in the link it prints (which sets a cookie for the page's own calls),
that cookie, or `Authorization: Bearer`; without it the answer is a 401.

Model work runs in a bounded pool: `workers` requests at once and `queue` more waiting; past that
a request gets a 503 with Retry-After at once, and one that takes longer than `time_limit` seconds
gets a 504 (its work finishes in the background, holding its place, so the pool stays bounded).

This file holds the routes; beside it: catalogue.py (the runs on offer, loaded and kept), pool.py
(the worker pool), requests.py (the request bodies), guards.py (the token and the body limit),
errors.py (the one-line error answers) and assets/ (the page).
"""

from __future__ import annotations

import contextlib
import json
from importlib import resources
from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import HTMLResponse
from fastapi_offline import FastAPIOffline

from redthread.errors import InvalidValue
from redthread.generate.config import SampleConfig
from redthread.models.registry import RUNGS
from redthread.serve.catalogue import Models
from redthread.serve.errors import ServeError, add_error_handlers
from redthread.serve.guards import AccessToken, BodyLimit
from redthread.serve.pool import QUEUE, TIME_LIMIT, WORKERS, ModelPool
from redthread.serve.requests import (
    AttentionRequest,
    CompareRequest,
    ImageRequest,
    NextRequest,
    StepRequest,
    sampling,
)
from redthread.viz.inspector import ImageInspector, Inspector
from redthread.words import plural

MAX_IMAGE_BYTES = 4 * 2**20  # an uploaded image file, decoded
MAX_BODY_BYTES = 2 * MAX_IMAGE_BYTES  # a request's body: room for that file as base64 (4/3 of it) in JSON

def create_app(
    runs_dir: str | Path = "runs",
    max_chars: int = 2000,
    device: str = "cpu",
    workers: int = WORKERS,
    queue: int = QUEUE,
    time_limit: float = TIME_LIMIT,
    max_body: int = MAX_BODY_BYTES,
    token: str | None = None,
) -> FastAPI:
    """The app over the runs under `runs_dir`: texts up to `max_chars` characters, request bodies up to
    `max_body` bytes, model work in a pool of `workers` threads, `queue` waiting, `time_limit` s each.
    `token`: every request must carry this access token (AccessToken); None: none is asked for (loopback)."""
    if token is not None and (not isinstance(token, str) or not token.strip() or not token.isprintable()
                              or not token.isascii() or any(c in token for c in " ;,\"")):
        raise InvalidValue("the access token must be printable ASCII without spaces, quotes, commas or semicolons")
    models = Models(Path(runs_dir), device)
    pool = ModelPool(workers, queue, time_limit)

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI):
        yield
        pool.executor.shutdown(wait=False, cancel_futures=True)  # work still waiting is dropped

    app = FastAPIOffline(  # /docs and /redoc from assets installed with the package, no CDN: they work offline
        title="redthread",
        version="0.1.0",
        description="Look inside Transformers: attention by layer and head, P(next token | context), step-by-step "
                    "generation; for image runs, attention over a test image's patches.",
        lifespan=lifespan,
    )
    app.add_middleware(BodyLimit, limit=max_body)
    if token is not None:
        app.add_middleware(AccessToken, token=token)  # added last: it runs first, before the body is read

    def text_model(name: str, text: str | None = None) -> Inspector:
        """The model named, which reads text; with `text`: which it can read (every character in its vocabulary)."""
        inspector = models.get(name)
        if isinstance(inspector, ImageInspector):
            raise ServeError(422, f"{name} is an image model: ask /api/image for one of its test images")
        missing = [] if text is None else inspector.missing(text)
        if missing:
            en, zh = unseen(missing)
            raise ServeError(422, f"{name} cannot read this text: {en}", message_zh=f"{name} 读不了这段文本：{zh}")
        return inspector

    def check_length(text: str) -> str:
        if len(text) > max_chars:
            raise ServeError(413, f"the text is {len(text):,} characters; the limit is {max_chars:,}",
                             message_zh=f"文本有 {len(text):,} 个字符；上限是 {max_chars:,} 个")
        if not text.strip():
            raise ServeError(422, "the text is empty", message_zh="文本是空的")
        return text

    add_error_handlers(app)

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    def page() -> str:
        return app_page(max_chars)

    @app.get("/api/models")
    def list_models() -> list[dict]:
        """The models on offer: Transformer, ViT and captioner runs under the runs folder, and pretrained models.
        A run that cannot be loaded is listed with available: false and the reason."""
        return models.catalogue()

    @app.post("/api/attention")
    async def attention(req: AttentionRequest) -> dict:
        """Every layer and head's attention over the text, as the explorer's payload, with one layer's
        query and key vectors per tab for the neuron view (`neuron_layer`)."""
        text = check_length(req.text)

        def work():
            inspector = text_model(req.model, text)
            return {**inspector.attention_payload(text, neuron_layer=req.neuron_layer), "kind": inspector.kind}

        return await pool.run(work)

    @app.post("/api/image")
    async def image(req: ImageRequest) -> dict:
        """Every layer and head's attention on test image `index` of an image run (a captioner's
        words over the image too), as the explorer's payload."""
        if (req.index is None) == (req.image is None):
            raise ServeError(422, "give index (a test image of the run) or image (a file of your own), one of them")
        data = None if req.image is None else decode_data_url(req.image)

        def work():
            inspector = models.get(req.model)
            if not isinstance(inspector, ImageInspector):
                raise ServeError(422, f"{req.model} reads text, not images: ask /api/attention")
            if data is None:
                return {**inspector.image_payload(req.index), "kind": inspector.kind}
            return {**upload_payload(inspector, data, req.name), "kind": inspector.kind}

        return await pool.run(work)

    @app.post("/api/next")
    async def next_token(req: NextRequest) -> dict:
        """P(next token | text): the top candidates, and what sampling with these settings keeps."""
        text = check_length(req.text)

        def work():
            return text_model(req.model, text).next_token(text, sampling(req), req.candidates)

        return await pool.run(work)

    @app.post("/api/compare")
    async def compare(req: CompareRequest) -> dict:
        """P(next token | the same text) from several models side by side (the ladder's rungs and
        Transformers), in the ladder's order (unigram, n-gram, bigram, MLP, RNN, LSTM, GRU, Transformer):
        each one's most probable tokens, its entropy, and whether it has attention. Each model reads the
        text with its own tokenizer; those that cannot (characters their alphabet lacks) are listed
        under `unreadable`, each with the characters it lacks, and the others are compared."""
        text = check_length(req.text)
        if len(set(req.models)) != len(req.models):
            raise ServeError(422, "models: a model is named twice")

        def work():
            inspectors = []
            for name in req.models:
                inspector = text_model(name)
                if inspector.kind != "lm":
                    raise ServeError(422, f"{name} is not a language model: it gives no next-token distribution")
                inspectors.append(inspector)
            answers, unreadable = [], []
            for inspector in sorted(inspectors, key=ladder_place):  # stable: runs on one rung keep the request's order
                about = {"model": inspector.name, "description": inspector.description,
                         "description_zh": inspector.description_zh or inspector.description,  # the app's 中文 view
                         "attention": inspector.attends, "rung": inspector.rung}
                missing = inspector.missing(text)  # each run reads the text with its own tokenizer
                if missing:
                    en, zh = unseen(missing)
                    unreadable.append({**about, "missing": missing, "error": en, "error_zh": zh})
                    continue
                dist = inspector.next_token(text, SampleConfig(), req.candidates)
                answers.append({**about, **{k: dist[k] for k in ("candidates", "entropy", "perplexity", "vocab_size", "notice")}})
            return {"text": text, "models": answers, "unreadable": unreadable}

        return await pool.run(work)

    @app.post("/api/step")
    async def step(req: StepRequest) -> dict:
        """Draw one token with the settings and append it to the text."""
        text = check_length(req.text)

        def work():
            return text_model(req.model, text).step(text, sampling(req), req.candidates)

        return await pool.run(work)

    return app


def unseen(missing: list[str]) -> tuple[str, str]:
    """What a model lacks to read a text, in English and Chinese: the characters its tokenizer has never seen."""
    names = ", ".join(map(repr, missing))
    return (f"its tokenizer has never seen {plural(len(missing), 'character')} of the text: {names}",
            f"它的分词器从没见过文本中的 {len(missing)} 个字符：{'、'.join(map(repr, missing))}")


def ladder_place(inspector: Inspector) -> int:
    """Where a model's column goes in a comparison: its rung's place on the ladder; models on no rung last."""
    rungs = list(RUNGS)
    return rungs.index(inspector.rung) if inspector.rung in rungs else len(rungs)


def upload_payload(inspector: ImageInspector, data: bytes, name: str) -> dict:
    """An uploaded image's payload; an image over the pixel limit (a decompression bomb) is a 413."""
    from redthread.data.image_files import ImageTooLarge

    try:
        return inspector.upload_payload(data, name)
    except ImageTooLarge as e:
        raise ServeError(413, f"image: {e}") from None


def decode_data_url(url: str) -> bytes:
    """The bytes of a `data:[type];base64,...` URL, as a browser's FileReader.readAsDataURL writes it."""
    import base64
    import binascii

    head, sep, body = url.partition(",")
    if not (head.startswith("data:") and head.endswith(";base64") and sep):
        raise ServeError(422, "image: expected a data: URL with base64 content (data:image/png;base64,...)")
    if len(body) > MAX_IMAGE_BYTES * 4 // 3 + 4:
        raise ServeError(413, f"image: the file is over the limit of {MAX_IMAGE_BYTES // 2**20} MiB")
    try:
        return base64.b64decode(body, validate=True)
    except (binascii.Error, ValueError):
        raise ServeError(422, "image: the base64 content does not decode") from None


def app_page(max_chars: int) -> str:
    """The single-page app: one HTML file, the explorer's script and style inlined, no CDN. It opens in the language
    chosen (redthread.lang: `redthread --lang zh serve`, REDTHREAD_LANG, the locale), which its <html lang> carries;
    ?lang=zh|en in the address and its 中文 / English button choose another."""
    from redthread.lang import html_lang
    from redthread.viz.explorer import explorer_assets

    assets = resources.files("redthread.serve") / "assets"
    html = (assets / "app.html").read_text(encoding="utf-8")
    script = (assets / "app.js").read_text(encoding="utf-8")
    css, explorer_js, explorer_body = explorer_assets()
    config = json.dumps({"maxChars": max_chars}).replace("</", "<\\/")
    return (
        html.replace("/*HTML_LANG*/", html_lang())  # first: nothing inserted after it is substituted
        .replace("/*EXPLORER_BODY*/", explorer_body)
        .replace("/*EXPLORER_CSS*/", css)
        .replace("/*EXPLORER_JS*/", explorer_js)
        .replace("/*APP_JS*/", script)
        .replace("/*APP_CONFIG*/", config)
    )
