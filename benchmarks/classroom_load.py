"""A classroom of fifty against `redthread serve`: latency, errors and memory under simulated students.

Starts `redthread serve` on 127.0.0.1 (loopback only: nothing else is ever connected to) over a runs
folder made in a temporary folder, like the one a teacher has after `redthread demo`:
- `demo`: a Transformer of the demo's size (train/recipe.py's MODEL: 2 layers, 4 heads, d_model 64,
  block 128, RoPE) over Tiny Shakespeare's characters. Random weights: a forward pass costs the same
  as a trained one's, and the point here is time, not text.
- `ladder/rungs/unigram` and `ladder/rungs/ngram` (order 3): the counting rungs, fitted on the text.
(`--runs DIR` serves a folder of your own instead: its text runs are used.)

Then `--students` simulated students (asyncio + httpx), each: load the page (GET / and /api/models),
then every few seconds (`--think`, jittered ±50%) one of next-token (/api/next, a random temperature
and top-p), attention (/api/attention) or compare (/api/compare over every text run, 3 here), in
turn, on a line of Shakespeare of its own that grows by a sampled token now and then. It stops
after `--seconds` (requests in flight then get up to 70 s to finish). A 503 (the pool full) must
come with Retry-After and the student waits that long; any other non-200 answer or a lost
connection is an error. The server's memory (RSS, with its children) is sampled every half second.

Each setting of `--settings` (workers,queue; "default" for the server's own defaults) is run in turn
on a fresh server. Reported per setting and endpoint: requests, p50 / p95 / p99 / max latency (ms),
503s and errors; and the server's peak and final RSS.

    PYTHONPATH=src .venv/bin/python benchmarks/classroom_load.py [--students 50] [--seconds 90]
        [--settings default 1,64] [--quick] [--json PATH]

The load generator runs on the same machine as the server and takes CPU from it: the figures are an
upper bound on what a teacher's laptop serving students' own browsers would show.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import psutil
from common import write_json

ENDPOINTS = ("page", "next", "attention", "compare")
MAX_STUDENTS, MAX_SECONDS = 200, 600
DRAIN_S = 70  # the longest a request in flight at the end may still take (the server's limit is 60 s)


def make_runs(folder: Path) -> None:
    """The demo-sized Transformer and two counting rungs, over Tiny Shakespeare's characters."""
    import torch

    import redthread as rt
    from redthread.data import text_path
    from redthread.data.tokenizers import CharTokenizer
    from redthread.models.ngram import NGramConfig, NGramLM
    from redthread.train.recipe import MODEL

    text = text_path("tinyshakespeare").read_text(encoding="utf-8")
    tok = CharTokenizer.from_text(text)
    torch.manual_seed(0)
    cfg = rt.TransformerConfig(vocab_size=tok.vocab_size, **MODEL)
    rt.save_checkpoint(folder / "demo", rt.TransformerLM(cfg), tokenizer=tok)
    ids = tok.encode_array(text)
    for rung, order in (("unigram", 1), ("ngram", 3)):
        model = NGramLM(NGramConfig(vocab_size=tok.vocab_size, order=order)).fit_stream(ids)
        rt.save_checkpoint(folder / "ladder" / "rungs" / rung, model, tokenizer=tok, extra={"rung": rung})


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(runs: Path, setting: tuple[int, int] | None) -> tuple[subprocess.Popen, str, list[str]]:
    port = free_port()
    cmd = [sys.executable, "-m", "redthread", "serve", "--runs", str(runs), "--host", "127.0.0.1", "--port", str(port),
           "--device", "cpu"]
    if setting is not None:
        cmd += ["--workers", str(setting[0]), "--queue", str(setting[1])]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"the server exited: {proc.stderr.read()[-2000:]}")
        try:
            if httpx.get(f"{base}/api/models", timeout=5).status_code == 200:
                return proc, base, cmd
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    proc.kill()
    raise SystemExit("the server did not answer within 60 s")


def rss(proc: psutil.Process) -> int:
    try:
        return proc.memory_info().rss + sum(c.memory_info().rss for c in proc.children(recursive=True))
    except psutil.Error:
        return 0


class Tally:
    def __init__(self):
        self.ms = {e: [] for e in ENDPOINTS}
        self.busy = {e: 0 for e in ENDPOINTS}  # 503 with Retry-After
        self.errors = {e: 0 for e in ENDPOINTS}
        self.messages: dict[str, int] = {}

    def error(self, endpoint: str, message: str) -> None:
        self.errors[endpoint] += 1
        self.messages[message] = self.messages.get(message, 0) + 1


async def student(i: int, client: httpx.AsyncClient, lines: list[str], until: float, think: float, tally: Tally,
                  models: dict) -> None:
    rng = random.Random(i)
    await asyncio.sleep(rng.uniform(0, min(think, 5)))  # students arrive over the first seconds

    async def ask(endpoint: str, method: str, path: str, body: dict | None = None):
        start = time.perf_counter()
        try:
            r = await client.request(method, path, json=body)
        except httpx.HTTPError as e:
            tally.error(endpoint, f"{type(e).__name__}")
            return None
        ms = 1000 * (time.perf_counter() - start)
        if r.status_code == 503 and "retry-after" in r.headers:
            tally.busy[endpoint] += 1
            await asyncio.sleep(float(r.headers["retry-after"]))
            return None
        if r.status_code != 200:
            tally.error(endpoint, f"{r.status_code} {r.text[:120]}")
            return None
        tally.ms[endpoint].append(ms)
        return r

    page = await ask("page", "GET", "/")
    if page is not None:
        await ask("page", "GET", "/api/models")
    text = rng.choice(lines)
    turn = rng.randrange(3)
    while time.monotonic() < until:
        await asyncio.sleep(think * rng.uniform(0.5, 1.5))
        if time.monotonic() >= until:
            break
        kind = ENDPOINTS[1 + turn % 3]
        turn += 1
        if kind == "next":
            r = await ask("next", "POST", "/api/next", {"model": models["lm"], "text": text,
                                                       "temperature": rng.choice([0.5, 0.8, 1.0, 1.5]),
                                                       "top_p": rng.choice([None, 0.9])})
            if r is not None and rng.random() < 0.5:  # click a candidate: the text grows
                text = (text + r.json()["candidates"][0]["token"])[-120:]
        elif kind == "attention":
            await ask("attention", "POST", "/api/attention", {"model": models["lm"], "text": text})
        else:
            await ask("compare", "POST", "/api/compare", {"models": models["compare"], "text": text, "candidates": 8})


def percentile(xs: list[float], q: float) -> float:
    if not xs:
        return float("nan")
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, round(q / 100 * len(xs) + 0.5) - 1))]  # the nearest-rank percentile


async def classroom(base: str, students: int, seconds: float, think: float, lines: list[str]) -> Tally:
    catalogue = httpx.get(f"{base}/api/models", timeout=10).json()
    text_runs = [m for m in catalogue if m["input"] == "text" and m["source"] == "run" and m["available"]]
    attending = [m["name"] for m in text_runs if m["attention"]]
    if not attending:
        raise SystemExit("no text run with attention to ask for")
    models = {"lm": attending[0], "compare": [m["name"] for m in text_runs][:12]}
    tally = Tally()
    until = time.monotonic() + seconds
    limits = httpx.Limits(max_connections=students, max_keepalive_connections=students)
    async with httpx.AsyncClient(base_url=base, timeout=DRAIN_S, limits=limits) as client:
        await asyncio.gather(*(student(i, client, lines, until, think, tally, models) for i in range(students)))
    return tally


def run_setting(runs: Path, setting: tuple[int, int] | None, args, lines: list[str]) -> dict:
    proc, base, cmd = start_server(runs, setting)
    server = psutil.Process(proc.pid)
    samples = [rss(server)]
    stop = False

    async def sample_memory():
        while not stop:
            samples.append(rss(server))
            await asyncio.sleep(0.5)

    async def both():
        nonlocal stop
        sampler = asyncio.create_task(sample_memory())
        try:
            return await classroom(base, args.students, args.seconds, args.think, lines)
        finally:
            stop = True
            await sampler

    start = time.monotonic()
    try:
        tally = asyncio.run(both())
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
    wall = time.monotonic() - start
    label = "default (workers 2, queue 16)" if setting is None else f"workers {setting[0]}, queue {setting[1]}"
    rows = {}
    for e in ENDPOINTS:
        ms = tally.ms[e]
        rows[e] = {"n": len(ms), "p50": percentile(ms, 50), "p95": percentile(ms, 95), "p99": percentile(ms, 99),
                   "max": max(ms, default=float("nan")), "busy_503": tally.busy[e], "errors": tally.errors[e]}
    return {"setting": label, "command": " ".join(["redthread", *cmd[3:]]), "wall_s": wall, "endpoints": rows,
            "rss_start_mib": samples[0] / 2**20, "rss_peak_mib": max(samples) / 2**20,
            "rss_end_mib": samples[-1] / 2**20, "error_messages": tally.messages,
            "requests_per_s": sum(r["n"] for r in rows.values()) / wall}


def report(result: dict) -> None:
    print(f"\n== {result['setting']}: {result['command']}")
    print(f"{'endpoint':<10} {'ok':>6} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8} {'max ms':>8} {'503s':>6} {'errors':>7}")
    for e, r in result["endpoints"].items():
        print(f"{e:<10} {r['n']:>6} {r['p50']:>8.0f} {r['p95']:>8.0f} {r['p99']:>8.0f} {r['max']:>8.0f} "
              f"{r['busy_503']:>6} {r['errors']:>7}")
    print(f"server RSS: {result['rss_start_mib']:.0f} MiB at start, {result['rss_peak_mib']:.0f} MiB peak, "
          f"{result['rss_end_mib']:.0f} MiB at the end; {result['requests_per_s']:.1f} answered requests/s "
          f"over {result['wall_s']:.0f} s")
    for message, n in result["error_messages"].items():
        print(f"  error x{n}: {message}")


def parse_setting(text: str) -> tuple[int, int] | None:
    if text == "default":
        return None
    try:
        workers, queue = (int(x) for x in text.split(","))
    except ValueError:
        raise SystemExit(f"--settings: expected 'default' or WORKERS,QUEUE (e.g. 1,64), got {text!r}") from None
    return workers, queue


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--students", type=int, default=50)
    ap.add_argument("--seconds", type=float, default=90, help="how long the students keep asking")
    ap.add_argument("--think", type=float, default=4.0, help="seconds between a student's requests, on average")
    ap.add_argument("--settings", nargs="+", default=["default", "1,64"], help="workers,queue pairs, or 'default'")
    ap.add_argument("--runs", help="a runs folder to serve (default: a demo-sized Transformer and two counting rungs)")
    ap.add_argument("--quick", action="store_true", help="5 students for 8 s (smoke test)")
    ap.add_argument("--json", metavar="PATH", help="write the figures as JSON")
    args = ap.parse_args()
    if args.quick:
        args.students, args.seconds, args.think = 5, 8.0, 1.0
    if not 1 <= args.students <= MAX_STUDENTS or not 0 < args.seconds <= MAX_SECONDS or not args.think > 0:
        raise SystemExit(f"--students 1..{MAX_STUDENTS}, --seconds up to {MAX_SECONDS} and --think > 0, please")
    settings = [parse_setting(s) for s in args.settings]
    from redthread.data import text_path

    lines = [ln.strip() for ln in text_path("tinyshakespeare").read_text(encoding="utf-8").splitlines()
             if 20 <= len(ln.strip()) <= 60][:2000]
    print(f"{args.students} students for {args.seconds:g} s, a request every ~{args.think:g} s each; "
          f"{os.cpu_count()} CPU cores on this machine (load average {os.getloadavg()[0]:.1f} at start), shared "
          f"with this load generator; the server's torch threads: OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}")
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        runs = Path(args.runs) if args.runs else Path(tmp)
        if not args.runs:
            make_runs(runs)
        for setting in settings:
            results.append(run_setting(runs, setting, args, lines))
            report(results[-1])
    write_json(args.json, {"students": args.students, "seconds": args.seconds, "think": args.think,
                           "cpu_count": os.cpu_count(), "results": results})


if __name__ == "__main__":
    main()
