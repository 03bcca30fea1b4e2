"""`redthread train --task caption-shapes|caption-digits` on a tiny budget, the captioner's explorer
page and per-word overlays, and bad input as one-line errors."""

from __future__ import annotations

import json

import pytest
import torch

import redthread as rt
from redthread.models.captioner import Captioner
from redthread.train.checkpoint import read_checkpoint
from redthread.viz import image_attention
from tests.cli_helpers import assert_one_line_error, cli

TINY = ["--max-iters", "3", "--batch-size", "16", "--eval-interval", "3", "--no-progress", "--device", "cpu",
        "--scenes", "64", "--n-layer-encoder", "1", "--n-layer-decoder", "1", "--d-model", "16", "--n-head", "2"]


@pytest.fixture(scope="module")
def caption_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("cap") / "run"
    code, stdout, err = cli("train", "--task", "caption-shapes", "--out", out, *TINY)
    assert code == 0, err
    return out, stdout


def test_train_caption_shapes_reports_exact_match_and_grounding(caption_run):
    out, stdout = caption_run
    r = json.loads((out / "results.json").read_text())
    assert 0 <= r["exact_match"] <= 1 and 0 <= r["exact_match_top_p"] <= 1 and r["scenes"] > 900
    assert 0 <= r["grounding"] <= 1 and 0 < r["uniform_baseline"] < 1 and len(r["grounding_per_layer"]) == 1
    assert "exact match" in stdout and "against" in stdout and "uniform attention" in stdout
    model = rt.load_checkpoint(out)
    assert isinstance(model, Captioner) and model.cfg.n_layer_decoder == 1 and model.cfg.channels == 3
    code, _, err = cli("train", "--task", "caption-shapes", "--out", out, *TINY)
    assert_one_line_error(code, err, "already holds a run")


def test_train_caption_digits_and_resume(tmp_path):
    out = tmp_path / "digits"
    code, _, err = cli("train", "--task", "caption-digits", "--out", out, *TINY)
    assert code == 0, err
    assert rt.load_checkpoint(out).cfg.channels == 1
    code, _stdout, err = cli("train", "--task", "caption-digits", "--out", out, "--resume", "--max-iters", "5",
                            "--no-progress", "--device", "cpu")
    assert code == 0, err
    assert json.loads((out / "results.json").read_text())["steps"] == 5
    code, _, err = cli("train", "--task", "caption-shapes", "--out", out, "--resume", "--no-progress")
    assert_one_line_error(code, err, "is caption-digits, not caption-shapes")


def test_test_scene_without_the_saved_test_indices_is_the_same_scene(caption_run):
    ckpt = read_checkpoint(caption_run[0])
    fast = image_attention.test_scene(ckpt, 2)  # the test scenes alone, from the unseen indices saved with the run
    del ckpt.extra["test_kept"]  # a run saved before them: every scene is generated again
    slow = image_attention.test_scene(ckpt, 2)
    assert torch.equal(fast[0], slow[0]) and fast[1:] == slow[1:]


def test_caption_explorer_page_and_word_overlays(caption_run, tmp_path):
    out, _ = caption_run
    page, figure = tmp_path / "scene.html", tmp_path / "words.png"
    code, stdout, err = cli("attention", "--checkpoint", out, "--index", "2", "--out", page, "--figure", figure)
    assert code == 0, err
    html = page.read_text()
    assert '"cross"' in html and "patch r5c5" in html and "data:image/png;base64," in html and "→ " in html
    assert figure.read_bytes()[:4] == b"\x89PNG" and "one panel per word" in stdout
    assert "test scene 2 of caption-shapes" in stdout


def test_caption_attention_of_an_image_file_with_notices(caption_run, tmp_path):
    import numpy as np
    from matplotlib.image import imsave

    out, _ = caption_run
    png = tmp_path / "grey.png"
    imsave(png, np.random.default_rng(0).random((30, 30)), cmap="gray")  # RGBA, 30 x 30
    code, stdout, err = cli("attention", "--checkpoint", out, "--image", png, "--out", tmp_path / "p.html")
    assert code == 0, err
    assert "notice: converted the image from 4 to 3 channel(s)" in stdout
    assert "notice: resized the image from 30x30 to 24x24 pixels" in stdout


@pytest.mark.parametrize("args,needles", [
    (["--colours", ""], ["--colours is empty", "caption vocabulary needs at least one colour"]),
    (["--colours", "red,purple"], ["unknown colour 'purple'"]),
    (["--patch-size", "5"], ["patch size 5 does not divide the 24-pixel canvas"]),
    (["--n-layer", "2"], ["--n-layer-encoder and --n-layer-decoder"]),
    (["--data", "x.txt"], ["generates its own scenes"]),
    (["--block-size", "8"], ["block_size is fixed by the data (12), got 8"]),
    (["--scenes", "0"], ["--scenes must be a positive number"]),
])
def test_train_caption_bad_input_is_one_line(tmp_path, args, needles):
    code, _, err = cli("train", "--task", "caption-shapes", "--out", tmp_path / "run", *TINY, *args)
    assert_one_line_error(code, err, *needles)
    assert not (tmp_path / "run").exists()


def test_caption_attention_bad_input_is_one_line(caption_run, tmp_path):
    out, _ = caption_run
    code, _, err = cli("attention", "--checkpoint", out, "--index", "5000", "--out", tmp_path / "p.html")
    assert_one_line_error(code, err, "index 5000 is out of range")
    code, _, err = cli("attention", "--checkpoint", out, "--index", "0", "--out", tmp_path / "p.html",
                       "--figure", tmp_path / "f.png", "--layer", "7")
    assert_one_line_error(code, err, "--layer/--head out of range", "1 layers")
    assert not (tmp_path / "p.html").exists() and not (tmp_path / "f.png").exists()
    code, _, err = cli("train", "--colours", "red", "--out", tmp_path / "lm")
    assert_one_line_error(code, err, "--colours is a captioner setting")


def test_caption_page_opens_in_a_browser_without_errors(browser, caption_run, tmp_path):
    from redthread.data.captions import Vocabulary
    from redthread.train.checkpoint import read_checkpoint
    from redthread.viz.image_attention import caption_attention, caption_payload, test_scene
    from tests.viz.test_explorer_browser import Page

    ckpt = read_checkpoint(caption_run[0])
    image, _, title = test_scene(ckpt, 0)
    ids, maps = caption_attention(ckpt.model, image)
    p = Page(browser, tmp_path, caption_payload(ckpt.model, image, ids, maps, Vocabulary(ckpt.extra["vocab"]), title, None))
    try:
        assert p.page.locator("#head-svg image").count() == 1
        assert p.page.locator("#head-svg .patch").count() == 36  # 6 x 6 patches
        p.assert_clean()
    finally:
        p.context.close()


def test_text_commands_on_an_image_run_say_it_is_an_image_model(caption_run, tmp_path):
    out, _ = caption_run
    code, _, err = cli("attention", "--checkpoint", out, "--text", "hi", "--out", tmp_path / "p.html")
    assert_one_line_error(code, err, "holds a Captioner, an image model", "--index N or --image FILE")
    for command in (("sample",), ("eval",)):
        code, _, err = cli(*command, "--checkpoint", out)
        assert_one_line_error(code, err, "holds a Captioner, an image model: it reads images, not text")


@pytest.mark.parametrize("args,needle", [
    (["--upscale", "2"], "--upscale is a --task vit-digits setting"),
    (["--pool", "mean"], "--pool is a --task vit-digits setting"),
    (["--patch-size", "2"], "--patch-size is an image setting"),
    (["--task", "caption-shapes", "--pool", "mean"], "--pool is a --task vit-digits setting"),
    (["--task", "vit-digits", "--shapes", "cross"], "--shapes is a captioner setting"),
])
def test_train_flags_the_task_would_ignore_are_errors(tmp_path, args, needle):
    code, _, err = cli("train", *args, "--out", tmp_path / "run")
    assert_one_line_error(code, err, needle)
    assert not (tmp_path / "run").exists()


def test_a_captioner_saved_without_its_run_settings_gets_one_line_errors(tmp_path):
    from redthread.models.captioner import CaptionerConfig

    rt.save_checkpoint(tmp_path / "bare", Captioner(CaptionerConfig()))  # the library's save: no scenes, no words
    code, _, err = cli("attention", "--checkpoint", tmp_path / "bare", "--index", "0", "--out", tmp_path / "p.html")
    assert_one_line_error(code, err, "saved without the settings of its scenes", "--image FILE")
    image = tmp_path / "red.png"
    from matplotlib.image import imsave

    imsave(image, torch.zeros(24, 24, 3).numpy())
    code, _, err = cli("attention", "--checkpoint", tmp_path / "bare", "--image", image, "--out", tmp_path / "p.html")
    assert_one_line_error(code, err, "saved without its vocabulary")
    assert not (tmp_path / "p.html").exists()
