"""A preallocated key/value cache for incremental decoding (claim C12: generate token by token).

During generation the keys and values of past positions never change (the decoder is
causal), so each layer keeps them and only projects the new token. The buffers are
allocated once for the whole generation; `update()` writes the new slice in place and
returns views of everything written so far.

Shape legend: B batch, H heads, S cached length, D head dim.
"""

from __future__ import annotations

import torch
from torch import Tensor


class KVCache:
    """Keys and values of one attention layer, (B, H, capacity, D) each, filled left to right."""

    def __init__(self, batch_size: int, n_head: int, capacity: int, d_head: int, device=None, dtype=None):
        shape = (batch_size, n_head, capacity, d_head)
        self.k = torch.empty(shape, device=device, dtype=dtype)
        self.v = torch.empty(shape, device=device, dtype=dtype)
        self.capacity = capacity
        self.length = 0

    def update(self, k: Tensor, v: Tensor) -> tuple[Tensor, Tensor]:
        """Append k, v (B, H, T, D); return all cached keys and values (B, H, S, D)."""
        start, end = self.length, self.length + k.size(2)
        if end > self.capacity:
            raise ValueError(f"KV cache overflow: {end} positions > capacity {self.capacity}")
        # narrow + copy_: two aten calls, where slice-assignment through __setitem__ costs several
        self.k.narrow(2, start, end - start).copy_(k)
        self.v.narrow(2, start, end - start).copy_(v)
        self.length = end
        return self.keys(), self.values()

    def keys(self) -> Tensor:
        return self.k.narrow(2, 0, self.length)  # (B, H, S, D)

    def values(self) -> Tensor:
        return self.v.narrow(2, 0, self.length)  # (B, H, S, D)

    def reset(self) -> None:
        self.length = 0
