"""Captions from an image-to-text model: the sampler, conditioned on images (claim C14: a caption
is drawn from P(word | image, words so far), as text is from P(token | context)).

    caption(model, images)                                    greedy, with the KV cache
    caption(model, images, SampleConfig(temperature=1, top_p=0.9, seed=0))   sampled

The model (`models/captioner.py`) gives the conditional distribution; choosing words from it is
generation's job, so it lives here, beside `generate`, and takes the same `SampleConfig`.
"""

from __future__ import annotations

import torch
from torch import Tensor

from redthread.data.captions import BOS, EOS, PAD
from redthread.generate.config import SampleConfig
from redthread.generate.sampler import generate_stream

GREEDY = SampleConfig(temperature=0.0)


@torch.no_grad()
def caption(model, images: Tensor, sampling: SampleConfig = GREEDY) -> Tensor:
    """Captions (B, T) of images (B, C, H, W), each starting with <bos> and padded after its <eos>:
    greedy by default, sampled with `sampling`. Decoded with the KV cache."""
    was_training = model.training
    model.eval()
    lm = model.conditioned_on(images)
    seq = torch.full((images.size(0), 1), BOS, dtype=torch.int64, device=images.device)  # (B, 1)
    done = torch.zeros(images.size(0), dtype=torch.bool, device=images.device)
    try:
        for nxt in generate_stream(lm, seq, model.cfg.block_size - 1, sampling=sampling):  # (B, 1) each
            seq = torch.cat([seq, nxt.masked_fill(done[:, None], PAD)], dim=1)
            done |= nxt[:, 0] == EOS
            if done.all():
                break
    finally:
        model.train(was_training)
    return seq
