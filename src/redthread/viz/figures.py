"""Static attention figures (matplotlib): one head as a heatmap, or every layer x head as a grid.

    plot_head(maps.decoder[2][0, 1], tokens, tokens, "head.png")     # layer 2, sequence 0, head 1
    plot_grid(maps.stacked("decoder")[:, 0], tokens, tokens, "grid.svg")

Row t of a map is P(key s | query t): where query token t looks. The file type comes from the
suffix: .png, .svg or .pdf. Writes are atomic (a temporary file, then a rename). The axes speak the
language chosen (`redthread.lang`: rt.set_language("zh"), --lang zh); Chinese words, and Chinese,
Japanese and Korean tokens, are drawn with an installed CJK font (`redthread.fonts`).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import torch
from torch import Tensor

from redthread.errors import InvalidValue
from redthread.files import atomic_write
from redthread.lang import figure_fonts, layer_head, say
from redthread.plotting import pyplot

plt = pyplot()

FORMATS = (".png", ".svg", ".pdf")
CMAP = "Blues"


def check_figure_path(path: str | os.PathLike) -> Path:
    path = Path(path)
    if path.suffix.lower() not in FORMATS:
        raise InvalidValue(f"figure {path}: unknown format {path.suffix or '(none)'!r}; use {', '.join(FORMATS)}")
    return path


def _check_labels(att: Tensor, queries: Sequence[str], keys: Sequence[str]) -> None:
    T, S = att.shape[-2:]
    if len(queries) != T or len(keys) != S:
        raise InvalidValue(f"attention map is {T} x {S} but there are {len(queries)} query and {len(keys)} key labels")


def _label_size(n: int) -> float:
    return max(4.0, min(10.0, 240.0 / max(n, 1)))


def plot_head(
    att: Tensor, queries: Sequence[str], keys: Sequence[str], path: str | os.PathLike | None = None, title: str | None = None
) -> plt.Figure:
    """att (T, S): one head's weights as a heatmap, queries down the side, keys along the top."""
    att = torch.as_tensor(att).detach().float().cpu()
    if att.dim() != 2:
        raise InvalidValue(f"plot_head wants one head's map (T, S), got shape {tuple(att.shape)}")
    _check_labels(att, queries, keys)
    with figure_fonts([*queries, *keys, title or ""]):  # Chinese words and tokens drawn, not boxes
        T, S = att.shape
        fig, ax = plt.subplots(figsize=(min(14, 2.5 + 0.32 * S), min(14, 2.0 + 0.32 * T)), layout="constrained")
        image = ax.imshow(att.numpy(), cmap=CMAP, vmin=0.0, vmax=1.0, aspect="auto")
        ax.set_xticks(range(S), [repr(k)[1:-1] for k in keys], rotation=90, fontsize=_label_size(S))
        ax.set_yticks(range(T), [repr(q)[1:-1] for q in queries], fontsize=_label_size(T))
        ax.xaxis.tick_top()
        ax.set_xlabel(say("key (attended to)", "键（被关注的位置）"))
        ax.set_ylabel(say("query (attending)", "查询（发出关注的位置）"))
        fig.colorbar(image, ax=ax, shrink=0.8, label=say("attention weight", "注意力权重"))
        if title:
            ax.set_title(title)
        _save(fig, path)
    return fig


def plot_grid(
    att: Tensor, queries: Sequence[str], keys: Sequence[str], path: str | os.PathLike | None = None, title: str | None = None
) -> plt.Figure:
    """att (L, H, T, S): every layer (rows) x head (columns) of one sequence, with labels when they fit."""
    att = torch.as_tensor(att).detach().float().cpu()
    if att.dim() != 4:
        raise InvalidValue(f"plot_grid wants maps of shape (layers, heads, T, S), got {tuple(att.shape)}")
    _check_labels(att, queries, keys)
    with figure_fonts([*queries, *keys, title or ""]):  # Chinese words and tokens drawn, not boxes
        L, H, T, S = att.shape
        cell = 1.6 if max(T, S) <= 24 else 2.2
        fig, axes = plt.subplots(L, H, figsize=(0.6 + cell * H, 0.6 + cell * L), squeeze=False, layout="constrained")
        labelled = max(T, S) <= 24
        for layer in range(L):
            for head in range(H):
                ax = axes[layer][head]
                ax.imshow(att[layer, head].numpy(), cmap=CMAP, vmin=0.0, vmax=1.0, aspect="auto")
                ax.set_xticks([])
                ax.set_yticks([])
                if layer == 0:
                    ax.set_title(say(f"head {head}", f"头 {head}"), fontsize=8)
                if head == 0:
                    ax.set_ylabel(layer_head(layer), fontsize=8)
        if labelled:  # token labels on the outer edge only
            for head in range(H):
                axes[-1][head].set_xticks(range(S), [repr(k)[1:-1] for k in keys], rotation=90, fontsize=5)
            for layer in range(L):
                axes[layer][0].set_yticks(range(T), [repr(q)[1:-1] for q in queries], fontsize=5)
        if title:
            fig.suptitle(title)
        _save(fig, path)
    return fig


def _save(fig: plt.Figure, path: str | os.PathLike | None) -> None:
    if path is None:
        return
    path = check_figure_path(path)
    fmt = path.suffix.lower()[1:]
    atomic_write(path, lambda tmp: fig.savefig(tmp, format=fmt, dpi=150))
    plt.close(fig)
