"""An image model's attention, for the explorer page (`redthread attention --index N | --image FILE`, and the web
app's /api/image) and as figures drawn on the image.

Claim C14 of the essay: an image is a sequence of patches, and a caption's words attend to image regions.

    ViT run         every layer x head over the patches (and the class token); the figure: attention
                    rollout through every layer, then each head of one layer, on the image
    captioner run   its greedy caption, recorded in one teacher-forced pass: the words over the patches
                    (cross-attention), the words over the words, the patches over the patches; the
                    figure: one panel per word, its cross-attention on the image

`image_attention` takes either run and returns the explorer's payload (and a captioner's caption);
`test_image` is image `index` of a run's own test split. Shape legend: L layers, H heads, T queries,
S keys, P patches, C channels.
"""

from __future__ import annotations

import io
from typing import NamedTuple

import torch

from redthread.data.captions import EOS, Vocabulary, load_caption_data, load_test_scenes
from redthread.data.images import load_digits, prepare_image
from redthread.errors import InvalidValue
from redthread.generate.captions import caption
from redthread.lang import language, layer_head, resolve, say, sides
from redthread.models.captioner import Captioner
from redthread.models.vit import ViT
from redthread.viz.explorer import payload_tab
from redthread.viz.record import record_attention
from redthread.words import plural


class ImageAttention(NamedTuple):
    payload: dict  # the explorer's: title, model, notice, tabs
    caption: str | None  # a captioner's greedy caption; None for a ViT


def image_attention(ckpt, image: torch.Tensor, title: str, notice: str | None = None, figure=None,
                    layer: int | None = None, head: int | None = None) -> ImageAttention:
    """The explorer payload of one image (1, C, H, W) through a ViT run (its patches) or a captioner run (its
    greedy caption's words over the patches). Given `figure`, the same attention is drawn on the image there
    first (`vit_overlays`, `caption_overlays`), so a bad `layer` or `head` fails before anything is returned.
    `title` and `notice` may hold both languages (made under `both_languages()`): the page carries each in both,
    its language switch picks one; the figure is in the language chosen."""
    (title_en, title_zh), (notice_en, notice_zh), shown = sides(title), sides(notice), resolve(title, language())
    if not isinstance(ckpt.model, Captioner):
        payload = vit_payload(ckpt.model, image, title_en, notice_en)
        if figure is not None:
            vit_overlays(ckpt.model, image, figure, layer, head, shown)
        caption = None
    else:
        vocab = caption_vocab(ckpt)
        ids, maps = caption_attention(ckpt.model, image)  # the greedy caption and its maps, for the page and the figure
        payload = caption_payload(ckpt.model, image, ids, maps, vocab, title_en, notice_en)
        if figure is not None:
            caption_overlays(image, ids, maps, vocab, figure, layer, head, shown)
        caption = " ".join(vocab.decode(ids))
    payload["zh"].update(title=title_zh, notice=notice_zh)
    return ImageAttention(payload, caption)


def test_image(ckpt, index: int) -> tuple[torch.Tensor, str]:
    """Test image `index` of a ViT or captioner run's data, as its model takes it (1, C, H, W), and a title."""
    if isinstance(ckpt.model, Captioner):
        image, _, title = test_scene(ckpt, index)
        return image, title
    images, labels = load_digits(upscale=int(ckpt.extra.get("upscale", 1))).split("val")
    if not 0 <= index < len(labels):
        raise InvalidValue(f"index {index} is out of range: the test split has {len(labels)} images (0-{len(labels) - 1})")
    image, _ = prepare_image(images[index], ckpt.model.cfg.channels, ckpt.model.cfg.image_size)
    return image, say(f"test image {index} of the digits (label {int(labels[index])})",
                      f"手写数字的测试图像 {index}（标签 {int(labels[index])}）")


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


# ---- a ViT: every layer x head over the patches ---------------------------------------------------


@torch.no_grad()
def vit_payload(model: ViT, image: torch.Tensor, title: str, notice: str | None = None) -> dict:
    """The explorer payload of one image (1, C, H, W): every layer x head over the patches (and class token)."""
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
    model_text = (f"ViT, {plural(cfg.n_layer, 'layer')} x {plural(cfg.n_head, 'head')}, {G}x{G} patches of {cfg.patch_size}x{cfg.patch_size}; "
                  f"P(class {top} | image) = {probs[top]:.3f}")
    model_zh = (f"ViT，{cfg.n_layer} 层 × {cfg.n_head} 个头，{G}x{G} 个图块，每块 {cfg.patch_size}x{cfg.patch_size}；"
                f"P(类别 {top} | 图像) = {probs[top]:.3f}")
    return {"title": title, "model": model_text, "notice": notice, "tabs": [tab], "zh": {"model": model_zh, "notice": notice}}


@torch.no_grad()
def vit_overlays(model: ViT, image: torch.Tensor, path, layer: int | None = None, head: int | None = None,
                 title: str | None = None) -> None:
    """The ViT's attention drawn on the image: attention rollout through every layer, then each
    head of one layer (default the last): the class token's row, or with mean pooling the mean row."""
    from redthread.viz.patches import attention_rollout, plot_patch_overlays

    model.eval()
    with record_attention(model) as maps:
        probs = model(image).softmax(-1)[0]  # (K,)
    att = maps.stacked("encoder")[:, 0]  # (L, H, S, S), S = (1 +) P
    L, H = att.shape[:2]
    if layer is None:
        layer = L - 1
    if not 0 <= layer < L or (head is not None and not 0 <= head < H):
        raise InvalidValue(f"--layer/--head out of range: the ViT has {L} layers and {H} heads (from 0)")
    off = int(model.cfg.pool == "cls")

    def reader(rows):  # (..., S, S) -> (..., P): what the pooled output reads from each patch
        return rows[..., 0, off:] if off else rows[..., :, :].mean(-2)

    panels = [reader(attention_rollout(att))[None]]  # (1, P)
    heads = range(H) if head is None else [head]
    panels.append(reader(att[layer, list(heads)]))  # (h, P)
    titles = [say("rollout, all layers", "注意力展开，所有层")] + [layer_head(layer, h) for h in heads]
    top = int(probs.argmax())
    looks = say(f"where the {'class token' if off else 'mean of the patches'} looks (P({top} | image) = {probs[top]:.3f})",
                f"{'类别词元' if off else '图块的平均'}看向哪里（P({top} | 图像) = {probs[top]:.3f}）")
    plot_patch_overlays(image[0], torch.cat(panels), titles, path, suptitle=looks + (f"\n{title}" if title else ""))


# ---- a captioner: its caption's words over the patches --------------------------------------------


def caption_vocab(ckpt) -> Vocabulary:
    """The words of a captioner run, saved beside its model by `train_captioner`."""
    if "vocab" not in ckpt.extra:
        raise InvalidValue("this captioner was saved without its vocabulary (no 'vocab' in its metadata), so its "
                             "words cannot be read; train one with redthread train --task caption-shapes")
    return Vocabulary(ckpt.extra["vocab"])


def test_scene(ckpt, index: int):
    """Test scene `index` of a captioner run: (image (1, C, H, W), reference words, title)."""
    if "task" not in ckpt.extra or "scenes" not in ckpt.extra:
        raise InvalidValue("this captioner was saved without the settings of its scenes, so its test scenes cannot "
                             "be made again: show an image of your own with --image FILE")
    task, settings = ckpt.extra["task"], ckpt.extra["scenes"]
    if "test_kept" in ckpt.extra:  # the test scenes alone (~0.2 s instead of ~4 s for every scene)
        s, vocab = load_test_scenes(task, ckpt.extra["test_kept"], **settings)
    else:  # a run from before test_kept was saved
        data = load_caption_data(task, **settings)
        s, vocab = data.split("val"), data.vocab
    if not 0 <= index < len(s):
        raise InvalidValue(f"index {index} is out of range: the test split has {len(s)} scenes (0-{len(s) - 1})")
    words = vocab.decode(s.tokens[index].tolist())
    return s.images[index : index + 1], words, say(f"test scene {index} of {task} (reference: {' '.join(words)})",
                                                   f"{task} 的测试场景 {index}（参考描述：“{' '.join(words)}”）")


@torch.no_grad()
def caption_attention(model: Captioner, image: torch.Tensor) -> tuple[list[int], object]:
    """Greedy caption of one image (1, C, H, W) and its attention maps, recorded on the caption
    (<bos> + words + <eos>) in one teacher-forced pass."""
    model.eval()
    ids = caption(model, image)[0].tolist()
    ids = ids[: ids.index(EOS) + 1] if EOS in ids else ids
    with record_attention(model) as maps:
        model(image, torch.tensor([ids[:-1]]))
    return ids, maps


def caption_payload(model: Captioner, image: torch.Tensor, ids: list[int], maps, vocab: Vocabulary, title: str,
                    notice: str | None) -> dict:
    """Explorer payload of `caption_attention`'s caption and maps: the encoder over patches, the
    decoder over words, the words over patches."""
    words = vocab.words
    inputs = [words[i] for i in ids[:-1]]  # what the decoder reads: <bos> word word ...
    produced = [f"→ {words[i]}" for i in ids[1:]]  # what each step wrote
    G = model.grid
    patches = [f"patch r{r}c{c}" for r in range(G) for c in range(G)]
    picture = {"src": image_data_uri(image[0]), "grid": [G, G], "offset": 0}
    tabs = [
        payload_tab("cross", produced, patches, maps.stacked("cross")[:, 0], image=picture),
        payload_tab("decoder", inputs, inputs, maps.stacked("decoder")[:, 0]),
        payload_tab("encoder", patches, patches, maps.stacked("encoder")[:, 0], image=picture),
    ]
    caption = " ".join(vocab.decode(ids))
    cfg = model.cfg
    model_text = (f"captioner: ViT encoder {plural(cfg.n_layer_encoder, 'layer')}, decoder "
                  f"{plural(cfg.n_layer_decoder, 'layer')}, {plural(cfg.n_head, 'head')}, {G}x{G} patches; greedy caption: \"{caption}\"")
    model_zh = (f"描述模型：ViT 编码器 {cfg.n_layer_encoder} 层，解码器 {cfg.n_layer_decoder} 层，{cfg.n_head} 个头，"
                f"{G}x{G} 个图块；贪心解码的描述：\"{caption}\"")
    return {"title": title, "model": model_text, "notice": notice, "tabs": tabs, "zh": {"model": model_zh, "notice": notice}}



def caption_overlays(image: torch.Tensor, ids: list[int], maps, vocab: Vocabulary, path, layer: int | None = None,
                     head: int | None = None, title: str | None = None) -> str:
    """One panel per word of `caption_attention`'s caption: its cross-attention over the patches
    (mean over heads and layers, or one layer / head) drawn on the image. Returns the caption."""
    from redthread.viz.patches import plot_patch_overlays

    cross = maps.stacked("cross")[:, 0]  # (L, H, T, P)
    L, H = cross.shape[:2]
    if (layer is not None and not 0 <= layer < L) or (head is not None and not 0 <= head < H):
        raise InvalidValue(f"--layer/--head out of range: the decoder has {L} layers and {H} heads (from 0)")
    rows = cross if layer is None else cross[layer : layer + 1]
    rows = rows.mean(0)  # (H, T, P)
    rows = rows.mean(0) if head is None else rows[head]  # (T, P)
    if layer is None and head is None:
        which = say("mean over layers and heads", "各层和各头的平均")
    else:
        which = say(f"layer {'all' if layer is None else layer}, head {'mean' if head is None else head}",
                    f"层 {'全部' if layer is None else layer}·头 {'平均' if head is None else head}")
    titles = [vocab.words[i] for i in ids[1:]]
    caption = " ".join(vocab.decode(ids))
    plot_patch_overlays(image[0], rows, titles, path,
                        suptitle=say(f"\"{caption}\": cross-attention per word ({which})", f"“{caption}”：每个词的交叉注意力（{which}）")
                        + (f"\n{title}" if title else ""))

    return caption
