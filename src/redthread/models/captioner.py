"""Image to text: a ViT encoder and a Transformer decoder whose words attend to image patches.

Claim C14 of the essay, both halves at once. The image is a sequence of patches
(`redthread.models.vit.ViT` with no head, n_classes=0); the caption is a sequence of words;
the decoder (`redthread.models.transformer.Decoder`: masked self-attention, then
cross-attention to the patch vectors, then the FFN) learns

    P(word_t | words_<t, image)

by maximum likelihood with the one training loop, exactly like the sequence-to-sequence
Transformer of the paper with a ViT in place of the text encoder. Each cross-attention row says
how much every patch contributed to one step of the caption: what `redthread.viz.patches`
measures against the scene's ground truth (the grounding score) and draws on the image.
Shape legend: B batch, C_in image channels, H, W pixels, P patches, C d_model, T caption length, V words.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import ClassVar

from torch import Tensor
from torch.distributions import Categorical

from redthread.data.captions import EOS, CaptionData, ImageText
from redthread.errors import InvalidValue
from redthread.models.base import Estimator
from redthread.models.config import ConfigMixin, check_dropout, check_positive_ints
from redthread.models.likelihoods import token_nll
from redthread.models.transformer import ConditionedDecoder, Decoder, TransformerConfig
from redthread.models.vit import VIT_POSITIONAL, ViT, ViTConfig


@dataclass(frozen=True)
class CaptionerConfig(ConfigMixin):
    vocab_size: int = 16  # caption words, with <pad> <bos> <eos>
    block_size: int = 16  # the longest caption the decoder sees, <bos> included: its context window
    image_size: int = 24
    patch_size: int = 4
    channels: int = 3
    n_layer_encoder: int = 2
    n_layer_decoder: int = 2
    n_head: int = 4
    d_model: int = 64
    d_ff: int | None = None  # None: 4 * d_model
    dropout: float = 0.0
    pos: str = "learned"  # the encoder's patch positions: "learned" or "sinusoidal2d"

    RENAMED: ClassVar[dict[str, str]] = {"max_len": "block_size"}  # its name in redthread 0.1

    def __post_init__(self):
        check_positive_ints(self, "vocab_size", "block_size", "image_size", "patch_size", "channels",
                            "n_layer_encoder", "n_layer_decoder", "n_head", "d_model")
        if self.vocab_size <= EOS + 1:
            raise InvalidValue(f"vocab_size {self.vocab_size} leaves no caption words beside <pad> <bos> <eos>")
        check_dropout(self.dropout)
        if self.pos not in VIT_POSITIONAL:
            raise InvalidValue(f"pos must be one of {', '.join(VIT_POSITIONAL)}; got {self.pos!r}")
        self.encoder_config()  # the patch and head checks live there
        self.decoder_config()

    def encoder_config(self) -> ViTConfig:
        return ViTConfig(image_size=self.image_size, patch_size=self.patch_size, channels=self.channels, n_classes=0,
                         n_layer=self.n_layer_encoder, n_head=self.n_head, d_model=self.d_model, d_ff=self.d_ff,
                         dropout=self.dropout, pool="mean", pos=self.pos)

    def decoder_config(self) -> TransformerConfig:
        return TransformerConfig(vocab_size=self.vocab_size, block_size=self.block_size, n_layer=self.n_layer_decoder,
                                 n_head=self.n_head, d_model=self.d_model, d_ff=self.d_ff, dropout=self.dropout,
                                 pos="learned")


class Captioner(Estimator):
    """model(ImageText(images (B, C_in, H, W), tokens (B, T))) -> logits (B, T, V) of the next word."""

    objective = staticmethod(token_nll)  # -log P(word_t+1 | words_<=t, image); IGNORE_INDEX after the caption's end
    reads, attends = "image", True  # the image is its input; the words it has written so far condition it

    def __init__(self, cfg: CaptionerConfig):
        super().__init__()
        self.cfg = cfg
        self.encoder = ViT(cfg.encoder_config())  # patches -> (B, P, C); mean-pool setting: no class token
        self.decoder = Decoder(cfg.decoder_config())

    @property
    def grid(self) -> int:
        return self.encoder.cfg.grid

    def encode(self, images: Tensor) -> Tensor:
        return self.encoder.encode(images)  # (B, P, C)

    def forward(self, x: ImageText | Tensor, tokens: Tensor | None = None) -> Tensor:
        images, tokens = (x.images, x.tokens) if isinstance(x, ImageText) else (x, tokens)
        if tokens is None:
            raise InvalidValue("the captioner needs the caption so far: model(ImageText(images, tokens))")
        if tokens.dim() != 2 or tokens.size(0) != images.size(0):
            raise InvalidValue(f"tokens must be (batch, length) for {images.size(0)} images, got {tuple(tokens.shape)}")
        return self.decoder(tokens, context=self.encode(images))  # (B, T, V)

    def conditioned_on(self, images: Tensor) -> ConditionedDecoder:
        """A language model of captions given these images, for `redthread.generate`."""
        return ConditionedDecoder(self.decoder, self.encode(images), None)

    def distribution(self, x: ImageText) -> Categorical:
        """P(next word | caption so far, image) at every position: batch shape (B, T), V outcomes."""
        return Categorical(logits=self(x).float())


def captioner_config(data: CaptionData, requested: dict) -> CaptionerConfig:
    """CaptionerConfig for this data: image size, channels, patch size, vocabulary and caption length from the data."""
    known = {f.name for f in fields(CaptionerConfig)}
    unknown = sorted(set(requested) - known)
    if unknown:
        raise InvalidValue(f"--{unknown[0].replace('_', '-')} is not a captioner setting (captioner: {', '.join(sorted(known))})")
    base = {"vocab_size": len(data.vocab), "block_size": data.block_size, "image_size": data.image_size,
            "channels": data.channels, "patch_size": data.patch_size}
    for name in ("vocab_size", "block_size", "image_size", "channels", "patch_size"):
        if name in requested and requested[name] != base[name]:
            raise InvalidValue(f"{name} is fixed by the data ({base[name]}), got {requested[name]}")
    return CaptionerConfig(**{**base, **requested})
