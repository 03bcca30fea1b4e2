"""The web app's JSON API: attention, next-token distribution, stepping, and 4xx answers for bad requests."""

import base64
import io
import json

import numpy as np
import pytest
import torch
from fastapi.testclient import TestClient
from matplotlib.image import imsave

import redthread as rt
from redthread.cli import build_parser
from redthread.lang import has_pairs
from redthread.models.captioner import Captioner, CaptionerConfig
from redthread.serve.app import create_app
from tests.tiny import save_tiny_captioner_run, save_tiny_run, save_tiny_vit_run

TEXT = "to be or not to be"


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    tok = save_tiny_run(root / "tiny", TEXT + "\n")
    save_tiny_captioner_run(root / "images" / "captioner")
    save_tiny_vit_run(root / "images" / "vit")
    rt.save_checkpoint(root / "images" / "bare", Captioner(CaptionerConfig()))  # no scene settings, no words
    rt.save_checkpoint(root / "ladder" / "rungs" / "bigram", rt.build_model("bigram", vocab_size=tok.vocab_size), tokenizer=tok)
    (root / "broken").mkdir()
    (root / "broken" / "checkpoint.safetensors").write_bytes(b"not a checkpoint")
    return root


@pytest.fixture(scope="module")
def client(runs):
    return TestClient(create_app(runs, max_chars=100))


def test_models_lists_the_runs_and_the_rungs_with_their_input(client):
    models = {m["name"]: m for m in client.get("/api/models").json()}
    assert (models["tiny"]["source"], models["tiny"]["input"]) == ("run", "text")
    assert (models["images/captioner"]["source"], models["images/captioner"]["input"]) == ("run", "image")
    assert models["images/vit"]["input"] == "image"
    assert all(models[name]["available"] for name in ("tiny", "images/captioner", "images/vit"))
    assert models["ladder/rungs/bigram"]["input"] == "text" and models["ladder/rungs/bigram"]["attention"] is False
    assert models["tiny"]["attention"] is True and models["ladder/rungs/bigram"]["available"]
    broken = models["broken"]  # a checkpoint file that does not read: listed, unavailable, with the reason
    assert broken["available"] is False and "broken is unavailable: unreadable checkpoint" in broken["reason"]
    r = client.post("/api/attention", json={"model": "broken", "text": TEXT})
    assert r.status_code == 422 and r.json()["error"] == broken["reason"]


def test_image_run_shows_a_test_scene(client):
    r = client.post("/api/image", json={"model": "images/captioner", "index": 3})
    assert r.status_code == 200
    body = r.json()
    assert body["kind"] == "image" and body["title"].startswith("test scene 3 of caption-shapes")
    tabs = {t["kind"]: t for t in body["tabs"]}
    assert set(tabs) == {"cross", "decoder", "encoder"}
    cross = tabs["cross"]
    assert cross["image"]["src"].startswith("data:image/png;base64,") and cross["image"]["grid"] == [6, 6]
    w = torch.tensor(cross["weights"])  # (L, H, words, patches)
    assert w.shape[:2] == (1, 2) and w.shape[-1] == 36
    torch.testing.assert_close(w.sum(-1), torch.ones(w.shape[:-1]), atol=1e-3, rtol=0)
    again = client.post("/api/image", json={"model": "images/captioner", "index": 3}).json()
    assert again == body  # the same scene, the same greedy caption


def test_vit_run_shows_a_test_digit(client):
    body = client.post("/api/image", json={"model": "images/vit", "index": 0}).json()
    assert body["kind"] == "image" and body["title"].startswith("test image 0 of the digits (label ")
    assert body["zh"]["title"].startswith("手写数字的测试图像 0（标签 ")
    [tab] = body["tabs"]
    assert tab["kind"] == "encoder" and tab["queries"][:2] == ["[CLS]", "patch r0c0"] and tab["image"]["grid"] == [4, 4]
    assert torch.tensor(tab["weights"]).shape == (1, 2, 17, 17)  # (L, H, class token + 16 patches, the same)
    r = client.post("/api/image", json={"model": "images/vit", "index": 359})
    assert r.status_code == 422 and "index 359 is out of range: the test split has 359 images" in r.json()["error"]


def data_url(pixels) -> str:
    buf = io.BytesIO()
    imsave(buf, pixels, format="png")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def test_image_runs_show_an_uploaded_file_converted_and_resized(client):
    rng = np.random.default_rng(0)
    body = client.post("/api/image", json={"model": "images/captioner", "image": data_url(rng.random((10, 12, 3))),
                                           "name": "mine.png"}).json()
    assert body["kind"] == "image" and body["title"] == "mine.png" and len(body["tabs"]) == 3
    assert "resized the image from 10x12 to 24x24 pixels" in body["notice"]
    assert body["zh"]["title"] == "mine.png" and "图像从 10x12 像素缩放为 24x24 像素" in body["zh"]["notice"]  # for the 中文 switch
    body = client.post("/api/image", json={"model": "images/vit", "image": data_url(rng.random((8, 8)))}).json()
    assert body["title"] == "your image" and "converted the image from 4 to 1 channel(s)" in body["notice"]  # RGBA PNG
    assert body["zh"]["title"] == "你的图像" and "图像从 4 个通道转换为 1 个通道" in body["zh"]["notice"]
    assert not any(has_pairs(json.dumps(v, ensure_ascii=False)) for v in body.values())


@pytest.mark.parametrize("body,status,message", [
    ({"image": "a picture"}, 422, "image: expected a data: URL with base64 content"),
    ({"image": "data:image/png;base64,@@@@"}, 422, "image: the base64 content does not decode"),
    ({"image": "data:image/png;base64," + base64.b64encode(b"hello").decode(), "name": "x.png"}, 422,
     "cannot read x.png as an image"),
    ({"image": "data:image/png;base64," + "A" * (6 * 2**20)}, 413, "image: the file is over the limit of 4 MiB"),
    ({}, 422, "give index (a test image of the run) or image (a file of your own), one of them"),
    ({"index": 0, "image": "data:image/png;base64,AAAA"}, 422, "one of them"),
])
def test_bad_uploads_get_one_line_answers(client, body, status, message):
    r = client.post("/api/image", json={"model": "images/captioner", **body})
    assert r.status_code == status and message in r.json()["error"]


@pytest.mark.parametrize("path,body,message", [
    ("/api/image", {"model": "images/captioner", "index": 16}, "index 16 is out of range: the test split has 16 scenes"),
    ("/api/image", {"model": "images/captioner", "index": -1}, "index: Input should be greater than or equal to 0"),
    ("/api/image", {"model": "tiny", "index": 0}, "tiny reads text, not images"),
    ("/api/image", {"model": "images/bare", "index": 0}, "saved without the settings of its scenes"),
    ("/api/attention", {"model": "images/captioner", "text": TEXT}, "images/captioner is an image model"),
    ("/api/next", {"model": "images/captioner", "text": TEXT}, "images/captioner is an image model"),
])
def test_image_and_text_requests_to_the_wrong_model_get_a_422(client, path, body, message):
    r = client.post(path, json=body)
    assert r.status_code == 422 and message in r.json()["error"]


def test_attention_gives_every_layer_and_head(client):
    r = client.post("/api/attention", json={"model": "tiny", "text": TEXT})
    assert r.status_code == 200
    body = r.json()
    assert body["kind"] == "lm" and [t["kind"] for t in body["tabs"]] == ["decoder"]
    tab = body["tabs"][0]
    assert tab["queries"] == list(TEXT)
    w = torch.tensor(tab["weights"])
    assert w.shape == (2, 2, len(TEXT), len(TEXT))
    torch.testing.assert_close(w.sum(-1), torch.ones(2, 2, len(TEXT)), atol=1e-3, rtol=0)


def test_attention_carries_one_layers_q_and_k_for_the_neuron_view(client):
    """The last layer's by default, another on request, none with null; their softmax is the weight (both rounded)."""
    tab = client.post("/api/attention", json={"model": "tiny", "text": TEXT}).json()["tabs"][0]
    v = tab["vectors"]
    q, k = torch.tensor(v["q"]), torch.tensor(v["k"])  # (H, T, D), (H, S, D)
    assert v["layer"] == 1 and q.shape == k.shape == (2, len(TEXT), 8) and v["scale"] == pytest.approx(8**-0.5)
    scores = (q @ k.transpose(-2, -1) * v["scale"]).masked_fill(~torch.ones(len(TEXT), len(TEXT), dtype=torch.bool).tril(),
                                                                 float("-inf"))
    torch.testing.assert_close(scores.softmax(-1), torch.tensor(tab["weights"][1]), atol=1e-3, rtol=0)
    body = client.post("/api/attention", json={"model": "tiny", "text": TEXT, "neuron_layer": 0}).json()
    assert body["tabs"][0]["vectors"]["layer"] == 0
    body = client.post("/api/attention", json={"model": "tiny", "text": TEXT, "neuron_layer": None}).json()
    assert "vectors" not in body["tabs"][0]


def test_next_token_distribution_and_the_cut(client):
    body = client.post("/api/next", json={"model": "tiny", "text": TEXT, "top_k": 3, "candidates": 7}).json()
    cands = body["candidates"]
    assert len(cands) == 7 and body["kept"] == 3 and body["vocab_size"] == 8
    ps = [c["p"] for c in cands]
    assert ps == sorted(ps, reverse=True)
    assert [c["kept"] for c in cands] == [True] * 3 + [False] * 4  # the cut falls after the top 3
    assert sum(c["p_sample"] for c in cands) == pytest.approx(1.0, abs=1e-5)
    full = client.post("/api/next", json={"model": "tiny", "text": TEXT, "candidates": 8}).json()
    assert sum(c["p"] for c in full["candidates"]) == pytest.approx(1.0, abs=1e-5)
    assert full["kept"] == 8
    cold = client.post("/api/next", json={"model": "tiny", "text": TEXT, "temperature": 0.5, "candidates": 8}).json()
    assert cold["candidates"][0]["p_sample"] > cold["candidates"][0]["p"]  # a lower temperature sharpens


def test_step_appends_one_token_reproducibly(client):
    ask = {"model": "tiny", "text": TEXT, "seed": 7, "top_p": 0.9}
    a, b = client.post("/api/step", json=ask).json(), client.post("/api/step", json=ask).json()
    assert a == b and a["text"] == TEXT + a["token"] and len(a["token"]) == 1
    greedy = client.post("/api/step", json={"model": "tiny", "text": TEXT, "temperature": 0}).json()
    assert greedy["token"] == greedy["distribution"]["candidates"][0]["token"]


@pytest.mark.parametrize(
    "path, body, status, message",
    [
        ("/api/attention", {"model": "tiny", "text": "x" * 101}, 413, "limit is 100"),
        ("/api/attention", {"model": "nope", "text": TEXT}, 404, "unknown model 'nope'"),
        ("/api/attention", {"model": "../../etc", "text": TEXT}, 403, "outside the runs folder"),
        ("/api/attention", {"model": "/etc", "text": TEXT}, 403, "outside the runs folder"),
        ("/api/attention", {"model": "tiny", "text": "   "}, 422, "empty"),
        ("/api/attention", {"model": "tiny", "text": "QQ"}, 422, "Q"),
        ("/api/attention", {"model": "tiny"}, 422, "text: Field required"),
        ("/api/next", {"model": "tiny", "text": TEXT, "temperature": -1}, 422, "temperature"),
        ("/api/next", {"model": "tiny", "text": TEXT, "top_p": 1.5}, 422, "top_p"),
        ("/api/attention", {"model": "ladder/rungs/bigram", "text": TEXT}, 422, "has no attention to show"),
        ("/api/compare", {"models": ["tiny", "tiny"], "text": TEXT}, 422, "named twice"),
        ("/api/compare", {"models": [], "text": TEXT}, 422, "models"),
        ("/api/compare", {"models": ["images/vit"], "text": TEXT}, 422, "image model"),
        ("/api/compare", {"models": ["nope"], "text": TEXT}, 404, "unknown model 'nope'"),
        ("/api/next", {"model": "tiny", "text": TEXT, "temprature": 0.5}, 422, "temprature: Extra inputs"),
        ("/api/next", {"model": "tiny", "text": TEXT, "repetition_penalty": 0}, 422, "repetition_penalty"),
        ("/api/attention", {"model": "tiny", "text": TEXT, "seed": 1}, 422, "seed: Extra inputs"),
        ("/api/image", {"model": "tiny", "index": 0, "size": 3}, 422, "size: Extra inputs"),
        ("/api/attention", {"model": "tiny", "text": TEXT, "neuron_layer": 2}, 422, "layer 2 for the query and key vectors is out of range"),
        ("/api/attention", {"model": "tiny", "text": TEXT, "neuron_layer": -3}, 422, "out of range: the model has 2 decoder"),
        ("/api/attention", {"model": "tiny", "text": TEXT, "neuron_layer": True}, 422, "neuron_layer: Input should be a valid integer"),
        ("/api/attention", {"model": "tiny", "text": TEXT, "neuron_layer": "1"}, 422, "neuron_layer: Input should be a valid integer"),
        ("/api/attention", {"model": "tiny", "text": TEXT, "neuron_head": 1}, 422, "neuron_head: Extra inputs"),
    ],
)
def test_bad_requests_get_a_clear_4xx(client, path, body, status, message):
    r = client.post(path, json=body)
    assert r.status_code == status, r.text
    error = r.json()["error"]
    assert message in error and "\n" not in error


@pytest.mark.parametrize("path, body, status, zh", [
    ("/api/attention", {"model": "tiny", "text": "x" * 101}, 413, "文本有 101 个字符；上限是 100 个"),
    ("/api/next", {"model": "tiny", "text": "   "}, 422, "文本是空的"),
    ("/api/step", {"model": "tiny", "text": "to QQ"}, 422, "tiny 读不了这段文本：它的分词器从没见过文本中的 1 个字符：'Q'"),
    ("/api/attention", {"model": "nope", "text": "to be"}, 404, None),
])
def test_the_mistakes_made_from_the_page_are_said_in_chinese_too(client, path, body, status, zh):
    """What a person can get wrong in the app's text box comes with its line in Chinese (the app's 中文 view)."""
    r = client.post(path, json=body)
    assert r.status_code == status and r.json().get("error_zh") == zh
    if zh is not None:
        assert "\n" not in r.json()["error"]


def test_a_long_text_is_cut_to_the_context_with_a_notice(client):
    body = client.post("/api/attention", json={"model": "tiny", "text": "to be " * 10}).json()
    assert "kept the last 32" in body["notice"]
    assert len(body["tabs"][0]["queries"]) == 32


def test_the_sampling_fields_are_built_from_sample_config(client):
    """Each sampling field of /api/next and /api/step is SampleConfig's: same default, meaning and bounds."""
    from dataclasses import fields

    from redthread.generate.config import SampleConfig

    spec = client.get("/openapi.json").json()["components"]["schemas"]
    for f in fields(SampleConfig):
        schema = spec["StepRequest"]["properties"][f.name]
        assert schema["description"] == f.metadata["help"] and schema.get("default") == f.default, f.name
    assert client.post("/api/step", json={"model": "tiny", "text": TEXT, "repetition_penalty": 1.3, "seed": 0}).status_code == 200


def test_openapi_describes_the_api(client):
    spec = client.get("/openapi.json").json()
    assert {"/api/models", "/api/attention", "/api/next", "/api/step"} <= set(spec["paths"])


def test_serve_listens_on_loopback_by_default():
    args = build_parser().parse_args(["serve"])
    assert args.host == "127.0.0.1"


def test_the_docs_page_uses_no_cdn(client):
    html = client.get("/docs").text
    assert "cdn." not in html and "swagger-ui-bundle.js" in html
    js = html.split('src="', 1)[1].split('"', 1)[0]  # the bundle's local path
    assert client.get(js).status_code == 200


def test_compare_gives_each_rung_its_next_token_distribution_side_by_side(client):
    """The ladder's bigram beside the Transformer on one context: each its own P(next | text), summing to at
    most 1 over the listed tokens, the same numbers /api/next gives, with its entropy."""
    r = client.post("/api/compare", json={"models": ["ladder/rungs/bigram", "tiny"], "text": TEXT, "candidates": 5})
    assert r.status_code == 200, r.text
    answers = {a["model"]: a for a in r.json()["models"]}
    assert list(answers) == ["ladder/rungs/bigram", "tiny"]
    assert answers["ladder/rungs/bigram"]["attention"] is False and answers["tiny"]["attention"] is True
    for name, a in answers.items():
        ps = [c["p"] for c in a["candidates"]]
        assert len(ps) == 5 and ps == sorted(ps, reverse=True) and sum(ps) <= 1 + 1e-6 and a["entropy"] > 0
        alone = client.post("/api/next", json={"model": name, "text": TEXT, "candidates": 5}).json()
        assert [c["p"] for c in alone["candidates"]] == pytest.approx(ps) and alone["entropy"] == pytest.approx(a["entropy"])


@pytest.mark.parametrize("settings", [{}, {"temperature": 0.5}, {"temperature": 1.7, "top_k": 3}, {"top_p": 0.6},
                                      {"temperature": 0}])
def test_next_token_gives_the_models_entropy_and_the_sampled_distributions(client, runs, settings):
    """Both entropies by hand from the model's logits: the model's -sum p log p, and that of softmax(logits / T)
    cut by top-k (the k largest) or top-p (the smallest head of the sorted list holding p) and renormalised."""
    from redthread.train.checkpoint import read_checkpoint

    ckpt = read_checkpoint(runs / "tiny")
    model = ckpt.model.eval()
    idx = torch.tensor([ckpt.tokenizer.encode(TEXT)])  # (1, T)
    with torch.no_grad():
        logits = model(idx)[0, -1].double()  # (V,)
    p = logits.softmax(-1).numpy()
    T = settings.get("temperature", 1.0)
    if T == 0:
        q = np.eye(len(p))[p.argmax()]  # greedy: all the mass on the most probable token
    else:
        q = (logits / T).softmax(-1).numpy()
        order = np.argsort(-q)
        keep = np.zeros(len(q), dtype=bool)
        if "top_k" in settings:
            keep[order[: settings["top_k"]]] = True
        elif "top_p" in settings:
            before = np.cumsum(q[order]) - q[order]  # the mass ahead of each token in the sorted list
            keep[order[before < settings["top_p"]]] = True
        else:
            keep[:] = True
        q = np.where(keep, q, 0) / q[keep].sum()
    entropy = -(p * np.log(p)).sum()
    entropy_sample = -sum(x * np.log(x) for x in q if x > 0)
    body = client.post("/api/next", json={"model": "tiny", "text": TEXT, **settings}).json()
    assert body["entropy"] == pytest.approx(entropy, abs=1e-5)
    assert body["entropy_sample"] == pytest.approx(entropy_sample, abs=1e-5)
    assert body["perplexity_sample"] == pytest.approx(np.exp(entropy_sample), rel=1e-5)
    assert body["kept"] == int((q > 0).sum())
    if settings:
        assert abs(body["entropy_sample"] - body["entropy"]) > 1e-3  # the settings change what is sampled from
