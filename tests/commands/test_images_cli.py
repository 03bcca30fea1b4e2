"""`redthread train --task vit-digits` and `redthread ladder --images digits` on a tiny budget, and their bad inputs."""

from __future__ import annotations

import csv
import json
import math

import pytest

import redthread as rt
from tests.cli_helpers import assert_one_line_error, cli

TINY = ["--max-iters", "3", "--batch-size", "16", "--eval-interval", "3", "--no-progress", "--device", "cpu"]


def test_train_vit_digits_writes_a_run_that_loads(tmp_path):
    out = tmp_path / "vit"
    code, stdout, err = cli("train", "--task", "vit-digits", "--out", out, "--n-layer", "1", "--d-model", "16", *TINY)
    assert code == 0, err
    assert "test (359 images): accuracy" in stdout
    results = json.loads((out / "results.json").read_text())
    assert 0 <= results["accuracy"] <= 1 and math.isfinite(results["nll"]) and results["steps"] == 3
    model = rt.load_checkpoint(out)
    assert isinstance(model, rt.ViT) and model.cfg.n_layer == 1 and model.cfg.patch_size == 2
    assert (out / "metrics.jsonl").stat().st_size > 0
    code, _, err = cli("train", "--task", "vit-digits", "--out", out, *TINY)
    assert_one_line_error(code, err, "already holds a run")


def test_train_vit_digits_upscaled_uses_larger_patches(tmp_path):
    out = tmp_path / "vit2"
    code, _, err = cli("train", "--task", "vit-digits", "--out", out, "--upscale", "2", "--n-layer", "1", "--d-model", "16",
                       "--pos", "sinusoidal2d", "--pool", "mean", *TINY)
    assert code == 0, err
    cfg = rt.load_checkpoint(out).cfg
    assert (cfg.image_size, cfg.patch_size, cfg.n_patches, cfg.pos, cfg.pool) == (16, 4, 16, "sinusoidal2d", "mean")


@pytest.mark.parametrize("args,needles", [
    (["--patch-size", "3"], ["patch_size 3 does not divide the image size 8"]),
    (["--upscale", "0"], ["--upscale", "choose from 1, 2, 4"]),
    (["--block-size", "16"], ["--block-size is not a ViT setting"]),
    (["--pos", "rope"], ["pos must be one of learned, sinusoidal2d"]),
    (["--data", "x.txt"], ["drop --data"]),
])
def test_train_vit_digits_bad_input_is_one_line(tmp_path, args, needles):
    code, _, err = cli("train", "--task", "vit-digits", "--out", tmp_path / "bad", *args, *TINY)
    assert_one_line_error(code, err, *needles)
    assert not (tmp_path / "bad" / "checkpoint.safetensors").exists()


def test_image_ladder_reports_three_rungs_on_the_same_split(tmp_path):
    out = tmp_path / "ladder"
    code, stdout, err = cli("ladder", "--images", "digits", "--steps", "2", "--batch-size", "16", "--out", out)
    assert code == 0, err
    rows = list(csv.DictReader((out / "ladder.csv").read_text().splitlines()))
    assert [r["model"] for r in rows] == ["softmax regression (pixels)", "MLP 2x128 tanh (pixels)", "ViT (patches)"]
    for r in rows:
        assert 0 <= float(r["test_accuracy"]) <= 1 and math.isfinite(float(r["test_nll"])) and int(r["parameters"]) > 0
    assert int(rows[0]["parameters"]) == 64 * 10 + 10
    assert "| ViT (patches) |" in (out / "ladder.md").read_text() and "test accuracy" in stdout
    assert isinstance(rt.load_checkpoint(out / "rungs" / "vit"), rt.ViT)
    code, _, err = cli("ladder", "--images", "digits", "--steps", "2", "--out", out)
    assert_one_line_error(code, err, "already holds a ladder report")
    code, _, err = cli("ladder", "--images", "digits", "--rungs", "mlp", "--out", tmp_path / "other")
    assert_one_line_error(code, err, "drop --data/--lines/--rungs/--regression")


@pytest.fixture
def vit_run(tmp_path):
    import torch

    torch.manual_seed(0)
    model = rt.ViT(rt.ViTConfig(n_layer=2, n_head=2, d_model=16))
    return rt.save_checkpoint(tmp_path / "vit", model, extra={"task": "vit-digits", "upscale": 1}).parent


def test_attention_page_of_a_test_image(vit_run, tmp_path):
    page = tmp_path / "digit.html"
    code, stdout, err = cli("attention", "--checkpoint", vit_run, "--index", "3", "--out", page)
    assert code == 0, err
    html = page.read_text()
    assert "data:image/png;base64," in html and "[CLS]" in html and "patch r3c3" in html
    assert "test image 3 of the digits" in stdout


def test_attention_page_of_an_image_file_resized_with_a_notice(vit_run, tmp_path):
    import numpy as np
    from matplotlib.image import imsave

    png = tmp_path / "big.png"
    imsave(png, np.random.default_rng(0).random((20, 20)), cmap="gray")  # RGBA, 20x20
    code, stdout, err = cli("attention", "--checkpoint", vit_run, "--image", png, "--out", tmp_path / "img.html")
    assert code == 0, err
    assert "notice: converted the image from 4 to 1 channel(s)" in stdout
    assert "notice: resized the image from 20x20 to 8x8 pixels" in stdout


@pytest.mark.parametrize("args,needles", [
    (["--index", "359"], ["index 359 is out of range", "359 images"]),
    (["--image", "missing.png"], ["image file not found"]),
    (["--index", "0", "--text", "hi"], ["drop --text"]),
    (["--index", "0", "--image", "x.png"], ["one of them"]),
])
def test_attention_image_bad_input_is_one_line(vit_run, tmp_path, args, needles):
    code, _, err = cli("attention", "--checkpoint", vit_run, *args, "--out", tmp_path / "p.html")
    assert_one_line_error(code, err, *needles)


def test_attention_image_needs_a_vit_run(tmp_path):
    code, _, err = cli("attention", "--pretrained", "minilm", "--index", "0", "--out", tmp_path / "p.html")
    assert_one_line_error(code, err, "with --checkpoint")
    rt.save_checkpoint(tmp_path / "lm", rt.TransformerLM(rt.TransformerConfig(vocab_size=5, block_size=8, n_layer=1,
                                                                              n_head=1, d_model=8)))
    code, _, err = cli("attention", "--checkpoint", tmp_path / "lm", "--index", "0", "--out", tmp_path / "p.html")
    assert_one_line_error(code, err, "holds a TransformerLM", "need a ViT run")


def test_attention_image_page_opens_in_a_browser_without_errors(browser, vit_run, tmp_path):
    from redthread.data.images import load_digits
    from redthread.viz.image_attention import vit_payload
    from tests.viz.test_explorer_browser import Page

    payload = vit_payload(rt.load_checkpoint(vit_run), load_digits().split("val")[0][:1], "digit 0")
    p = Page(browser, tmp_path, payload)
    try:
        assert p.page.locator("#head-svg image").count() == 1
        assert p.page.locator("#head-svg .patch").count() == 16  # 4 x 4 patches
        p.assert_clean()
    finally:
        p.context.close()


def test_vit_figure_draws_rollout_and_every_head_on_the_image(vit_run, tmp_path):
    figure = tmp_path / "vit.png"
    code, stdout, err = cli("attention", "--checkpoint", vit_run, "--index", "0", "--out", tmp_path / "v.html", "--figure", figure)
    assert code == 0, err
    assert figure.read_bytes()[:4] == b"\x89PNG" and f"figure: {figure}" in stdout
    code, _, err = cli("attention", "--checkpoint", vit_run, "--index", "0", "--out", tmp_path / "w.html",
                       "--figure", tmp_path / "w.png", "--layer", "2")
    assert_one_line_error(code, err, "--layer/--head out of range", "2 layers")
    assert not (tmp_path / "w.html").exists()


def test_vit_rollout_panel_reads_the_class_token_row(vit_run, monkeypatch):
    import torch

    from redthread.viz.image_attention import vit_overlays
    from redthread.viz.patches import attention_rollout
    from redthread.viz.record import record_attention

    model, image = rt.load_checkpoint(vit_run), torch.rand(1, 1, 8, 8)
    with record_attention(model) as maps:
        model(image)
    roll = attention_rollout(maps.stacked("encoder")[:, 0])  # (17, 17)
    assert roll.shape == (17, 17) and torch.allclose(roll.sum(-1), torch.ones(17))
    fig_rows = []
    monkeypatch.setattr("redthread.viz.patches.plot_patch_overlays",
                        lambda image, weights, titles, path, **kw: fig_rows.append((weights, titles)))
    vit_overlays(model, image, None)
    weights, titles = fig_rows[0]
    assert titles[0] == "rollout, all layers" and len(titles) == 1 + 2  # rollout + the last layer's 2 heads
    assert torch.allclose(weights[0], roll[0, 1:])  # the class token's row over the 16 patches
