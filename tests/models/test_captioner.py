"""The captioner: shapes, a causal decoder that reads the image, KV-cached greedy captions equal to
step-by-step argmax, a checkpoint round trip, bad configs as one-line errors, and memorising a few scenes."""

from __future__ import annotations

import pytest
import torch

import redthread as rt
from redthread.data.captions import BOS, EOS, PAD, CaptionData, ImageText, make_shapes
from redthread.errors import RedthreadError
from redthread.generate.captions import caption
from redthread.generate.config import SampleConfig
from redthread.models.captioner import Captioner, CaptionerConfig
from redthread.models.vit import ViT, ViTConfig
from redthread.train.loop import TrainConfig, train


def tiny(**kw) -> CaptionerConfig:
    return CaptionerConfig(**{"vocab_size": 14, "block_size": 12, "n_layer_encoder": 1, "n_layer_decoder": 2, "n_head": 2,
                              "d_model": 16, **kw})


def test_logits_have_one_row_per_caption_position():
    torch.manual_seed(0)
    model = Captioner(tiny())
    images, tokens = torch.rand(3, 3, 24, 24), torch.randint(0, 14, (3, 7))
    assert model(ImageText(images, tokens)).shape == (3, 7, 14)
    assert torch.equal(model(ImageText(images, tokens)), model(images, tokens))


def test_the_decoder_is_causal_and_reads_the_image():
    torch.manual_seed(0)
    model = Captioner(tiny()).eval()
    images, tokens = torch.rand(2, 3, 24, 24), torch.randint(0, 14, (2, 8))
    base = model(images, tokens)
    later = tokens.clone()
    later[:, 5:] = (later[:, 5:] + 1) % 14  # change the words from position 5 on
    changed = model(images, later)
    assert torch.allclose(changed[:, :5], base[:, :5], atol=1e-6)  # positions before 5 cannot see them
    assert not torch.allclose(changed[:, 5:], base[:, 5:])
    other = model(torch.rand(2, 3, 24, 24), tokens)
    assert not torch.allclose(other[:, 0], base[:, 0])  # the first word already depends on the image


def test_greedy_captions_equal_stepwise_argmax_and_stop_at_eos():
    torch.manual_seed(0)
    model = Captioner(tiny()).eval()  # untrained: the rows run to the length limit (the stop is checked below)
    images = torch.rand(4, 3, 24, 24)
    out = caption(model, images)
    assert (out[:, 0] == BOS).all() and out.size(1) <= 12
    with torch.no_grad():
        for b in range(4):
            seq = torch.tensor([[BOS]])
            while seq.size(1) < out.size(1) and seq[0, -1] != EOS:
                nxt = model(images[b : b + 1], seq)[0, -1].argmax()
                seq = torch.cat([seq, nxt.view(1, 1)], 1)
            row = out[b, : seq.size(1)]
            assert torch.equal(row, seq[0])
            assert (out[b, seq.size(1):] == PAD).all()  # nothing after <eos>


def test_top_p_captions_are_reproducible_from_a_seed():
    torch.manual_seed(0)
    model = Captioner(tiny())
    images = torch.rand(3, 3, 24, 24)
    a = caption(model, images, SampleConfig(temperature=1.0, top_p=0.9, seed=5))
    b = caption(model, images, SampleConfig(temperature=1.0, top_p=0.9, seed=5))
    assert torch.equal(a, b)


def test_checkpoint_round_trip(tmp_path):
    torch.manual_seed(0)
    model = Captioner(tiny())
    rt.save_checkpoint(tmp_path / "cap", model)
    loaded = rt.load_checkpoint(tmp_path / "cap")
    images, tokens = torch.rand(2, 3, 24, 24), torch.randint(0, 14, (2, 5))
    assert isinstance(loaded, Captioner) and torch.equal(loaded(images, tokens), model(images, tokens))


@pytest.mark.parametrize("fields,needle", [
    ({"vocab_size": 3}, "no caption words"),
    ({"patch_size": 5}, "patch_size 5 does not divide the image size 24"),
    ({"d_model": 10, "n_head": 4}, "divisible by n_head"),
    ({"pos": "rope"}, "pos must be one of learned, sinusoidal2d"),
    ({"n_layer_decoder": 0}, "n_layer_decoder must be a positive integer"),
])
def test_bad_configs_are_one_line_errors(fields, needle):
    with pytest.raises(RedthreadError, match=needle) as e:
        tiny(**fields)
    assert "\n" not in str(e.value)


def test_wrong_images_and_missing_tokens_are_one_line_errors():
    model = Captioner(tiny())
    with pytest.raises(RedthreadError, match="16x16 pixels, the model expects 24x24"):
        model(torch.rand(1, 3, 16, 16), torch.zeros(1, 2, dtype=torch.long))
    with pytest.raises(RedthreadError, match="needs the caption so far"):
        model(torch.rand(1, 3, 24, 24))


def test_a_vit_without_a_head_is_an_encoder():
    vit = ViT(ViTConfig(n_classes=0, n_layer=1, n_head=2, d_model=16, pool="mean"))
    assert vit.head is None and vit.encode(torch.rand(2, 1, 8, 8)).shape == (2, 16, 16)
    with pytest.raises(RedthreadError, match="no classification head"):
        vit(torch.rand(2, 1, 8, 8))


def test_the_captioner_memorises_a_few_scenes_with_the_shared_loop():
    torch.manual_seed(0)
    scenes, vocab = make_shapes(8, seed=0)
    data = CaptionData(scenes, scenes, vocab, "caption-shapes", 4)
    model = Captioner(tiny(vocab_size=len(vocab), block_size=data.block_size, d_model=32))
    cfg = TrainConfig(max_iters=250, batch_size=8, lr=5e-3, min_lr=5e-4, warmup_iters=10, weight_decay=0.0,
                      eval_interval=250, eval_batches=1, log_interval=250, seed=0, device="cpu")
    result = train(model, data, cfg, progress=False)
    assert result.val_nll < 0.05
    out = caption(model, scenes.images)
    assert len(set((scenes.tokens == EOS).nonzero()[:, 1].tolist())) > 1  # captions of several lengths: rows stop apart
    assert torch.equal(torch.nn.functional.pad(out, (0, scenes.tokens.size(1) - out.size(1))), scenes.tokens)


def test_a_config_saved_with_the_old_max_len_name_still_loads():
    old = {**tiny().to_dict(), "max_len": 9}
    del old["block_size"]
    assert CaptionerConfig.from_dict(old).block_size == 9
