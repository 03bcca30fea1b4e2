"""`redthread train --task vit-digits` and `redthread ladder --images digits`: images as patches.

Claim C14 of the seed (an image is a sequence of patches, and the text models' encoder blocks
classify it) and C2 (a softmax head estimates P(class | image)). On scikit-learn's bundled
digits, with the fixed stratified split of `redthread.data.images`:

    softmax regression   P(class | pixels) = softmax(W x + b), the linear rung, on the 64 pixels
    MLP                  two tanh layers on the pixels
    ViT                  4 x 4 patches of 2 x 2 pixels, a class token, 3 encoder blocks

each trained by the one loop (`redthread.train.loop.train`) on the same steps and batches, and
scored on the same held-out test images: accuracy and NLL (nats per image).
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass, fields
from pathlib import Path

import torch
from torch import nn

from redthread.data.images import ImageData, load_digits
from redthread.errors import RedthreadError
from redthread.files import atomic_write_text
from redthread.models.regression import MLPClassifier, SoftmaxRegression
from redthread.models.size import check_training_fits
from redthread.models.vit import ViT, ViTConfig
from redthread.train.loop import TrainConfig, evaluate, train

TASKS = ("vit-digits",)
IMAGE_SETS = ("digits",)
# settings measured on digits (docs/vision.md): AdamW, cosine decay, batch 64
VIT_TRAIN = {"max_iters": 1000, "batch_size": 64, "lr": 2e-3, "min_lr": 1e-4, "warmup_iters": 100, "weight_decay": 0.05}
VIT_MODEL = {"dropout": 0.1}  # 1,000 steps: test NLL 0.087 against 0.146 without, accuracy 0.975 both (docs/vision.md)
LINEAR_TRAIN = {"lr": 1e-2, "weight_decay": 0.0}  # decay would pull every class towards uniform
MLP_TRAIN = {"lr": 3e-3, "weight_decay": 0.0}
MLP_SIZE = {"d_hidden": 128, "n_layer": 2}
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


@torch.no_grad()
def score(model: nn.Module, data, split: str = "val", batch_size: int = 256) -> dict:
    """Accuracy and NLL (nats per image) over every image of a split, once."""
    model.eval()
    nll = evaluate(model, data, split, batch_size=batch_size)["nll"]
    device = next(model.parameters()).device
    correct = total = 0
    for x, y in data.eval_batches(split, batch_size):
        correct += int((model(x.to(device)).argmax(-1).cpu() == y).sum())
        total += y.numel()
    return {"accuracy": correct / total, "nll": nll, "images": total}


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
    from redthread.commands.train import check_run_dir
    from redthread.train import distributed

    log = log if distributed.is_main() else (lambda line: None)  # under torchrun, rank 0 reports and writes
    out = Path(out)
    folder = check_run_dir(out, resume, overwrite)
    data = load_digits(upscale=upscale)
    cfg_model = vit_config(data, upscale, model_fields or {})
    cfg = TrainConfig(**{**VIT_TRAIN, "eval_interval": 250, "eval_batches": 10, "log_interval": 50, **(train_fields or {})})
    check_training_fits("ViT", cfg_model, cfg.batch_size, cfg.device)
    torch.manual_seed(cfg.seed)
    model = ViT(cfg_model)
    log(f"ViT on digits ({data.image_size}x{data.image_size}, {cfg_model.n_patches} patches of "
        f"{cfg_model.patch_size}x{cfg_model.patch_size}): {model.num_params():,} parameters, {cfg.max_iters} steps")
    try:
        result = train(model, data, cfg, run_dir=folder.write_dir, resume=resume, progress=progress, log=log,
                       extra={"task": "vit-digits", "upscale": upscale},
                       publish=folder.publish if folder.replacing else None)
    except BaseException:
        folder.abandon()  # failed before its first checkpoint: an old run it was replacing stays
        raise
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
        result = train(model, source, cfg, run_dir=run_dir, progress=False, extra={"ladder": name, "upscale": upscale})
        s = score(model, source)
        results.append(ImageRung(label, sum(p.numel() for p in model.parameters()), result.elapsed, result.step,
                                 s["accuracy"], s["nll"]))
        say(f"{label}: test accuracy {s['accuracy']:.4f}, NLL {s['nll']:.4f} nats ({result.elapsed:.0f} s)")
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
    from redthread.commands.ladder import check_out

    if args.data or args.lines or args.rungs or args.regression:
        raise RedthreadError("--images runs the image rungs on its own data: drop --data/--lines/--rungs/--regression")
    out = Path(args.out)
    check_out(out, args.overwrite)
    steps = args.steps if args.steps is not None else VIT_TRAIN["max_iters"]
    batch_size = args.batch_size if args.batch_size is not None else VIT_TRAIN["batch_size"]
    if steps < 1 or batch_size < 1:
        raise RedthreadError(f"--steps and --batch-size must be positive, got {steps} and {batch_size}")
    print(f"the image ladder on {args.images} (upscale {args.upscale}): 3 rungs, {steps} steps of batch {batch_size} each")
    results = run_image_ladder(args.images, steps, batch_size, args.minutes, args.upscale, out, args.seed, args.device)
    print()
    for line in format_image_table(results):
        print(line)
    print(f"\nreport: {out / 'ladder.md'} (+ ladder.csv; the ViT's run folder in {out / 'rungs' / 'vit'})")


def image_data_uri(image, scale: int = 16) -> str:
    """An image, grey (H, W) or (1, H, W) or colour (3, H, W), values in [0, 1], as a PNG data URI;
    each pixel a scale x scale block (crisp when drawn large). Grey ink (1) is drawn dark on white."""
    import base64

    import numpy as np
    from matplotlib.image import imsave

    pixels = np.asarray(image, dtype=np.float32)
    if pixels.ndim == 3 and pixels.shape[0] == 1:
        pixels = pixels[0]
    block = np.ones((scale, scale), dtype=np.float32)
    buf = io.BytesIO()
    if pixels.ndim == 2:
        imsave(buf, np.kron(pixels, block), cmap="gray_r", vmin=0.0, vmax=1.0, format="png")  # (sH, sW)
    else:
        rgb = np.stack([np.kron(c, block) for c in pixels], axis=-1)  # (sH, sW, 3)
        imsave(buf, rgb.clip(0.0, 1.0), format="png")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


MAX_IMAGE_PIXELS = 16_000_000  # the largest image read (width x height): 16 megapixels, 64 MB decoded as RGBA


class ImageTooLarge(RedthreadError):
    """An image over MAX_IMAGE_PIXELS: refused from its header, before any pixel is decoded."""


def read_image_file(path: str | Path, fit: int | None = None):
    """A PNG (or any format Pillow reads) as an array (C, H, W) with values in [0, 1] (see `_read_image`)."""
    path = Path(path)
    if not path.is_file():
        raise RedthreadError(f"image file not found: {path}")
    return _read_image(path, str(path), fit)


def read_image_bytes(data: bytes, name: str = "the image", fit: int | None = None):
    """The bytes of an image file (PNG, JPEG, ...) as an array (C, H, W) with values in [0, 1] (see `_read_image`)."""
    return _read_image(io.BytesIO(data), name, fit)


def _read_image(source, name: str, fit: int | None = None):
    """Pillow reads the file (PNG, JPEG, GIF, BMP, ...); 8-bit modes become L, RGB or RGBA, 16-bit grey is scaled
    by 65535, 32-bit grey by its brightest pixel.

    A small file can hold a huge image (a decompression bomb: 20000 x 20000 black pixels compress to 400 KB), so the
    size is read from the header first and an image over MAX_IMAGE_PIXELS is refused before it is decoded. Given
    `fit`, an image larger than fit x fit is resized to fit x fit as it is decoded (a JPEG is decoded at reduced
    scale), so its full-size pixels never become floats. Any failure is a one-line RedthreadError.
    """
    import warnings

    import numpy as np
    from PIL import Image

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)  # Pillow's own bomb check, as an error
            with Image.open(source) as img:
                width, height = img.size  # from the header: nothing is decoded yet
                if width * height > MAX_IMAGE_PIXELS:
                    raise ImageTooLarge(f"{name} is {width}x{height} pixels: {_over_the_limit(width * height)}")
                decoded, scale = _decode(img, fit)
                pixels = np.asarray(decoded, dtype=np.float32)
    except RedthreadError:
        raise
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as e:  # Pillow's check, as the file opens
        raise ImageTooLarge(f"{name} is too large to read: {_over_the_limit(_bomb_pixels(str(e)))}") from None
    except Image.UnidentifiedImageError:
        raise RedthreadError(f"cannot read {name} as an image: not a format Pillow reads (PNG, JPEG, GIF, BMP, ...)") from None
    except Exception as e:  # noqa: BLE001 - a corrupt file can fail anywhere in Pillow's decoders; it is the file's fault
        raise RedthreadError(f"cannot read {name} as an image: {str(e).splitlines()[0] if str(e) else type(e).__name__}") from None
    pixels /= scale if scale is not None else max(float(pixels.max()), 1.0)
    return pixels[None] if pixels.ndim == 2 else np.moveaxis(pixels, -1, 0)  # (H, W, C) -> (C, H, W)


def _over_the_limit(pixels: int | None) -> str:
    limit = f"the limit of {MAX_IMAGE_PIXELS / 1e6:.0f} megapixels"
    return f"over {limit}" if pixels is None else f"{pixels / 1e6:.1f} megapixels, over {limit}"


def _bomb_pixels(message: str) -> int | None:
    """The pixel count in Pillow's decompression-bomb message ("Image size (400000000 pixels) exceeds ...")."""
    import re

    found = re.search(r"\((\d+) pixels\)", message)
    return int(found.group(1)) if found else None


def _decode(img, fit: int | None):
    """The image decoded in mode L, RGB, RGBA (full scale 255) or F (16-bit: 65535; 32-bit: None, its brightest
    pixel), resized to fit x fit if it is larger."""
    from PIL import Image

    shrink = fit is not None and max(img.size) > fit
    if shrink:
        img.draft(img.mode, (fit, fit))  # JPEG: decode at 1/2, 1/4 or 1/8 scale, still at least fit x fit
    if img.mode.startswith("I;16"):
        mode, scale = "F", 65535.0
    elif img.mode in ("I", "F"):
        mode, scale = "F", None
    else:
        alpha = "A" in img.getbands() or "transparency" in img.info
        mode, scale = ("RGBA" if alpha else "L" if img.mode in ("1", "L") else "RGB"), 255.0
    decoded = img if img.mode == mode else img.convert(mode)
    if shrink:
        decoded = decoded.resize((fit, fit), Image.BILINEAR, reducing_gap=2.0)
    return decoded, scale


@torch.no_grad()
def image_attention_payload(model: ViT, image: torch.Tensor, title: str, notice: str | None = None) -> dict:
    """The explorer payload of one image (1, C, H, W): every layer x head over the patches (and class token)."""
    from redthread.viz.explorer import payload_tab
    from redthread.viz.record import record_attention

    cfg = model.cfg
    model.eval()
    with record_attention(model) as maps:
        probs = model(image).softmax(-1)[0]  # (K,)
    att = maps.stacked("encoder")[:, 0]  # (L, H, T, S), T = S = P (+ 1)
    G = cfg.grid
    names = ["[CLS]"] * (cfg.pool == "cls") + [f"patch r{r}c{c}" for r in range(G) for c in range(G)]
    pixels = image[0].mean(0)  # (H, W): the grey image the model saw
    tab = payload_tab("encoder", names, names, att,
                      image={"src": image_data_uri(pixels), "grid": [G, G], "offset": int(cfg.pool == "cls")})
    top = probs.argmax().item()
    model_text = (f"ViT, {cfg.n_layer} layers x {cfg.n_head} heads, {G}x{G} patches of {cfg.patch_size}x{cfg.patch_size}; "
                  f"P(class {top} | image) = {probs[top]:.3f}")
    return {"title": title, "model": model_text, "notice": notice, "tabs": [tab]}


def test_image(ckpt, index: int) -> tuple[torch.Tensor, str]:
    """Test image `index` of a ViT or captioner run's data, as its model takes it (1, C, H, W), and a title."""
    from redthread.data.images import prepare_image
    from redthread.models.captioner import Captioner

    if isinstance(ckpt.model, Captioner):
        from redthread.commands.captions import test_scene

        image, _, title = test_scene(ckpt, index)
        return image, title
    images, labels = load_digits(upscale=int(ckpt.extra.get("upscale", 1))).split("val")
    if not 0 <= index < len(labels):
        raise RedthreadError(f"index {index} is out of range: the test split has {len(labels)} images (0-{len(labels) - 1})")
    image, _ = prepare_image(images[index], ckpt.model.cfg.channels, ckpt.model.cfg.image_size)
    return image, f"test image {index} of the digits (label {int(labels[index])})"


def image_payload(ckpt, image: torch.Tensor, title: str, notice: str | None = None) -> dict:
    """The explorer payload of one image (1, C, H, W) through a ViT run (its patches) or a captioner
    run (its greedy caption's words over the patches)."""
    from redthread.models.captioner import Captioner

    if not isinstance(ckpt.model, Captioner):
        return image_attention_payload(ckpt.model, image, title, notice)
    from redthread.commands.captions import caption_attention, caption_payload, caption_vocab

    vocab = caption_vocab(ckpt)
    ids, maps = caption_attention(ckpt.model, image)
    return caption_payload(ckpt.model, image, ids, maps, vocab, title, notice)


def image_attention_command(args, log=print) -> None:
    """`redthread attention --checkpoint RUN --index N | --image FILE --out page.html [--figure F]`:
    a ViT run (its patches) or a captioner run (its caption's words over the patches)."""
    from redthread.commands.attention import _fresh
    from redthread.data.images import prepare_image
    from redthread.models.captioner import Captioner
    from redthread.train.checkpoint import read_checkpoint
    from redthread.viz.explorer import write_explorer
    from redthread.viz.figures import check_figure_path

    if args.checkpoint is None:
        raise RedthreadError("--index/--image show an image model's attention: give its run (ViT or captioner) with --checkpoint")
    if (args.index is None) == (args.image is None):
        raise RedthreadError("give the image with --index N (a test image of the run's data) or --image FILE (one of them)")
    if args.text is not None or args.text_file is not None or args.target is not None:
        raise RedthreadError("--index/--image show an image's attention: drop --text/--text-file/--target")
    out = _fresh(Path(args.out), args.overwrite)
    if out.suffix.lower() not in (".html", ".htm"):
        raise RedthreadError(f"--out {out}: the explorer is an HTML page; give a name ending in .html")
    figure = None if args.figure is None else _fresh(check_figure_path(args.figure), args.overwrite)
    ckpt = read_checkpoint(args.checkpoint)
    if not isinstance(ckpt.model, (ViT, Captioner)):
        raise RedthreadError(f"{args.checkpoint} holds a {ckpt.model_class}: --index/--image need a ViT run "
                             "(redthread train --task vit-digits) or a captioner run (--task caption-shapes)")
    model = ckpt.model
    notices = []
    if args.index is not None:
        image, title = test_image(ckpt, args.index)
    else:
        image, notices = prepare_image(read_image_file(args.image), model.cfg.channels, model.cfg.image_size)
        title = Path(args.image).name
    for n in notices:
        log(f"notice: {n}")
    notice = "; ".join(notices) or None
    if isinstance(model, Captioner):
        from redthread.commands.captions import caption_attention, caption_overlays, caption_payload, caption_vocab

        vocab = caption_vocab(ckpt)
        ids, maps = caption_attention(model, image)  # the greedy caption and its maps, for the page and the figure
        payload = caption_payload(model, image, ids, maps, vocab, title, notice)
        if figure is not None:  # drawn before the page is written: a bad --layer writes nothing
            caption = caption_overlays(image, ids, maps, vocab, figure, args.layer, args.head, title)
            log(f"figure: {figure} (one panel per word of \"{caption}\")")
        write_explorer(payload, out)
    else:
        payload = image_attention_payload(model, image, title, notice)
        if figure is not None:
            vit_overlays(model, image, figure, args.layer, args.head, title)
            log(f"figure: {figure}")
        write_explorer(payload, out)
    log(f"explorer: {out} ({title})")


@torch.no_grad()
def vit_overlays(model: ViT, image: torch.Tensor, path, layer: int | None = None, head: int | None = None,
                 title: str | None = None) -> None:
    """The ViT's attention drawn on the image: attention rollout through every layer, then each
    head of one layer (default the last): the class token's row, or with mean pooling the mean row."""
    from redthread.viz.patches import attention_rollout, plot_patch_overlays
    from redthread.viz.record import record_attention

    model.eval()
    with record_attention(model) as maps:
        probs = model(image).softmax(-1)[0]  # (K,)
    att = maps.stacked("encoder")[:, 0]  # (L, H, S, S), S = (1 +) P
    L, H = att.shape[:2]
    if layer is None:
        layer = L - 1
    if not 0 <= layer < L or (head is not None and not 0 <= head < H):
        raise RedthreadError(f"--layer/--head out of range: the ViT has {L} layers and {H} heads (from 0)")
    off = int(model.cfg.pool == "cls")

    def reader(rows):  # (..., S, S) -> (..., P): what the pooled output reads from each patch
        return rows[..., 0, off:] if off else rows[..., :, :].mean(-2)

    panels = [reader(attention_rollout(att))[None]]  # (1, P)
    heads = range(H) if head is None else [head]
    panels.append(reader(att[layer, list(heads)]))  # (h, P)
    who = "class token" if off else "mean of the patches"
    titles = ["rollout, all layers"] + [f"layer {layer}, head {h}" for h in heads]
    top = int(probs.argmax())
    plot_patch_overlays(image[0], torch.cat(panels), titles, path,
                        suptitle=f"where the {who} looks (P({top} | image) = {probs[top]:.3f})" + (f"\n{title}" if title else ""))
