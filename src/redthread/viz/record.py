"""Recording attention weights: `with rt.record_attention(model) as maps: model(idx)`.

The fused attention kernel returns no weights, and modules never keep them as state. Instead,
while a recording is open, each `MultiHeadAttention` of the recorded model finds the recorder
(a context variable, so threads and async tasks record apart), takes the explicit path
(`scaled_dot_product_attention`, which returns the weights) and hands them over. With no
recording open the cost is one context-variable lookup per attention call, and the fused
kernel runs as before.

Every attention module of the model is named by kind and layer:
- "encoder": bidirectional self-attention (an `Encoder`, BERT, the ViT);
- "decoder": causal self-attention (a `TransformerLM`, GPT-2, the decoder of an encoder-decoder);
- "cross":   decoder queries over encoder keys.
`maps.encoder[l]`, `maps.decoder[l]`, `maps.cross[l]` are (B, H, T, S) tensors of layer l.

Generation with a KV cache calls each layer once per new token with one query row; the rows
are stacked, zero-padded on the right to the longest key length, so a recorded cached
generation gives the same (B, H, T, S) map as one full forward pass.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from redthread.errors import InvalidValue, RedthreadError
from redthread.layers.attention import RECORDER, MultiHeadAttention

KINDS = ("encoder", "decoder", "cross")


@dataclass
class AttentionMaps:
    """Per-layer attention weights by kind: lists of (B, H, T, S) tensors on the CPU."""

    encoder: list[Tensor] = field(default_factory=list)
    decoder: list[Tensor] = field(default_factory=list)
    cross: list[Tensor] = field(default_factory=list)

    def __getitem__(self, kind: str) -> list[Tensor]:
        if kind not in KINDS:
            raise InvalidValue(f"unknown attention kind {kind!r}; kinds: {', '.join(KINDS)}")
        return getattr(self, kind)

    @property
    def kinds(self) -> list[str]:
        """The kinds recorded, in model order (encoder before decoder before cross)."""
        return [k for k in KINDS if self[k]]

    def stacked(self, kind: str) -> Tensor:
        """(L, B, H, T, S): every layer of one kind in one tensor."""
        layers = self[kind]
        if not layers:
            raise InvalidValue(f"no {kind} attention was recorded (recorded: {', '.join(self.kinds) or 'nothing'})")
        return torch.stack(layers)


def attention_modules(model: nn.Module) -> dict[int, tuple[str, int]]:
    """id(module) -> (kind, layer) for every `MultiHeadAttention` in the model, layers counted per kind."""
    names: dict[int, tuple[str, int]] = {}
    counts = dict.fromkeys(KINDS, 0)
    for name, module in model.named_modules():
        if not isinstance(module, MultiHeadAttention):
            continue
        kind = "cross" if name.rsplit(".", 1)[-1] == "cross_attn" else "decoder" if module.causal else "encoder"
        names[id(module)] = (kind, counts[kind])
        counts[kind] += 1
    return names


class Recorder:
    """Collects the weights of one model's attention modules while a recording is open."""

    def __init__(self, model: nn.Module):
        self.modules = attention_modules(model)
        if not self.modules:
            raise InvalidValue(f"{type(model).__name__} has no attention layers to record")
        self.maps = AttentionMaps()
        self._rows: dict[int, list[Tensor]] = {}  # id(module) -> calls, each (B, H, T_i, S_i)

    def wants(self, module: nn.Module) -> bool:
        return id(module) in self.modules

    def add(self, module: nn.Module, att: Tensor) -> None:
        """Keep this call's weights (B, H, T, S); a call with more keys than the last continues it (KV cache)."""
        calls = self._rows.setdefault(id(module), [])
        att = att.detach().float().cpu()
        if calls and (att.size(0) != calls[-1].size(0) or att.size(-1) < calls[-1].size(-1)):
            calls.clear()  # a new, unrelated pass replaces the earlier one
        calls.append(att)

    def finish(self) -> AttentionMaps:
        for key, (kind, _layer) in sorted(self.modules.items(), key=lambda kv: (KINDS.index(kv[1][0]), kv[1][1])):
            calls = self._rows.get(key)
            if not calls:
                continue
            S = max(c.size(-1) for c in calls)
            rows = [F.pad(c, (0, S - c.size(-1))) for c in calls]  # zero weight on keys not yet cached
            self.maps[kind].append(torch.cat(rows, dim=2))  # (B, H, T, S)
        return self.maps


@contextmanager
def record_attention(model: nn.Module) -> Iterator[AttentionMaps]:
    """Record every attention layer of `model` while the block runs; the maps fill in at its end.

        with rt.record_attention(model) as maps:
            model(idx)
        maps.decoder[0]  # (B, H, T, T), layer 0's causal self-attention
    """
    if RECORDER.get() is not None:
        raise RedthreadError("an attention recording is already open; recordings do not nest")
    recorder = Recorder(model)
    token = RECORDER.set(recorder)
    try:
        yield recorder.maps
    finally:
        RECORDER.reset(token)
        recorder.finish()
