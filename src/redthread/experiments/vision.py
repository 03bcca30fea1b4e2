"""Claim C14: the same machinery carries beyond text — images as sequences of patches (ViT), and
cross-attention between text tokens and image regions. And C2 for the ViT: its softmax is calibrated.

(a) Patches. scikit-learn's 8 x 8 digits: the ViT (`redthread.models.vit`: 4 x 4 patches of
2 x 2 pixels, a class token, learned positions, pre-norm encoder blocks) against the pixel rungs,
softmax regression and a 2 x 128 tanh MLP, each trained by the one loop on the same images and
batches, scored on the test images: accuracy and NLL (nats per image). Each arm's learning rate is
tuned on the tuning seed (`tuning_seed`, which no verdict uses): its own stratified split, scored
on its validation images (20% of its training images); every verdict seed (`run_seeds`) draws its
own split (`load_digits(seed=...)`) and trains each arm fresh at the pick. The check: the ViT's
test NLL is below softmax regression's, the linear rung on the same pixels (the NLL is the
objective every rung minimises, and a proper scoring rule).

(b) Patch order. Self-attention is equivariant to a permutation of its inputs and the class token's
output is invariant to it; only the position embeddings tell patches apart by place. So a ViT
whose positions are zero (and frozen) gives exactly the same logits for an image whose patches are
shuffled: an exact property, checked in float64 on the test images. A ViT trained with positions
loses accuracy on shuffled patches only if it uses where each patch is: the drop (unshuffled minus
shuffled test accuracy), for one fixed permutation applied to every image and for a fresh random
permutation per image, against 0, the drop of the position-blind control.

(c) Grounding. A captioner (`redthread.models.captioner`: a ViT encoder, a decoder whose words
cross-attend to the patches) trained on generated caption-shapes scenes (`redthread.data.captions`,
where every colour and shape word carries its object's patch mask). The grounding score
(`redthread.viz.patches`): the share of an object word's cross-attention (heads averaged, per
layer, then over layers) on the patches of the object it names, on held-out scenes. Uniform
attention puts |object patches| / P there: the chance level it must beat.

(C2) The ViT's calibration: its test ECE minus the 95th percentile of a perfectly calibrated
control's (labels drawn from its own predictions), as in the `classification` experiment.

Everything is sized to about 4 CPU minutes a run (`BUDGET`): the ViT is smaller (d_model 48, 2
blocks against the recipe's 64 and 3) and trains 800 steps instead of `VIT_TRAIN`'s 1,000; the
captioner is 1 + 1 layers of d_model 32, 800 steps on 3,000 scenes, against `CAPTION_TRAIN`'s
2 + 2 layers of 64, 1,500 steps on 20,000. The comparison is made at half, one and twice the
training budget (`BUDGETS`); `budget` scales every model's training steps, tuning's included.
With --quick nothing is tuned (each grid's middle value): a smoke test.
Shape legend: B batch, C channels, H, W pixels, G patches per side, P = G * G patches, p patch side.
"""

from __future__ import annotations

import torch
from torch import Tensor

from redthread.data.captions import load_caption_data
from redthread.experiments.classification import (
    DIGIT_LRS,
    MLP_DIGITS,
    digit_models,
    excess_ece,
    predict_proba,
    quick_lr,
    tune_digit_lr,
)
from redthread.experiments.criteria import ABOVE, BELOW, Criterion
from redthread.experiments.report import Report
from redthread.experiments.stats import run_seeds, tuning_seed
from redthread.lang import say
from redthread.models.captioner import Captioner, captioner_config
from redthread.models.regression import MLPClassifier, SoftmaxRegression
from redthread.models.vit import ViT, ViTConfig
from redthread.plotting import pyplot
from redthread.train.loop import TrainConfig, train
from redthread.train.loop import classifier_score as score
from redthread.train.recipes import CAPTION_TRAIN, VIT_TRAIN
from redthread.viz.patches import caption_grounding as grounding

plt = pyplot()

NAME, CLAIMS = "vision", "C14, C2"

HYPOTHESIS = ("Attention carries beyond text: a ViT reading digits as a sequence of patches estimates P(class | "
              "image) better than a linear function of the pixels, uses where each patch is (a ViT without positions "
              "is exactly blind to patch order), and is calibrated (C2); and a captioner's words cross-attend to "
              "the image regions of the objects they name more than uniform attention does.")

# The pre-registered criteria: each floor is the smallest effect size of interest, with its reason.
CRITERIA: dict[str, Criterion] = {
    "vit_nll_below_linear": Criterion(
        "C14", "patches (ViT on digits)", "softmax regression's test NLL minus the ViT's, nats per image", 0.115, ABOVE,
        "the linear rung on the same pixels, each arm with its own tuned learning rate: a patch model that carries "
        "the machinery to images must estimate P(class | image) better than a linear function of the pixels, by 5% "
        "of log 10 (the NLL of a uniform guess over the ten digits)"),
    "order_drop_fixed": Criterion(
        "C14", "patch order", "ViT test accuracy, unpermuted minus one fixed patch permutation", 0.045, ABOVE,
        "the control's drop: a ViT without positions is exactly invariant to patch order (checked exactly), so a "
        "drop is the positions' use; 5% of the range from chance to perfect accuracy, 0.05 x (1 - 1/10)",
        bounds=(-1.0, 1.0)),
    "order_drop_random": Criterion(
        "C14", "patch order", "ViT test accuracy, unpermuted minus a random patch permutation per image", 0.045, ABOVE,
        "the control's drop: a ViT without positions is exactly invariant to patch order (checked exactly), so a "
        "drop is the positions' use; 5% of the range from chance to perfect accuracy, 0.05 x (1 - 1/10)",
        bounds=(-1.0, 1.0)),
    "grounding_gain": Criterion(
        "C14", "cross-attention grounding", "grounding score minus uniform attention's share of the object", 0.05, ABOVE,
        "the chance level, uniform attention's exact |object patches| / P on the named object, plus 5% of the "
        "attention mass (1)"),
    "vit_ece_excess": Criterion(
        "C2", "calibration (C2, ViT)", "ViT test ECE on digits minus the 95% quantile of a calibrated control's ECE",
        0.01, BELOW, "the noise floor measured on a control (labels drawn from the model's own probabilities, same "
        "images), plus one point of probability, the least miscalibration that counts"),
}
# Each digits arm's learning rate, tuned on the set's tuning seed; each grid extends past an edge pick.
GRID = {
    "lr, softmax regression": DIGIT_LRS["softmax regression"],
    "lr, MLP": DIGIT_LRS["MLP"],
    "lr, ViT": (1e-3, 2e-3, 4e-3),  # around VIT_TRAIN's 2e-3
}
BUDGET = {"vit_steps": 800, "flat_steps": 1000, "caption_steps": 800,  # steps of batch 64
          "quick_vit_steps": 60, "quick_flat_steps": 150, "quick_caption_steps": 80}
BUDGETS = (0.5, 1.0, 2.0)  # a comparative claim: measured at half, one and twice the training budget
VIT_SIZE = {"d_model": 48, "n_layer": 2, "n_head": 4, "dropout": 0.1}  # smaller than the recipe's (docs/vision.md)
CAPTION_SIZE = {"d_model": 32, "n_layer_encoder": 1, "n_layer_decoder": 1, "n_head": 4}
CAPTION_LR = 3e-3  # not tuned: the captioner is compared with uniform attention, not with another model
INVARIANCE_TOL = 1e-9  # float64 rounding of a reordered sum


def permute_patches(images: Tensor, perm: Tensor, patch: int) -> Tensor:
    """Move patch perm[j] to place j (row-major patches): images (B, C, H, W), perm (P,) for every image
    or (B, P) one per image -> (B, C, H, W)."""
    B, C, H, W = images.shape
    G = H // patch
    blocks = images.reshape(B, C, G, patch, G, patch).permute(0, 2, 4, 1, 3, 5).reshape(B, G * G, C, patch, patch)
    perm = perm.expand(B, -1) if perm.dim() == 1 else perm  # (B, P)
    moved = blocks[torch.arange(B)[:, None], perm]  # (B, P, C, p, p)
    return moved.reshape(B, G, G, C, patch, patch).permute(0, 3, 1, 4, 2, 5).reshape(B, C, H, W)


def vit_without_positions(cfg: ViTConfig) -> ViT:
    """A ViT whose position embeddings are zero and frozen: a bag of patches."""
    model = ViT(cfg)
    with torch.no_grad():
        model.pos_emb.zero_()
    model.pos_emb.requires_grad_(False)
    return model


@torch.no_grad()
def accuracy(model, images: Tensor, labels: Tensor) -> float:
    return float((predict_proba(model, images).argmax(-1) == labels).double().mean())


@torch.no_grad()
def invariance_gap(model: ViT, images: Tensor, perms: list[Tensor]) -> float:
    """The largest |logit change| when the patches are permuted, in float64."""
    model = model.double().eval()
    x = images.double()
    base = model(x)  # (B, K)
    gap = max(float((model(permute_patches(x, p, model.cfg.patch_size)) - base).abs().max()) for p in perms)
    model.float()
    return gap


def train_captioner(seed: int, steps: int, n_train: int, n_test: int) -> dict:
    """A captioner on caption-shapes scenes from `seed`; its grounding on the held-out scenes."""
    data = load_caption_data("caption-shapes", n_train=n_train, n_test=n_test, seed=1000 * seed)
    torch.manual_seed(seed)
    model = Captioner(captioner_config(data, CAPTION_SIZE))
    cfg = TrainConfig(**{**CAPTION_TRAIN, "max_iters": steps, "lr": CAPTION_LR, "min_lr": CAPTION_LR / 20,
                         "warmup_iters": steps // 10, "eval_interval": steps, "eval_batches": 1, "log_interval": steps,
                         "seed": seed, "device": "cpu"})
    result = train(model, data, cfg, progress=False)
    g = grounding(model, data)
    return {"grounding": g.score, "uniform": g.uniform, "gain": g.score - g.uniform, "words": g.words,
            "val_nll": result.val_nll, "scenes": len(data.split("val"))}


def training_steps(quick: bool, budget: float) -> dict[str, int]:
    """The steps each kind of model trains for ("vit", "flat": the pixel rungs, "caption"): the budget's share of
    BUDGET, at least one."""
    prefix = "quick_" if quick else ""
    return {kind: max(1, int(BUDGET[f"{prefix}{kind}_steps"] * budget)) for kind in ("vit", "flat", "caption")}


def digit_arms(cfg: ViTConfig, steps: dict[str, int]) -> dict[str, tuple]:
    """The three rungs on digits: name -> (make a fresh model, its training steps, flat pixels?, weight decay)."""
    return {
        "softmax regression": (lambda: SoftmaxRegression(64, 10), steps["flat"], True, 0.0),
        "MLP": (lambda: MLPClassifier(64, 10, **MLP_DIGITS), steps["flat"], True, 0.0),
        "ViT": (lambda: ViT(cfg), steps["vit"], False, VIT_TRAIN["weight_decay"]),
    }


def arm_lr(report: Report, name: str, make, steps: int, flat: bool, weight_decay: float, seed: int, quick: bool) -> float:
    """An arm's learning rate: tuned on tuning_seed(seed)'s digits validation images and recorded; --quick: no sweep."""
    grid = GRID[f"lr, {name}"]
    if quick:
        return quick_lr(grid)
    return report.tuned(f"lr, {name}", tune_digit_lr(make, grid, tuning_seed(seed), steps, flat, weight_decay))


def run(quick: bool = False, seed: int = 0, progress=None, budget: float = 1.0) -> Report:
    seeds = run_seeds(seed, quick)
    steps = training_steps(quick, budget)
    vit_steps, flat_steps, cap_steps = steps["vit"], steps["flat"], steps["caption"]
    scenes = (400, 100) if quick else (3000, 300)
    cfg = ViTConfig(**VIT_SIZE)
    tuning = ("its grid's middle value (quick run: no sweep)" if quick else
              f"tuned on seed {tuning_seed(seed)}'s own split (its validation images; the grid extends past an edge "
              "pick), a seed no verdict uses")
    report = Report(
        NAME, CLAIMS, quick=quick,
        setup=(
            f"(a) scikit-learn's digits, seeds {seeds}, each its own stratified split (test 20%; validation 20% of the "
            f"rest). ViT: 4 x 4 patches of 2 x 2 pixels, class token, learned positions, {cfg.n_layer} blocks, d_model "
            f"{cfg.d_model}, {cfg.n_head} heads, dropout {cfg.dropout}, {vit_steps} AdamW steps of batch 64 (weight "
            f"decay 0.05; the recipe VIT_TRAIN, smaller and shorter to fit the budget), lr from {GRID['lr, ViT']}. "
            f"Softmax regression and a 2x128 tanh MLP on the 64 pixels: {flat_steps} steps of batch 64, no weight "
            f"decay, lr from {GRID['lr, softmax regression']} and {GRID['lr, MLP']}. Training budget ×{budget:g} of "
            f"BUDGET (every model's steps). Each arm's lr: {tuning}; every verdict seed trains each arm fresh at it, "
            "on its training images minus the validation ones. (b) The trained ViT on the test images with their 16 "
            "patches permuted: one fixed random permutation for every image, and a fresh one per image; a ViT with "
            "zero, frozen positions trained the same way (the ViT's lr) on the first seed, whose logits are compared "
            "in float64. (c) A captioner "
            f"({CAPTION_SIZE['n_layer_encoder']} encoder + {CAPTION_SIZE['n_layer_decoder']} decoder layers, d_model "
            f"{CAPTION_SIZE['d_model']}; {cap_steps} steps of batch 64, lr {CAPTION_LR}, weight decay 0.05) per seed on "
            f"{scenes[0]} generated caption-shapes scenes, grounding scored on up to {scenes[1]} unseen scenes. "
            "(C2) The ViT's test ECE (15 bins) against a calibrated control (labels drawn from its own predictions, "
            "200 draws). The sizes were set in a pilot run on seed 0 to fit the CPU budget."
        ),
        criterion=(
            HYPOTHESIS + " Each check by its 95% interval over seeds, at every training budget. (a) The ViT's test "
            f"NLL is below softmax regression's by more than {CRITERIA['vit_nll_below_linear'].floor:g} nats (5% of "
            "log 10). (b) A ViT without positions gives the same logits for permuted patches (exact, float64, within "
            f"{INVARIANCE_TOL:g}); the ViT with positions loses test accuracy on permuted patches, for a fixed and for "
            f"a per-image permutation, by more than {CRITERIA['order_drop_fixed'].floor:g} (the position-blind drop is "
            f"0). (c) The grounding score exceeds uniform attention's share by more than "
            f"{CRITERIA['grounding_gain'].floor:g}. (C2) The ViT's ECE minus the control's 95% quantile is below "
            f"{CRITERIA['vit_ece_excess'].floor:g}."
        ),
    )
    tick = _ticker(progress, 6)
    ladder = {}
    for name, (make, arm_steps, flat, wd) in digit_arms(cfg, steps).items():
        lr = arm_lr(report, name, make, arm_steps, flat, wd, seed, quick)
        models = digit_models(make, lr, seeds, arm_steps, flat=flat, weight_decay=wd)  # fresh at the pick, per seed
        scores = [score(m, d) for m, d in models]
        ladder[name] = {"lr": lr, "accuracy": [s["accuracy"] for s in scores], "nll": [s["nll"] for s in scores]}
        if name == "ViT":
            vits = models
        tick(f"digits, {name}")

    order = {"unpermuted": [], "fixed": [], "random": [], "ece": [], "floor": [], "excess": []}
    for s, (model, data) in zip(seeds, vits):
        x, y = data.split("val")
        g = torch.Generator().manual_seed(s)
        fixed = torch.randperm(cfg.n_patches, generator=g)  # (P,)
        per_image = torch.stack([torch.randperm(cfg.n_patches, generator=g) for _ in range(len(y))])  # (B, P)
        order["unpermuted"].append(accuracy(model, x, y))
        order["fixed"].append(accuracy(model, permute_patches(x, fixed, cfg.patch_size), y))
        order["random"].append(accuracy(model, permute_patches(x, per_image, cfg.patch_size), y))
        ece, floor, excess = excess_ece(predict_proba(model, x).double(), y, g)
        order["ece"].append(ece), order["floor"].append(floor), order["excess"].append(excess)
    blind, blind_data = digit_models(lambda: vit_without_positions(cfg), ladder["ViT"]["lr"], seeds[:1], vit_steps,
                                     flat=False, weight_decay=VIT_TRAIN["weight_decay"])[0]
    bx, by = blind_data.split("val")
    g = torch.Generator().manual_seed(seed)
    gap = invariance_gap(blind, bx, [torch.randperm(cfg.n_patches, generator=g),
                                     torch.stack([torch.randperm(cfg.n_patches, generator=g) for _ in range(len(by))])])
    blind_acc = accuracy(blind, bx, by)
    tick("patch order")

    caps = [train_captioner(s, cap_steps, *scenes) for s in seeds]
    tick("captioners")

    report.check("vit_nll_below_linear", [a - b for a, b in zip(ladder["softmax regression"]["nll"], ladder["ViT"]["nll"])],
                 seeds)
    report.decide(gap <= INVARIANCE_TOL, f"a ViT without positions is invariant to patch order (max |logit change| <= "
                  f"{INVARIANCE_TOL:g}, float64)", f"max |logit change| {gap:.2e}", part="patch order")
    report.check("order_drop_fixed", [a - b for a, b in zip(order["unpermuted"], order["fixed"])], seeds)
    report.check("order_drop_random", [a - b for a, b in zip(order["unpermuted"], order["random"])], seeds)
    report.check("grounding_gain", [c["gain"] for c in caps], seeds)
    report.check("vit_ece_excess", order["excess"], seeds)

    write_results(report, seeds, ladder, order, gap, blind_acc, caps)
    tick("report")
    return report


def _ticker(progress, total: int):
    done = [0]

    def tick(text: str) -> None:
        done[0] += 1
        if progress is not None:
            progress.update(min(done[0] / total, 1.0), text)

    return tick


def _mean(xs) -> float:
    return sum(xs) / len(xs)


def write_results(report: Report, seeds, ladder, order, gap, blind_acc, caps) -> None:
    report.number("seeds", seeds)
    report.number("ladder", ladder)
    report.number("patch_order", order)
    report.number("no_position_max_logit_change", gap)
    report.number("no_position_accuracy_first_seed", blind_acc)
    report.number("captioners", caps)
    report.table(["model", "lr", "test accuracy", "test NLL (nats)"],
                 [[name, d["lr"], _mean(d["accuracy"]), _mean(d["nll"])] for name, d in ladder.items()],
                 title="(a) Digits: the ladder (means over seeds)")
    report.table(["test images", "ViT accuracy (mean over seeds)"],
                 [["unpermuted", _mean(order["unpermuted"])], ["one fixed permutation", _mean(order["fixed"])],
                  ["a random permutation per image", _mean(order["random"])]],
                 title="(b) Patch order: the ViT with positions")
    report.note(f"The ViT without positions (first seed only, not a check): test accuracy {blind_acc:.4f}, and its "
                f"logits change by at most {gap:.2e} when the patches are permuted.")
    report.table(["seed", "grounding", "uniform attention", "gain", "held-out scenes", "test NLL (nats/word)"],
                 [[s, c["grounding"], c["uniform"], c["gain"], c["scenes"], c["val_nll"]] for s, c in zip(seeds, caps)],
                 title="(c) Captioner grounding on held-out caption-shapes scenes")
    report.table(["ECE", "control ECE 95% quantile", "ECE minus control"],
                 [[_mean(order["ece"]), _mean(order["floor"]), _mean(order["excess"])]],
                 title="(C2) The ViT's calibration (means over seeds)")

    def draw():
        fig, axes = plt.subplots(1, 3, figsize=(12, 3.8), layout="constrained")
        names = list(ladder)
        for i, name in enumerate(names):
            axes[0].plot([i] * len(seeds), ladder[name]["nll"], "o", alpha=0.6, color=f"C{i}")
            axes[0].plot([i - 0.2, i + 0.2], [_mean(ladder[name]["nll"])] * 2, "-", color=f"C{i}", lw=2)
        axes[0].set_xticks(range(len(names)), [say(n, n.replace("softmax regression", "softmax 回归")) for n in names])
        axes[0].set_ylabel(say("test NLL (nats per image)", "测试集 NLL（奈特/图像）"))
        axes[0].set_title(say("(a) digits, one dot per seed", "(a) 手写数字，每个种子一个点"))
        labels = [say("unpermuted", "不换序"), say("fixed perm.", "固定的换序"), say("random perm.", "随机的换序")]
        for i, key in enumerate(("unpermuted", "fixed", "random")):
            axes[1].plot([i] * len(seeds), order[key], "o", alpha=0.6, color=f"C{i}")
            axes[1].plot([i - 0.2, i + 0.2], [_mean(order[key])] * 2, "-", color=f"C{i}", lw=2)
        axes[1].axhline(blind_acc, color="k", ls="--", lw=1,
                        label=say("no positions (first seed)", "无位置编码（第一个种子）"))
        axes[1].set_xticks(range(3), labels)
        axes[1].set_ylabel(say("ViT test accuracy", "ViT 在测试集上的准确率"))
        axes[1].set_title(say("(b) patch order", "(b) 图块的顺序"))
        axes[1].legend(fontsize=8)
        axes[2].plot(seeds, [c["grounding"] for c in caps], "o-", label=say("grounding score", "定位得分"))
        axes[2].plot(seeds, [c["uniform"] for c in caps], "s--", label=say("uniform attention", "均匀注意力"))
        axes[2].set_xlabel(say("seed", "种子"))
        axes[2].set_ylabel(say("attention share on the named object", "落在所说物体上的注意力比例"))
        axes[2].set_title(say("(c) captioner grounding", "(c) 描述模型的定位"))
        axes[2].legend(fontsize=8)
        return fig

    report.figure("vision", draw, "(a) test NLL of the three rungs; (b) the ViT's accuracy with its patches permuted; "
                  "(c) the share of a word's cross-attention on its object against uniform attention.",
                  "(a) 阶梯上三级模型的测试集 NLL；(b) 图块换序之后 ViT 的准确率；"
                  "(c) 一个词的交叉注意力落在它所说物体上的比例，与均匀注意力对比。")
