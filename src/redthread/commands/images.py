"""`redthread train --task vit-digits` and `redthread ladder --images digits`: images as patches.

Claim C14 of the essay (an image is a sequence of patches, and the text models' encoder blocks
classify it) and C2 (a softmax head estimates P(class | image)). On scikit-learn's bundled
digits, with the fixed stratified split of `redthread.data.images`:

    softmax regression   P(class | pixels) = softmax(W x + b), the linear rung, on the 64 pixels
    MLP                  two tanh layers on the pixels
    ViT                  4 x 4 patches of 2 x 2 pixels, a class token, 3 encoder blocks

each trained by the one loop (`redthread.train.loop.train`) on the same steps and batches, and
scored on the same held-out test images: accuracy and NLL (nats per image). `redthread attention
--index N | --image FILE` shows an image run's attention (`redthread.viz.image_attention`).
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass, fields
from pathlib import Path

import torch

import redthread.lang as lang
from redthread.data.images import ImageData, load_digits
from redthread.errors import RedthreadError
from redthread.files import atomic_write_text, check_report_folder, fresh_output_path
from redthread.models.regression import MLPClassifier, SoftmaxRegression
from redthread.models.vit import ViT, ViTConfig
from redthread.train.distributed import is_main
from redthread.train.loop import TrainConfig, resolve_device, resolve_placement, train
from redthread.train.loop import classifier_score as score
from redthread.train.memory import check_training_fits
from redthread.train.recipes import VIT_MODEL, VIT_TRAIN
from redthread.train.run_folder import RunFolder

TASKS = ("vit-digits",)
IMAGE_SETS = ("digits",)
# settings measured on digits (docs/vision.md): AdamW, cosine decay, batch 64
LINEAR_TRAIN = {"lr": 1e-2, "weight_decay": 0.0}  # decay would pull every class towards uniform
MLP_TRAIN = {"lr": 3e-3, "weight_decay": 0.0}
MLP_SIZE = {"d_hidden": 128, "n_layer": 2}
IMAGE_RUNGS_ZH = {  # the rungs' labels in Chinese, for the summary lines (the CSV keeps the English)
    "softmax regression (pixels)": "softmax 回归（像素）",
    f"MLP {MLP_SIZE['n_layer']}x{MLP_SIZE['d_hidden']} tanh (pixels)":
        f"MLP {MLP_SIZE['n_layer']}x{MLP_SIZE['d_hidden']} tanh（像素）",
    "ViT (patches)": "ViT（图块）",
}

COLUMNS = ("model", "parameters", "train_seconds", "steps", "test_accuracy", "test_nll")


def vit_config(data: ImageData, upscale: int, requested: dict) -> ViTConfig:
    """ViTConfig for this data: the image's size and channels, patches of 2 * upscale pixels unless asked otherwise."""
    unknown = sorted(set(requested) - {f.name for f in fields(ViTConfig)})
    if unknown:
        raise RedthreadError(f"--{unknown[0].replace('_', '-')} is not a ViT setting (ViT: {', '.join(f.name for f in fields(ViTConfig))})")
    base = {"image_size": data.image_size, "channels": data.channels, "n_classes": data.n_classes, "patch_size": 2 * upscale}
    for name in ("image_size", "channels", "n_classes"):
        if name in requested and requested[name] != base[name]:
            raise RedthreadError(f"{name} is fixed by the data ({base[name]}), got {requested[name]}")
    return ViTConfig(**{**base, **VIT_MODEL, **requested})


def train_vit_digits(
    out: str | Path,
    upscale: int = 1,
    model_fields: dict | None = None,
    train_fields: dict | None = None,
    resume: bool = False,
    overwrite: bool = False,
    progress: bool = False,
    log=print,
) -> dict:
    """Train the ViT on digits into the run folder `out`; write results.json; return the test scores."""
    from redthread.train import distributed

    log = log if distributed.is_main() else (lambda line: None)  # under torchrun, rank 0 reports and writes
    out = Path(out)
    folder = RunFolder(out, resume, overwrite)  # refuses to clobber a run; --overwrite stages the new one beside it
    data = load_digits(upscale=upscale)
    cfg_model = vit_config(data, upscale, model_fields or {})
    cfg = TrainConfig(**{**VIT_TRAIN, "eval_interval": 250, "eval_batches": 10, "log_interval": 50, **(train_fields or {})})
    placement = resolve_placement(cfg)  # the device and the precision, once: the size check and the loop get them
    check_training_fits("ViT", cfg_model, cfg.batch_size, placement.device)
    torch.manual_seed(cfg.seed)
    model = ViT(cfg_model)
    log(f"ViT on digits ({data.image_size}x{data.image_size}, {cfg_model.n_patches} patches of "
        f"{cfg_model.patch_size}x{cfg_model.patch_size}): {model.num_params():,} parameters, {cfg.max_iters} steps")
    with folder:  # a failure before the first checkpoint leaves a run it was replacing as it was
        result = train(model, data, cfg, run_dir=folder.write_dir, resume=resume, progress=progress, log=log,
                       extra={"task": "vit-digits", "upscale": upscale}, publish=folder.publish, placement=placement)
    scores = {**score(model, data), "steps": result.step, "train_seconds": result.elapsed, "upscale": upscale}
    if distributed.is_main():
        atomic_write_text(out / "results.json", json.dumps(scores, indent=2) + "\n")
    return scores


@dataclass
class ImageRung:
    model: str
    parameters: int
    train_seconds: float
    steps: int
    test_accuracy: float
    test_nll: float

    def row(self) -> dict:
        return {"model": self.model, "parameters": self.parameters, "train_seconds": round(self.train_seconds, 1),
                "steps": self.steps, "test_accuracy": round(self.test_accuracy, 4), "test_nll": round(self.test_nll, 4)}


def run_image_ladder(
    name: str = "digits",
    steps: int = 1000,
    batch_size: int = 64,
    minutes: float | None = None,
    upscale: int = 1,
    out: str | Path | None = None,
    seed: int = 1337,
    device: str = "cpu",
    say=print,
) -> list[ImageRung]:
    """Softmax regression, an MLP and the ViT on the same split, steps and batches; one row each."""
    if name not in IMAGE_SETS:
        raise RedthreadError(f"unknown image data set {name!r}; use one of {', '.join(IMAGE_SETS)}")
    resolved = resolve_device(device)  # once for the three rungs (each rung's config keeps the name)
    data = load_digits(upscale=upscale)
    flat = data.flattened()
    d_in = flat.split("train")[0].shape[1]
    rungs = [
        ("softmax regression (pixels)", flat, lambda: SoftmaxRegression(d_in, data.n_classes), LINEAR_TRAIN),
        (f"MLP {MLP_SIZE['n_layer']}x{MLP_SIZE['d_hidden']} tanh (pixels)", flat,
         lambda: MLPClassifier(d_in, data.n_classes, **MLP_SIZE), MLP_TRAIN),
        ("ViT (patches)", data, lambda: ViT(vit_config(data, upscale, {})), VIT_TRAIN),
    ]
    results = []
    for label, source, make, settings in rungs:
        torch.manual_seed(seed)
        model = make()
        lr = settings["lr"]
        cfg = TrainConfig(
            max_iters=steps, batch_size=batch_size, lr=lr, min_lr=lr / 20, weight_decay=settings["weight_decay"],
            warmup_iters=min(100, steps // 10), eval_interval=steps, eval_batches=10, log_interval=max(1, min(50, steps)),
            seed=seed, device=device, max_time=None if minutes is None else 60 * minutes,
        )
        run_dir = Path(out) / "rungs" / "vit" if out is not None and isinstance(model, ViT) else None  # the one rung a checkpoint holds
        result = train(model, source, cfg, run_dir=run_dir, progress=False, extra={"ladder": name, "upscale": upscale},
                       placement=resolve_placement(cfg, resolved))
        s = score(model, source)
        results.append(ImageRung(label, sum(p.numel() for p in model.parameters()), result.elapsed, result.step,
                                 s["accuracy"], s["nll"]))
        say(lang.say(f"{label}: test accuracy {s['accuracy']:.4f}, NLL {s['nll']:.4f} nats ({result.elapsed:.0f} s)",
                     f"{IMAGE_RUNGS_ZH.get(label, label)}：测试集准确率 {s['accuracy']:.4f}，NLL {s['nll']:.4f} 奈特"
                     f"（{result.elapsed:.0f} 秒）"))
    if out is not None:
        write_image_report(results, data, steps, batch_size, Path(out))
    return results


def format_image_table(results: list[ImageRung]) -> list[str]:
    head = ["model", "parameters", "train s", "steps", "test accuracy", "test NLL (nats)"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in results:
        lines.append(f"| {r.model} | {r.parameters:,} | {r.train_seconds:.1f} | {r.steps} | {r.test_accuracy:.4f} | {r.test_nll:.4f} |")
    return lines


def write_image_report(results: list[ImageRung], data: ImageData, steps: int, batch_size: int, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(COLUMNS), lineterminator="\n")
    writer.writeheader()
    writer.writerows(r.row() for r in results)
    atomic_write_text(out / "ladder.csv", buf.getvalue())
    n_train, n_test = len(data.split("train")[1]), len(data.split("val")[1])
    md = [
        "# The ladder on scikit-learn's digits", "",
        (f"{data.image_size}x{data.image_size} grey images, {n_train} training and {n_test} test images "
         "(a stratified split, seed 0: `redthread.data.images`). Every rung: the shared training loop, "
         f"{steps} steps of batch {batch_size}. Test NLL is -log P(class | image), nats per image."), "",
        *format_image_table(results), "",
    ]
    atomic_write_text(out / "ladder.md", "\n".join(md))


def image_ladder_command(args) -> None:
    if args.data or args.lines or args.rungs or args.regression:
        raise RedthreadError("--images runs the image rungs on its own data: drop --data/--lines/--rungs/--regression")
    out = Path(args.out)
    check_report_folder(out, args.overwrite)
    steps = args.steps if args.steps is not None else VIT_TRAIN["max_iters"]
    batch_size = args.batch_size if args.batch_size is not None else VIT_TRAIN["batch_size"]
    if steps < 1 or batch_size < 1:
        raise RedthreadError(f"--steps and --batch-size must be positive, got {steps} and {batch_size}")
    print(lang.say(f"the image ladder on {args.images} (upscale {args.upscale}): 3 rungs, {steps} steps of batch "
                   f"{batch_size} each",
                   f"{args.images} 上的图像阶梯（放大 {args.upscale} 倍）：3 级，每级 {steps} 步，批大小 {batch_size}"))
    results = run_image_ladder(args.images, steps, batch_size, args.minutes, args.upscale, out, args.seed, args.device)
    print()
    for line in format_image_table(results):
        print(line)
    print(lang.say(f"\nreport: {out / 'ladder.md'} (+ ladder.csv; the ViT's run folder in {out / 'rungs' / 'vit'})",
                   f"\n报告：{out / 'ladder.md'}（另有 ladder.csv；ViT 的运行文件夹在 {out / 'rungs' / 'vit'}）"))



def image_attention_command(args, log=print) -> None:
    """`redthread attention --checkpoint RUN --index N | --image FILE --out page.html [--figure F]`:
    a ViT run (its patches) or a captioner run (its caption's words over the patches)."""
    from redthread.data.image_files import read_image_file
    from redthread.data.images import prepare_image
    from redthread.models.captioner import Captioner
    from redthread.train.checkpoint import read_checkpoint
    from redthread.viz.explorer import write_explorer
    from redthread.viz.figures import check_figure_path
    from redthread.viz.image_attention import image_attention, test_image

    if args.checkpoint is None:
        raise RedthreadError("--index/--image show an image model's attention: give its run (ViT or captioner) with --checkpoint")
    if (args.index is None) == (args.image is None):
        raise RedthreadError("give the image with --index N (a test image of the run's data) or --image FILE (one of them)")
    if args.text is not None or args.text_file is not None or args.target is not None:
        raise RedthreadError("--index/--image show an image's attention: drop --text/--text-file/--target")
    out = fresh_output_path(Path(args.out), args.overwrite)
    if out.suffix.lower() not in (".html", ".htm"):
        raise RedthreadError(f"--out {out}: the explorer is an HTML page; give a name ending in .html")
    figure = None if args.figure is None else fresh_output_path(check_figure_path(args.figure), args.overwrite)
    ckpt = read_checkpoint(args.checkpoint)
    if not isinstance(ckpt.model, (ViT, Captioner)):
        raise RedthreadError(f"{args.checkpoint} holds a {ckpt.model_class}: --index/--image need a ViT run "
                             "(redthread train --task vit-digits) or a captioner run (--task caption-shapes)")
    model = ckpt.model
    notices = []
    with lang.both_languages():  # the page switches language: its title and notices in both
        if args.index is not None:
            image, title = test_image(ckpt, args.index)
        else:
            image, notices = prepare_image(read_image_file(args.image), model.cfg.channels, model.cfg.image_size)
            title = Path(args.image).name
    for n in notices:
        log(f"notice: {lang.resolve(n, lang.language())}")
    # the figure is drawn before the page is written: a bad --layer writes nothing
    shown = image_attention(ckpt, image, title, "; ".join(notices) or None, figure, args.layer, args.head)
    if figure is not None:
        log(f"figure: {figure}" + ("" if shown.caption is None else f" (one panel per word of \"{shown.caption}\")"))
    write_explorer(shown.payload, out)
    log(f"explorer: {out} ({lang.resolve(title, lang.language())})")


def vit_command(args, model_fields: dict, train_fields: dict, progress) -> None:
    """`redthread train --task vit-digits`: train, then print the test accuracy and NLL."""
    if args.data is not None:
        raise RedthreadError("--task vit-digits trains on scikit-learn's bundled digits: drop --data")
    r = train_vit_digits(args.out, args.upscale, model_fields, train_fields, resume=args.resume,
                         overwrite=args.overwrite, progress=progress, log=print)
    if is_main():
        print(f"test ({r['images']} images): accuracy {r['accuracy']:.4f}, NLL {r['nll']:.4f} nats/image")
        print(f"run folder: {args.out}")
