"""Attention over patches: the grounding score on a hand-made map, attention rollout by hand, overlay figures."""

from __future__ import annotations

import pytest
import torch

from redthread.errors import RedthreadError
from redthread.viz.patches import (
    attention_rollout,
    grounding_mass,
    grounding_score,
    plot_patch_overlays,
)


def test_grounding_score_on_a_hand_made_map():
    # one caption "<bos> red square <eos>" over 4 patches; the object is patches 0 and 1
    masks = torch.zeros(1, 4, 4, dtype=torch.bool)
    masks[0, 1, :2] = True  # token 1 'red'
    masks[0, 2, :2] = True  # token 2 'square'
    cross = torch.zeros(1, 2, 2, 3, 4)  # (B, L, H, T, P): query t produces token t + 1
    cross[0, 0, 0, 0] = torch.tensor([0.5, 0.0, 0.5, 0.0])  # layer 0 head 0, step producing 'red': 0.5 on the object
    cross[0, 0, 1, 0] = torch.tensor([0.25, 0.25, 0.25, 0.25])  # head 1: 0.5
    cross[0, 0, :, 1] = torch.tensor([0.0, 1.0, 0.0, 0.0])  # both heads, step producing 'square': 1.0
    cross[0, 1, :, 0] = torch.tensor([0.0, 0.0, 0.0, 1.0])  # layer 1, 'red': 0.0
    cross[0, 1, 0, 1] = torch.tensor([0.9, 0.0, 0.1, 0.0])  # layer 1, 'square': heads 0.9 and 0.0 -> 0.45
    cross[0, 1, 1, 1] = torch.tensor([0.0, 0.0, 0.1, 0.9])
    cross[:, :, :, 2] = 0.25  # the step producing <eos> names nothing: not scored
    g = grounding_score(cross, masks)
    assert g.per_layer == pytest.approx([(0.5 + 1.0) / 2, (0.0 + 0.45) / 2])
    assert g.score == pytest.approx((0.75 + 0.225) / 2)
    assert g.uniform == pytest.approx(0.5) and g.words == 2
    mass, _uniform, which = grounding_mass(cross, masks)
    assert which.tolist() == [[0, 0], [0, 1]] and mass.shape == (2, 2)


def test_grounding_needs_object_words_and_fitting_masks():
    with pytest.raises(RedthreadError, match="no word in these captions names an object"):
        grounding_score(torch.full((1, 1, 1, 2, 4), 0.25), torch.zeros(1, 3, 4, dtype=torch.bool))
    with pytest.raises(RedthreadError, match="do not fit"):
        grounding_score(torch.full((1, 1, 1, 2, 4), 0.25), torch.zeros(1, 3, 5, dtype=torch.bool))


def test_rollout_by_hand():
    a1 = torch.tensor([[1.0, 0.0], [0.5, 0.5]])
    a2 = torch.tensor([[0.0, 1.0], [0.0, 1.0]])
    att = torch.stack([torch.stack([a1, a1]), torch.stack([a2, a2])])  # (L=2, H=2, 2, 2)
    eye = torch.eye(2)
    expected = (0.5 * a2 + 0.5 * eye) @ (0.5 * a1 + 0.5 * eye)
    assert torch.allclose(attention_rollout(att), expected)
    assert torch.allclose(attention_rollout(att).sum(-1), torch.ones(2))
    identity = torch.eye(3).expand(4, 2, 3, 3)
    assert torch.allclose(attention_rollout(identity), torch.eye(3))
    with pytest.raises(RedthreadError, match="self-attention weights"):
        attention_rollout(torch.rand(2, 2, 3, 4))


def test_overlays_write_a_figure_and_check_their_labels(tmp_path):
    image, weights = torch.rand(3, 8, 8), torch.softmax(torch.rand(3, 16), -1)
    plot_patch_overlays(image, weights, ["red", "square", "<eos>"], tmp_path / "o.png", suptitle="a caption")
    assert (tmp_path / "o.png").read_bytes()[:4] == b"\x89PNG"
    plot_patch_overlays(torch.rand(1, 8, 8), weights[:1], ["grey"], tmp_path / "g.svg")
    assert (tmp_path / "g.svg").stat().st_size > 0
    with pytest.raises(RedthreadError, match="3 overlays but 2 titles"):
        plot_patch_overlays(image, weights, ["a", "b"], None)
    with pytest.raises(RedthreadError, match="do not make a square grid"):
        plot_patch_overlays(image, torch.rand(1, 15), ["a"], None)
