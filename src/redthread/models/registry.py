"""Every rung by name, and every model class a checkpoint can hold.

    build_model("lstm", vocab_size=27, d_hidden=128)     # a rung of the ladder, by its name
    build_model("TransformerLM", {"vocab_size": 65})     # a checkpoint's model class and saved config

Rung names and their classes:
    unigram, ngram   NGramLM (counts, order 1 and 3 by default)      models/ngram.py
    bigram           BigramLM (softmax regression on the last token)  models/bigram.py
    mlp              MLPLM (Bengio et al. 2003, a fixed window)       models/mlp.py
    rnn, lstm, gru   RecurrentLM (cells with an explicit state)       models/recurrent.py
    transformer      TransformerLM                                    models/transformer.py
A checkpoint may also hold an image model, no text rung: the ViT classifier (models/vit.py)
or the image-to-text Captioner (models/captioner.py).
"""

from __future__ import annotations

import torch
from torch import nn

from redthread.errors import InvalidValue
from redthread.models.bigram import BigramConfig, BigramLM
from redthread.models.captioner import Captioner, CaptionerConfig
from redthread.models.mlp import MLPLM, MLPConfig
from redthread.models.ngram import NGramConfig, NGramLM
from redthread.models.recurrent import RecurrentConfig, RecurrentLM
from redthread.models.size import check_model_fits
from redthread.models.transformer import (
    EncoderDecoder,
    TransformerConfig,
    TransformerLM,
)
from redthread.models.vit import ViT, ViTConfig

MODELS: dict[str, tuple[type[nn.Module], type]] = {
    "TransformerLM": (TransformerLM, TransformerConfig),
    "EncoderDecoder": (EncoderDecoder, TransformerConfig),
    "NGramLM": (NGramLM, NGramConfig),
    "BigramLM": (BigramLM, BigramConfig),
    "MLPLM": (MLPLM, MLPConfig),
    "RecurrentLM": (RecurrentLM, RecurrentConfig),
    "ViT": (ViT, ViTConfig),
    "Captioner": (Captioner, CaptionerConfig),
}

# rung name -> (class name, config fields that define the rung)
RUNGS: dict[str, tuple[str, dict]] = {
    "unigram": ("NGramLM", {"order": 1}),
    "ngram": ("NGramLM", {}),
    "bigram": ("BigramLM", {}),
    "mlp": ("MLPLM", {}),
    "rnn": ("RecurrentLM", {"cell": "rnn"}),
    "lstm": ("RecurrentLM", {"cell": "lstm"}),
    "gru": ("RecurrentLM", {"cell": "gru"}),
    "transformer": ("TransformerLM", {}),
}


def register(name: str, model_cls: type[nn.Module], config_cls: type, defining: dict | None = None) -> None:
    """Add a rung: `name` builds `model_cls(config_cls(...))`, with the config fields in `defining` fixed.

    The ladder then trains it (`redthread ladder --rungs NAME`) and checkpoints of it load. The
    config is a frozen dataclass with `ConfigMixin` and at least vocab_size and block_size fields;
    the model keeps the contract of `models/base.py` (see docs/architecture.md, "Add a rung")."""
    if name in RUNGS or model_cls.__name__ in MODELS and MODELS[model_cls.__name__][0] is not model_cls:
        raise InvalidValue(f"a rung or model class named {name!r} or {model_cls.__name__!r} is already registered")
    MODELS[model_cls.__name__] = (model_cls, config_cls)
    RUNGS[name] = (model_cls.__name__, dict(defining or {}))


def rung_class(name: str) -> str:
    """The model class behind a rung name (or a class name itself)."""
    if name in RUNGS:
        return RUNGS[name][0]
    if name in MODELS:
        return name
    raise InvalidValue(f"unknown model {name!r}; rungs: {', '.join(RUNGS)}")


def build_model(name: str, config: dict | None = None, **fields) -> nn.Module:
    """A model from a rung name or a class name, with config fields from `config` and keywords.

    A config whose weights cannot fit in this machine's memory is refused in one line before
    anything is allocated (`models/size.py`): `read_checkpoint` rebuilds models through here, so
    a checkpoint whose metadata says n_layer=1000000000 costs nothing."""
    class_name = rung_class(name)
    model_cls, config_cls = MODELS[class_name]
    defining = RUNGS[name][1] if name in RUNGS else {}
    cfg = config_cls.from_dict({**(config or {}), **fields, **defining})
    check_model_fits(model_cls.__name__, cfg)
    return model_cls(cfg)


def load_weights(model: nn.Module, state: dict[str, torch.Tensor], source: str = "checkpoint") -> None:
    """Load a state dict, turning any mismatch into one line that names the first bad tensor."""
    own = model.state_dict()
    missing = sorted(set(own) - set(state))
    unexpected = sorted(set(state) - set(own))
    if missing or unexpected:
        what = f"missing {missing[0]}" if missing else f"unexpected {unexpected[0]}"
        raise InvalidValue(f"{source} does not fit the model: {what} ({len(missing)} missing, {len(unexpected)} unexpected)")
    for name, t in state.items():
        if own[name].shape != t.shape:
            raise InvalidValue(
                f"{source} does not fit the model: {name} has shape {tuple(t.shape)}, the model expects {tuple(own[name].shape)}"
            )
    model.load_state_dict(state)
