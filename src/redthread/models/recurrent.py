"""Recurrent language models: the rung below the Transformer, P(token_t | tokens_<t) through a state.

A recurrent network reads the sequence one token at a time and folds each into a hidden
state, h_t = f(h_{t-1}, x_t); the next-token distribution is a softmax of a linear map of h_t.
This rung serves claims C3-C5 of the essay, each visible in the code below:

- C3: the gradient of h_t with respect to h_{t-k} is a product of k Jacobians through tanh
  (and W_hh), so over long distances it vanishes or explodes (Bengio et al. 1994; Pascanu et
  al. 2013). The LSTM's additive cell update c_t = f * c_{t-1} + i * g (Hochreiter &
  Schmidhuber 1997) and the GRU's interpolation h_t = (1 - z) * n + z * h_{t-1} (Cho et al.
  2014) give the gradient a path that is not squashed at every step.
- C4: the loop over time in `RecurrentLM.hidden` cannot be parallelised: h_t needs h_{t-1}.
  Only the input projection, x_t W_ih^T for all t, is one matmul (`RecurrentCell.project`).
- C5: whatever the past was, it reaches the next step only through a state of fixed size
  (d_hidden numbers, twice that for the LSTM): `RecurrentState` holds no tokens.

Cells are written out by hand, with parameters laid out as torch's `nn.RNNCell`, `nn.LSTMCell`
and `nn.GRUCell` (gates stacked in torch's order), so weights copy 1:1 and the tests compare
against torch. Shape legend: B batch, T positions, I input size, E d_embed, H d_hidden,
G gates per cell, V vocab.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor, nn
from torch.nn import functional as F

from redthread.errors import InvalidValue
from redthread.models.base import LanguageModel
from redthread.models.config import ConfigMixin, check_dropout, check_positive_ints

State = tuple[Tensor, ...]  # a cell's state: (h,) for RNN and GRU, (h, c) for LSTM; each (B, H)


class RecurrentCell(nn.Module):
    """One step of a recurrence: (x_t, state_{t-1}) -> state_t, with the state's first tensor h_t.

    `project` applies the input weights to a whole sequence at once; `step` does the recurrent
    part for one position. `forward(x, state)` is both, for one position, like torch's cells.
    """

    n_gates: int = 1
    n_states: int = 1

    def __init__(self, input_size: int, hidden_size: int):
        super().__init__()
        G, H = self.n_gates, hidden_size
        self.input_size, self.hidden_size = input_size, hidden_size
        self.weight_ih = nn.Parameter(torch.empty(G * H, input_size))  # (G*H, I)
        self.weight_hh = nn.Parameter(torch.empty(G * H, H))  # (G*H, H)
        self.bias_ih = nn.Parameter(torch.empty(G * H))  # (G*H,)
        self.bias_hh = nn.Parameter(torch.empty(G * H))  # (G*H,)
        k = 1 / math.sqrt(H)  # torch's initialisation of every recurrent weight and bias
        for p in self.parameters():
            nn.init.uniform_(p, -k, k)

    def project(self, x: Tensor) -> Tensor:
        """W_ih x + b_ih for every position at once: x (..., I) -> (..., G*H)."""
        return F.linear(x, self.weight_ih, self.bias_ih)

    def step(self, xp: Tensor, state: State) -> State:
        """One recurrent step from the projected input xp (B, G*H)."""
        raise NotImplementedError

    def init_state(self, batch_size: int, like: Tensor) -> State:
        """The zero state, on the device and dtype of `like`."""
        h = like.new_zeros(batch_size, self.hidden_size)  # (B, H)
        return (h,) * self.n_states

    def forward(self, x: Tensor, state: State | None = None) -> State:
        """x (B, I), state (each (B, H)) or None for zeros -> the next state."""
        if state is None:
            state = self.init_state(x.size(0), x)
        return self.step(self.project(x), state)


class RNNCell(RecurrentCell):
    """Elman's simple recurrent cell (Elman 1990), torch's `nn.RNNCell(nonlinearity="tanh")`:

        h_t = tanh(W_ih x_t + b_ih + W_hh h_{t-1} + b_hh)

    dh_t/dh_{t-1} = diag(1 - h_t^2) W_hh: repeated k times, it shrinks or grows geometrically (C3).
    """

    def step(self, xp: Tensor, state: State) -> State:
        (h,) = state
        return (torch.tanh(xp + F.linear(h, self.weight_hh, self.bias_hh)),)  # (B, H)


class LSTMCell(RecurrentCell):
    """Long short-term memory (Hochreiter & Schmidhuber 1997; with a forget gate, Gers et al. 2000),
    torch's `nn.LSTMCell`, gates stacked in the order i, f, g, o:

        i, f, g, o = W_ih x_t + b_ih + W_hh h_{t-1} + b_hh      (each (B, H))
        c_t = sigmoid(f) * c_{t-1} + sigmoid(i) * tanh(g)
        h_t = sigmoid(o) * tanh(c_t)

    The cell c_t is updated by addition, so dc_t/dc_{t-1} = sigmoid(f): no tanh on that path (C3).
    """

    n_gates, n_states = 4, 2

    def step(self, xp: Tensor, state: State) -> State:
        h, c = state
        i, f, g, o = (xp + F.linear(h, self.weight_hh, self.bias_hh)).chunk(4, dim=-1)  # 4 x (B, H)
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        h = torch.sigmoid(o) * torch.tanh(c)
        return h, c


class GRUCell(RecurrentCell):
    """Gated recurrent unit (Cho et al. 2014), torch's `nn.GRUCell`, gates in the order r, z, n:

        r = sigmoid(W_ir x_t + b_ir + W_hr h_{t-1} + b_hr)          reset gate
        z = sigmoid(W_iz x_t + b_iz + W_hz h_{t-1} + b_hz)          update gate
        n = tanh(W_in x_t + b_in + r * (W_hn h_{t-1} + b_hn))       candidate
        h_t = (1 - z) * n + z * h_{t-1}
    """

    n_gates = 3

    def step(self, xp: Tensor, state: State) -> State:
        (h,) = state
        x_r, x_z, x_n = xp.chunk(3, dim=-1)  # 3 x (B, H)
        h_r, h_z, h_n = F.linear(h, self.weight_hh, self.bias_hh).chunk(3, dim=-1)  # 3 x (B, H)
        r = torch.sigmoid(x_r + h_r)
        z = torch.sigmoid(x_z + h_z)
        n = torch.tanh(x_n + r * h_n)
        return ((1 - z) * n + z * h,)


CELLS: dict[str, type[RecurrentCell]] = {"rnn": RNNCell, "lstm": LSTMCell, "gru": GRUCell}


@dataclass(frozen=True)
class RecurrentConfig(ConfigMixin):
    vocab_size: int = 65
    block_size: int = 64  # the training window, and the window `generate` keeps
    cell: str = "lstm"  # "rnn" (Elman, tanh), "lstm" or "gru"
    n_layer: int = 1
    d_embed: int = 64
    d_hidden: int = 256
    dropout: float = 0.0  # on the embeddings and on each layer's output (Zaremba et al. 2014)

    def __post_init__(self):
        check_positive_ints(self, "vocab_size", "block_size", "n_layer", "d_embed", "d_hidden")
        if self.cell not in CELLS:
            raise InvalidValue(f"cell must be one of {', '.join(CELLS)}; got {self.cell!r}")
        check_dropout(self.dropout)


@dataclass
class RecurrentState:
    """The cache of a recurrent model: one state per layer, and how many tokens it has read.

    Its size does not grow with `length` (C5). `RecurrentLM.forward` replaces `states` in place.
    """

    states: list[State]
    length: int = 0


class RecurrentLM(LanguageModel):
    """Recurrent language model: embedding -> n_layer cells -> linear head; model(idx) -> logits (B, T, V)."""

    def __init__(self, cfg: RecurrentConfig):
        super().__init__()
        self.cfg = cfg
        cell = CELLS[cfg.cell]
        self.tok_emb = nn.Embedding(cfg.vocab_size, cfg.d_embed)
        self.cells = nn.ModuleList(
            cell(cfg.d_embed if i == 0 else cfg.d_hidden, cfg.d_hidden) for i in range(cfg.n_layer)
        )
        self.drop = nn.Dropout(cfg.dropout)
        self.lm_head = nn.Linear(cfg.d_hidden, cfg.vocab_size)

    def hidden(self, idx: Tensor, cache: RecurrentState | None = None) -> Tensor:
        """idx (B, T) int64 -> the last layer's h_t at every position, (B, T, H).

        With a cache, idx holds only the new tokens and the states continue from it."""
        B, T = idx.shape
        x = self.drop(self.tok_emb(idx))  # (B, T, E)
        states = cache.states if cache is not None else [cell.init_state(B, x) for cell in self.cells]
        for layer, cell in enumerate(self.cells):
            xp = cell.project(x)  # (B, T, G*H): the only part computed for all positions at once
            state, hs = states[layer], []
            # sequential: h_t needs h_{t-1} (C4). unbind, not xp[:, t]: one backward node for all T
            # slices, where T slices would each scatter their gradient into a zero tensor of xp's size
            for xp_t in xp.unbind(1):  # T x (B, G*H)
                state = cell.step(xp_t, state)
                hs.append(state[0])
            states[layer] = state
            x = self.drop(torch.stack(hs, dim=1))  # (B, T, H)
        if cache is not None:
            cache.length += T
        return x

    def forward(self, idx: Tensor, cache: RecurrentState | None = None) -> Tensor:
        """idx (B, T) int64 -> logits (B, T, V). With a cache, idx holds only the new tokens."""
        return self.lm_head(self.hidden(idx, cache))  # (B, T, V)

    def make_cache(self, batch_size: int, capacity: int | None = None) -> RecurrentState:
        """Zero states for incremental decoding; capacity is unused: the state has a fixed size (C5)."""
        like = self.lm_head.weight
        return RecurrentState([cell.init_state(batch_size, like) for cell in self.cells])
