"""The position-wise feed-forward network (claim C10: attention aggregates, the FFN processes).

FFN(x) = W_2 act(W_1 x + b_1) + b_2, applied to every position separately and identically
(Vaswani et al. 2017, eq. 2; dropout is applied by the residual wrapper), usually with d_ff = 4 d_model. The paper uses ReLU; GPT-2 and
most models since use GELU (Hendrycks & Gimpel 2016); relu2 is ReLU squared (So et al. 2021,
"Primer"), which the speedrun records use.
"""

from __future__ import annotations

import torch.nn.functional as F
from torch import Tensor, nn

ACTIVATIONS = {"gelu": F.gelu, "relu": F.relu, "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),
               "relu2": lambda x: F.relu(x).square()}


class FeedForward(nn.Module):
    def __init__(self, d_model: int, d_ff: int, bias: bool = True, activation: str = "gelu"):
        super().__init__()
        self.fc_in = nn.Linear(d_model, d_ff, bias=bias)
        self.fc_out = nn.Linear(d_ff, d_model, bias=bias)
        self.act = ACTIVATIONS[activation]

    def forward(self, x: Tensor) -> Tensor:
        return self.fc_out(self.act(self.fc_in(x)))  # (B, T, C) -> (B, T, d_ff) -> (B, T, C)
