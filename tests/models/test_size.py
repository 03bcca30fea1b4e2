"""Model sizes from the config alone: exact parameter counts for every registered class, and refusals
before anything is built (issue 14: a checkpoint saying n_layer=1000000000 must cost nothing)."""

from __future__ import annotations

import dataclasses
import resource
import time

import pytest
import torch

from redthread.errors import RedthreadError
from redthread.models import size
from redthread.models.registry import MODELS, build_model
from redthread.models.transformer import TransformerConfig
from redthread.train import memory

GIB = 2**30

CONFIGS = {
    "TransformerLM": [
        {},
        dict(vocab_size=7, block_size=8, n_layer=2, n_head=2, d_model=8, d_ff=12, bias=False, pos="learned", tie_weights=False),
        dict(vocab_size=5, block_size=6, n_layer=1, n_head=2, d_model=8, pos="rope", norm="post", embed_norm=True,
             type_vocab_size=2),
        dict(vocab_size=9, block_size=4, n_layer=3, n_head=1, d_model=4, pos="none"),
    ],
    "EncoderDecoder": [
        dict(vocab_size=7, block_size=8, n_layer=2, n_head=2, d_model=8),
        dict(vocab_size=7, src_vocab_size=11, block_size=8, n_layer=1, n_head=2, d_model=8, pos="rope", bias=False,
             tie_weights=False),
    ],
    "NGramLM": [dict(vocab_size=5, order=1), dict(vocab_size=6, order=3)],
    "BigramLM": [dict(vocab_size=9)],
    "MLPLM": [{}, dict(vocab_size=5, context=3, d_embed=4, d_hidden=6)],
    "RecurrentLM": [dict(cell=c, vocab_size=5, n_layer=n, d_embed=3, d_hidden=4) for c in ("rnn", "lstm", "gru") for n in (1, 3)],
    "ViT": [{}, dict(pool="mean", pos="sinusoidal2d", n_classes=0, d_model=8, n_head=2, d_ff=5), dict(channels=3, n_classes=4)],
    "Captioner": [{}, dict(pos="sinusoidal2d", d_model=16, n_head=2, n_layer_encoder=1, n_layer_decoder=3)],
}


def built(class_name: str, fields: dict):
    model_cls, config_cls = MODELS[class_name]
    cfg = config_cls.from_dict(fields)
    return cfg, model_cls(cfg)


def test_every_registered_class_is_sized():
    assert set(CONFIGS) == set(MODELS) and all(size.knows(name) for name in MODELS)


@pytest.mark.parametrize("class_name, fields", [(c, f) for c, fs in CONFIGS.items() for f in fs])
def test_parameter_count_is_exact_and_model_bytes_cover_parameters_and_buffers(class_name, fields):
    cfg, model = built(class_name, fields)
    assert size.parameter_count(class_name, cfg) == sum(p.numel() for p in model.parameters())
    held = sum(p.numel() * p.element_size() for p in model.parameters())
    held += sum(b.numel() * b.element_size() for b in model.buffers())
    assert held <= size.model_bytes(class_name, cfg) <= 4 * held + 2**16  # covers what is kept, never absurdly over


@pytest.mark.parametrize("fields, needle", [
    (dict(n_layer=10**9), "n_layer=1000000000"),
    (dict(vocab_size=10**12), "vocab_size=1000000000000"),
    (dict(block_size=10**12), "block_size=1000000000000"),
    (dict(d_model=10**12, n_head=1), "d_model=1000000000000"),
    (dict(n_layer=2, d_ff=10**12), "d_ff=1000000000000"),
])
def test_build_model_refuses_a_config_that_cannot_fit_before_building_it(fields, needle):
    t = time.perf_counter()
    with pytest.raises(RedthreadError) as info:
        build_model("TransformerLM", fields)
    message = str(info.value)
    assert needle in message and "weights" in message and "memory" in message and "\n" not in message
    assert time.perf_counter() - t < 1.0


@pytest.mark.parametrize("rung, fields, needle", [
    ("lstm", dict(n_layer=10**9), "n_layer="), ("mlp", dict(d_hidden=10**12), "d_hidden="),
    ("bigram", dict(vocab_size=10**7), "vocab_size="), ("ViT", dict(n_layer=10**9), "n_layer="),
    ("Captioner", dict(n_layer_decoder=10**9), "n_layer_decoder="), ("EncoderDecoder", dict(vocab_size=10**12), "vocab_size="),
])
def test_every_class_is_checked(rung, fields, needle):
    with pytest.raises(RedthreadError, match=needle):
        build_model(rung, fields)


def test_legitimate_configs_pass():
    gpt2 = TransformerConfig(vocab_size=50304, block_size=1024, n_layer=12, n_head=12, d_model=768, pos="learned")
    size.check_model_fits("TransformerLM", gpt2)  # ~0.5 GiB of weights
    for class_name, fields in CONFIGS.items():
        size.check_model_fits(class_name, MODELS[class_name][1].from_dict(fields[0]))


def test_memory_limit_is_lowered_by_ulimit_v(monkeypatch):
    physical, said = size.memory_limit()
    assert physical > GIB and "memory" in said
    monkeypatch.setattr(size.resource, "getrlimit", lambda what: (3 * GIB, resource.RLIM_INFINITY))
    assert size.memory_limit() == (3 * GIB, "the address-space limit (ulimit -v) is 3.0 GiB")
    with pytest.raises(RedthreadError, match=r"ulimit -v\) is 3.0 GiB"):
        build_model("TransformerLM", dict(vocab_size=10**6, d_model=1024, n_head=8))  # ~3.9 GiB of weights


def test_memory_limit_reads_a_cgroup_limit(monkeypatch, tmp_path):
    limit = tmp_path / "memory.max"
    limit.write_text("2147483648\n")
    monkeypatch.setattr(size, "CGROUP_MEMORY_MAX", limit)
    assert size.memory_limit() == (2 * GIB, "this container's memory limit is 2.0 GiB")
    limit.write_text("max\n")
    assert size.memory_limit()[0] > 2 * GIB


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_memory_limit_of_a_gpu_is_its_memory():
    total, said = size.memory_limit("cuda")
    assert total == torch.cuda.get_device_properties(0).total_memory and "GPU" in said


def test_format_bytes():
    assert [size.format_bytes(n) for n in (0, 1023, 1536, 3 * GIB, 2**50 * 5)] == ["0 bytes", "1023 bytes", "1.5 KiB", "3.0 GiB", "5.0 PiB"]
    assert size.format_bytes(10**30).endswith("bytes")


def test_culprit_names_the_size_that_matters_and_skips_invalid_resets():
    cfg = TransformerConfig(n_layer=10**6, d_model=256, n_head=8, vocab_size=100)
    values, defaults = size.config_sizes(cfg)
    estimate = lambda v: size.model_bytes("TransformerLM", dataclasses.replace(cfg, **v))  # noqa: E731
    assert size.culprit(estimate, values, defaults) == "n_layer=1000000"
    # n_head=3 cannot go back to d_model 128 alone (128 % 3 != 0): that reset is skipped, not an error
    cfg = TransformerConfig(d_model=3 * 2**14, n_head=3)
    values, defaults = size.config_sizes(cfg)
    estimate = lambda v: size.model_bytes("TransformerLM", dataclasses.replace(cfg, **v))  # noqa: E731
    assert size.culprit(estimate, values, defaults) == "n_head=3, d_model=49152"


def test_generation_memory_counts_caches_per_sample():
    cfg = TransformerConfig(vocab_size=65, block_size=256, n_layer=4, n_head=4, d_model=128)
    one = size.generation_bytes("TransformerLM", cfg, 1, 10, 500)
    assert size.generation_bytes("TransformerLM", cfg, 1000, 10, 500) == 1000 * one
    assert one >= 2 * 4 * 256 * 128 * 4  # at least the key/value cache over the window
    _, model = built("TransformerLM", dict(vocab_size=65, block_size=32, n_layer=1, n_head=2, d_model=16))
    size.check_generation_memory(model, 3, 1, 240)  # the demo's samples
    with pytest.raises(RedthreadError, match=r"num_samples=100000000 needs ~.* to sample"):
        size.check_generation_memory(model, 10**8, 1, 500)
    with pytest.raises(RedthreadError, match=r"max_new_tokens=10000000000 needs"):
        size.check_generation_memory(model, 1, 1, 10**10)


@pytest.mark.parametrize("class_name", sorted(CONFIGS))
def test_training_check_refuses_a_huge_batch_for_every_class_and_passes_usual_ones(class_name):
    cfg = MODELS[class_name][1].from_dict(CONFIGS[class_name][0])
    for batch in (1, 32, 64):
        memory.check_training_fits(class_name, cfg, batch)
    with pytest.raises(RedthreadError, match=rf"^batch_size=100000000000 needs ~.* to train this {class_name} "):
        memory.check_training_fits(class_name, cfg, 10**11)


@pytest.mark.parametrize("class_name, fields", [(c, f) for c, fs in CONFIGS.items() for f in fs if c != "TransformerLM"])
def test_training_bound_is_at_least_the_weights_gradients_and_moments(class_name, fields):
    cfg, model = built(class_name, fields)
    n = sum(p.numel() for p in model.parameters())
    assert memory.training_bytes_bound(class_name, cfg, 4) >= 16 * n


def test_the_ladder_rungs_fit_at_their_sizes():
    from redthread.commands.ladder import rung_settings
    from redthread.models.registry import RUNGS, rung_class

    class Data:  # the fields rung_settings reads: Shakespeare's characters, context 64
        vocab_size, block_size, stop, starts_at_beginning = 77, 64, None, False

    for rung in RUNGS:
        fields, _ = rung_settings(rung, Data)
        class_name = rung_class(rung)
        cfg = MODELS[class_name][1].from_dict({**fields, **RUNGS[rung][1]})
        memory.check_training_fits(class_name, cfg, 64)
