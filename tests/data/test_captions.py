"""Caption scenes generated in code: reproducible, captions follow the stated rule, every object
word's mask covers its object's pixels, test images are unseen, bad settings are one-line errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from redthread.data.captions import (
    BOS,
    COLOURS,
    EOS,
    PAD,
    CaptionData,
    Vocabulary,
    drop_seen,
    load_caption_data,
    load_test_scenes,
    make_digit_pairs,
    make_shapes,
    patch_mask,
    shape_mask,
    shapes_caption,
)
from redthread.errors import RedthreadError
from redthread.models.likelihoods import IGNORE_INDEX


def test_the_caption_walks_columns_left_to_right_and_rows_top_down():
    objects = [(2, 1, "red", "square"), (0, 1, "blue", "circle"), (1, 0, "green", "cross")]  # (row, col, colour, shape)
    words, owner = shapes_caption(objects)
    assert " ".join(words) == "green cross left of blue circle above red square"
    assert owner == [2, 2, -1, -1, 1, 1, -1, 0, 0]


def test_shapes_are_reproducible_from_the_seed_and_differ_across_seeds():
    a, vocab = make_shapes(50, seed=3)
    b, _ = make_shapes(50, seed=3)
    c, _ = make_shapes(50, seed=4)
    assert torch.equal(a.images, b.images) and torch.equal(a.tokens, b.tokens) and torch.equal(a.masks, b.masks)
    assert not torch.equal(a.images, c.images)
    assert a.images.shape == (50, 3, 24, 24) and vocab.words[:3] == ["<pad>", "<bos>", "<eos>"]
    assert (a.tokens[:, 0] == BOS).all() and ((a.tokens == EOS).sum(1) == 1).all()


def test_every_object_word_masks_exactly_the_patches_its_object_colours():
    s, vocab = make_shapes(40, seed=0, patch_size=4)
    for n in range(len(s)):
        words = vocab.decode(s.tokens[n].tolist())
        for j, w in enumerate(words, start=1):  # token j is word j - 1
            mask = s.masks[n, j]
            if w in COLOURS:
                rgb = torch.tensor(COLOURS[w])
                assert torch.equal(mask, s.masks[n, j + 1])  # the colour and the shape name one object
                pixels = (s.images[n].permute(1, 2, 0) == rgb).all(-1)  # (H, W): pixels of this colour
                covered = torch.from_numpy(patch_mask(pixels.numpy(), 4))
                assert (mask <= covered).all() and mask.any()  # the object's patches hold its colour
            elif w in ("left", "of", "above"):
                assert not mask.any()
        assert not s.masks[n, 0].any()  # <bos> names nothing


def test_shape_masks_are_distinct_and_patch_masks_mark_any_pixel():
    masks = {s: shape_mask(s) for s in ("square", "circle", "triangle", "cross")}
    assert len({m.tobytes() for m in masks.values()}) == 4
    pixels = np.zeros((8, 8), bool)
    pixels[5, 2] = True
    assert patch_mask(pixels, 4).tolist() == [False, False, True, False]


def test_digit_pairs_take_training_digits_for_training_and_test_digits_for_testing():
    from redthread.data.images import load_digits

    digits = load_digits()
    glyphs = {split: {g.numpy().tobytes() for g in digits.split(split)[0][:, 0]} for split in ("train", "val")}
    for split in ("train", "val"):
        s, vocab = make_digit_pairs(10, seed=0, split=split)
        assert s.images.shape == (10, 1, 16, 16) and vocab.to_list()[3] == "three"
        for n in range(10):
            for side in range(2):
                half = s.images[n, 0, :, 8 * side : 8 * side + 8]  # (16, 8): the digit somewhere in rows 0-15
                assert any(half[r : r + 8].numpy().tobytes() in glyphs[split] for r in range(9))
                grid = s.masks[n, 1 + side].reshape(4, 4)  # 4 x 4 patches of 4 x 4 pixels
                assert grid[:, 2 * side : 2 * side + 2].any()  # its own half's patches
                assert not grid[:, 2 * (1 - side) : 2 * (1 - side) + 2].any()


def test_caption_data_batches_teacher_force_and_ignore_padding():
    data = load_caption_data("caption-shapes", n_train=64, n_test=16)
    x, y = data.batch("train", 8, torch.Generator().manual_seed(0))
    assert x.images.shape == (8, 3, 24, 24) and x.tokens.shape == y.shape == (8, data.block_size - 1)
    assert (x.tokens[:, 0] == BOS).all()
    scored = y != IGNORE_INDEX
    assert torch.equal(y[:, :-1][scored[:, :-1]], x.tokens[:, 1:][scored[:, :-1]])  # y is x shifted by one
    assert (y[:, 1:][x.tokens[:, 1:] == EOS] == IGNORE_INDEX).all()  # after <eos> nothing is scored
    assert ((y == EOS).sum(1) == 1).all()  # each caption's <eos> is scored once
    batches = list(data.eval_batches("val", 5))
    assert sum(b[1].shape[0] for b in batches) == len(data.split("val"))


def test_test_scenes_whose_image_was_seen_in_training_are_dropped():
    train, _ = make_shapes(30, seed=0)
    test, _ = make_shapes(30, seed=0)  # the same scenes: all seen
    assert len(drop_seen(test, train)) == 0
    other, _ = make_shapes(30, seed=1)
    assert len(drop_seen(other, train)) == 30


def test_load_test_scenes_rebuilds_the_unseen_test_split_alone():
    data = load_caption_data("caption-shapes")  # the defaults: a few test scenes also appear in training
    assert 900 < len(data.test_kept) < 1000
    s, vocab = load_test_scenes("caption-shapes", data.test_kept, n_train=20000)
    val = data.split("val")
    assert torch.equal(s.images, val.images)
    assert [vocab.decode(t.tolist()) for t in s.tokens] == [data.vocab.decode(t.tolist()) for t in val.tokens]


@pytest.mark.parametrize("kwargs,needle", [
    ({"colours": []}, "caption vocabulary is empty"),
    ({"colours": ["purple"]}, "unknown colour 'purple'"),
    ({"shapes": ["hexagon"]}, "unknown shape 'hexagon'"),
    ({"colours": ["red"], "shapes": ["square"]}, "at least 2 colours or 2 shapes"),
    ({"patch_size": 5}, "patch size 5 does not divide the 24-pixel canvas"),
])
def test_bad_scene_settings_are_one_line_errors(kwargs, needle):
    with pytest.raises(RedthreadError, match=needle) as e:
        load_caption_data("caption-shapes", n_train=4, n_test=4, **kwargs)
    assert "\n" not in str(e.value)


def test_vocabulary_errors_and_round_trip():
    with pytest.raises(RedthreadError, match="caption vocabulary is empty"):
        Vocabulary([])
    with pytest.raises(RedthreadError, match="distinct"):
        Vocabulary(["a", "a"])
    v = Vocabulary(["a", "b"])
    assert v.decode(v.encode(["b", "a"]) + [PAD]) == ["b", "a"]
    with pytest.raises(RedthreadError, match="'c' is not in the caption vocabulary"):
        v.encode(["c"])
    with pytest.raises(RedthreadError, match="unknown caption task"):
        load_caption_data("caption-cats")
    assert isinstance(load_caption_data("caption-digits", n_train=4, n_test=4), CaptionData)
