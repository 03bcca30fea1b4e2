"""Images for the Vision Transformer, with no download: scikit-learn's bundled handwritten digits.

Claim C14 of the essay (images as sequences of patches) and C2 (a classifier estimates
P(class | x)). `load_digits` ships 1,797 grey 8 x 8 images of the digits 0-9 (pixel values
0-16) inside scikit-learn; here they are scaled to [0, 1] and split once, the same way for
every rung:

    the split   per class, a permutation seeded by `seed` (default 0); the first
                round(20% of the class) images are the test split ("val" to the loop), the
                rest the training split: 1,438 training and 359 test images, every class in
                both in its own proportion (stratified)

The loop's "val" split IS the test split: the rungs' settings are fixed in advance, nothing is
tuned on it. `upscale` = 2 or 4 enlarges every image (16 x 16, 32 x 32) for larger patch grids.

`ImageData` is a data source for `redthread.train.loop.train` (`batch`, `eval_batches`,
`tokens_per_char`) yielding (images (B, 1, H, W), labels (B,) int64); `flattened()` gives the
same split as pixel vectors (B, H * W) in a `RegressionData` for softmax regression and the MLP.
Shape legend: N images, B batch, C channels, H, W height and width.
"""

from __future__ import annotations

from collections.abc import Iterator

import torch
import torch.nn.functional as F
from torch import Tensor

from redthread.data.regression import RegressionData
from redthread.errors import InvalidValue, check_int
from redthread.lang import say

DIGITS_SIZE = 8
TEST_FRACTION = 0.2
UPSCALE_MODES = ("nearest", "bilinear")


def upscale_images(images: Tensor, factor: int, mode: str = "nearest") -> Tensor:
    """(N, C, H, W) -> (N, C, factor * H, factor * W); factor 1 returns the images unchanged."""
    check_int("upscale", factor)
    if mode not in UPSCALE_MODES:
        raise InvalidValue(f"upscale mode must be one of {', '.join(UPSCALE_MODES)}; got {mode!r}")
    if factor == 1:
        return images
    kw = {"align_corners": False} if mode == "bilinear" else {}
    return F.interpolate(images, scale_factor=factor, mode=mode, **kw).clamp(0.0, 1.0)  # (N, C, fH, fW)


def stratified_split(labels: Tensor, test_fraction: float = TEST_FRACTION, seed: int = 0) -> tuple[Tensor, Tensor]:
    """(train indices, test indices): per class, a seeded permutation; its first round(fraction * n) are test."""
    if not 0 < test_fraction < 1:
        raise InvalidValue(f"test_fraction must be in (0, 1), got {test_fraction}")
    g = torch.Generator().manual_seed(seed)
    train, test = [], []
    for k in labels.unique(sorted=True).tolist():
        members = (labels == k).nonzero()[:, 0]  # (n_k,)
        members = members[torch.randperm(len(members), generator=g)]
        n_test = round(test_fraction * len(members))
        test.append(members[:n_test])
        train.append(members[n_test:])
    return torch.cat(train).sort().values, torch.cat(test).sort().values


class ImageData:
    """(images, labels) minibatches of a train and a val (= test) split, for the one training loop."""

    def __init__(self, images_train: Tensor, y_train: Tensor, images_val: Tensor, y_val: Tensor, n_classes: int):
        for name, t in (("train", images_train), ("val", images_val)):
            if t.dim() != 4 or t.shape[0] == 0:
                raise InvalidValue(f"{name} images must be a non-empty (N, C, H, W) tensor, got shape {tuple(t.shape)}")
            if (y_train if name == "train" else y_val).shape != (t.shape[0],):
                raise InvalidValue(f"{name} images and labels differ in number: {t.shape[0]} images")
        if images_train.shape[1:] != images_val.shape[1:]:
            raise InvalidValue(f"train images are {tuple(images_train.shape[1:])} but val images {tuple(images_val.shape[1:])}")
        self.splits = {"train": (images_train, y_train.long()), "val": (images_val, y_val.long())}
        self.n_classes = n_classes

    @property
    def channels(self) -> int:
        return self.splits["train"][0].shape[1]

    @property
    def image_size(self) -> int:
        return self.splits["train"][0].shape[2]

    def split(self, name: str) -> tuple[Tensor, Tensor]:
        if name not in self.splits:
            raise InvalidValue(f"unknown split {name!r}; use train or val")
        return self.splits[name]

    def batch(self, split: str, batch_size: int, generator: torch.Generator) -> tuple[Tensor, Tensor]:
        images, y = self.split(split)
        idx = torch.randperm(images.shape[0], generator=generator)[:batch_size]  # (B,)
        return images[idx], y[idx]  # (B, C, H, W), (B,)

    def eval_batches(self, split: str, batch_size: int, max_batches: int | None = None) -> Iterator:
        images, y = self.split(split)
        for i, start in enumerate(range(0, images.shape[0], batch_size)):
            if max_batches is not None and i >= max_batches:
                return
            yield images[start : start + batch_size], y[start : start + batch_size]

    def tokens_per_char(self, split: str) -> None:
        return None  # no text

    def flattened(self) -> RegressionData:
        """The same split with every image as a pixel vector (N, C * H * W), for the non-image rungs."""
        (xt, yt), (xv, yv) = self.splits["train"], self.splits["val"]
        return RegressionData(xt.flatten(1), yt, xv.flatten(1), yv)


def load_digits(upscale: int = 1, mode: str = "nearest", seed: int = 0, test_fraction: float = TEST_FRACTION) -> ImageData:
    """scikit-learn's 8 x 8 digits (bundled, no download) in [0, 1], split as the module docstring says."""
    from sklearn.datasets import load_digits as sklearn_digits

    digits = sklearn_digits()
    images = torch.tensor(digits.images, dtype=torch.float32)[:, None] / 16.0  # (N, 1, 8, 8), pixels 0..16 -> [0, 1]
    labels = torch.tensor(digits.target, dtype=torch.int64)  # (N,)
    images = upscale_images(images, upscale, mode)  # (N, 1, 8u, 8u)
    train, test = stratified_split(labels, test_fraction, seed)
    return ImageData(images[train], labels[train], images[test], labels[test], n_classes=10)


def prepare_image(image, channels: int, image_size: int) -> tuple[Tensor, list[str]]:
    """One image, (H, W) or (C, H, W) with values in [0, 1], -> (1, channels, size, size) and notices of what changed.

    Colour to grey averages the channels; grey to colour repeats the channel; RGBA drops alpha; any other size is
    resized bilinearly. Anything else (no image at all, a channel count that maps to nothing) is an error.
    """
    x = torch.as_tensor(image, dtype=torch.float32)
    if x.dim() == 2:
        x = x[None]  # (1, H, W)
    if x.dim() != 3 or min(x.shape) == 0:
        raise InvalidValue(f"an image must be (height, width) or (channels, height, width), got shape {tuple(x.shape)}")
    notices = []
    if x.shape[0] != channels:
        found = x.shape[0]
        if channels == 1 and x.shape[0] in (3, 4):
            x = x[:3].mean(0, keepdim=True)  # RGB(A) -> grey
        elif channels == 3 and x.shape[0] == 1:
            x = x.expand(3, -1, -1)
        elif channels == 3 and x.shape[0] == 4:
            x = x[:3]  # RGBA -> RGB: the alpha channel dropped
        else:
            raise InvalidValue(f"the image has {x.shape[0]} channel(s), the model expects {channels}")
        notices.append(say(f"converted the image from {found} to {channels} channel(s)",
                           f"图像从 {found} 个通道转换为 {channels} 个通道"))
    if tuple(x.shape[1:]) != (image_size, image_size):
        notices.append(say(f"resized the image from {x.shape[1]}x{x.shape[2]} to {image_size}x{image_size} pixels",
                           f"图像从 {x.shape[1]}x{x.shape[2]} 像素缩放为 {image_size}x{image_size} 像素"))
        x = F.interpolate(x[None], size=(image_size, image_size), mode="bilinear", align_corners=False)[0]
    return x[None].clamp(0.0, 1.0), notices  # (1, C, size, size)
