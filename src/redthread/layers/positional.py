"""Positional encodings: how order gets into a model that is otherwise order-blind (claim C8).

Self-attention is permutation-equivariant: shuffle the input and the output is shuffled the
same way. Adding a position-dependent vector to each token embedding breaks that symmetry.
- `SinusoidalPositionalEncoding`: the paper's fixed encoding (Vaswani et al. 2017, section 3.5)
    PE(pos, 2i) = sin(pos / 10000^(2i/d)),  PE(pos, 2i+1) = cos(pos / 10000^(2i/d))
  Nothing to learn, defined for any position, and PE(pos + k) is a linear function of PE(pos).
- `LearnedPositionalEmbedding`: one trained vector per position (GPT-2, BERT).
- `NoPositionalEncoding`: none, to show C8.
- `RotaryEmbedding` (pos="rope"): not added to the embeddings but applied inside attention,
  rotating each (q, k) pair of coordinates by an angle proportional to the position (Su et al.
  2021, "RoFormer", eq. 34), so that q_i . k_j depends on i - j only: the "nearby words" prior
  of C8 expressed as relative position. The frequencies are the sinusoidal encoding's.

Each maps the positions start .. start + T - 1 to vectors (T, C) that the model adds to its
token embeddings.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn


def sinusoidal_table(n_pos: int, d_model: int) -> Tensor:
    """(n_pos, d_model) table of the paper's sines and cosines."""
    pos = torch.arange(n_pos, dtype=torch.float64)[:, None]  # (P, 1)
    inv_freq = torch.exp(-math.log(10000.0) * torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)  # (C/2,)
    table = torch.zeros(n_pos, d_model, dtype=torch.float64)
    table[:, 0::2] = torch.sin(pos * inv_freq)
    table[:, 1::2] = torch.cos(pos * inv_freq[: d_model // 2])
    return table.float()


class SinusoidalPositionalEncoding(nn.Module):
    def __init__(self, block_size: int, d_model: int):
        super().__init__()
        # not persistent: derived from the config, so checkpoints do not carry it
        self.register_buffer("table", sinusoidal_table(block_size, d_model), persistent=False)

    def forward(self, start: int, T: int) -> Tensor:
        return self.table[start : start + T]  # (T, C)


class LearnedPositionalEmbedding(nn.Module):
    def __init__(self, block_size: int, d_model: int):
        super().__init__()
        self.emb = nn.Embedding(block_size, d_model)

    def forward(self, start: int, T: int) -> Tensor:
        return self.emb.weight[start : start + T]  # (T, C)


class NoPositionalEncoding(nn.Module):
    def __init__(self, block_size: int, d_model: int):
        super().__init__()

    def forward(self, start: int, T: int) -> None:
        return None


POSITIONAL = {
    "sinusoidal": SinusoidalPositionalEncoding,
    "learned": LearnedPositionalEmbedding,
    "none": NoPositionalEncoding,
    "rope": NoPositionalEncoding,  # nothing added to the embeddings: attention rotates q and k
}


class RotaryEmbedding(nn.Module):
    """Rotates q or k (..., T, D) by position-dependent angles; pairs are (x_i, x_{i + D/2})."""

    def __init__(self, block_size: int, d_head: int):
        super().__init__()
        inv_freq = torch.exp(-math.log(10000.0) * torch.arange(0, d_head, 2, dtype=torch.float64) / d_head)  # (D/2,)
        angles = torch.arange(block_size, dtype=torch.float64)[:, None] * inv_freq  # (P, D/2)
        self.register_buffer("cos", angles.cos().float(), persistent=False)
        self.register_buffer("sin", angles.sin().float(), persistent=False)

    def forward(self, x: Tensor, start: int = 0) -> Tensor:
        T, half = x.size(-2), x.size(-1) // 2
        cos, sin = self.cos[start : start + T].to(x.dtype), self.sin[start : start + T].to(x.dtype)  # (T, D/2)
        x1, x2 = x[..., :half], x[..., half:]
        return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)  # (..., T, D)
