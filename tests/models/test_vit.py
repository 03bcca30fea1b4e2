"""The Vision Transformer: patch embedding = unfold-and-project, 2-D positions, recorded attention,
bad configs and images as one-line errors, a checkpoint round trip, and overfitting a handful of images."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import redthread as rt
from redthread.errors import RedthreadError
from redthread.layers.positional import sinusoidal_table
from redthread.models.vit import ViT, ViTConfig, sinusoidal_2d_table
from redthread.train.loop import TrainConfig, train


def tiny(**kw) -> ViTConfig:
    return ViTConfig(**{"image_size": 8, "patch_size": 2, "n_layer": 2, "n_head": 2, "d_model": 16, **kw})


def test_patch_embedding_matches_unfold_and_project():
    torch.manual_seed(0)
    cfg = tiny(channels=3, patch_size=4)
    emb = ViT(cfg).patch_emb.double()
    images = torch.rand(2, 3, 8, 8, dtype=torch.float64)
    patches = F.unfold(images, kernel_size=4, stride=4).transpose(1, 2)  # (B, P, C_in * p * p), row-major patches
    W = emb.proj.weight.reshape(cfg.d_model, -1)  # (C, C_in * p * p), the same (channel, row, column) order
    expected = patches @ W.T + emb.proj.bias  # (B, P, C)
    torch.testing.assert_close(emb(images), expected, rtol=0, atol=1e-12)


def test_sinusoidal_2d_positions_give_half_the_channels_to_the_row_and_half_to_the_column():
    table = sinusoidal_2d_table(4, 16).view(4, 4, 16)  # (row, column, C)
    one_d = sinusoidal_table(4, 8)  # (G, C/2)
    for r in range(4):
        for c in range(4):
            torch.testing.assert_close(table[r, c, :8], one_d[r])
            torch.testing.assert_close(table[r, c, 8:], one_d[c])
    assert len({tuple(v.tolist()) for v in table.view(16, 16)}) == 16  # every patch its own position


@pytest.mark.parametrize("pool,extra", [("cls", 1), ("mean", 0)])
@pytest.mark.parametrize("pos", ["learned", "sinusoidal2d"])
def test_vit_gives_logits_a_distribution_and_encoder_maps_over_patches(pool, extra, pos):
    torch.manual_seed(0)
    model = ViT(tiny(pool=pool, pos=pos)).eval()
    images = torch.rand(3, 1, 8, 8)
    with rt.record_attention(model) as maps:
        logits = model(images)
    assert logits.shape == (3, 10)
    P = 16
    assert maps.kinds == ["encoder"] and len(maps.encoder) == 2
    assert maps.encoder[0].shape == (3, 2, P + extra, P + extra)  # (B, H, P + 1, P + 1) with a class token
    torch.testing.assert_close(maps.encoder[1].sum(-1), torch.ones(3, 2, P + extra))
    torch.testing.assert_close(model.distribution(images).probs, logits.softmax(-1))
    torch.testing.assert_close(logits, model(images), atol=1e-5, rtol=0)  # recording changes nothing


@pytest.mark.parametrize("fields,needle", [
    ({"patch_size": 3}, "patch_size 3 does not divide the image size 8"),
    ({"pool": "max"}, "pool must be one of cls, mean"),
    ({"pos": "rope"}, "pos must be one of learned, sinusoidal2d"),
    ({"d_model": 18, "n_head": 2, "pos": "sinusoidal2d"}, "divisible by 4"),
    ({"d_model": 16, "n_head": 3}, "divisible by n_head"),
    ({"n_classes": 1}, "n_classes"),
    ({"channels": 0}, "channels must be a positive integer"),
])
def test_vit_config_rejects_bad_values_in_one_line(fields, needle):
    with pytest.raises(RedthreadError, match=needle) as e:
        tiny(**fields)
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("shape,needle", [
    ((2, 1, 16, 16), "16x16 pixels, the model expects 8x8"),
    ((2, 3, 8, 8), "3 channel(s), the model expects 1"),
    ((1, 8, 8), "(batch, channels, height, width)"),
])
def test_vit_rejects_images_of_the_wrong_size_or_channels(shape, needle):
    with pytest.raises(RedthreadError) as e:
        ViT(tiny())(torch.rand(*shape))
    assert needle in str(e.value) and "\n" not in str(e.value)


def test_vit_checkpoint_round_trip_gives_identical_logits(tmp_path):
    torch.manual_seed(0)
    model = ViT(tiny(pos="sinusoidal2d", pool="mean")).eval()
    rt.save_checkpoint(tmp_path, model)
    loaded = rt.load_checkpoint(tmp_path).eval()
    assert isinstance(loaded, ViT) and loaded.cfg == model.cfg
    images = torch.rand(4, 1, 8, 8)
    assert torch.equal(loaded(images), model(images))


def test_vit_overfits_a_handful_of_images_with_the_shared_loop():
    from redthread.data.images import ImageData, load_digits

    torch.manual_seed(0)
    images, labels = load_digits().split("train")[0][:8], torch.arange(8) % 4  # labels no digit explains: memorised
    data = ImageData(images, labels, images, labels, n_classes=4)
    model = ViT(tiny(n_classes=4))
    cfg = TrainConfig(max_iters=200, batch_size=8, lr=1e-2, min_lr=1e-3, warmup_iters=10, weight_decay=0.0,
                      eval_interval=200, eval_batches=1, log_interval=200, seed=0, device="cpu")
    result = train(model, data, cfg, progress=False)
    model.eval()
    assert result.val_nll < 0.05  # from log 4 = 1.39 nats at the start
    assert torch.equal(model.predict(images), labels)
