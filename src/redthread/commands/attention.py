"""`redthread attention`: the offline explorer page for one text, static figures, and which heads
send a pronoun to which word (the source's example: in "The animal didn't cross the street
because it was too tired", 'it' should attend to 'animal').

    redthread attention --checkpoint runs/demo --text "To be, or not to be" --out page.html
    redthread attention --pretrained minilm --text "The animal didn't cross the street because it was too tired."
    redthread attention --checkpoint runs/vit --index 0 --out digit.html   (a ViT run: an image's patches)

The page carries the last layer's query and key vectors for its neuron view; --neuron-layer N
picks another layer, --neuron-layer none leaves them out.
"""

from __future__ import annotations

from pathlib import Path

import torch

from redthread.errors import RedthreadError
from redthread.files import atomic_write_text, fresh_output_path
from redthread.lang import layer_head

from redthread.viz.heads import PRONOUNS, contrast_report, heads_report, rank_heads, word_spans
from redthread.viz.inspector import load_inspector


def read_text(text: str | None, text_file: str | None) -> str:
    if (text is None) == (text_file is None):
        raise RedthreadError("give the text with --text or --text-file (one of them)")
    if text_file is not None:
        path = Path(text_file)
        if not path.is_file():
            raise RedthreadError(f"text file not found: {path}")
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError as e:
            raise RedthreadError(f"text file {path} is not valid UTF-8 (byte {e.start})") from None
    if not text.strip():
        raise RedthreadError("the text is empty")
    return text


def attention_command(args, log=print) -> None:
    from redthread.viz.explorer import write_explorer
    from redthread.viz.figures import check_figure_path, plot_grid, plot_head

    text = read_text(args.text, args.text_file)
    out = fresh_output_path(Path(args.out), args.overwrite)
    if out.suffix.lower() not in (".html", ".htm"):
        raise RedthreadError(f"--out {out}: the explorer is an HTML page; give a name ending in .html")
    figure = None if args.figure is None else fresh_output_path(check_figure_path(args.figure), args.overwrite)
    if (args.layer is None) != (args.head is None):
        raise RedthreadError("give --layer and --head together (one head's heatmap), or neither (the grid)")
    source = args.source
    words = {w.lower() for w, _, _ in word_spans(text)}
    if source is None and args.targets is None:
        source = next((w for w in PRONOUNS if w in words), None)  # the example: a pronoun, if there is one
    if args.contrast is not None and not args.contrast.strip():
        raise RedthreadError("the --contrast text is empty")
    report = None
    if source is not None or args.targets is not None or args.contrast is not None:
        report = fresh_output_path(Path(args.report) if args.report else out.with_name(out.stem + "-heads.md"), args.overwrite)

    inspector = load_inspector(checkpoint=args.checkpoint, pretrained=args.pretrained, device=args.device)
    payload = inspector.attention_payload(text, args.target, neuron_layer=args.neuron_layer)
    if report is not None:  # computed before anything is written, so a bad word name writes nothing
        targets = None if args.targets is None else [t.strip() for t in args.targets.split(",") if t.strip()]
        ranking = rank_heads(inspector, text, source, targets, target_text=args.target)
        md = heads_report(ranking)
        if args.contrast is not None:  # the same word in a second text: what moves
            other = rank_heads(inspector, args.contrast, ranking["source"], targets, target_text=args.target)
            md += "\n" + heads_report(other).replace("# Where", "## Where", 1) + "\n" + contrast_report(ranking, other)
    tab = payload["tabs"][0]
    L, H = len(tab["weights"]), len(tab["weights"][0])
    if args.layer is not None and not (0 <= args.layer < L and 0 <= args.head < H):
        raise RedthreadError(f"--layer/--head out of range: the model has {L} layers and {H} heads (from 0)")
    if payload["notice"]:
        log(f"notice: {payload['notice']}")
    write_explorer(payload, out)
    log(f"explorer: {out} ({inspector.description})")
    if figure is not None:
        att = torch.tensor(tab["weights"])  # (L, H, T, S)
        if args.layer is None:
            plot_grid(att, tab["queries"], tab["keys"], figure, title=inspector.shown_description)
        else:
            title = layer_head(args.layer, args.head)
            plot_head(att[args.layer, args.head], tab["queries"], tab["keys"], figure, title=title)
        log(f"figure: {figure}")
    if report is not None:
        atomic_write_text(report, md)
        log("")
        log(md.rstrip())
        log(f"\nreport: {report}")
