"""The contract every rung of the ladder keeps: a model of a conditional distribution.

Claims C1, C2 and C12 of the essay: from linear regression to the Transformer, each model
maps a context to a distribution over what comes next, and is trained by maximising the
likelihood of what did come next. The rungs differ only in what context they can use and how.

`Estimator` writes the contract once; each family below fills in its output's distribution:

    forward(x)          the raw output: logits, or (mean, log_var)
    distribution(x)     p(y | x) as a torch Distribution, from forward's output
    nll(x, y)           -log p(y | x) in nats: `objective(forward(x), y)`, or, for a model that
                        names no objective, -distribution(x).log_prob(y)
    objective           the likelihood of forward's output (`models/likelihoods.py`): what
                        `redthread.train` minimises unless it is given another
    num_params()        trainable parameters, a tied weight counted once

- `LanguageModel`: token ids idx (B, T) -> logits (B, T, V); row t is P(token_{t+1} | tokens_<=t).
  It may offer a cache (`make_cache`) so `generate()` feeds one new token per step; rungs
  without one are recomputed over the context window.
- `Classifier`: x (B, F) or images -> logits (B, K), P(class | x).
- `GaussianRegressor`: x (B, F) -> (mean, log_var), each (B,), the predictive Normal.

Shape legend: B batch, T positions, V vocab, K classes, F features.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor, nn
from torch.distributions import Categorical, Distribution, Normal

from redthread.errors import InvalidValue
from redthread.models.likelihoods import normal_nll, token_nll

REDUCTIONS = ("mean", "sum", "none")


class Estimator(nn.Module):
    """A model of p(y | x): forward(x) -> raw output; distribution, nll, objective and num_params as above."""

    objective: Callable[..., Tensor] | None = None  # set as staticmethod(likelihood) by each family
    reads: str | None = None  # what x is for a person: "text" (token ids), "image" (pixels); None: neither alone
    attends: bool = False  # True: it has attention layers whose weights can be recorded and shown

    def distribution(self, x: Any) -> Distribution:
        """p(y | x) for every example of the batch x."""
        raise NotImplementedError(f"{type(self).__name__} must define distribution(x)")

    def nll(self, x: Any, y: Tensor, reduction: str = "mean") -> Tensor:
        """-log p(y | x) in nats, the mean over what is scored (reduction="sum": the total; "none": each)."""
        if reduction not in REDUCTIONS:
            raise InvalidValue(f"reduction must be one of {', '.join(REDUCTIONS)}, got {reduction!r}")
        if self.objective is not None:
            return self.objective(self(x), y, reduction=reduction)
        nll = -self.distribution(x).log_prob(y)
        return nll.mean() if reduction == "mean" else nll.sum() if reduction == "sum" else nll

    def num_params(self) -> int:
        """Trainable parameters (a tied weight counted once); rungs that count differently say so."""
        return sum(p.numel() for p in self.parameters())


class Classifier(Estimator):
    """Base of the classification rungs: forward(x) -> logits (B, K)."""

    objective = staticmethod(token_nll)  # -log P(y | x): cross-entropy of the logits

    def distribution(self, x: Any) -> Categorical:
        """The predictive P(class | x): batch shape (B,), K outcomes."""
        return Categorical(logits=self(x).float())

    def predict(self, x: Any) -> Tensor:
        """The most probable class (B,)."""
        return self(x).argmax(-1)


class GaussianRegressor(Estimator):
    """Base of the neural regression rungs: forward(x (B, F)) -> (mean, log_var), each (B,)."""

    objective = staticmethod(normal_nll)  # -log N(y; mean, exp(log_var))

    def distribution(self, x: Tensor) -> Normal:
        """The predictive p(y | x) = N(mean(x), exp(log_var(x))), batch shape (B,)."""
        mean, log_var = self(x)
        return Normal(mean, (0.5 * log_var).exp())


class LanguageModel(Estimator):
    """Base of the sequence rungs: forward(idx, cache=None) -> logits (B, T, V).

    Subclasses set `self.cfg` (a frozen dataclass with at least vocab_size and block_size).
    """

    cfg: Any
    reads = "text"

    @property
    def block_size(self) -> int:
        """The context window: the most tokens the model is trained on and `generate` feeds it."""
        return self.cfg.block_size

    @property
    def vocab_size(self) -> int:
        return self.cfg.vocab_size

    objective = staticmethod(token_nll)  # -log P(next token | context); IGNORE_INDEX targets are not scored

    def distribution(self, idx: Tensor) -> Categorical:
        """P(next token | context) at every position of idx (B, T): batch shape (B, T), V outcomes."""
        return Categorical(logits=self(idx).float())

    def make_cache(self, batch_size: int, capacity: int | None = None) -> Any:
        """State for incremental decoding; None: this rung recomputes its window every step."""
        return None


def model_device(model: nn.Module) -> torch.device:
    """The device of a model's parameters, or of its buffers (count models have no parameters)."""
    for t in model.parameters():
        return t.device
    for t in model.buffers():
        return t.device
    return torch.device("cpu")


DEVICE_TYPES = ("cpu", "cuda", "mps")  # where a model can train and run; "meta" and others hold no data


def resolve_device(name: str = "auto") -> torch.device:
    """A device name ("auto", "cpu", "cuda", "cuda:1", "mps") -> torch.device; one this machine lacks is refused."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        device = torch.device(name)
    except (RuntimeError, TypeError):
        raise InvalidValue(f"unknown device {name!r}: use auto, cpu or cuda") from None
    if device.type not in DEVICE_TYPES:
        raise InvalidValue(f"device {name!r} cannot run a model: use auto, cpu or cuda")
    if device.type == "mps" and not torch.backends.mps.is_available():
        raise InvalidValue("device mps requested but this machine has no Apple GPU")
    if device.type == "cuda" and not torch.cuda.is_available():
        raise InvalidValue("device cuda requested but no CUDA GPU is available")
    if device.type == "cuda" and device.index is not None and device.index >= torch.cuda.device_count():
        raise InvalidValue(f"device {name} requested but this machine has {torch.cuda.device_count()} GPU(s)")
    return device
