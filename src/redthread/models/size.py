"""How big a model is, from its config alone, and whether it fits in memory: checked before anything is built.

Building a model to count its parameters is no answer to a hostile config: a checkpoint whose
metadata says n_layer=1000000000 makes a billion modules (it never finishes, even on the meta
device), and vocab_size=10**12 asks the allocator for terabytes. So every model class of the
registry has an analytic count here (`parameter_count`, exact, checked against built models in
tests/models/test_size.py) and a byte count of what building it allocates (`model_bytes`: float32
parameters, plus the fixed tables kept as buffers, plus the float64 scratch those are computed in).

`check_fits` compares an estimate with the memory there is (`memory_limit`): the physical RAM
(`os.sysconf`), lowered by the address-space limit (`ulimit -v`, RLIMIT_AS) or a container's
cgroup limit when they are set, or the CUDA device's memory when the target is a GPU. The total,
never the memory free right now: a check that refuses only what cannot fit never refuses a run
that would have worked. A refusal is one line naming the size that matters most (the field whose
reset to its default shrinks the estimate most), e.g.

    n_layer=1000000000 needs ~46.6 TiB for the weights of a TransformerLM; this machine has 23.4 GiB of memory
"""

from __future__ import annotations

import dataclasses
import os
import resource
from collections.abc import Callable
from pathlib import Path

from redthread.errors import RedthreadError
from redthread.words import article

FP32, FP64 = 4, 8
CGROUP_MEMORY_MAX = Path("/sys/fs/cgroup/memory.max")
GATES = {"rnn": 1, "lstm": 4, "gru": 3}  # the recurrent cells' gate blocks (models/recurrent.py)

# the config fields that decide an allocation, per config class: the candidates a refusal names
SIZE_FIELDS = (
    "vocab_size", "src_vocab_size", "type_vocab_size", "block_size", "n_layer", "n_layer_encoder",
    "n_layer_decoder", "d_model", "d_ff", "d_embed", "d_hidden", "context", "order", "image_size", "channels",
    "n_classes", "n_head",
)


# -- parameter and byte counts, per model class --------------------------------------------------------------


def _layer_norm(C: int, bias: bool = True) -> int:
    return C + C * bias


def _attention(C: int, bias: bool) -> int:
    return 4 * C * C + 4 * C * bias  # packed q, k, v projection and the output projection


def _block(C: int, F: int, bias: bool, cross: bool) -> int:
    """A Transformer block's parameters: attention (+ cross-attention), the FFN and their LayerNorms."""
    n = _attention(C, bias) + _layer_norm(C, bias) + 2 * C * F + (F + C) * bias + _layer_norm(C, bias)
    if cross:
        n += _attention(C, bias) + _layer_norm(C, bias)
    return n


def _text_stack(cfg, vocab_size: int, cross: bool, head: bool) -> tuple[int, int]:
    """(parameters, buffer bytes) of a TransformerConfig stack: embeddings, blocks, final norm (and head)."""
    C, P, bias = cfg.d_model, cfg.block_size, cfg.bias
    params = vocab_size * C + cfg.n_layer * _block(C, cfg.ffn_size, bias, cross)
    params += cfg.type_vocab_size * C + (_layer_norm(C, bias) if cfg.embed_norm else 0)
    params += _layer_norm(C, bias) if cfg.norm == "pre" else 0
    buffers = 0
    if cfg.pos == "learned":
        params += P * C
    elif cfg.pos == "sinusoidal":
        buffers += P * C * (FP32 + 3 * FP64)  # the float32 table, computed in float64 (a table and two halves)
    elif cfg.pos == "rope":
        buffers += cfg.n_layer * P * cfg.d_head * (FP32 + 2 * FP64)  # cos and sin per layer, from float64 angles
    if head and not cfg.tie_weights:
        params += C * cfg.vocab_size
    return params, buffers


def _vit(cfg) -> tuple[int, int]:
    C, n_pos = cfg.d_model, cfg.n_patches + (cfg.pool == "cls")
    params = cfg.channels * C * cfg.patch_size**2 + C  # the patch projection (a strided convolution)
    params += C if cfg.pool == "cls" else 0
    params += cfg.n_layer * _block(C, cfg.ffn_size, True, False) + _layer_norm(C)
    params += (C * cfg.n_classes + cfg.n_classes) if cfg.n_classes else 0
    buffers = 0
    if cfg.pos == "learned":
        params += n_pos * C
    else:
        buffers += n_pos * C * (FP32 + 3 * FP64)
    return params, buffers


def counts(class_name: str, cfg) -> tuple[int, int]:
    """(parameters counted once, bytes of buffers and construction scratch) of `class_name` built from `cfg`."""
    if class_name in ("TransformerLM", "Decoder"):
        return _text_stack(cfg, cfg.vocab_size, cross=class_name == "Decoder", head=True)
    if class_name == "EncoderDecoder":
        enc_p, enc_b = _text_stack(dataclasses.replace(cfg, tie_weights=True), cfg.src_vocab_size or cfg.vocab_size,
                                   cross=False, head=False)
        dec_p, dec_b = _text_stack(cfg, cfg.vocab_size, cross=True, head=True)
        return enc_p + dec_p, enc_b + dec_b
    if class_name == "NGramLM":
        V = cfg.vocab_size
        return 0, FP64 * sum(V ** (j - 1) * V for j in range(1, cfg.order + 1))  # the count tables
    if class_name == "BigramLM":
        return cfg.vocab_size**2, 0
    if class_name == "MLPLM":
        V, E, H = cfg.vocab_size, cfg.d_embed, cfg.d_hidden
        return (V + 1) * E + cfg.context * E * H + H + H * V + V, 0
    if class_name == "RecurrentLM":
        V, E, H, G = cfg.vocab_size, cfg.d_embed, cfg.d_hidden, GATES[cfg.cell]
        cells = G * H * (E + H + 2) + (cfg.n_layer - 1) * G * H * (2 * H + 2)
        return V * E + cells + H * V + V, 0
    if class_name == "ViT":
        return _vit(cfg)
    if class_name == "Captioner":
        enc_p, enc_b = _vit(cfg.encoder_config())
        dec_p, dec_b = _text_stack(cfg.decoder_config(), cfg.vocab_size, cross=True, head=True)
        return enc_p + dec_p, enc_b + dec_b
    raise KeyError(class_name)


def knows(class_name: str) -> bool:
    """Whether this module can size `class_name` without building it."""
    return class_name in ("TransformerLM", "Decoder", "EncoderDecoder", "NGramLM", "BigramLM", "MLPLM",
                          "RecurrentLM", "ViT", "Captioner")


def parameter_count(class_name: str, cfg) -> int:
    """Exactly `sum(p.numel() for p in model.parameters())` of the model `class_name(cfg)` would be."""
    return counts(class_name, cfg)[0]


def model_bytes(class_name: str, cfg) -> int:
    """Bytes that building `class_name(cfg)` allocates: float32 parameters, buffers and their scratch."""
    params, buffers = counts(class_name, cfg)
    return FP32 * params + buffers


# -- the memory there is ---------------------------------------------------------------------------------------


def memory_limit(device=None) -> tuple[int, str]:
    """(bytes, how to say it) of the memory a run on `device` (None: the CPU) can have at most."""
    import torch

    device = torch.device("cpu") if device is None else torch.device(device)
    if device.type == "cuda" and torch.cuda.is_available():
        props = torch.cuda.get_device_properties(device)
        return props.total_memory, f"the GPU ({props.name}) has {format_bytes(props.total_memory)}"
    limit = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    said = f"this machine has {format_bytes(limit)} of memory"
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft != resource.RLIM_INFINITY and soft < limit:
        limit, said = soft, f"the address-space limit (ulimit -v) is {format_bytes(soft)}"
    cgroup = _cgroup_limit()
    if cgroup is not None and cgroup < limit:
        limit, said = cgroup, f"this container's memory limit is {format_bytes(cgroup)}"
    return limit, said


def _cgroup_limit() -> int | None:
    try:
        text = CGROUP_MEMORY_MAX.read_text().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None  # "max": no limit


def format_bytes(n: float) -> str:
    """1536 -> '1.5 KiB'; binary units up to EiB, then powers of ten."""
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"):
        if n < 1024 or unit == "EiB":
            break
        n /= 1024
    if unit == "EiB" and n >= 1024:
        return f"{n * 2**60:.1e} bytes"
    return f"{n:.0f} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"


# -- the check ------------------------------------------------------------------------------------------------


def culprit(estimate: Callable[[dict], int], values: dict, defaults: dict) -> str:
    """'name=value' of the entry of `values` whose reset to `defaults[name]` lowers `estimate` most.

    `estimate` takes a dict like `values`; a combination it refuses with RedthreadError (e.g. a
    d_model that no longer divides by n_head) is skipped. With no reset lowering the estimate,
    every value that differs from its default is named."""
    base, best, best_drop = estimate(values), None, 0
    for name, value in values.items():
        if name not in defaults or value == defaults[name] or not isinstance(value, int):
            continue
        try:
            drop = base - estimate({**values, name: defaults[name]})
        except RedthreadError:
            continue
        if drop > best_drop:
            best, best_drop = name, drop
    if best is None:
        changed = [f"{k}={v}" for k, v in values.items() if k in defaults and v != defaults[k]]
        return ", ".join(changed) or "this configuration"
    return f"{best}={values[best]}"


def check_fits(needed: int, what: str, purpose: str = "", device=None, limit: tuple[int, str] | None = None) -> None:
    """Raise one line, '{what} needs ~X{purpose}; this machine has Y', when `needed` bytes exceed the memory there is."""
    available, said = limit if limit is not None else memory_limit(device)
    if needed > available:
        raise RedthreadError(f"{what} needs ~{format_bytes(needed)}{purpose}; {said}")


def config_sizes(cfg) -> tuple[dict, dict]:
    """(values, defaults) of the config's size fields (a default None: derived from another field, e.g. d_ff)."""
    fields = [f for f in dataclasses.fields(cfg) if f.name in SIZE_FIELDS and f.default is not dataclasses.MISSING]
    return {f.name: getattr(cfg, f.name) for f in fields}, {f.name: f.default for f in fields}


def check_model_fits(class_name: str, cfg, device=None) -> None:
    """Refuse, in one line, a config whose weights alone do not fit in memory, before anything is built."""
    if not knows(class_name):
        return  # a class registered from outside: nothing to size it by
    needed, limit = model_bytes(class_name, cfg), memory_limit(device)
    if needed <= limit[0]:
        return
    values, defaults = config_sizes(cfg)
    name = culprit(lambda v: model_bytes(class_name, dataclasses.replace(cfg, **v)), values, defaults)
    check_fits(needed, name, f" for the weights of {article(class_name)}", limit=limit)


# -- generation ---------------------------------------------------------------------------------------------------

GENERATION_DEFAULTS = {"num_samples": 1, "max_new_tokens": 500}  # redthread sample's defaults
HOST_BYTES_PER_TOKEN = 32  # a generated id kept as a tensor, a Python int in a list, and decoded text


def generation_bytes(class_name: str, cfg, num_samples: int, prompt_len: int, max_new_tokens: int,
                     weights: int = 0, dtype_bytes: int = FP32) -> int:
    """Bytes to generate `max_new_tokens` after a prompt of `prompt_len` tokens for `num_samples` sequences.

    Per sequence: the decoding state (a Transformer's key/value cache over its window, a recurrent
    network's hidden states), one forward pass over the window (the prompt's, and after every slide
    of the window, logits at every position), the processors' copies of the next-token logits, and
    the tokens themselves; plus `weights`, the model's own bytes."""
    V, W = cfg.vocab_size, cfg.block_size
    T = max(1, min(W, prompt_len + max_new_tokens))  # the longest context one forward pass sees
    if class_name in ("TransformerLM", "Decoder"):
        state = 2 * cfg.n_layer * W * cfg.d_model * dtype_bytes
        forward = T * dtype_bytes * (8 * cfg.d_model + cfg.ffn_size + V)
    elif class_name == "RecurrentLM":
        state = 2 * cfg.n_layer * cfg.d_hidden * dtype_bytes
        forward = T * dtype_bytes * (cfg.d_embed + 2 * GATES[cfg.cell] * cfg.d_hidden + cfg.d_hidden + V)
    elif class_name == "MLPLM":
        state, forward = 0, T * dtype_bytes * (cfg.context * cfg.d_embed + cfg.d_hidden + V)
    elif class_name == "NGramLM":
        state, forward = 0, 2 * T * FP64 * V
    else:  # the bigram, and any other text model: at least the logits of the window
        state, forward = 0, T * dtype_bytes * V
    per_sequence = state + forward + 4 * FP32 * V + (prompt_len + max_new_tokens) * HOST_BYTES_PER_TOKEN
    return weights + num_samples * per_sequence


def check_generation_memory(model, num_samples: int, prompt_len: int, max_new_tokens: int) -> None:
    """Refuse, in one line, a generation whose caches, logits and tokens cannot fit, before decoding starts."""
    cfg = getattr(model, "cfg", None)
    if cfg is None or not hasattr(cfg, "vocab_size") or not hasattr(cfg, "block_size"):
        return
    params = list(model.parameters())
    device = params[0].device if params else None
    dtype_bytes = params[0].element_size() if params else FP32
    class_name = type(model).__name__
    weights = model_bytes(class_name, cfg) if knows(class_name) else sum(p.numel() * p.element_size() for p in params)

    def needed(v: dict) -> int:
        return generation_bytes(class_name, cfg, v["num_samples"], prompt_len, v["max_new_tokens"], weights, dtype_bytes)

    values = {"num_samples": num_samples, "max_new_tokens": max_new_tokens}
    limit = memory_limit(device)
    total = needed(values)
    if total <= limit[0]:
        return
    name = culprit(needed, values, GENERATION_DEFAULTS)
    check_fits(total, name, f" to sample (key/value caches, logits and tokens of {num_samples:,} sequences)", limit=limit)
