"""One experiment per claim of the essay, each a module with `NAME`, `CLAIMS` and
`run(quick, seed, progress) -> Report`; `redthread experiment NAME` runs one, `all` runs every one.

The experiments, the claims they test and what they measure: `SUMMARIES` below (also what
`redthread experiment --help` lists).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from contextlib import contextmanager

import torch

from redthread.errors import InvalidValue

EXPERIMENTS = {  # name -> module under redthread.experiments, or a full dotted module path (one of your own)
    "regression": "regression",
    "attention-as-regression": "attention_regression",
    "scaling": "scaling",
    "rnn-gradients": "rnn_gradients",
    "long-range": "long_range",
    "sequential": "sequential",
    "permutation": "permutation",
    "heads": "heads",
    "ffn": "ffn",
    "depth": "depth",
    "sampling": "sampling",
    "calibration": "calibration",
    "coreference": "coreference",
    "classification": "classification",
    "memory": "memory",
    "locality": "locality",
    "ensemble": "ensemble",
    "vision": "vision",
    "referent": "referent",
    "real-models": "real_models",
    "poetry-heads": "poetry_heads",
}


SUMMARIES = {  # name -> (claims, what it measures)
    "regression": ("C1", "linear regression -> E[y|x]; MSE = Gaussian likelihood"),
    "attention-as-regression": ("C6", "Nadaraya-Watson attention recovers a non-linear E[y|x]"),
    "scaling": ("C7", "Var(q.k) grows as d_k; without 1/sqrt(d_k) softmax saturates"),
    "rnn-gradients": ("C3", "||dh_T/dh_t|| against T - t: RNN, LSTM, Transformer"),
    "long-range": ("C3, C5, C6", "recall accuracy against distance"),
    "sequential": ("C4", "dependent steps and time against sequence length"),
    "permutation": ("C8", "equivariance without positions; an order task"),
    "heads": ("C9", "head specialisation and ablation"),
    "ffn": ("C10", "ablating FFN vs attention blocks"),
    "depth": ("C11", "depth with and without residuals / LayerNorm"),
    "sampling": ("C12", "greedy, temperature, top-k, top-p"),
    "calibration": ("C12", "reliability of next-token probabilities"),
    "coreference": ("C13", "'it' -> its referent in a pretrained encoder, on controlled pairs"),
    "classification": ("C2", "softmax regression and an MLP against a known posterior"),
    "memory": ("C5", "recall and excess NLL against the recurrent state size"),
    "locality": ("C8", "attention weight against distance, by kind of position"),
    "ensemble": ("C9", "heads as an ensemble: disagreement, removing heads vs dimensions"),
    "vision": ("C14, C2", "ViT, MLP and softmax regression on digits; patch order; grounding"),
    "referent": ("C13", "positive control: a model that learned a referent; attention, attribution, ablation"),
    "real-models": ("C8, C9, C11, C12",
                    "real models (Shakespeare, MiniLM): locality, head roles, token identity, calibration"),
    "poetry-heads": ("C9", "heads on Tang regulated verse: 对仗 and rhyme heads, held-out choice, shuffled control"),
}


def module_path(name: str) -> str:
    module = EXPERIMENTS[name]
    return module if "." in module else f"redthread.experiments.{module}"


def available() -> list[str]:
    """The experiments whose module exists in this install, in the order above."""
    out = []
    for name in EXPERIMENTS:
        try:
            if importlib.util.find_spec(module_path(name)) is not None:
                out.append(name)
        except ModuleNotFoundError:  # a dotted path whose package is not installed
            continue
    return out


def load(name: str):
    if name not in EXPERIMENTS or name not in available():
        raise InvalidValue(f"unknown experiment {name!r}; experiments: {', '.join(available())}, or all")
    return importlib.import_module(module_path(name))


@contextmanager
def one_thread() -> Iterator[None]:
    """Run torch on one CPU thread inside the block, then restore the setting. The experiments'
    models are tiny: a second thread costs more than it saves (10x slower on a busy 2-core CPU)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)
