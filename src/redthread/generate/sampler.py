"""Generation: sample from the learned P(next token | context), append, repeat (claim C12).

    for _ in range(max_new_tokens):
        logits = model(context)[:, -1]              # (B, V): the model's next-token scores
        logits = processors(logits)                 # repetition penalty -> temperature -> top-k -> top-p -> min-p
        next = sample(softmax(logits))              # or argmax: greedy (temperature 0)
        context = append(context, next)

With a cache, each step feeds only the newest token: the Transformer keeps the keys and values
of the past (`redthread.layers.kv_cache`), a recurrent network its hidden state. The result is
the same as recomputing the whole context. Rungs with no cache (`make_cache` returns None: the
n-gram and fixed-window models) are recomputed over their window every step.

Contexts longer than the model's window (block_size W) slide: a prompt keeps its last W
tokens; when generation fills the window, the context restarts from the last W // 2 tokens
(the cache is then refilled from them). Cached and uncached decoding share this rule, so
they see exactly the same context at every step.

Shape legend: B batch, T length so far, V vocab.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import torch
from torch import Tensor, nn

from redthread.errors import InvalidValue, check_int
from redthread.generate.config import SampleConfig
from redthread.generate.processors import sample_next
from redthread.layers.attention import RECORDER
from redthread.models.base import model_device


def window_start(length: int, start: int, block_size: int) -> int:
    """Where the context begins once the sequence holds `length` tokens (see the module docstring)."""
    if length - start <= block_size:
        return start
    return length - max(1, block_size // 2)


def generate_stream(
    model: nn.Module,
    idx: Tensor,
    max_new_tokens: int,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    min_p: float | None = None,
    repetition_penalty: float | None = None,
    seed: int | None = None,
    use_cache: bool = True,
    num_samples: int = 1,
    sampling: SampleConfig | None = None,
) -> Iterator[Tensor]:
    """An iterator over the new tokens (B * num_samples, 1), each as it is sampled.

    The sampling settings and the seed come as keyword arguments or as `sampling` (a SampleConfig),
    not both. The arguments are checked here, at the call, not at the first token."""
    sampling = sampling_settings(sampling, temperature=temperature, top_k=top_k, top_p=top_p, min_p=min_p,
                                 repetition_penalty=repetition_penalty, seed=seed)
    processors, greedy = sampling.build_processors()
    idx = checked_prompt(idx, model.cfg.vocab_size)
    check_int("max_new_tokens", max_new_tokens, minimum=0)
    check_int("num_samples", num_samples)
    return _decode(model, idx, max_new_tokens, processors, greedy, sampling, use_cache, num_samples)


def sampling_settings(sampling: SampleConfig | None, **keywords) -> SampleConfig:
    """The SampleConfig of a call: `sampling` itself, or one built from the keyword settings; both at once is refused."""
    if sampling is None:
        return SampleConfig(**keywords)
    given = [name for name, value in keywords.items() if value != getattr(SampleConfig, name)]  # the defaults
    if given:  # one of them would be silently ignored
        raise InvalidValue(f"{given[0]}= and sampling= are both given: pass the sampling settings one way, not both")
    return sampling


def checked_prompt(idx: Tensor, vocab_size: int) -> Tensor:
    """A prompt (T,) or (B, T) of token ids in [0, vocab_size) -> (B, T); a one-line error otherwise."""
    if idx.dim() == 1:
        idx = idx[None]
    if idx.dim() != 2 or idx.size(1) == 0:
        raise InvalidValue("the prompt must contain at least one token")
    if idx.min() < 0 or idx.max() >= vocab_size:
        raise InvalidValue(f"prompt token ids must be in [0, {vocab_size}), got {idx.min().item()}..{idx.max().item()}")
    return idx


def decoding_step(model: nn.Module) -> Callable | None:
    """The model's one-token step (`decoder_step()`: the same logits as `forward`, fewer ops) when
    it has one and nothing observes its modules: the step calls no submodules, so hooks and an
    open `record_attention` need `forward`. None: decode with `forward`."""
    if not getattr(model, "can_step", False) or RECORDER.get() is not None:
        return None
    # nn.Module keeps hooks in these dicts (per module, and global ones in torch.nn.modules.module)
    hooked = nn.modules.module._global_forward_hooks or nn.modules.module._global_forward_pre_hooks
    if hooked or any(m._forward_hooks or m._forward_pre_hooks for m in model.modules()):
        return None
    return model.decoder_step()


@torch.inference_mode()
def _decode(model, idx, max_new_tokens, processors, greedy, sampling, use_cache, num_samples) -> Iterator[Tensor]:
    device = model_device(model)
    seq = idx.to(device).repeat_interleave(num_samples, dim=0)  # (B, T)
    generator = sampling.generator(device)
    W = model.block_size
    was_training = model.training
    model.eval()
    try:
        start = max(0, seq.size(1) - W)  # a long prompt keeps its last W tokens
        cache = model.make_cache(seq.size(0), W) if use_cache else None
        use_cache = cache is not None  # a rung without a cache is recomputed
        step = decoding_step(model) if use_cache else None
        fed = start  # the cache holds seq[:, start:fed]
        for _ in range(max_new_tokens):
            new_start = window_start(seq.size(1), start, W)
            if use_cache:
                if new_start != start:
                    cache = model.make_cache(seq.size(0), W)  # the window slid: refill from its new start
                    fed = new_start
                if step is not None and seq.size(1) - fed == 1:
                    logits = step(seq[:, fed:], cache)  # (B, V): one new token per row
                else:
                    logits = model(seq[:, fed:], cache=cache)[:, -1]  # (B, V)
                fed = seq.size(1)
            else:
                logits = model(seq[:, new_start:])[:, -1]  # (B, V)
            start = new_start
            nxt = sample_next(logits.float(), seq, processors, greedy, generator)  # (B, 1)
            seq = torch.cat([seq, nxt], dim=1)
            yield nxt
    finally:
        model.train(was_training)


def generate(
    model: nn.Module,
    idx: Tensor,
    max_new_tokens: int = 100,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    min_p: float | None = None,
    repetition_penalty: float | None = None,
    seed: int | None = None,
    use_cache: bool = True,
    num_samples: int = 1,
    on_token: Callable[[Tensor], None] | None = None,
    sampling: SampleConfig | None = None,
) -> Tensor:
    """Continue each prompt row of idx (B, T) by max_new_tokens -> (B * num_samples, T + new).

    The sampling settings and the seed come as keyword arguments or as `sampling` (a SampleConfig), not both."""
    if idx.dim() == 1:
        idx = idx[None]
    new = []
    for nxt in generate_stream(
        model, idx, max_new_tokens, temperature, top_k, top_p, min_p, repetition_penalty, seed, use_cache, num_samples,
        sampling,
    ):
        new.append(nxt)
        if on_token is not None:
            on_token(nxt)
    prompt = idx.to(model_device(model)).repeat_interleave(num_samples, dim=0)
    return torch.cat([prompt, *new], dim=1)
