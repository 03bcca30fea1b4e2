"""Greedy decoding of config (b), the model that benchmarks/decode_limit.py and generate_throughput.py time
(issue 27, item 3): a faster decoding step must give exactly today's tokens (pinned here), and decoding with
the KV cache gives the tokens of recomputing the whole context.

The benchmarks' model itself, random init, repeats the prompt's last token (its own row of the tied
embedding scores highest), which a broken attention would do as well; so each test also runs the same
model with noise added to every weight, whose greedy tokens move (10 distinct ones in 64), so that a
changed step changes them. Its smallest gap between the two best logits over the 64 steps is 0.003,
far above float32 rounding, so the pin does not hang on the order of a sum.
"""

import pytest
import torch

from redthread.generate.sampler import generate
from redthread.models.transformer import TransformerConfig, TransformerLM

# benchmarks/common.py's CONFIG_B at the benchmarks' context of 512, built as make_redthread builds it
CONFIG_B = dict(vocab_size=65, block_size=512, n_layer=6, n_head=6, d_model=384, dropout=0.0)
NEW = 64
NOISE = {"benchmark": 0.0, "perturbed": 0.05}
TODAY = {  # the greedy new tokens at a92ce32 (2026-12-04), before any work on the decoding step
    "benchmark": [22] * NEW,
    "perturbed": [61, 61, 61, 36, 6, 36, 6, 6, 6, 32, 51, 61, 36, 6, 32, 51, 6, 6, 6, 6, 32, 51, 6, 6, 6, 6, 32, 45,
                  45, 40, 35, 45, 40, 35, 45, 40, 35, 45, 40, 35, 51, 6, 51, 6, 57, 6, 57, 6, 57, 6, 57, 6, 57, 6, 57,
                  6, 32, 40, 40, 40, 40, 8, 40, 8],
}


def config_b(noise: float) -> TransformerLM:
    torch.manual_seed(0)  # the benchmarks' seed
    model = TransformerLM(TransformerConfig(**CONFIG_B)).eval()
    g = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn(p.shape, generator=g) * noise)
    return model


def prompt() -> torch.Tensor:
    return torch.randint(65, (1, 16), generator=torch.Generator().manual_seed(1234))  # the benchmarks' prompt


@pytest.mark.parametrize("model", NOISE)
def test_greedy_config_b_gives_todays_tokens(model):
    out = generate(config_b(NOISE[model]), prompt(), NEW, temperature=0.0)
    assert torch.equal(out[:, :16], prompt())
    assert out[0, 16:].tolist() == TODAY[model]


@pytest.mark.parametrize("model", NOISE)
def test_greedy_config_b_with_cache_matches_without(model):
    lm = config_b(NOISE[model])
    cached = generate(lm, prompt(), NEW, temperature=0.0)
    assert torch.equal(cached, generate(lm, prompt(), NEW, temperature=0.0, use_cache=False))
