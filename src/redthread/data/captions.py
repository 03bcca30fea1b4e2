"""Images with captions, generated in code, where the ground truth says which pixels each word names.

Claim C14 of the essay: text tokens can attend to image regions. To measure whether they do, the
data must say where every word's object is. Two tasks, both reproducible from a seed, no download:

caption-shapes   canvases of 24 x 24 RGB pixels on black, cut into a 3 x 3 grid of 8 x 8 cells;
                 2 or 3 objects, each a 6 x 6 shape in its own cell, shifted 0-2 pixels inside it,
                 no two alike (colour and shape):
                     colours  red, green, blue, yellow
                     shapes   square, circle, triangle, cross
                 The caption walks the objects by column, then row (left to right, top to bottom)
                 and names each step: "left of" to the next column, "above" within one column:
                     "red square left of blue circle above green cross"
                 Vocabulary: the colours, the shapes, "left", "of", "above" (+ <pad> <bos> <eos>);
                 captions of 4-10 words. `--colours`/`--shapes` take subsets.
caption-digits   two of scikit-learn's 8 x 8 digits side by side on a 16 x 16 grey canvas: the
                 first in columns 0-7, the second in 8-15, each shifted 0-8 rows down at random.
                 Caption: the two number words, left first ("three seven"). Training canvases
                 use only the digits' training images, test canvases only their test images
                 (the split of `redthread.data.images`).

Patches: 4 x 4 pixels by default for both (6 x 6 and 4 x 4 patch grids).

Every word that names an object (a colour, a shape, a number word) carries the object's patch
mask: the patches that hold any of its pixels. That is what the grounding score compares the
decoder's cross-attention with (`redthread.viz.patches.grounding_score`).

Training scenes and test scenes come from different seeds; a test scene whose image equals a
training image is dropped, so every test image is unseen. `CaptionData` is a data source for the
one training loop: x = `ImageText(images, tokens[:, :-1])`, y = tokens[:, 1:] with padding
ignored (teacher forcing: the decoder sees the true words before each one it predicts).
Shape legend: N scenes, B batch, C channels, H, W height and width, L caption length with
<bos> and <eos>, P patches.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import torch
from torch import Tensor

from redthread.data.targets import IGNORE_INDEX
from redthread.errors import InvalidValue, check_int

SPECIALS = ("<pad>", "<bos>", "<eos>")
PAD, BOS, EOS = 0, 1, 2
COLOURS = {"red": (1.0, 0.15, 0.1), "green": (0.1, 0.85, 0.2), "blue": (0.2, 0.4, 1.0), "yellow": (1.0, 0.9, 0.1)}
SHAPES = ("square", "circle", "triangle", "cross")
NUMBER_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")
RELATIONS = ("left", "of", "above")
CANVAS, CELL, SHAPE_SIZE, CELLS = 24, 8, 6, 3  # caption-shapes geometry, pixels
DIGIT_CANVAS = 16
TASKS = ("caption-shapes", "caption-digits")


class Vocabulary:
    """Words <-> ids; ids 0, 1, 2 are <pad>, <bos>, <eos>."""

    def __init__(self, words: Sequence[str]):
        words = list(words)
        if not words:
            raise InvalidValue("the caption vocabulary is empty: give at least one word")
        if len(set(words)) != len(words) or set(words) & set(SPECIALS):
            raise InvalidValue(f"caption words must be distinct and not {', '.join(SPECIALS)}: {words}")
        self.words = [*SPECIALS, *words]
        self.ids = {w: i for i, w in enumerate(self.words)}

    def __len__(self) -> int:
        return len(self.words)

    def encode(self, words: Sequence[str]) -> list[int]:
        unknown = [w for w in words if w not in self.ids]
        if unknown:
            raise InvalidValue(f"word {unknown[0]!r} is not in the caption vocabulary")
        return [BOS, *(self.ids[w] for w in words), EOS]

    def decode(self, ids: Sequence[int]) -> list[str]:
        """Ids after <bos> up to the first <eos> (or the end) -> words."""
        out = []
        for i in ids:
            if i == EOS:
                break
            if i not in (BOS, PAD):
                out.append(self.words[i])
        return out

    def to_list(self) -> list[str]:
        return self.words[len(SPECIALS):]


class ImageText(NamedTuple):
    """The model's input for one batch: images (B, C, H, W) and the caption so far (B, T)."""

    images: Tensor
    tokens: Tensor

    def to(self, device, non_blocking: bool = False) -> ImageText:
        return ImageText(self.images.to(device, non_blocking=non_blocking), self.tokens.to(device, non_blocking=non_blocking))


@dataclass
class CaptionSet:
    """N scenes: images (N, C, H, W) float in [0, 1], tokens (N, L) padded, masks (N, L, P) bool:
    masks[n, j] marks the patches of the object that token j names (all False for other tokens)."""

    images: Tensor
    tokens: Tensor
    masks: Tensor

    def __len__(self) -> int:
        return self.images.shape[0]


def shape_mask(shape: str, size: int = SHAPE_SIZE) -> np.ndarray:
    """(size, size) bool: the pixels of one shape."""
    c = (size - 1) / 2
    y, x = np.mgrid[0:size, 0:size]
    if shape == "square":
        return np.ones((size, size), bool)
    if shape == "circle":
        return (y - c) ** 2 + (x - c) ** 2 <= (size / 2) ** 2
    if shape == "triangle":  # apex at the top, base on the bottom row
        return np.abs(x - c) <= (y + 1) / 2
    if shape == "cross":
        return (np.abs(x - c) < 1) | (np.abs(y - c) < 1)
    raise InvalidValue(f"unknown shape {shape!r}; shapes: {', '.join(SHAPES)}")


def patch_mask(pixels: np.ndarray, patch_size: int) -> np.ndarray:
    """(H, W) bool -> (P,) bool, row-major patches: a patch is marked when any of its pixels is."""
    H, W = pixels.shape
    blocks = pixels.reshape(H // patch_size, patch_size, W // patch_size, patch_size)
    return blocks.any(axis=(1, 3)).reshape(-1)


def shapes_caption(objects: list[tuple[int, int, str, str]]) -> tuple[list[str], list[int]]:
    """objects [(row, col, colour, shape)] -> (words, which object each word names, -1 for none)."""
    order = sorted(range(len(objects)), key=lambda k: (objects[k][1], objects[k][0]))  # by column, then row
    words, owner = [], []
    for i, k in enumerate(order):
        if i > 0:
            rel = ["left", "of"] if objects[k][1] != objects[order[i - 1]][1] else ["above"]
            words += rel
            owner += [-1] * len(rel)
        words += [objects[k][2], objects[k][3]]
        owner += [k, k]
    return words, owner


def make_shapes(
    n: int, seed: int, patch_size: int = 4, colours: Sequence[str] | None = None, shapes: Sequence[str] | None = None
) -> tuple[CaptionSet, Vocabulary]:
    """n caption-shapes scenes (see the module docstring), reproducible from `seed`."""
    colours = list(COLOURS) if colours is None else list(colours)
    shapes = list(SHAPES) if shapes is None else list(shapes)
    for what, given, known in (("colour", colours, COLOURS), ("shape", shapes, SHAPES)):
        bad = [w for w in given if w not in known]
        if bad:
            raise InvalidValue(f"unknown {what} {bad[0]!r}; {what}s: {', '.join(known)}")
    if not colours or not shapes:
        raise InvalidValue("the caption vocabulary is empty: give at least one colour and one shape")
    if len(colours) * len(shapes) < 2:
        raise InvalidValue("a scene holds 2-3 different objects: give at least 2 colours or 2 shapes")
    if CANVAS % patch_size:
        raise InvalidValue(f"patch size {patch_size} does not divide the {CANVAS}-pixel canvas")
    vocab = Vocabulary([*colours, *shapes, *RELATIONS])
    rng = np.random.default_rng(seed)
    kinds = [(c, s) for c in colours for s in shapes]
    masks = {s: shape_mask(s) for s in shapes}
    images = np.zeros((n, 3, CANVAS, CANVAS), np.float32)
    captions, owners, object_pixels = [], [], []
    for i in range(n):
        k = int(rng.integers(2, 4)) if len(kinds) >= 3 else 2
        cells = rng.choice(CELLS * CELLS, size=k, replace=False)
        picks = rng.choice(len(kinds), size=k, replace=False)
        objects, pixels = [], []
        for cell, pick in zip(cells, picks):
            row, col = divmod(int(cell), CELLS)
            colour, shape = kinds[pick]
            dy, dx = rng.integers(0, CELL - SHAPE_SIZE + 1, size=2)
            y0, x0 = row * CELL + dy, col * CELL + dx
            on = np.zeros((CANVAS, CANVAS), bool)
            on[y0 : y0 + SHAPE_SIZE, x0 : x0 + SHAPE_SIZE] = masks[shape]
            images[i][:, on] = np.array(COLOURS[colour], np.float32)[:, None]
            objects.append((row, col, colour, shape))
            pixels.append(on)
        words, owner = shapes_caption(objects)
        captions.append(words)
        owners.append(owner)
        object_pixels.append([patch_mask(p, patch_size) for p in pixels])
    return _assemble(torch.from_numpy(images), captions, owners, object_pixels, vocab), vocab


def make_digit_pairs(n: int, seed: int, split: str, patch_size: int = 4) -> tuple[CaptionSet, Vocabulary]:
    """n caption-digits canvases from the digits' `split` ("train" or "val" = test) images."""
    from redthread.data.images import load_digits

    if DIGIT_CANVAS % patch_size:
        raise InvalidValue(f"patch size {patch_size} does not divide the {DIGIT_CANVAS}-pixel canvas")
    vocab = Vocabulary(NUMBER_WORDS)
    digits, labels = load_digits().split(split)  # (M, 1, 8, 8), (M,)
    rng = np.random.default_rng(seed)
    images = np.zeros((n, 1, DIGIT_CANVAS, DIGIT_CANVAS), np.float32)
    captions, owners, object_pixels = [], [], []
    for i in range(n):
        picks = rng.integers(0, len(labels), size=2)
        rows = rng.integers(0, DIGIT_CANVAS - 8 + 1, size=2)
        pixels = []
        for side, (pick, row) in enumerate(zip(picks, rows)):
            glyph = digits[pick, 0].numpy()
            images[i, 0, row : row + 8, 8 * side : 8 * side + 8] = glyph
            on = np.zeros((DIGIT_CANVAS, DIGIT_CANVAS), bool)
            on[row : row + 8, 8 * side : 8 * side + 8] = glyph > 0
            pixels.append(on)
        captions.append([NUMBER_WORDS[int(labels[p])] for p in picks])
        owners.append([0, 1])
        object_pixels.append([patch_mask(p, patch_size) for p in pixels])
    return _assemble(torch.from_numpy(images), captions, owners, object_pixels, vocab), vocab


def _assemble(images: Tensor, captions, owners, object_pixels, vocab: Vocabulary) -> CaptionSet:
    """Pad the captions to one length L and lay out each token's object mask."""
    L = max(len(c) for c in captions) + 2  # <bos> ... <eos>
    P = len(object_pixels[0][0])
    tokens = torch.full((len(captions), L), PAD, dtype=torch.int64)
    masks = torch.zeros(len(captions), L, P, dtype=torch.bool)
    for i, (words, owner) in enumerate(zip(captions, owners)):
        ids = vocab.encode(words)
        tokens[i, : len(ids)] = torch.tensor(ids)
        for j, k in enumerate(owner):
            if k >= 0:
                masks[i, j + 1] = torch.from_numpy(object_pixels[i][k])  # token j + 1: word j, after <bos>
    return CaptionSet(images, tokens, masks)


def unseen(test: CaptionSet, train: CaptionSet) -> list[int]:
    """The indices of the test scenes whose image is not also a training image."""
    seen = {img.numpy().tobytes() for img in train.images}
    return [i for i, img in enumerate(test.images) if img.numpy().tobytes() not in seen]


def drop_seen(test: CaptionSet, train: CaptionSet) -> CaptionSet:
    """The test scenes whose image is not also a training image."""
    return select(test, unseen(test, train))


def select(s: CaptionSet, idx: list[int]) -> CaptionSet:
    return CaptionSet(s.images[idx], s.tokens[idx], s.masks[idx])


class CaptionData:
    """Training and test scenes for the one training loop (`redthread.train.loop.train`)."""

    def __init__(self, train: CaptionSet, val: CaptionSet, vocab: Vocabulary, task: str, patch_size: int,
                 test_kept: list[int] | None = None):
        if len(train) == 0 or len(val) == 0:
            raise InvalidValue("caption data needs at least one training and one test scene")
        self.splits = {"train": train, "val": val}
        self.vocab, self.task, self.patch_size = vocab, task, patch_size
        self.test_kept = test_kept  # which generated test scenes are unseen: `load_test_scenes` rebuilds val from it

    @property
    def channels(self) -> int:
        return self.splits["train"].images.shape[1]

    @property
    def image_size(self) -> int:
        return self.splits["train"].images.shape[2]

    @property
    def block_size(self) -> int:
        """The longest caption with <bos> and <eos>."""
        return max(s.tokens.shape[1] for s in self.splits.values())

    def split(self, name: str) -> CaptionSet:
        if name not in self.splits:
            raise InvalidValue(f"unknown split {name!r}; use train or val")
        return self.splits[name]

    @staticmethod
    def pairs(s: CaptionSet, idx) -> tuple[ImageText, Tensor]:
        tokens = s.tokens[idx]  # (B, L)
        y = tokens[:, 1:].masked_fill(tokens[:, 1:] == PAD, IGNORE_INDEX)  # (B, L - 1): padding is not scored
        return ImageText(s.images[idx], tokens[:, :-1]), y

    def batch(self, split: str, batch_size: int, generator: torch.Generator) -> tuple[ImageText, Tensor]:
        s = self.split(split)
        idx = torch.randint(len(s), (batch_size,), generator=generator)  # (B,)
        return self.pairs(s, idx)

    def eval_batches(self, split: str, batch_size: int, max_batches: int | None = None) -> Iterator:
        s = self.split(split)
        for i, start in enumerate(range(0, len(s), batch_size)):
            if max_batches is not None and i >= max_batches:
                return
            yield self.pairs(s, slice(start, start + batch_size))

    def tokens_per_char(self, split: str) -> None:
        return None  # word tokens: no bits per character


def load_caption_data(
    task: str,
    n_train: int = 20000,
    n_test: int = 1000,
    seed: int = 0,
    patch_size: int | None = None,
    colours: Sequence[str] | None = None,
    shapes: Sequence[str] | None = None,
) -> CaptionData:
    """The scenes of `task`: training scenes from `seed`, test scenes from `seed + 1`, unseen images only."""
    check_int("n_train", n_train), check_int("n_test", n_test)
    train, vocab, patch_size = _make(task, n_train, seed, "train", patch_size, colours, shapes)
    test, _, _ = _make(task, n_test, seed + 1, "val", patch_size, colours, shapes)
    L = max(train.tokens.shape[1], test.tokens.shape[1])
    train, test = _pad_to(train, L), _pad_to(test, L)
    kept = unseen(test, train)
    return CaptionData(train, select(test, kept), vocab, task, patch_size, kept)


def load_test_scenes(
    task: str,
    kept: list[int],
    n_test: int = 1000,
    seed: int = 0,
    patch_size: int | None = None,
    colours: Sequence[str] | None = None,
    shapes: Sequence[str] | None = None,
    **train_settings,
) -> tuple[CaptionSet, Vocabulary]:
    """The unseen test scenes of `load_caption_data(task, ...)` (`kept` = its `test_kept`), without
    generating the training scenes again. Captions are padded to their own longest."""
    test, vocab, _ = _make(task, n_test, seed + 1, "val", patch_size, colours, shapes)
    return select(test, kept), vocab


def _make(task, n, seed, digit_split, patch_size, colours, shapes) -> tuple[CaptionSet, Vocabulary, int]:
    """n scenes of `task` from `seed` (caption-digits draws from the digits' `digit_split`), and the patch size."""
    if task not in TASKS:
        raise InvalidValue(f"unknown caption task {task!r}; tasks: {', '.join(TASKS)}")
    patch_size = patch_size or 4  # caption-digits: 2 x 2 patches (64) stayed at the prior in 1,000 steps (docs/vision.md)
    if task == "caption-shapes":
        return (*make_shapes(n, seed, patch_size, colours, shapes), patch_size)
    if colours is not None or shapes is not None:
        raise InvalidValue("--colours and --shapes are caption-shapes settings")
    return (*make_digit_pairs(n, seed, digit_split, patch_size), patch_size)


def _pad_to(s: CaptionSet, L: int) -> CaptionSet:
    extra = L - s.tokens.shape[1]
    if extra == 0:
        return s
    tokens = torch.nn.functional.pad(s.tokens, (0, extra), value=PAD)
    masks = torch.nn.functional.pad(s.masks, (0, 0, 0, extra), value=False)
    return CaptionSet(s.images, tokens, masks)
