"""Reference models: the best model of each rung of the ladder on each shipped corpus, trained with
recorded settings and seeds, and shipped inside the package (issue 27, item 2).

Each model is trained by the ladder's own path (the corpus as `redthread ladder` loads it, the model
by its rung name from the registry, the one training loop) with the settings of its row in BUDGETS,
on one CPU thread, in fp32. A budget is a number of STEPS and a seed, so it means the same on any
machine; the CPU seconds (process time) and wall seconds each took here are measured and recorded
in the model's metadata beside its validation figure: NLL in nats per token of the corpus's whole
validation split, every token once, as `redthread eval` computes it. A row's `why` says how its
settings were chosen (short probes compared on the validation split, so the figures are slightly
optimistic, as every tuned figure of this kind is; the n-gram's smoothing was chosen on a
development split cut from the training data instead).

The shipped file, `src/redthread/data/models/NAME.safetensors`, is a redthread checkpoint whose
weights are stored in float16 (counts in float32, exactly: they are integers), which halves the
package; it loads into the float32 model. Its recorded figures are those of the stored weights; the
float32 model's figure before rounding is recorded beside them (`val_nll_fp32`). A test
(tests/test_reference_models.py) loads every shipped model by name and scores its recorded figure
to 1e-4: a fixed sample of the validation split in the fast tier (`check`), the whole split in the
slow one.

    PYTHONPATH=src OMP_NUM_THREADS=1 .venv/bin/python benchmarks/reference_models.py [--only NAME,...] [--ship]
    PYTHONPATH=src OMP_NUM_THREADS=1 .venv/bin/python benchmarks/reference_models.py --list
    PYTHONPATH=src OMP_NUM_THREADS=1 .venv/bin/python benchmarks/reference_models.py --only names-lstm \
        --try '{"model": {"dropout": 0.1}, "steps": 8000}' --tag drop01     # explore; nothing shipped
    PYTHONPATH=src OMP_NUM_THREADS=1 .venv/bin/python benchmarks/reference_models.py --only names-lstm \
        --ship-from runs/reference/names-lstm-drop01      # ship it, once the row says what it tried
    PYTHONPATH=src OMP_NUM_THREADS=1 .venv/bin/python benchmarks/reference_models.py --tune-ngram
    PYTHONPATH=src .venv/bin/python benchmarks/reference_models.py --table    # docs/benchmarks.md's tables

Run folders go to --out (default runs/reference/NAME, NAME-TAG for --try); --ship also copies each
trained model into the package. Every row together takes about an hour of one CPU thread.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch

from redthread.commands.ladder import LABELS, LadderData, load_ladder_data
from redthread.data.shipped_models import MODELS_DIR
from redthread.models.registry import build_model
from redthread.train.checkpoint import read_checkpoint, save_checkpoint
from redthread.train.loop import TrainConfig, evaluate, train

ROOT = Path(__file__).resolve().parents[1]
THREADS = 1
CHECK = {"batch_size": 32, "max_batches": 4}  # the fast test's sample: the periodic estimate's fixed windows (EVAL_SEED)


@dataclass(frozen=True)
class Corpus:
    """A shipped corpus as the ladder reads it: `data` a stream of characters cut into windows
    (`redthread ladder --data`), or `lines` one example per line (`--lines`)."""

    data: str | None
    lines: str | None
    what: str


# The corpora, by the prefix of their models' names. A larger Tang corpus can replace tang300 here.
CORPORA = {
    "shakespeare": Corpus("tinyshakespeare", None, "tiny Shakespeare (characters; first 90% train, last 10% validation)"),
    "names": Corpus(None, "names", "names.txt (one name per line; makemore's split: 1,000 validation names)"),
    "tang300": Corpus("tang300", None, "唐诗三百首, the Three Hundred Tang Poems (characters; 90% / 10%)"),
}


@dataclass(frozen=True)
class Reference:
    """One row of the budget table: a rung on a corpus, its config fields (vocab_size comes from the
    data; block_size too for line data), its TrainConfig fields, its steps and seed."""

    corpus: str
    rung: str
    model: dict
    train: dict = field(default_factory=dict)
    steps: int = 1
    seed: int = 1337
    ship: bool = True
    why: str = ""

    @property
    def name(self) -> str:
        return f"{self.corpus}-{self.rung}"


# AdamW's defaults for every gradient rung unless a row says otherwise: warm-up over 5% of the steps,
# cosine decay to lr / 10, weight decay 0.1 on matrices, clipping 1.0 (the ladder's recipe).
BUDGETS = [
    # tiny Shakespeare
    Reference("shakespeare", "ngram", {"block_size": 64, "order": 3, "k": 0.1},
              why="order 3, the highest whose dense table ships in a few MB (order 4: 17.9 M entries); k by --tune-ngram"),
    Reference("shakespeare", "bigram", {"block_size": 64}, {"batch_size": 32, "lr": 1e-2, "weight_decay": 0.0}, steps=3000,
              why="the ladder's rung; its optimum is the bigram table, reached in a few thousand steps"),
    Reference("shakespeare", "mlp", {"block_size": 64, "context": 16, "d_embed": 48, "d_hidden": 256},
              {"batch_size": 32, "lr": 3e-3}, steps=8000,
              why="the ladder's MLP (1.8161 on the plays after 1500 steps) given ~9 CPU minutes; one run, not tuned further"),
    Reference("shakespeare", "lstm", {"block_size": 64, "n_layer": 1, "d_embed": 64, "d_hidden": 256},
              {"batch_size": 32, "lr": 5e-3}, steps=4500,
              why="the ladder's LSTM (1.6785 on the plays after 1500 steps) given three times the steps, ~7 CPU minutes; one "
                  "run, whose validation estimate still fell over its last tenth (1.537 -> 1.536)"),
    Reference("shakespeare", "gru", {"block_size": 64, "n_layer": 1, "d_embed": 64, "d_hidden": 256},
              {"batch_size": 32, "lr": 5e-3}, steps=4500,
              why="the ladder's GRU (1.6318 on the plays after 1500 steps) given three times the steps, ~5 CPU minutes; one run"),
    Reference("shakespeare", "transformer", {"block_size": 128, "n_layer": 4, "n_head": 4, "d_model": 128, "pos": "rope"},
              {"batch_size": 24, "optimizer": "muon", "lr": 0.03, "min_lr": 2e-4, "schedule": "rsqrt", "cooldown_frac": 0.2,
               "warmup_iters": 23}, steps=2300,
              why="the speedrun's recipe (Muon, rsqrt with a 1% warm-up and a 20% cool-down, rotary positions, context 128, "
                  "batch 24) on its 4-layer x 128 model, sized to ~15 CPU minutes of one thread; its 2-layer x 64 model at "
                  "the speedrun's rate 0.05 was behind at the same CPU time in a probe (estimate 1.594 after 7,000 steps, "
                  "~630 CPU s, against 1.547 after 1,380 steps, ~530 CPU s) and was stopped there; with dropout 0.1 "
                  "the same run scored 1.4926 (843 CPU s) against 1.4883"),
    # names.txt
    Reference("names", "ngram", {"order": 4, "k": 0.1},
              why="order 4, the highest whose dense table ships in a few MB (order 5: 14.3 M entries); k by --tune-ngram"),
    Reference("names", "bigram", {}, {"batch_size": 32, "lr": 1e-2, "weight_decay": 0.0}, steps=3000, why="provisional"),
    Reference("names", "mlp", {"context": 16, "d_embed": 48, "d_hidden": 256}, {"batch_size": 32, "lr": 3e-3}, steps=20000,
              why="the ladder's MLP given more steps: 1.9793 at 5000 (the ladder's budget), 1.9504 at 10000, 1.9487 at "
                  "20000; dropout 0.2 with 8000 steps did worse (2.0094)"),
    Reference("names", "lstm", {"n_layer": 1, "d_embed": 64, "d_hidden": 256, "dropout": 0.2}, {"batch_size": 32, "lr": 5e-3},
              steps=10000, why="the ladder's LSTM (1.8965 at 5000 steps, no dropout) with dropout 0.2 and twice the steps: 1.8881"),
    Reference("names", "gru", {"n_layer": 1, "d_embed": 64, "d_hidden": 256, "dropout": 0.2}, {"batch_size": 32, "lr": 5e-3},
              steps=10000, why="dropout 0.2 and 10000 steps: 1.9025; the ladder's settings (no dropout, 5000 steps) through "
                               "this script: 1.9108"),
    Reference("names", "transformer", {"n_layer": 4, "n_head": 4, "d_model": 128, "pos": "learned", "norm": "post",
                                       "dropout": 0.2}, {"batch_size": 64, "lr": 2e-3}, steps=8000,
              why="the ladder's Transformer for line data (post-norm, learned positions, batch 64: 1.9227 at 5000 steps) "
                  "with dropout 0.2 and 8000 steps: 1.9014, ~13 CPU minutes"),
    # the Three Hundred Tang Poems
    Reference("tang300", "ngram", {"block_size": 64, "order": 1, "k": 1.0},
              why="order 1, the highest whose dense table ships in a few MB (order 2: 2,562 x 2,562 = 6.6 M entries, 26 MB "
                  "as float32 counts). On the by-poem split's development split bigram counts score a little better "
                  "(6.308 at k 0.03 against 6.333); on the file-position split before it they scored worse at every k "
                  "(6.467 at best against 6.406); k by --tune-ngram"),
    Reference("tang300", "bigram", {"block_size": 64}, {"batch_size": 32, "lr": 1e-2, "weight_decay": 0.0}, steps=600,
              ship=False, why="not shipped: a 2,562 x 2,562 table of logits, 6.6 M weights (13 MB even in float16), more "
                              "than all the other tang300 models together, for a rung that scores worse than the unigram "
                              "counts here. 3000 steps over-fit (the estimate was lowest at step 600, 6.50, and 8.16 on "
                              "the whole split at 3000)"),
    # The learned rows' settings and `why` figures come from probes on the split by file position (the file was in
    # the database's genre order, so validation was the last 乐府 poems); since the split is by poem (a seeded
    # shuffle, data/make_tang300.py) they were trained again with the same settings, not tuned again.
    # 24,865 training characters of 2,562 kinds: every learned rung over-fits within a few hundred steps (about 25
    # passes over the text per 300 steps of 32 x 64), so small models, heavy dropout, and as many steps as the
    # validation estimate kept falling in a probe
    Reference("tang300", "mlp", {"block_size": 64, "context": 8, "d_embed": 32, "d_hidden": 128, "dropout": 0.5},
              {"batch_size": 32, "lr": 3e-3}, steps=200,
              why="probes: hidden 256 with dropout 0.2 was best at step 150 (6.29) and rose to 8.07 by step 750; hidden 128 "
                  "with dropout 0.5 was best at step 120 (estimate 6.07) of 600 (whole split 6.229 at 600)"),
    Reference("tang300", "lstm", {"block_size": 64, "n_layer": 1, "d_embed": 64, "d_hidden": 128, "dropout": 0.5},
              {"batch_size": 32, "lr": 5e-3}, steps=600,
              why="hidden 128, dropout 0.5: the estimate flattened from step 300 (5.93) to 600"),
    Reference("tang300", "gru", {"block_size": 64, "n_layer": 1, "d_embed": 64, "d_hidden": 128, "dropout": 0.5},
              {"batch_size": 32, "lr": 5e-3}, steps=600,
              why="hidden 128, dropout 0.5: the estimate flattened from step 240 (5.94) to 600 (5.92)"),
    Reference("tang300", "transformer", {"block_size": 64, "n_layer": 2, "n_head": 4, "d_model": 64, "pos": "rope", "dropout": 0.3},
              {"batch_size": 32, "lr": 2e-3}, steps=300,
              why="probe of 600 steps (2 layers x 64, dropout 0.3): best estimate at step 240 (5.93), 5.982 on the whole split "
                  "at 600 after over-fitting; 300 steps ends the schedule there"),
]
BY_NAME = {r.name: r for r in BUDGETS}


def load_corpus(ref: Reference) -> LadderData:
    corpus = CORPORA[ref.corpus]
    return load_ladder_data(corpus.data, corpus.lines, "char", block_size=ref.model.get("block_size", 64))


def train_config(ref: Reference) -> TrainConfig:
    settings = {"warmup_iters": max(1, ref.steps // 20), **ref.train}
    if "min_lr" not in settings:
        settings["min_lr"] = settings.get("lr", 1e-3) / 10
    return TrainConfig(max_iters=ref.steps, seed=ref.seed, device="cpu", precision="fp32",
                       eval_interval=max(1, ref.steps // 10), eval_batches=10, log_interval=max(1, min(50, ref.steps // 20)),
                       **settings)


def code_commit() -> str:
    """HEAD, and the files of the code a model depends on (the package's models, layers, training loop, data, the
    ladder's loading; this script) that differ from it: "abc123" or "abc123 + uncommitted changes to FILE, ..."."""
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True).stdout.strip()

    code = [f"src/redthread/{part}" for part in ("models", "layers", "train", "data", "commands/ladder.py")]
    changed = git("diff", "--name-only", "HEAD", "--", *code, "benchmarks/reference_models.py",
                  ":(exclude)src/redthread/data/models").split()
    return (git("rev-parse", "--short=12", "HEAD") or "unknown") + (
        f" + uncommitted changes to {', '.join(changed)}" if changed else "")


def command_line(ref: Reference, change: str | None = None, tag: str | None = None) -> str:
    line = f"PYTHONPATH=src OMP_NUM_THREADS={THREADS} python benchmarks/reference_models.py --only {ref.name}"
    return line + (f" --try '{change}' --tag {tag}" if change else "")


def stored(model: torch.nn.Module) -> torch.nn.Module:
    """The copy of `model` that ships: counts (an n-gram's float64 buffers, integers) as float32, which holds
    them exactly; every other weight as float16."""
    copy_ = copy.deepcopy(model)
    return copy_.float() if hasattr(model, "count") else copy_.half()


def run_reference(ref: Reference, out: Path, ship: bool, change: str | None = None, tag: str | None = None,
                  say=print) -> dict:
    """Train one reference model into out/NAME[-TAG]; write its stored copy and metadata; ship it if asked."""
    torch.set_num_threads(THREADS)
    data = load_corpus(ref)
    fields = {k: v for k, v in ref.model.items() if k != "block_size"}
    cfg = train_config(ref)
    torch.manual_seed(ref.seed)
    model = build_model(ref.rung, vocab_size=data.vocab_size, block_size=data.block_size, **fields)
    corpus = CORPORA[ref.corpus]
    extra = {"data": corpus.data or corpus.lines, "lines": corpus.lines is not None, "tokenizer_kind": "char",
             "rung": ref.rung}
    run_dir = out / (ref.name + (f"-{tag}" if tag else ""))
    if run_dir.exists():
        shutil.rmtree(run_dir)
    say(f"{run_dir.name}: {type(model).__name__} {model.cfg.to_dict()}, {model.num_params():,} parameters; "
        f"{ref.steps} steps, seed {ref.seed}, {ref.train}")
    commit = code_commit()  # the code it is trained with: taken before training, which may outlast a commit
    cpu, wall = time.process_time(), time.perf_counter()
    result = train(model, data.source, cfg, run_dir=run_dir, tokenizer=data.tokenizer, progress=False, log=say, extra=extra)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    model.eval()
    fp32 = evaluate(model, data.source, "val", batch_size=64)
    path = save_checkpoint(run_dir / "shipped", stored(model), None, result.step, data.tokenizer, cfg.to_dict(), None, extra)
    shipped = read_checkpoint(path).model.eval()  # what a user loads: the stored weights, in float32
    final = evaluate(shipped, data.source, "val", batch_size=64)
    check = evaluate(shipped, data.source, "val", **CHECK)
    meta = {
        "name": ref.name, "corpus": ref.corpus, "data": corpus.what, "rung": ref.rung,
        "label": LABELS.get(ref.rung, ref.rung) if ref.rung != "ngram" else f"{model.cfg.order}-gram counts",
        "model": model.cfg.to_dict(), "train": {k: v for k, v in cfg.to_dict().items() if k in ref.train or k == "min_lr"},
        "steps": result.step, "seed": ref.seed, "threads": THREADS, "parameters": sum(p.numel() for p in model.parameters()) or model.num_params(),
        "cpu_seconds": round(cpu, 1), "wall_seconds": round(wall, 1), "command": command_line(ref, change, tag), "why": ref.why,
        "commit": commit, "torch": torch.__version__,
        "val_nll": final["nll"], "val_bpc": final.get("bpc"), "val_tokens": final["tokens"], "val_nll_fp32": fp32["nll"],
        "check": {**CHECK, "nll": check["nll"], "tokens": check["tokens"]},
        "storage": "float32 counts" if hasattr(model, "count") else "float16",
    }
    save_checkpoint(run_dir / "shipped", stored(model), None, result.step, data.tokenizer, cfg.to_dict(), None,
                    {**extra, "reference": meta})
    (run_dir / "reference.json").write_text(json.dumps(meta, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    say(f"{run_dir.name}: val {final['nll']:.4f} nats/token ({fp32['nll']:.4f} before float16), "
        f"{final.get('bpc', float('nan')):.4f} bits/char; {cpu:.0f} CPU s, {wall:.0f} s wall; "
        f"evals {[(s, round(v, 3)) for s, v in result.evals]}")
    if ship and ref.ship and not tag:
        ship_run(ref, run_dir, say)
    return meta


def ship_run(ref: Reference, run_dir: Path, say=print) -> None:
    """Copy a trained reference model into the package, once its recorded settings are its row's in BUDGETS
    (a model explored with --try ships when the row has been changed to what it tried: its metadata keeps the
    command that trained it and takes the row's `why`; the weights are written again unchanged, as float16
    values are stored exactly)."""
    ckpt = read_checkpoint(run_dir / "shipped")
    meta = ckpt.extra["reference"]
    row = {"steps": ref.steps, "seed": ref.seed, "train": {k: v for k, v in train_config(ref).to_dict().items()
                                                             if k in ref.train or k == "min_lr"}}
    wanted = {k: v for k, v in ref.model.items() if k != "block_size" or CORPORA[ref.corpus].lines is None}
    differs = [k for k in row if meta[k] != row[k]] + [k for k, v in wanted.items() if meta["model"].get(k) != v]
    if differs:
        raise SystemExit(f"{run_dir} was not trained with the settings of {ref.name}'s row ({', '.join(differs)} differ)")
    meta = {**meta, "why": ref.why}
    folder = run_dir / "to-ship"
    path = save_checkpoint(folder, stored(ckpt.model), None, ckpt.step, ckpt.tokenizer, ckpt.train_config, None,
                           {**ckpt.extra, "reference": meta})
    again = read_checkpoint(path).model.state_dict()
    assert all(torch.equal(t, again[k]) for k, t in ckpt.model.state_dict().items()), "the weights changed on the way"
    MODELS_DIR.mkdir(parents=True, exist_ok=True)
    target = MODELS_DIR / f"{ref.name}.safetensors"
    shutil.copyfile(path, target)
    shutil.rmtree(folder)
    say(f"shipped: {target} ({target.stat().st_size / 1e6:.2f} MB), val {meta['val_nll']:.4f} nats/token")


def settings_text(meta: dict) -> str:
    """The settings that make a row, short: the model's fields that differ from their defaults (and its window),
    then the training fields the row sets."""
    defaults = {"d_ff": None, "tie_weights": True, "bias": True, "qk_norm": False, "logit_softcap": None, "norm": "pre",
                "norm_eps": 1e-05, "embed_norm": False, "type_vocab_size": 0, "scale_attention": True, "activation": "gelu",
                "dropout": 0.0, "src_vocab_size": None}
    model = {k: v for k, v in meta["model"].items()
             if k not in ("vocab_size", "block_size", "cell") and defaults.get(k, object()) != v}
    parts = [f"{k} {v}" for k, v in model.items()]
    if meta["rung"] not in ("ngram", "bigram"):
        parts.append(f"block_size {meta['model']['block_size']}")
    train = [f"{k} {v:g}" if isinstance(v, float) else f"{k} {v}" for k, v in meta["train"].items() if k != "min_lr"]
    return ", ".join(parts) + ("; " if parts and train else "") + ", ".join(train)


def table(out: Path) -> list[str]:
    """The Markdown table of docs/benchmarks.md: every row of BUDGETS, from the shipped file's metadata (or, for a
    model that does not ship, from its run folder)."""
    rows = ["| corpus | rung | settings | parameters | steps | seed | CPU s | wall s | val nats/token | bits/char | shipped |",
            "|---|---|---|---|---|---|---|---|---|---|---|"]
    for ref in BUDGETS:
        shipped = MODELS_DIR / f"{ref.name}.safetensors"
        if shipped.is_file():
            meta, size = read_checkpoint(shipped).extra["reference"], f"{shipped.stat().st_size / 1e6:.2f} MB"
        elif (out / ref.name / "reference.json").is_file():
            meta, size = json.loads((out / ref.name / "reference.json").read_text(encoding="utf-8")), "no"
        else:
            rows.append(f"| {ref.corpus} | {ref.rung} | not trained yet | | | | | | | | |")
            continue
        bpc = "" if meta["val_bpc"] is None else f"{meta['val_bpc']:.4f}"
        rows.append(f"| {ref.corpus} | {meta['label']} | {settings_text(meta)} | {meta['parameters']:,} | {meta['steps']:,} | "
                    f"{meta['seed']} | {_seconds(meta['cpu_seconds'])} | {_seconds(meta['wall_seconds'])} | {meta['val_nll']:.4f} | {bpc} | "
                    f"{size} |")
    return rows


def _seconds(s: float) -> str:
    return f"{s:.1f}" if s < 10 else f"{s:,.0f}"


def matrix(out: Path) -> list[str]:
    """The READMEs' table: a row per rung, a column per corpus, the validation NLL (nats per character)."""
    rows = ["| rung | " + " | ".join(CORPORA) + " |", "|---" * (len(CORPORA) + 1) + "|"]
    for rung in dict.fromkeys(r.rung for r in BUDGETS):
        cells = []
        for corpus in CORPORA:
            ref = BY_NAME.get(f"{corpus}-{rung}")
            meta = None if ref is None else _metadata(ref, out)
            if meta is None:
                cells.append("")
                continue
            note = f" ({meta['label'].split()[0]})" if rung == "ngram" else ""
            cells.append(f"{meta['val_nll']:.4f}{note}" + ("" if ref.ship else " (not shipped)"))
        rows.append(f"| {LABELS.get(rung, 'n-gram counts') if rung != 'ngram' else 'n-gram counts'} | " + " | ".join(cells) + " |")
    return rows


def _metadata(ref: Reference, out: Path) -> dict | None:
    shipped = MODELS_DIR / f"{ref.name}.safetensors"
    if shipped.is_file():
        return read_checkpoint(shipped).extra["reference"]
    folder = out / ref.name / "reference.json"
    return json.loads(folder.read_text(encoding="utf-8")) if folder.is_file() else None


def tune_ngram(say=print) -> None:
    """Each n-gram row's order and smoothing k on a development split: the last 10% of the training
    split held out, counted on the rest (the validation split is not looked at)."""
    from redthread.data.lm import LMData
    from redthread.data.sequences import SequenceData

    for ref in (r for r in BUDGETS if r.rung == "ngram"):
        loaded = load_corpus(ref)
        src, V = loaded.source, loaded.vocab_size
        if isinstance(src, LMData):
            tokens = src.split("train").tokens
            cut = int(len(tokens) * 0.9)
            fit, dev = [torch.as_tensor(tokens[:cut].astype("int64"))], [torch.as_tensor(tokens[cut:].astype("int64"))]
        else:
            seqs = src.sequences("train")
            cut = int(len(seqs) * 0.9)
            fit, dev = seqs[:cut], seqs[cut:]
        for order in range(1, 6):
            if V ** order > 2**27:
                break
            scores = []
            for k in (0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1.0, 3.0):
                m = build_model("ngram", vocab_size=V, block_size=64, order=order, k=k)
                if isinstance(src, LMData):
                    m.fit_stream(fit[0])
                    scores.append((m.nll_stream(dev[0]), k))
                else:
                    tr = SequenceData(fit, dev, V, src.boundary)
                    for x, y in tr.eval_batches("train", 4096):
                        m.count(x, y)
                    scores.append((evaluate(m, tr, "val", batch_size=4096)["nll"], k))
            best = min(scores)
            say(f"{ref.name}: order {order}: " + ", ".join(f"k={k:g} {s:.4f}" for s, k in scores)
                + f"  -> best k={best[1]:g} ({best[0]:.4f})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", help="comma-separated model names (default: every row of BUDGETS)")
    ap.add_argument("--out", default="runs/reference", help="run folders (default runs/reference)")
    ap.add_argument("--ship", action="store_true", help="copy each trained model into src/redthread/data/models/")
    ap.add_argument("--try", dest="change", help='explore: a change to the row, JSON {"model": {...}, "train": {...}, "steps": N}')
    ap.add_argument("--tag", help="with --try: the run folder is NAME-TAG")
    ap.add_argument("--ship-from", metavar="FOLDER", help="ship the model trained in FOLDER (one --only NAME) without "
                                                           "training again, if it was trained with the row's settings")
    ap.add_argument("--list", action="store_true", help="print the budget table and stop")
    ap.add_argument("--tune-ngram", action="store_true", help="choose the n-gram rows' smoothing on a development split")
    ap.add_argument("--table", action="store_true", help="print docs/benchmarks.md's table of the models and stop")
    args = ap.parse_args()
    if args.list:
        for r in BUDGETS:
            print(f"{r.name:24} steps {r.steps:>6}  seed {r.seed}  {json.dumps(r.model)}  {json.dumps(r.train)}")
        return
    if args.tune_ngram:
        tune_ngram()
        return
    if args.table:
        print("\n".join(table(Path(args.out))) + "\n\n" + "\n".join(matrix(Path(args.out))))
        return
    names = args.only.split(",") if args.only else list(BY_NAME)
    unknown = [n for n in names if n not in BY_NAME]
    if unknown:
        sys.exit(f"unknown reference model(s) {', '.join(unknown)}; known: {', '.join(BY_NAME)}")
    if os.environ.get("OMP_NUM_THREADS") != str(THREADS):
        print(f"note: OMP_NUM_THREADS is not {THREADS}; the models are trained on {THREADS} thread (torch.set_num_threads)")
    if args.ship_from:
        if len(names) != 1:
            sys.exit("--ship-from takes one model: --only NAME")
        ship_run(BY_NAME[names[0]], Path(args.ship_from))
        return
    if args.change and not args.tag:
        sys.exit("--try needs --tag (the run folder is NAME-TAG)")
    for n in names:
        ref = BY_NAME[n]
        if args.change:
            change = json.loads(args.change)
            ref = Reference(ref.corpus, ref.rung, {**ref.model, **change.get("model", {})}, {**ref.train, **change.get("train", {})},
                            change.get("steps", ref.steps), change.get("seed", ref.seed), False, ref.why)
        run_reference(ref, Path(args.out), args.ship and not args.change, args.change, args.tag if args.change else None)


if __name__ == "__main__":
    main()
