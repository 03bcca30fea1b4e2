"""How to pick the next token, in one frozen, validated object (claim C12: generation samples P(next | context)).

    SampleConfig(temperature=0.8, top_p=0.9, seed=0)
        .build_processors()        the logits processors, in the fixed order, and whether to decode greedily
        .probabilities(logits, idx)   P(next token) after them: (B, V), one-hot at the argmax when greedy
        .generator(device)         the torch.Generator that makes draws reproducible (None without a seed)

`generate`, `generate_stream`, the command line's `sample` and the web app take their settings
from it; the arguments are validated once, when it is made, with a one-line `InvalidValue` (a
ValueError) naming the bad one.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch
from torch import Tensor

from redthread.errors import InvalidValue
from redthread.generate.processors import Processor, build_processors, process

MAX_SEED = 2**64 - 1  # torch.Generator.manual_seed takes seeds 0 .. 2**64 - 1


@dataclass(frozen=True)
class SampleConfig:
    temperature: float = 1.0  # 0 = greedy
    top_k: int | None = None
    top_p: float | None = None
    min_p: float | None = None
    repetition_penalty: float | None = None
    seed: int | None = None  # makes the draws reproducible

    def __post_init__(self):
        self.build_processors()  # validates every setting
        if self.seed is not None and (not isinstance(self.seed, int) or isinstance(self.seed, bool)
                                      or not 0 <= self.seed <= MAX_SEED):
            raise InvalidValue(f"seed must be an integer from 0 to 2**64 - 1, got {self.seed!r}")

    def build_processors(self) -> tuple[list[Processor], bool]:
        return build_processors(self.temperature, self.top_k, self.top_p, self.min_p, self.repetition_penalty)

    @property
    def greedy(self) -> bool:
        return self.temperature == 0

    def probabilities(self, logits: Tensor, idx: Tensor) -> Tensor:
        """P(next token) (B, V) from next-token logits (B, V) and the context idx (B, T), after the processors."""
        processors, greedy = self.build_processors()
        logits = process(logits, idx, processors)
        if greedy:
            return torch.zeros_like(logits).scatter_(-1, logits.argmax(dim=-1, keepdim=True), 1.0)
        return logits.softmax(dim=-1)

    def generator(self, device: torch.device | str = "cpu") -> torch.Generator | None:
        if self.seed is None:
            return None
        return torch.Generator(device).manual_seed(self.seed)

    def to_dict(self) -> dict:
        return asdict(self)
