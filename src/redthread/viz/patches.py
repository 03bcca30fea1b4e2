"""Attention over image patches: where a ViT looks, where a caption's words look, and a score for it.

- `attention_rollout` (Abnar & Zuidema 2020, "Quantifying Attention Flow in Transformers"): how
  much each input patch reaches each output position through the whole stack. Per layer, the
  head-mean weights plus the residual path, 0.5 A + 0.5 I (rows summing to 1), multiplied from
  the first layer to the last. One layer's weights say what a position mixes from the layer
  below, which after the first layer is already a mixture; rollout follows the mixture down to
  the pixels.
- `grounding_score`: the fraction of a word's cross-attention mass that falls on the patches of
  the object the word names. The word at caption position j is produced by the decoder step at
  query position j - 1 (the step whose output distribution assigned it its probability), so that
  row is the one scored. Averaged over heads, per layer; a uniform attention puts
  |object patches| / P on the object, the baseline it is compared with.
- `plot_patch_overlays`: an image with one panel per row of weights (a head, a word), the weights
  drawn as a heat map over the patch grid.

Shape legend: L layers, H heads, B batch, T queries (caption positions), S keys, P patches, G grid side.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from redthread.data.captions import CaptionData
from redthread.errors import InvalidValue
from redthread.models.captioner import Captioner


def attention_rollout(att: Tensor, residual: float = 0.5) -> Tensor:
    """att (L, H, S, S) self-attention of one input -> (S, S): output position x input position."""
    if att.dim() != 4 or att.size(-1) != att.size(-2):
        raise InvalidValue(f"rollout needs self-attention weights (layers, heads, S, S), got shape {tuple(att.shape)}")
    S = att.size(-1)
    eye = torch.eye(S, dtype=att.dtype, device=att.device)
    rollout = eye
    for layer in att:  # (H, S, S), first layer first
        a = residual * eye + (1 - residual) * layer.mean(0)  # (S, S): the residual path kept
        a = a / a.sum(-1, keepdim=True)
        rollout = a @ rollout  # (S, S): layer l's output over the input
    return rollout


@dataclass
class Grounding:
    """The grounding score of a set of words: per layer (L,), their mean, and the uniform baseline."""

    per_layer: list[float]
    score: float  # mean over layers (and heads, and words)
    uniform: float  # the same words under uniform attention: |object patches| / P
    words: int

    @classmethod
    def from_mass(cls, mass: Tensor, uniform: Tensor) -> Grounding:
        """From `grounding_mass`'s per-word masses (N, L) and uniform shares (N,)."""
        if mass.size(0) == 0:
            raise InvalidValue("no word in these captions names an object: nothing to ground")
        per_layer = mass.mean(0)  # (L,)
        return cls([round(float(v), 6) for v in per_layer], float(per_layer.mean()), float(uniform.mean()), mass.size(0))

    def to_dict(self) -> dict:
        return {"grounding": self.score, "grounding_per_layer": self.per_layer, "uniform_baseline": self.uniform,
                "grounded_words": self.words}


def grounding_mass(cross: Tensor, masks: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """cross (B, L, H, T, P) weights of the decoder steps over patches; masks (B, T + 1, P) bool: the
    patches of the object named by caption token j (all False for words that name none).

    Returns (mass (N, L): each grounded word's head-mean weight on its object, per layer;
    uniform (N,): its object's share of the patches; which (N, 2): batch row and token position)."""
    B, _L, H, T, P = cross.shape
    if masks.shape[0] != B or masks.shape[-1] != P or masks.shape[1] < T + 1:
        raise InvalidValue(f"masks {tuple(masks.shape)} do not fit cross-attention {tuple(cross.shape)}")
    target = masks[:, 1 : T + 1].to(cross.dtype)  # (B, T, P): the object of the word step t produces
    per = torch.einsum("blhtp,btp->btl", cross, target) / H  # (B, T, L): head-mean mass on the object
    grounded = target.sum(-1) > 0  # (B, T)
    which = grounded.nonzero()  # (N, 2)
    uniform = target.sum(-1)[grounded] / P  # (N,)
    return per[grounded], uniform, which


def grounding_score(cross: Tensor, masks: Tensor) -> Grounding:
    """See `grounding_mass`; the mean over every grounded word (and head), per layer and overall."""
    mass, uniform, _ = grounding_mass(cross, masks)
    return Grounding.from_mass(mass, uniform)


def plot_patch_overlays(
    image: Tensor,
    weights: Tensor,
    titles: Sequence[str],
    path: str | os.PathLike | None = None,
    suptitle: str | None = None,
    cols: int | None = None,
):
    """image (C, H, W) in [0, 1]; weights (N, P) over a G x G patch grid: N panels, each the image
    with that row's weights as a heat overlay (brightest = the row's largest weight). Returns the figure."""
    from redthread.plotting import pyplot

    plt = pyplot()

    from redthread.lang import figure_fonts
    from redthread.viz.figures import _save, check_figure_path

    if path is not None:
        check_figure_path(path)
    N, P = weights.shape
    G = round(P**0.5)
    if G * G != P:
        raise InvalidValue(f"{P} patches do not make a square grid")
    if len(titles) != N:
        raise InvalidValue(f"{N} overlays but {len(titles)} titles")
    C, H, W = image.shape
    cols = cols or min(N, 6)
    rows = (N + cols - 1) // cols
    head = 0.5 if suptitle else 0.0  # inches for the title lines
    with figure_fonts([*titles, suptitle or ""]):  # words in any script drawn, not boxes

        fig, axes = plt.subplots(rows, cols, figsize=(2.0 * cols, 2.2 * rows + head), squeeze=False, layout="constrained")
        for ax in axes.flat:
            ax.axis("off")
        for i in range(N):
            ax = axes.flat[i]
            heat = weights[i].reshape(G, G).float()
            heat = (heat / heat.max().clamp_min(1e-12)).numpy()
            if C == 3:  # colour: the picture under a translucent heat map
                ax.imshow(image.permute(1, 2, 0).numpy(), extent=(0, W, H, 0), interpolation="nearest")
                ax.imshow(heat, cmap="inferno", alpha=0.55, vmin=0, vmax=1, extent=(0, W, H, 0), interpolation="nearest")
            else:  # grey: the heat map, with the ink's outline drawn over it
                ax.imshow(heat, cmap="inferno", vmin=0, vmax=1, extent=(0, W, H, 0), interpolation="nearest")
                ax.contour(image.mean(0).numpy(), levels=[0.35], colors="cyan", linewidths=1.2,
                           extent=(0, W, 0, H), origin="upper")
            ax.set_title(titles[i], fontsize=9)
        if suptitle:
            fig.suptitle(suptitle, fontsize=10)
        _save(fig, path)
    return fig


@torch.no_grad()
def caption_grounding(model: Captioner, data: CaptionData, split: str = "val", batch_size: int = 256):
    """`redthread.viz.patches.Grounding` of the reference captions of a split (teacher-forced)."""
    from redthread.viz.record import record_attention

    s = data.split(split)
    device = next(model.parameters()).device
    model.eval()
    masses, uniforms = [], []
    for start in range(0, len(s), batch_size):
        tokens = s.tokens[start : start + batch_size]
        with record_attention(model) as maps:
            model(s.images[start : start + batch_size].to(device), tokens[:, :-1].to(device))
        cross = maps.stacked("cross").transpose(0, 1)  # (B, L, H, T, P)
        mass, uniform, _ = grounding_mass(cross, s.masks[start : start + batch_size])
        masses.append(mass)
        uniforms.append(uniform)
    return Grounding.from_mass(torch.cat(masses), torch.cat(uniforms))
