"""Every model that a checkpoint can hold, by class name: how to rebuild it from its saved config."""

from __future__ import annotations

from torch import nn

from redthread.errors import RedthreadError
from redthread.models.transformer import EncoderDecoder, TransformerConfig, TransformerLM

MODELS: dict[str, tuple[type[nn.Module], type]] = {
    "TransformerLM": (TransformerLM, TransformerConfig),
    "EncoderDecoder": (EncoderDecoder, TransformerConfig),
}


def register(model_cls: type[nn.Module], config_cls: type) -> None:
    MODELS[model_cls.__name__] = (model_cls, config_cls)


def build_model(name: str, config: dict) -> nn.Module:
    if name not in MODELS:
        raise RedthreadError(f"unknown model class {name!r}; known: {', '.join(sorted(MODELS))}")
    model_cls, config_cls = MODELS[name]
    return model_cls(config_cls.from_dict(config))
