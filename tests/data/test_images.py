"""The digits data: bundled (no download), in [0, 1], a fixed stratified split, upscaling, and image preparation."""

from __future__ import annotations

import pytest
import torch

from redthread.data.images import (
    ImageData,
    load_digits,
    prepare_image,
    stratified_split,
    upscale_images,
)
from redthread.errors import RedthreadError


@pytest.fixture(scope="module")
def digits() -> ImageData:
    return load_digits()


def test_digits_are_scaled_grey_images_with_int64_labels(digits):
    images, y = digits.split("train")
    assert images.shape[1:] == (1, 8, 8) and images.dtype == torch.float32
    assert 0.0 <= float(images.min()) and float(images.max()) == 1.0
    assert y.dtype == torch.int64 and set(y.tolist()) == set(range(10))
    assert digits.n_classes == 10 and digits.image_size == 8 and digits.channels == 1


def test_split_is_fixed_stratified_and_disjoint(digits):
    (_, yt), (xv, yv) = digits.split("train"), digits.split("val")
    assert (len(yt), len(yv)) == (1438, 359)  # 1,797 images, 20% of each class held out
    for k in range(10):
        n_k = int((yt == k).sum() + (yv == k).sum())
        assert int((yv == k).sum()) == round(0.2 * n_k)
    again = load_digits()
    assert torch.equal(again.split("val")[0], xv) and torch.equal(again.split("train")[1], yt)
    train_idx, test_idx = stratified_split(torch.cat([yt, yv]), seed=0)
    assert not set(train_idx.tolist()) & set(test_idx.tolist())
    other = load_digits(seed=1)
    assert not torch.equal(other.split("val")[0], xv)  # the seed chooses the split


def test_upscale_nearest_repeats_each_pixel(digits):
    big = load_digits(upscale=2)
    assert big.image_size == 16
    small = digits.split("train")[0][:5]
    torch.testing.assert_close(big.split("train")[0][:5], small.repeat_interleave(2, -1).repeat_interleave(2, -2))
    smooth = upscale_images(small, 4, mode="bilinear")
    assert smooth.shape == (5, 1, 32, 32) and 0 <= float(smooth.min()) and float(smooth.max()) <= 1


def test_flattened_gives_the_same_split_as_pixel_vectors(digits):
    flat = digits.flattened()
    X, y = flat.split("val")
    assert X.shape == (359, 64)
    assert torch.equal(X, digits.split("val")[0].flatten(1)) and torch.equal(y, digits.split("val")[1])


def test_batches_cover_the_split_once_in_evaluation(digits):
    batches = list(digits.eval_batches("val", 100))
    assert [len(y) for _, y in batches] == [100, 100, 100, 59]
    x, y = digits.batch("train", 32, torch.Generator().manual_seed(0))
    assert x.shape == (32, 1, 8, 8) and y.shape == (32,)


@pytest.mark.parametrize("factor,mode,needle", [
    (0, "nearest", "upscale must be a positive integer"),
    (2.5, "nearest", "upscale must be a positive integer"),
    (2, "bicubic", "upscale mode must be one of nearest, bilinear"),
])
def test_bad_upscale_is_a_one_line_error(factor, mode, needle):
    with pytest.raises(RedthreadError, match=needle):
        load_digits(upscale=factor, mode=mode)


def test_prepare_image_resizes_and_converts_with_a_notice():
    x, notices = prepare_image(torch.rand(16, 16), channels=1, image_size=8)
    assert x.shape == (1, 1, 8, 8) and notices == ["resized the image from 16x16 to 8x8 pixels"]
    x, notices = prepare_image(torch.rand(3, 8, 8), channels=1, image_size=8)
    assert x.shape == (1, 1, 8, 8) and notices == ["converted the image from 3 to 1 channel(s)"]
    x, notices = prepare_image(torch.rand(1, 8, 8), channels=1, image_size=8)
    assert notices == []
    with pytest.raises(RedthreadError, match="the image has 2 channel"):
        prepare_image(torch.rand(2, 8, 8), channels=1, image_size=8)
    with pytest.raises(RedthreadError, match="an image must be"):
        prepare_image(torch.rand(8), channels=1, image_size=8)
