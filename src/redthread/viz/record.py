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

The neuron view: `record_attention(model, vectors=l)` also keeps layer l's per-head queries
and keys exactly as its scores use them (after any rotary rotation), `maps.query_key(kind, l)`:
score[t, s] = q[t] . k[s] * scale (1/sqrt(D) unless the model says otherwise), then the mask,
then the softmax over s gives the weights (C6, C7). They are kept only when asked for.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from redthread.errors import InvalidType, InvalidValue, RedthreadError
from redthread.layers.attention import RECORDER, MultiHeadAttention

KINDS = ("encoder", "decoder", "cross")


@dataclass
class QueryKey:
    """One attention layer's per-head queries and keys as its scores use them, on the CPU."""

    q: Tensor  # (B, H, T, D), after any rotary rotation
    k: Tensor  # (B, H, S, D)
    scale: float  # the scores' factor: 1/sqrt(D), or the model's own

    def scores(self) -> Tensor:
        """The scores before the mask and the softmax: q . k * scale, (B, H, T, S)."""
        return (self.q @ self.k.transpose(-2, -1)) * self.scale  # (B, H, T, D) @ (B, H, D, S) -> (B, H, T, S)


@dataclass
class AttentionMaps:
    """Per-layer attention weights by kind: lists of (B, H, T, S) tensors on the CPU; with
    `vectors`, the queries and keys of the layers asked for, by (kind, layer)."""

    encoder: list[Tensor] = field(default_factory=list)
    decoder: list[Tensor] = field(default_factory=list)
    cross: list[Tensor] = field(default_factory=list)
    vectors: dict[tuple[str, int], QueryKey] = field(default_factory=dict)

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

    def query_key(self, kind: str, layer: int) -> QueryKey:
        """Layer `layer`'s queries and keys of one kind, if the recording kept them (`vectors=`)."""
        if (kind, layer) not in self.vectors:
            kept = ", ".join(f"{k} {n}" for k, n in self.vectors) or "none"
            raise InvalidValue(f"no query and key vectors were recorded for {kind} layer {layer} (recorded: {kept}); "
                               "record them with record_attention(model, vectors=layer)")
        return self.vectors[(kind, layer)]


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


def vector_layers(modules: dict[int, tuple[str, int]], vectors: bool | int) -> set[tuple[str, int]]:
    """The (kind, layer) pairs whose queries and keys to keep: none (False), all (True), or layer l of each
    kind (negative counts from the last, as in Python)."""
    if isinstance(vectors, bool):
        return set(modules.values()) if vectors else set()
    if not isinstance(vectors, int):
        raise InvalidType(f"vectors must be True, False or a layer number, got {vectors!r}")
    counts = {kind: 1 + max(layer for k, layer in modules.values() if k == kind) for kind, _ in modules.values()}
    for kind, n in counts.items():
        if not -n <= vectors < n:
            raise InvalidValue(f"layer {vectors} for the query and key vectors is out of range: the model has {n} {kind} attention layers "
                               f"(0 to {n - 1}, or -1 for the last)")
    return {(kind, vectors % n) for kind, n in counts.items()}


class Recorder:
    """Collects the weights of one model's attention modules while a recording is open (and the
    queries and keys of the layers in `vectors`)."""

    def __init__(self, model: nn.Module, vectors: bool | int = False):
        self.modules = attention_modules(model)
        if not self.modules:
            raise InvalidValue(f"{type(model).__name__} has no attention layers to record")
        self.keep = {key for key, name in self.modules.items() if name in vector_layers(self.modules, vectors)}
        self.maps = AttentionMaps()
        self._rows: dict[int, list[tuple[Tensor, Tensor | None]]] = {}  # id(module) -> calls: (att, q), (B, H, T_i, ...)
        self._keys: dict[int, tuple[Tensor, float]] = {}  # id(module) -> its last call's keys (B, H, S, D) and scale

    def wants(self, module: nn.Module) -> bool:
        return id(module) in self.modules

    def add(self, module: nn.Module, att: Tensor, q: Tensor, k: Tensor) -> None:
        """Keep this call's weights (B, H, T, S); a call with more keys than the last continues it (KV cache).
        For a layer in `vectors`, its queries (B, H, T, D) too, and its keys (B, H, S, D): every key so far."""
        calls = self._rows.setdefault(id(module), [])
        att = att.detach().float().cpu()
        if calls and (att.size(0) != calls[-1][0].size(0) or att.size(-1) < calls[-1][0].size(-1)):
            calls.clear()  # a new, unrelated pass replaces the earlier one
        keep = id(module) in self.keep
        calls.append((att, q.detach().float().cpu() if keep else None))
        if keep:
            scale = module.scale if module.scale is not None else q.size(-1) ** -0.5  # as scaled_dot_product_attention
            self._keys[id(module)] = (k.detach().float().cpu(), float(scale))

    def finish(self) -> AttentionMaps:
        for key, (kind, layer) in sorted(self.modules.items(), key=lambda kv: (KINDS.index(kv[1][0]), kv[1][1])):
            calls = self._rows.get(key)
            if not calls:
                continue
            S = max(att.size(-1) for att, _ in calls)
            rows = [F.pad(att, (0, S - att.size(-1))) for att, _ in calls]  # zero weight on keys not yet cached
            self.maps[kind].append(torch.cat(rows, dim=2))  # (B, H, T, S)
            if key in self.keep:
                k, scale = self._keys[key]
                self.maps.vectors[(kind, layer)] = QueryKey(torch.cat([q for _, q in calls], dim=2), k, scale)
        return self.maps


@contextmanager
def record_attention(model: nn.Module, vectors: bool | int = False) -> Iterator[AttentionMaps]:
    """Record every attention layer of `model` while the block runs; the maps fill in at its end.
    `vectors`: also keep the queries and keys of every layer (True) or of layer l of each kind (l).

        with rt.record_attention(model, vectors=-1) as maps:
            model(idx)
        maps.decoder[0]                       # (B, H, T, T), layer 0's causal self-attention
        maps.query_key("decoder", 1).q        # (B, H, T, D), the last layer's queries
    """
    if RECORDER.get() is not None:
        raise RedthreadError("an attention recording is already open; recordings do not nest")
    recorder = Recorder(model, vectors)
    token = RECORDER.set(recorder)
    try:
        yield recorder.maps
    finally:
        RECORDER.reset(token)
        recorder.finish()
