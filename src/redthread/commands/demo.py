"""`redthread demo`: the whole thread in about three minutes on a laptop CPU.

Trains a small character-level Transformer on Shakespeare's plays by maximum likelihood,
measures its validation bits per character beside two count-based baselines fitted on the
same split (unigram: no context; bigram: one character of context), prints a few top-p
samples from the learned P(next character | context), and leaves a run folder that
`redthread sample` can use.

The budget holds on any machine: the training is scheduled on the clock (warm-up and decay are
fractions of its seconds, `TrainConfig.max_time`), so a slow machine gets fewer steps but a
whole schedule; the validation text scored is what the measured speed scores in a fixed share
of the budget (all of it on a quiet laptop), the same text for the baselines; and the plan is
printed before any of it starts.
"""

from __future__ import annotations

import math
import time
from datetime import datetime
from pathlib import Path

import torch

import redthread.lang as lang
from redthread.data.dataset import TokenSplit
from redthread.data.lm import LMData, load_splits
from redthread.errors import RedthreadError
from redthread.generate.config import SampleConfig
from redthread.generate.sampler import generate
from redthread.models.likelihoods import token_nll
from redthread.models.ngram import NGramConfig, NGramLM
from redthread.models.transformer import TransformerConfig, TransformerLM
from redthread.train.language_model import train_language_model
from redthread.train.loop import TrainConfig, evaluate, make_optimizer, resolve_device
from redthread.train.recipe import ADAMW, MODEL, TRAIN, training_recipe  # noqa: F401 (the demo trains the speedrun's recipe)
from redthread.train.run_folder import RunFolder

SCORING_SHARE = 0.12  # of the budget, at most, for scoring the Transformer on validation text
SAMPLE_TOKENS = 240
COUNTING_S = 2.0  # about what counting both baselines over the training split takes
SPEAKERS = ("ROMEO.", "JULIET.", "HAMLET.")  # each sample starts as a speech of one of them


def measure_speed(vocab_size: int, device: torch.device, train: dict) -> tuple[float, float, float]:
    """Seconds per training step, tokens scored per second and seconds per sampled token, from a few
    steps on random tokens."""
    model = TransformerLM(TransformerConfig(vocab_size=vocab_size, **MODEL)).to(device)
    opt = make_optimizer(model, TrainConfig(optimizer=train["optimizer"]), device)
    x = torch.randint(vocab_size, (train["batch_size"], MODEL["block_size"]), device=device)
    steps, forwards = [], []
    for _ in range(4):
        t = time.perf_counter()
        token_nll(model(x), x).backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        _sync(device)
        steps.append(time.perf_counter() - t)
        t = time.perf_counter()
        with torch.inference_mode():
            model(x)
        _sync(device)
        forwards.append(time.perf_counter() - t)
    step = sorted(steps[1:])[1]  # the median of the last three: the first step warms up allocators and kernels
    forward = sorted(forwards[1:])[1]
    t = time.perf_counter()
    generate(model.eval(), x[:1, :1], 16, sampling=SampleConfig(seed=0))
    return step, x.numel() / forward, (time.perf_counter() - t) / 16


NAMES_ZH = {"unigram counts (no context)": "一元语法计数（不看上下文）", "bigram counts (1 character)": "二元语法计数（1 个字符）"}


def score_table(rows: list[tuple[str, int, float]], part: str) -> list[str]:
    """The scores of the baselines and the Transformer as lines of a table, in the language chosen."""
    ln2 = math.log(2)
    if not lang.chinese():
        lines = [f"\n{part} scored once (nats and bits per character; parameters: every number the model learns):",
                 f"{'model':34s} {'parameters':>11s} {'nats/char':>10s} {'bits/char':>10s} {'perplexity':>11s}"]
        return lines + [f"{name:34s} {n:>11,} {value:>10.3f} {value / ln2:>10.3f} {math.exp(value):>11.2f}"
                        for name, n, value in rows]
    # a CJK character takes two columns of a terminal: pad by display width
    def pad(text: str, width: int, right: bool = False) -> str:
        room = " " * max(0, width - lang.display_width(text))
        return room + text if right else text + room

    numbers = " ".join(pad(h, w, right=True) for h, w in (("参数", 11), ("奈特/字符", 10), ("比特/字符", 10), ("困惑度", 11)))
    lines = [f"\n{part}各打一次分（奈特/字符和比特/字符；参数：模型学习的每一个数）：", f"{pad('模型', 34)} {numbers}"]

    for name, n, value in rows:
        shown = NAMES_ZH.get(name, name.replace(" characters)", " 个字符）").replace(" (", "（"))
        lines.append(f"{pad(shown, 34)} {n:>11,} {value:>10.3f} {value / ln2:>10.3f} {math.exp(value):>11.2f}")
    return lines


def _sync(device: torch.device) -> None:

    if device.type == "cuda":
        torch.cuda.synchronize()


def default_out(runs: Path = Path("runs")) -> Path:
    """runs/demo, the name the README uses, while it is free; runs/demo-<time> once it is taken, so a
    second demo never replaces the first."""
    first = runs / "demo"
    if not first.exists() or (first.is_dir() and not any(first.iterdir())):
        return first
    return runs / f"demo-{datetime.now():%Y%m%d-%H%M%S}"


def run_demo(out: str | None = None, minutes: float = 3.0, device: str = "auto", progress: bool | str = True, say=print) -> dict:
    if not minutes > 0:
        raise RedthreadError(f"--minutes must be positive, got {minutes}")
    t_start = time.perf_counter()
    device_ = resolve_device(device)  # the one resolution of the run: measure_speed and the training get this value
    out = Path(out) if out else default_out()
    RunFolder(out, resume=False, overwrite=False)  # refuses a folder that holds a run, before spending any time
    say(lang.say("redthread demo: a character-level Transformer learns P(next character | previous characters)\n"
                 "from Shakespeare's 37 plays by maximum likelihood, then writes with it.\n",
                 "redthread 演示：一个字符级 Transformer 用最大似然从莎士比亚的 37 部剧本里\n"
                 "学习 P(下一个字符 | 前面的字符)，然后用它来写。\n"))

    train_split, val_split, tokenizer = load_splits(None, "char", None)
    train_tokens, val_tokens = train_split.tokens, val_split.tokens
    say(lang.say(f"corpus: {len(train_tokens):,} training / {len(val_tokens):,} validation characters "
                 f"(validation = 4 whole plays), vocabulary {tokenizer.vocab_size} characters; device: {device_}",
                 f"语料：训练集 {len(train_tokens):,} 个字符，验证集 {len(val_tokens):,} 个字符（验证集是完整的 4 部剧本），"
                 f"词表 {tokenizer.vocab_size} 个字符；设备：{device_}"))

    # the plan: scoring gets what the measured speed scores in its share; training gets the rest
    budget = minutes * 60
    train = training_recipe()
    step_s, score_rate, token_s = measure_speed(tokenizer.vocab_size, device_, train)
    block = MODEL["block_size"]
    scored = min(len(val_tokens), max(block, int(score_rate * SCORING_SHARE * budget) // block * block))
    scoring_s = scored / score_rate
    sampling_s = len(SPEAKERS) * SAMPLE_TOKENS * token_s
    setup_s = time.perf_counter() - t_start
    training_s = max(budget - setup_s - scoring_s - sampling_s - COUNTING_S, 0.25 * budget)
    whole = scored == len(val_tokens)
    part = lang.say("every validation character" if whole else f"the first {scored:,} validation characters",
                    "验证集的每一个字符" if whole else f"验证集的前 {scored:,} 个字符")
    say(lang.say(f"plan, about {minutes:g} min in all: {setup_s:.0f} s setting up (done), {training_s:.0f} s training "
                 f"(~{training_s / step_s:,.0f} steps at {1 / step_s:.1f} steps/s), ~{scoring_s:.0f} s scoring {part} "
                 f"once, ~{sampling_s + COUNTING_S:.0f} s counting the baselines and writing\n",
                 f"计划，总共约 {minutes:g} 分钟：准备 {setup_s:.0f} 秒（已完成），训练 {training_s:.0f} 秒"
                 f"（约 {training_s / step_s:,.0f} 步，每秒 {1 / step_s:.1f} 步），约 {scoring_s:.0f} 秒给{part}各打一次分，"
                 f"约 {sampling_s + COUNTING_S:.0f} 秒数出基线并写出结果\n"))

    run = train_language_model(
        out, None, "char", None, MODEL, {**train, "max_time": training_s, "max_iters": 10**9, "device": device},
        progress=progress, log=say, score=False, announce=False, device=device_,
    )
    part_split = TokenSplit(val_tokens[:scored], scored * val_split.n_chars // len(val_tokens), val_split.name)
    t = time.perf_counter()
    nll = evaluate(run.model, LMData(train_split, part_split, block), "val", batch_size=64)["nll"]
    say(lang.say(f"scored {scored:,} validation characters in {time.perf_counter() - t:.0f} s",
                 f"{time.perf_counter() - t:.0f} 秒给验证集的 {scored:,} 个字符打了分"))

    rows = []
    for order, name in ((1, "unigram counts (no context)"), (2, "bigram counts (1 character)")):
        counts = NGramLM(NGramConfig(vocab_size=tokenizer.vocab_size, order=order, k=1.0))
        rows.append((name, tokenizer.vocab_size ** order, counts.fit_stream(train_tokens).nll_stream(val_tokens[:scored])))
    n_params = sum(p.numel() for p in run.model.parameters())  # every weight once (the tied output layer is the embedding)
    rows.append((f"Transformer ({block} characters)", n_params, nll))
    ln2 = math.log(2)
    for line in score_table(rows, part):
        say(line)
    bigram = rows[1][2]
    if lang.chinese():
        verdict = "" if nll < bigram else "（没有更好：训练太短，还没学会；试试 --minutes 5）"
        say(f"\nTransformer 预测下一个字符要 {nll / ln2:.1f} 比特；数字符对的二元语法要 {bigram / ln2:.1f} 比特{verdict}")
    else:
        verdict = "" if nll < bigram else " (no better: the run was too short to learn; try --minutes 5)"
        say(f"\nthe Transformer predicts the next character with {nll / ln2:.1f} bits; counting pairs of characters "
            f"needs {bigram / ln2:.1f}{verdict}")

    say(lang.say("\nsamples (top-p 0.9, temperature 0.8), each started with a speaker's name:",
                 "\n样本（top-p 0.9，温度 0.8），每个都以一个说话人的名字开头："))
    model = run.model.eval()
    dev = next(model.parameters()).device
    for i, speaker in enumerate(SPEAKERS):
        prompt = torch.tensor([run.tokenizer.encode(f"\n\n{speaker}\n")], device=dev)  # (1, P)
        sample = generate(model, prompt, SAMPLE_TOKENS, sampling=SampleConfig(temperature=0.8, top_p=0.9, seed=i))
        say(lang.say(f"--- sample {i + 1} ---", f"--- 样本 {i + 1} ---")
            + f"\n{run.tokenizer.decode(sample[0, 2:].tolist()).rstrip()}\n")
    seconds = time.perf_counter() - t_start
    say(lang.say(f"run folder: {out}  (checkpoint.safetensors, metrics.jsonl, loss.png); {seconds:.0f} s in all",
                 f"运行文件夹：{out}（checkpoint.safetensors、metrics.jsonl、loss.png）；总共 {seconds:.0f} 秒"))
    say(lang.say(f"more: redthread sample --checkpoint {out} --prompt 'ROMEO.' --top-p 0.9",
                 f"接下来：redthread sample --checkpoint {out} --prompt 'ROMEO.' --top-p 0.9"))
    return {"run_dir": str(out), "baselines": {r[0]: r[2] for r in rows[:2]}, "val_nll": nll, "scored": scored,
            "steps": run.result.step, "seconds": time.perf_counter() - t_start}
