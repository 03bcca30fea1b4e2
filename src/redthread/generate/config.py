"""How to pick the next token, in one frozen, validated object (claim C12: generation samples P(next | context)).

    SampleConfig(temperature=0.8, top_p=0.9, seed=0)
        .build_processors()        the logits processors, in the fixed order, and whether to decode greedily
        .probabilities(logits, idx)   P(next token) after them: (B, V), one-hot at the argmax when greedy
        .generator(device)         the torch.Generator that makes draws reproducible (None without a seed)

`generate`, `generate_stream`, the command line's `sample` and the web app take their settings
from it; the arguments are validated once, when it is made, with a one-line `InvalidValue` (a
ValueError) naming the bad one. Each field carries its meaning and bounds as metadata, from which
the `sample` command's flags and the web app's request models are built.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch
from torch import Tensor

from redthread.errors import InvalidValue
from redthread.generate.processors import Processor, build_processors, process
from redthread.models.config import check_settings, setting

MAX_SEED = 2**64 - 1  # torch.Generator.manual_seed takes seeds 0 .. 2**64 - 1


@dataclass(frozen=True)
class SampleConfig:
    temperature: float = setting(1.0, "divide the logits by it before sampling; 0 = greedy", ge=0)
    top_k: int | None = setting(None, "sample from the k most probable tokens only", ge=1)
    top_p: float | None = setting(None, "sample from the fewest tokens whose probabilities add up to p (nucleus)", gt=0, le=1)
    min_p: float | None = setting(None, "drop tokens less probable than min_p times the most probable", ge=0, le=1)
    repetition_penalty: float | None = setting(None, "make tokens already in the text less likely (> 1) or more (< 1)", gt=0)
    seed: int | None = setting(None, "makes the draws reproducible", ge=0, le=MAX_SEED)

    def __post_init__(self):
        self.build_processors()  # each processor checks its setting (the bounds declared above: tested)
        check_settings(self, wrong_type=InvalidValue)  # and the seed; every sampling error is a ValueError

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

