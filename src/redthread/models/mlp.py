"""The MLP language model (Bengio et al. 2003): P(token_t | the previous `context` tokens) from a fixed window.

The rung between counting and recurrence (claims C2, C3 of the essay). Each of the last
`context` tokens is looked up in an embedding table, the embeddings are concatenated and fed
to a tanh hidden layer, and a linear layer gives the logits:

    e = [E[x_{t-c+1}]; ...; E[x_t]]            (c * d_embed)
    h = tanh(W_1 e + b_1)                       (d_hidden)
    logits = W_2 h + b_2                        (V)

Unlike the count table, similar tokens get similar embeddings, so the model generalises to
contexts it never saw; unlike an RNN or a Transformer, it sees only a fixed window: what lies
further back cannot inform the prediction at all. Positions before the start of the input are
filled with a learned padding embedding (id V).

Shape legend: B batch, T positions, c context, E d_embed, H d_hidden, V vocab.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch.nn.functional as F
from torch import Tensor, nn

from redthread.models.base import LanguageModel
from redthread.models.config import ConfigMixin, check_dropout, check_positive_ints


@dataclass(frozen=True)
class MLPConfig(ConfigMixin):
    vocab_size: int = 65
    block_size: int = 64  # the window `generate` feeds; only the last `context` tokens matter
    context: int = 16  # c: tokens the prediction sees
    d_embed: int = 64
    d_hidden: int = 256
    dropout: float = 0.0

    def __post_init__(self):
        check_positive_ints(self, "vocab_size", "block_size", "context", "d_embed", "d_hidden")
        check_dropout(self.dropout)


class MLPLM(LanguageModel):
    def __init__(self, cfg: MLPConfig):
        super().__init__()
        self.cfg = cfg
        self.tok_emb = nn.Embedding(cfg.vocab_size + 1, cfg.d_embed)  # + 1: the padding before the start
        self.hidden = nn.Linear(cfg.context * cfg.d_embed, cfg.d_hidden)
        self.drop = nn.Dropout(cfg.dropout)
        self.lm_head = nn.Linear(cfg.d_hidden, cfg.vocab_size)

    def forward(self, idx: Tensor, cache=None) -> Tensor:
        B, T = idx.shape
        c = self.cfg.context
        padded = F.pad(idx, (c - 1, 0), value=self.cfg.vocab_size)  # (B, c - 1 + T)
        windows = padded.unfold(1, c, 1)  # (B, T, c): the c tokens ending at each position
        e = self.tok_emb(windows).view(B, T, -1)  # (B, T, c * E)
        h = self.drop(self.hidden(e).tanh())  # (B, T, H)
        return self.lm_head(h)  # (B, T, V)
