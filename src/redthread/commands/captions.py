"""`redthread train --task caption-shapes|caption-digits`: train and score the captioner.

Claim C14: a caption's words attend to image regions. The captioner (`models/captioner.py`: a
ViT encoder, a decoder with cross-attention) is trained by the one loop on scenes generated in
code (`data/captions.py`), then scored on held-out scenes it never saw:

    exact match     greedy captions equal to the reference, word for word (and with top-p
                    sampling, p = 0.9, temperature 1, seed 0)
    test NLL        -log P(caption word | words before, image), nats per word, teacher-forced
    grounding       the share of each object word's cross-attention (heads averaged, per layer,
                    then averaged over layers) on that object's patches, on the reference
                    captions, beside the share uniform attention would give

Its attention page and per-word overlays (`redthread attention --index N`): `redthread.viz.image_attention`.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

from redthread.data.captions import CaptionData, load_caption_data
from redthread.errors import RedthreadError
from redthread.files import atomic_write_text
from redthread.generate.captions import GREEDY, caption
from redthread.generate.config import SampleConfig
from redthread.models.captioner import Captioner, CaptionerConfig, captioner_config
from redthread.train.distributed import is_main
from redthread.train.loop import TrainConfig, evaluate, resolve_placement, train
from redthread.train.memory import check_training_fits
from redthread.train.recipes import CAPTION_TRAIN
from redthread.train.run_folder import RunFolder
from redthread.viz.patches import caption_grounding as grounding

SCENES = {"n_train": 20000, "n_test": 1000, "seed": 0}
TOP_P = 0.9


def pad_to(seq: torch.Tensor, length: int) -> torch.Tensor:
    return torch.nn.functional.pad(seq, (0, length - seq.size(1)))[:, :length]  # pads with <pad> = 0


@torch.no_grad()
def exact_match(model: Captioner, data: CaptionData, split: str = "val", batch_size: int = 256,
                sampling: SampleConfig = GREEDY) -> float:
    """The share of scenes whose decoded caption equals the reference, word for word."""
    s = data.split(split)
    device = next(model.parameters()).device
    hits = 0
    for start in range(0, len(s), batch_size):
        ref = s.tokens[start : start + batch_size]  # (B, L)
        out = caption(model, s.images[start : start + batch_size].to(device), sampling).cpu()
        hits += int((pad_to(out, ref.size(1)) == ref).all(1).sum())
    return hits / len(s)


def score_captioner(model: Captioner, data: CaptionData, split: str = "val") -> dict:
    model.eval()
    g = grounding(model, data, split)
    return {
        "scenes": len(data.split(split)),
        "exact_match": exact_match(model, data, split),
        "exact_match_top_p": exact_match(model, data, split, sampling=SampleConfig(temperature=1.0, top_p=TOP_P, seed=0)),
        "nll": evaluate(model, data, split, batch_size=256)["nll"],
        **g.to_dict(),
    }


def _words(value: str | None, what: str) -> list[str] | None:
    if value is None:
        return None
    words = [w.strip() for w in value.split(",") if w.strip()]
    if not words:
        raise RedthreadError(f"--{what} is empty: the caption vocabulary needs at least one {what[:-1]}")
    return words


def train_captioner(
    task: str,
    out: str | Path,
    model_fields: dict | None = None,
    train_fields: dict | None = None,
    scenes: int | None = None,
    colours: str | None = None,
    shapes: str | None = None,
    patch_size: int | None = None,
    resume: bool = False,
    overwrite: bool = False,
    progress: bool = False,
    log=print,
) -> dict:
    """Train a captioner on `task` into the run folder `out`; write results.json; return the test scores."""
    from redthread.train import distributed
    from redthread.train.checkpoint import read_checkpoint

    log = log if distributed.is_main() else (lambda line: None)  # under torchrun, rank 0 reports and writes
    out = Path(out)
    folder = RunFolder(out, resume, overwrite)  # refuses to clobber a run; --overwrite stages the new one beside it
    if scenes is not None and (not isinstance(scenes, int) or scenes < 1):
        raise RedthreadError(f"--scenes must be a positive number of training scenes, got {scenes}")
    settings = {**SCENES, "n_train": scenes if scenes is not None else SCENES["n_train"], "patch_size": patch_size,
                "colours": _words(colours, "colours"), "shapes": _words(shapes, "shapes")}
    ckpt = None
    if resume:  # the scenes, and the model, of the run being continued
        ckpt = read_checkpoint(out)
        ckpt.require_resumable()  # refused before the scenes are made
        if ckpt.extra.get("task") != task:
            raise RedthreadError(f"the run in {out} is {ckpt.extra.get('task') or 'not a captioner'}, not {task}")
        settings = ckpt.extra["scenes"]
        model_fields = ckpt.config
    data = load_caption_data(task, **settings)
    settings["patch_size"] = data.patch_size
    cfg_model = CaptionerConfig.from_dict(model_fields) if resume else captioner_config(data, model_fields or {})
    cfg = TrainConfig(**{**CAPTION_TRAIN, "eval_interval": 500, "eval_batches": 10, "log_interval": 50, **(train_fields or {})})
    placement = resolve_placement(cfg)  # the device and the precision, once: the size check and the loop get them
    check_training_fits("Captioner", cfg_model, cfg.batch_size, placement.device)
    torch.manual_seed(cfg.seed)
    model = Captioner(cfg_model)
    n_train, n_test = len(data.split("train")), len(data.split("val"))
    log(f"captioner on {task}: {n_train:,} training scenes, {n_test:,} unseen test scenes, vocabulary of "
        f"{len(data.vocab)}; {model.num_params():,} parameters, {cfg.max_iters} steps")
    extra = {"task": task, "scenes": settings, "vocab": data.vocab.to_list(), "test_kept": data.test_kept}
    with folder:  # a failure before the first checkpoint leaves a run it was replacing as it was
        result = train(model, data, cfg, run_dir=folder.write_dir, resume=ckpt if resume else False, progress=progress, log=log,
                       extra=extra, publish=folder.publish, placement=placement)
    scores = {**score_captioner(model, data), "steps": result.step, "train_seconds": result.elapsed, "task": task}
    if distributed.is_main():
        atomic_write_text(out / "results.json", json.dumps(scores, indent=2) + "\n")
    return scores


def report_lines(r: dict) -> list[str]:
    layers = ", ".join(f"{v:.3f}" for v in r["grounding_per_layer"])
    return [
        (f"test ({r['scenes']} unseen scenes): exact match {r['exact_match']:.4f} greedy, "
        f"{r['exact_match_top_p']:.4f} top-p {TOP_P}; NLL {r['nll']:.4f} nats/word"),
        (f"grounding: {r['grounding']:.3f} of each object word's cross-attention on its object "
        f"(per layer {layers}) against {r['uniform_baseline']:.3f} for uniform attention ({r['grounded_words']} words)"),
    ]


def captions_command(args, model_fields: dict, train_fields: dict, progress) -> None:
    """`redthread train --task caption-shapes|caption-digits`: train, then print the test report."""
    if args.data is not None:
        raise RedthreadError(f"--task {args.task} generates its own scenes: drop --data")
    if "n_layer" in model_fields:
        raise RedthreadError("the captioner has two stacks: use --n-layer-encoder and --n-layer-decoder, not --n-layer")
    stacks = {n: getattr(args, n) for n in ("n_layer_encoder", "n_layer_decoder") if getattr(args, n) is not None}
    model_fields = {**model_fields, **stacks}
    r = train_captioner(args.task, args.out, model_fields, train_fields, args.scenes, args.colours, args.shapes,
                        args.patch_size, resume=args.resume, overwrite=args.overwrite, progress=progress, log=print)
    if is_main():
        for line in report_lines(r):
            print(line)
        print(f"run folder: {args.out}")
