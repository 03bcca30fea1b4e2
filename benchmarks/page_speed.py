"""The live page's speed (`redthread page`, issue 29 item 5), in Chromium headless on this machine.

    PYTHONPATH=src .venv/bin/python benchmarks/page_speed.py runs/demo [RUN ...] [--repeats 7] [--json PATH]
        [--screenshots DIR]
    PYTHONPATH=src .venv/bin/python benchmarks/page_speed.py names-transformer --repeats 15     # a shipped model
    PYTHONPATH=src .venv/bin/python benchmarks/page_speed.py names-transformer names-bigram names-mlp names-lstm

A RUN is what `redthread page` reads: a run folder, a checkpoint, a shipped reference model's name
(`shakespeare-transformer`, `names-lstm`, `tang300-gru`, ...: `rt.shipped_models()`) or a ladder's report folder.
Every run is loaded into the page; the first is timed. A run that is no run, or cannot be exported, is a
one-line error.

`write_page` puts the runs in a temporary folder, served on 127.0.0.1 by a thread of http.server (no network
latency: the figures are the browser's own work), and Debian's Chromium opens it through playwright, as the tests
do. ONNX Runtime Web runs single-threaded WebAssembly. Medians over --repeats of:

  load              a fresh browser context (nothing cached): from navigation until every run is in ONNX Runtime
                    Web and the first distribution is drawn (body[data-ready=1]; the page's performance.now())
  forward           one session.run of the first run on a text of 16, 64 and block_size characters (those up to
                    the context: a names model, context 16, is timed at 16 only): every output
                    (what a keystroke computes: the walk-through and the explorer read them) and the logits only
                    (what each generated token computes)
  update            typing one text to the distribution drawn, with the walk-through open (it draws every number
                    of the forward pass) and with the "about" view open (no view to draw)
  generated token   the generate button's 20 tokens, total time / 20: a logits-only forward, the processors, a draw,
                    the panel drawn; top-k 40, from a 32-character prompt

The timed text is the first run's kind of text (`timed_text`): Shakespeare for a Shakespeare model (and for
a BPE, which reads any), a run of names for a names model, Tang poems for a Chinese one: of the three, the
one whose characters its tokenizer reads most of, less those it cannot read.

Each figure is printed as the median and the fastest repeat (the machine is shared: the load average is printed).

--screenshots DIR also saves the walk-through (English) and the runs side by side (Chinese) as
DIR/page-walkthrough.png and DIR/page-side-by-side.png.
"""

from __future__ import annotations

import argparse
import functools
import http.server
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

from redthread.commands.page import read_page_runs
from redthread.data.corpus import text_path
from redthread.errors import RedthreadError
from redthread.viz.page import PageRun, write_page

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
TEXT = ("To be, or not to be, that is the question:\nWhether 'tis nobler in the mind to suffer\n"
        "The slings and arrows of outrageous fortune,\nOr to take arms against a sea of troubles\n") * 2
LENGTHS = (16, 64)  # and the model's whole context


def shipped_text(name: str, n_chars: int) -> str:
    """The start of a text shipped with redthread (data/texts): names.txt as the names models read it, one
    boundary "." before and after each name; tang300.txt as it is (poems: title, poet, lines, a blank line)."""
    text = text_path(name).read_text(encoding="utf-8")[: 4 * n_chars]
    return "." + ".".join(text.split()[:-1]) + "." if name == "names" else text  # [:-1]: the last may be cut


def timed_text(tokenizer, n_chars: int) -> str:
    """The text the first run is timed on, at least `n_chars` characters, all of them readable by its tokenizer:
    of Shakespeare (TEXT), a run of names and Tang poems, the one it reads the largest share of (Shakespeare on a
    tie: a BPE reads all three, and the demo's model reads all of TEXT, which it is timed on as before), less the
    characters it cannot read, repeated to the length."""
    candidates = [TEXT, shipped_text("names", n_chars), shipped_text("tang300", n_chars)]
    text = max(candidates, key=lambda c: len(readable(tokenizer, c)) / len(c))  # max keeps the first of equals
    text = readable(tokenizer, text)
    if not text:
        raise RedthreadError("the first run's tokenizer reads none of the characters of Shakespeare, names or Tang "
                             "poems: there is no text to time it on")
    return text * -(-n_chars // len(text)) if len(text) < n_chars else text


def lengths(block: int) -> list[int]:
    """The lengths timed: 16, 64 and the whole context, less those above the context, each once."""
    return sorted({n for n in LENGTHS if n < block} | {block})


def load_runs(given: list[str]) -> list[PageRun]:
    """The runs as `redthread page` reads them, each checked to export (a one-line RedthreadError names one that
    does not)."""
    return read_page_runs(given, lambda line: print(line, file=sys.stderr))


def serve(folder: Path) -> tuple[str, http.server.ThreadingHTTPServer]:
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    class Server(http.server.ThreadingHTTPServer):
        def handle_error(self, *args):
            pass

    server = Server(("127.0.0.1", 0), functools.partial(Quiet, directory=str(folder)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}/", server


def open_page(browser, base: str, lang: str = "en"):
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    context.set_default_timeout(120_000)
    context.route("**/*", lambda route: route.continue_() if route.request.url.startswith(base) else route.abort())
    page = context.new_page()
    errors = []
    page.on("console", lambda m: m.type == "error" and errors.append(m.text))
    t0 = time.perf_counter()
    page.goto(f"{base}?lang={lang}")
    page.wait_for_selector("body[data-ready='1']", state="attached")
    wall = time.perf_counter() - t0
    return context, page, wall, errors


def median(xs):
    return statistics.median(xs)


def spread(xs) -> dict:
    """The median and the fastest of the repeats: the machine is shared, so the fastest is the least disturbed."""
    return {"median": statistics.median(xs), "min": min(xs)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("runs", nargs="+", help="run folders, checkpoints or shipped models' names (the first is timed)")
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--json", help="write the figures here")
    ap.add_argument("--screenshots", help="save page-walkthrough.png and page-side-by-side.png here")
    args = ap.parse_args()
    if args.repeats < 1:
        ap.error("--repeats must be at least 1")
    try:
        measure(args)
    except RedthreadError as e:
        print(f"page_speed.py: error: {e}", file=sys.stderr)
        sys.exit(2)


def measure(args) -> None:
    from playwright.sync_api import sync_playwright

    runs = load_runs(args.runs)
    first = runs[0].model
    block = first.cfg.block_size
    sizes = lengths(block)
    text = timed_text(runs[0].tokenizer, max(block + 7, args.repeats + 32))  # the slices below stay inside it
    figures = {"runs": [r.name for r in runs], "model": type(first).__name__, "params": first.num_params(),
               "block_size": block, "lengths": sizes, "text": text[:block]}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "page"
        write_page(runs, folder)
        figures["folder_mb"] = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) / 1e6
        figures["onnx_mb"] = sum(p.stat().st_size for p in folder.rglob("*.onnx")) / 1e6
        base, server = serve(folder)
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            loads, page_loads = [], []
            for _ in range(min(args.repeats, 5)):
                context, page, wall, errors = open_page(browser, base)
                loads.append(1000 * wall)
                page_loads.append(page.evaluate("() => window.redthreadPage.timings.navigation_ms"))
                assert not errors, errors
                context.close()
            figures["load_ms"] = spread(page_loads)
            figures["load_wall_ms"] = spread(loads)
            context, page, _, errors = open_page(browser, base)
            forward = {}
            for n in sizes:
                for all_outputs in (True, False):
                    page.evaluate("([t, a]) => window.redthreadPage.timeForward(t, a)", [text[:n], all_outputs])  # warm
                    times = [page.evaluate("([t, a]) => window.redthreadPage.timeForward(t, a)", [text[:n], all_outputs])
                             for _ in range(args.repeats)]
                    forward[f"{n} {'all' if all_outputs else 'logits'}"] = spread(times)
            figures["forward_ms"] = forward
            update = {}
            for view in ("walk", "about"):
                page.click(f"#views button[data-view='{view}']")
                for n in sizes:
                    times = []
                    for i in range(args.repeats):  # a different text each time, as typing makes
                        times.append(page.evaluate("t => window.redthreadPage.timeUpdate(t)", text[i % 7: i % 7 + n]))
                    update[f"{view} {n}"] = spread(times)
            figures["update_ms"] = update
            page.click("#views button[data-view='about']")
            page.evaluate("""() => { const e = document.getElementById('top-k'); e.value = '40';
                e.dispatchEvent(new Event('input', {bubbles: true})); }""")
            per_token = []
            for i in range(args.repeats):
                page.evaluate("t => window.redthreadPage.timeUpdate(t)", text[i: i + 32])
                t0 = page.evaluate("() => performance.now()")
                page.evaluate("() => window.redthreadPage.generate(20)")
                per_token.append((page.evaluate("() => performance.now()") - t0) / 20)
            figures["generated_token_ms"] = spread(per_token)
            assert not errors, errors
            if args.screenshots:
                shots(page, Path(args.screenshots), runs)
            context.close()
            browser.close()
        server.shutdown()
    figures["load_average"] = [round(x, 2) for x in os.getloadavg()]
    f = figures

    def ms(x) -> str:
        return f"{x['median']:.1f} ms (fastest {x['min']:.1f})"

    print(f"{f['model']}, {f['params']:,} parameters, context {block}; {len(runs)} run(s); folder {f['folder_mb']:.1f} MB "
          f"({f['onnx_mb']:.2f} MB of ONNX); load average {f['load_average']} on {os.cpu_count()} cores")
    print(f"timed text: {text[:40]!r}...; lengths {', '.join(map(str, sizes))}")
    print(f"load to the first distribution: {ms(f['load_ms'])}")
    for key, x in f["forward_ms"].items():
        print(f"forward, {key}: {ms(x)}")
    for key, x in f["update_ms"].items():
        print(f"next-token update, {key} characters: {ms(x)}")
    print(f"per generated token: {ms(f['generated_token_ms'])}")
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2), encoding="utf-8")


def readable(tokenizer, text: str) -> str:
    """The text less the characters a character tokenizer has never seen (a BPE reads any)."""
    chars = getattr(tokenizer, "chars", None)
    return text if chars is None else "".join(ch for ch in text if ch in chars)


def shots(page, folder: Path, runs: list[PageRun]) -> None:
    """The walk-through of the first run (English) and, with several runs, all of them side by side (Chinese)."""
    folder.mkdir(parents=True, exist_ok=True)
    text = readable(runs[0].tokenizer, "ROMEO.\nWhat light through yonder window breaks")
    page.evaluate("""() => { for (const [id, v] of [['top-k', ''], ['temperature', '1'], ['top-p', '0.9']]) {
        const e = document.getElementById(id); e.value = v; e.dispatchEvent(new Event('input', {bubbles: true})); } }""")
    page.click("#lang-en")
    page.fill("#text", text)
    page.wait_for_selector("body[data-busy='0']", state="attached")
    page.click("#views button[data-view='walk']")
    n = len(page.evaluate("() => window.redthreadPage.last.window"))
    page.click(f"#view-walk .walk-tokens button[data-position='{min(33, n - 1)}']")  # the "w" of "window"
    if page.locator("#walk-head").count():  # the last layer, head 2 (or the last head)
        page.select_option("#walk-layer", str(page.locator("#walk-layer option").count() - 1))
        page.select_option("#walk-head", str(min(2, page.locator("#walk-head option").count() - 1)))
    page.screenshot(path=str(folder / "page-walkthrough.png"), clip={"x": 0, "y": 0, "width": 1400, "height": 1700},
                    full_page=True)
    if len(runs) > 1:
        page.click("#lang-zh")
        page.fill("#text", "ROMEO.\nBut soft, what light through yonder window b")
        page.click("#views button[data-view='compare']")
        page.wait_for_selector("body[data-busy='0']", state="attached")
        page.screenshot(path=str(folder / "page-side-by-side.png"), full_page=False)


if __name__ == "__main__":
    main()
