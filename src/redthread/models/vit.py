"""The Vision Transformer: an image as a sequence of patches, P(class | image) by attention.

Claim C14 of the essay: nothing in the Transformer is specific to text. Cut an image into
non-overlapping p x p patches, project each to d_model (a convolution with kernel = stride = p
is exactly "flatten each patch, multiply by one matrix"), add positions, and the same encoder
blocks as the text models (`redthread.layers.blocks.EncoderBlock`) relate every patch to every
other (Dosovitskiy et al. 2021, "An Image is Worth 16x16 Words", eqs. 1-4). A linear head
whose softmax is P(class | image) (claim C2) reads either
- a learned class token prepended to the patches (pool="cls", eq. 1 and 4), or
- the mean of the patch vectors (pool="mean"; Beyer et al. 2022, "Better plain ViT baselines").
Positions are learned (pos="learned", the paper) or fixed 2-D sines and cosines
(pos="sinusoidal2d"): half the channels encode the patch's row, half its column, each with
the paper's 1-D table (Vaswani et al. 2017, section 3.5), as MAE's `get_2d_sincos_pos_embed`
(He et al. 2022) and Beyer et al. 2022; the class token gets the zero vector.

Like every rung it returns raw logits; the likelihood is `redthread.models.likelihoods.token_nll`,
and the one loop (`redthread.train.loop.train`) trains it.
Shape legend: B batch, C channels (image) / d_model (after embedding), H, W image height and
width, P patches, K classes.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn

from redthread.errors import InvalidValue, check_int
from redthread.layers.blocks import BlockConfig, EncoderBlock
from redthread.layers.positional import sinusoidal_table
from redthread.models.base import Classifier
from redthread.models.config import ConfigMixin, check_dropout, check_positive_ints
from redthread.models.transformer import EMB_STD, init_weights

POOLS = ("cls", "mean")
VIT_POSITIONAL = ("learned", "sinusoidal2d")


@dataclass(frozen=True)
class ViTConfig(ConfigMixin):
    image_size: int = 8  # square images, image_size x image_size pixels
    patch_size: int = 2
    channels: int = 1
    n_classes: int = 10  # 0: no head, the ViT is an image encoder (the captioner's, models/captioner.py)
    n_layer: int = 3
    n_head: int = 4
    d_model: int = 64
    d_ff: int | None = None  # None: 4 * d_model
    dropout: float = 0.0
    pool: str = "cls"  # "cls" (a class token) or "mean" (mean of the patch vectors)
    pos: str = "learned"  # "learned" or "sinusoidal2d"

    def __post_init__(self):
        check_positive_ints(self, "image_size", "patch_size", "channels", "n_layer", "n_head", "d_model")
        if not isinstance(self.n_classes, int) or isinstance(self.n_classes, bool) or self.n_classes < 0:
            raise InvalidValue(f"n_classes must be a non-negative integer, got {self.n_classes!r}")
        if self.n_classes == 1:
            raise InvalidValue("n_classes must be at least 2 (or 0 for an encoder with no head), got 1")
        if self.image_size % self.patch_size != 0:
            raise InvalidValue(f"patch_size {self.patch_size} does not divide the image size {self.image_size}")
        if self.d_model % self.n_head != 0:
            raise InvalidValue(f"d_model ({self.d_model}) must be divisible by n_head ({self.n_head})")
        if self.d_ff is not None:
            check_int("d_ff", self.d_ff)
        check_dropout(self.dropout)
        for name, allowed in (("pool", POOLS), ("pos", VIT_POSITIONAL)):
            if getattr(self, name) not in allowed:
                raise InvalidValue(f"{name} must be one of {', '.join(allowed)}; got {getattr(self, name)!r}")
        if self.pos == "sinusoidal2d" and self.d_model % 4 != 0:
            raise InvalidValue(f"pos sinusoidal2d needs d_model divisible by 4 (sin and cos for rows and columns), got {self.d_model}")

    @property
    def grid(self) -> int:
        """Patches per side."""
        return self.image_size // self.patch_size

    @property
    def n_patches(self) -> int:
        return self.grid**2

    @property
    def ffn_size(self) -> int:
        return self.d_ff or 4 * self.d_model


def sinusoidal_2d_table(grid: int, d_model: int) -> Tensor:
    """(grid * grid, d_model): row-major patches; channels [:d/2] encode the row, [d/2:] the column."""
    table = sinusoidal_table(grid, d_model // 2)  # (G, C/2), the 1-D table over one axis
    rows = table[:, None, :].expand(grid, grid, -1)  # (G, G, C/2): patch (r, c) gets row r's vector
    cols = table[None, :, :].expand(grid, grid, -1)  # (G, G, C/2): and column c's
    return torch.cat([rows, cols], dim=-1).reshape(grid * grid, d_model)  # (P, C)


class PatchEmbedding(nn.Module):
    """images (B, C_in, H, W) -> (B, P, C): each p x p patch flattened and projected (ViT eq. 1)."""

    def __init__(self, cfg: ViTConfig):
        super().__init__()
        # kernel = stride = p: the patches do not overlap and each sees one matrix
        self.proj = nn.Conv2d(cfg.channels, cfg.d_model, kernel_size=cfg.patch_size, stride=cfg.patch_size)

    def forward(self, images: Tensor) -> Tensor:
        x = self.proj(images)  # (B, C, H/p, W/p)
        return x.flatten(2).transpose(1, 2)  # (B, P, C), patches in row-major order


class ViT(Classifier):
    """Vision Transformer classifier: model(images (B, C, H, W)) -> logits (B, K), P(class | image)."""

    reads, attends = "image", True

    def __init__(self, cfg: ViTConfig):
        super().__init__()
        self.cfg = cfg
        self.patch_emb = PatchEmbedding(cfg)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, cfg.d_model)) if cfg.pool == "cls" else None
        n_pos = cfg.n_patches + (cfg.pool == "cls")
        if cfg.pos == "learned":
            self.pos_emb = nn.Parameter(torch.zeros(n_pos, cfg.d_model))
        else:
            table = sinusoidal_2d_table(cfg.grid, cfg.d_model)  # (P, C)
            if cfg.pool == "cls":
                table = torch.cat([torch.zeros(1, cfg.d_model), table])  # the class token has no place in the grid
            # fixed, derived from the config: not persistent; scaled like the text models' sines (Embedding)
            self.register_buffer("pos_table", EMB_STD * table, persistent=False)
        self.drop = nn.Dropout(cfg.dropout)
        self.blocks = nn.ModuleList(
            EncoderBlock(BlockConfig(cfg.d_model, cfg.n_head, cfg.ffn_size, dropout=cfg.dropout)) for _ in range(cfg.n_layer)
        )
        self.norm_f = nn.LayerNorm(cfg.d_model)
        self.head = nn.Linear(cfg.d_model, cfg.n_classes) if cfg.n_classes else None
        init_weights(self, cfg.n_layer)

    def check_images(self, images: Tensor) -> None:
        cfg = self.cfg
        if images.dim() != 4:
            raise InvalidValue(f"images must be (batch, channels, height, width), got shape {tuple(images.shape)}")
        if images.size(1) != cfg.channels:
            raise InvalidValue(f"images have {images.size(1)} channel(s), the model expects {cfg.channels}")
        if images.shape[2:] != (cfg.image_size, cfg.image_size):
            raise InvalidValue(
                f"images are {images.size(2)}x{images.size(3)} pixels, the model expects {cfg.image_size}x{cfg.image_size}"
            )

    def encode(self, images: Tensor) -> Tensor:
        """images (B, C_in, H, W) -> (B, P (+ 1), C): every patch's vector (after the class token's, if any)."""
        self.check_images(images)
        x = self.patch_emb(images)  # (B, P, C)
        if self.cls_token is not None:
            x = torch.cat([self.cls_token.expand(x.size(0), -1, -1), x], dim=1)  # (B, P + 1, C)
        x = self.drop(x + (self.pos_emb if self.cfg.pos == "learned" else self.pos_table))
        for block in self.blocks:
            x = block(x)  # (B, P + 1, C): every patch attends to every patch (and the class token)
        return self.norm_f(x)

    def forward(self, images: Tensor) -> Tensor:
        if self.head is None:
            raise InvalidValue("this ViT has no classification head (n_classes=0): use encode(images)")
        x = self.encode(images)  # (B, P + 1, C)
        pooled = x[:, 0] if self.cls_token is not None else x.mean(1)  # (B, C)
        return self.head(pooled)  # (B, K)
