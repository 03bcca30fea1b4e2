import inspect
import math

import torch

from redthread.experiments import vision
from redthread.experiments.classification import DIGIT_LRS
from redthread.experiments.report import Report
from redthread.experiments.stats import ABOVE, BELOW, run_seeds, tuning_seed
from redthread.experiments.tuning import tune
from redthread.experiments.vision import (
    BUDGET,
    BUDGETS,
    GRID,
    INVARIANCE_TOL,
    invariance_gap,
    permute_patches,
    vit_without_positions,
)
from redthread.models.vit import PatchEmbedding, ViT, ViTConfig


def test_vision_quick_structure(quick_report):
    report, md, data, out = quick_report("vision")
    checks = {c["name"]: c for c in data["checks"]}
    assert {"vit_nll_below_linear", "order_drop_fixed", "order_drop_random", "grounding_gain", "vit_ece_excess"} <= set(checks)
    assert set(data["parts"]) == {"patches (ViT on digits)", "patch order", "cross-attention grounding",
                                  "calibration (C2, ViT)"}
    exact = [c for c in data["checks"] if c["interval"] is None]
    assert len(exact) == 1 and exact[0]["part"] == "patch order" and exact[0]["seeds"] is None
    for name, c in checks.items():
        if c["interval"] is not None:
            assert len(c["seeds"]) >= 2 and c["floor"] > 0
            assert c["direction"] == (BELOW if name == "vit_ece_excess" else ABOVE)
            assert c["claim"] == ("C2" if name == "vit_ece_excess" else "C14")
    nums = data["numbers"]
    assert set(nums["ladder"]) == {"softmax regression", "MLP", "ViT"}
    for d in nums["ladder"].values():
        assert len(d["accuracy"]) == len(nums["seeds"]) >= 2
        assert all(0 <= a <= 1 for a in d["accuracy"]) and all(v > 0 for v in d["nll"])
    order = nums["patch_order"]
    assert all(0 <= a <= 1 for key in ("unpermuted", "fixed", "random", "ece", "floor") for a in order[key])
    assert 0 <= nums["no_position_max_logit_change"] < 1e-6  # float64: invariance of a position-blind ViT
    for c in nums["captioners"]:
        assert 0 <= c["uniform"] <= 1 and 0 <= c["grounding"] <= 1 and c["words"] > 0
        assert math.isclose(c["gain"], c["grounding"] - c["uniform"], abs_tol=1e-12)
    assert (out / "vision.png").is_file()
    assert data["tuning"] == [] and nums["ladder"]["ViT"]["lr"] == GRID["lr, ViT"][1]  # --quick: no sweep


def test_permute_patches_moves_whole_patches():
    g = torch.Generator().manual_seed(0)
    images = torch.randn(3, 2, 8, 8, generator=g)
    perm = torch.randperm(16, generator=g)
    assert torch.equal(permute_patches(images, torch.arange(16), 2), images)
    moved = permute_patches(images, perm, 2)
    for j in range(16):  # an independent loop: place j holds the pixels of patch perm[j]
        r, c = divmod(j, 4)
        rs, cs = divmod(int(perm[j]), 4)
        assert torch.equal(moved[:, :, 2 * r : 2 * r + 2, 2 * c : 2 * c + 2], images[:, :, 2 * rs : 2 * rs + 2, 2 * cs : 2 * cs + 2])
    inverse = torch.argsort(perm)
    assert torch.equal(permute_patches(moved, inverse, 2), images)


def test_permute_patches_per_image_matches_the_patch_embedding():
    cfg = ViTConfig(image_size=8, patch_size=4, d_model=8, n_head=2, n_layer=1)
    emb = PatchEmbedding(cfg)
    g = torch.Generator().manual_seed(1)
    images = torch.randn(5, 1, 8, 8, generator=g)
    perms = torch.stack([torch.randperm(4, generator=g) for _ in range(5)])  # (B, P)
    with torch.no_grad():
        got = emb(permute_patches(images, perms, 4))  # (B, P, C)
        want = emb(images)[torch.arange(5)[:, None], perms]
    assert torch.allclose(got, want, atol=1e-6)


def test_a_vit_without_positions_is_invariant_and_one_with_positions_is_not():
    torch.manual_seed(0)
    cfg = ViTConfig(d_model=16, n_head=2, n_layer=2)
    blind = vit_without_positions(cfg)
    assert not blind.pos_emb.requires_grad and float(blind.pos_emb.abs().max()) == 0.0
    images = torch.rand(6, 1, 8, 8)
    perms = [torch.randperm(16), torch.stack([torch.randperm(16) for _ in range(6)])]
    assert invariance_gap(blind, images, perms) < 1e-12
    assert blind.pos_emb.dtype == torch.float32  # handed back in float32
    placed = ViT(cfg)
    with torch.no_grad():
        placed.pos_emb.normal_(0, 1.0)
    assert invariance_gap(placed, images, perms) > 100 * INVARIANCE_TOL  # the measurement can fail


def test_steps_scale_with_the_budget():
    assert BUDGETS == (0.5, 1.0, 2.0) and "budget" in inspect.signature(vision.run).parameters
    for b in BUDGETS:
        assert vision.training_steps(False, b) == {k: int(BUDGET[f"{k}_steps"] * b) for k in ("vit", "flat", "caption")}
    assert vision.training_steps(True, 1.0) == {k: BUDGET[f"quick_{k}_steps"] for k in ("vit", "flat", "caption")}
    assert set(vision.training_steps(False, 1e-6).values()) == {1}


def test_learning_rates_are_tuned_on_the_tuning_seed_only(monkeypatch):
    asked = []

    def fake_tune(make, grid, seed, steps, flat, weight_decay):
        asked.append(seed)
        return tune(lambda lr: (math.log(lr) - math.log(grid[1])) ** 2, grid)

    monkeypatch.setattr(vision, "tune_digit_lr", fake_tune)
    report = Report("vision", "C14, C2")
    assert vision.arm_lr(report, "ViT", None, 5, False, 0.05, seed=0, quick=False) == GRID["lr, ViT"][1]
    assert asked == [tuning_seed(0)] and tuning_seed(0) not in run_seeds(0, quick=False)
    assert report.tunings[0]["setting"] == "lr, ViT" and not report.tunings[0]["edge"]
    assert vision.arm_lr(report, "MLP", None, 5, True, 0.0, seed=0, quick=True) == DIGIT_LRS["MLP"][1]
    assert asked == [tuning_seed(0)]  # --quick: no sweep
