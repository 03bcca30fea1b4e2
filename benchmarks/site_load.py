"""The docs site's weight and the load time of its live chapters (issue 29, item 3), in Chromium headless.

    python docs/build.py --site-dir site                    # the site, with the live page (setup.sh installs its runtime)
    PYTHONPATH=src .venv/bin/python benchmarks/site_load.py site [--repeats 3] [--json PATH]

The built site is served on 127.0.0.1 by a thread of http.server, which counts the bytes it sends (no network latency:
the figures are the browser's own work plus a loopback copy). For every chapter that embeds the live page, in English
and in Chinese, a fresh browser context (nothing cached) opens the chapter, scrolls to the live page (its iframe loads
lazily) and waits until the page inside has every run in ONNX Runtime Web and its first distribution drawn
(body[data-ready=1]). Printed per page, as medians over --repeats: the chapter's own load (DOMContentLoaded), the time
to the live page's first distribution from navigation, and the bytes the server sent. Requests that leave 127.0.0.1
are blocked and counted (the site needs none). Then the site's size on disk: all of it, live/ and zh/.
"""

from __future__ import annotations

import argparse
import functools
import http.server
import json
import os
import statistics
import threading
import time
from pathlib import Path

from playwright.sync_api import sync_playwright

CHROMIUM = "/usr/bin/chromium"


class CountingHandler(http.server.SimpleHTTPRequestHandler):
    sent = 0

    def copyfile(self, source, outputfile):  # every body the server sends goes through here
        data = source.read()
        CountingHandler.sent += len(data)
        outputfile.write(data)

    def log_message(self, *args):
        pass


def folder_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def live_chapters(site: Path) -> list[str]:
    """The chapter pages (tour/NAME/ and zh/tour/NAME/) whose HTML holds the live page's iframe."""
    pages = sorted(site.glob("tour/*/index.html")) + sorted(site.glob("zh/tour/*/index.html"))
    return [p.parent.relative_to(site).as_posix() + "/" for p in pages if "live/index.html?" in p.read_text("utf-8")]


def measure(browser, base: str, path: str) -> dict:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(120_000)
    outside = []

    def only_the_site(route):
        if route.request.url.startswith(base):
            return route.continue_()
        outside.append(route.request.url)
        return route.abort()

    context.route("**/*", only_the_site)
    page = context.new_page()
    before = CountingHandler.sent
    t0 = time.perf_counter()
    page.goto(base + path, wait_until="domcontentloaded")
    chapter = time.perf_counter() - t0
    frame_element = page.wait_for_selector(".live-page iframe", state="attached")
    frame_element.scroll_into_view_if_needed()
    frame = frame_element.content_frame()
    while frame is None:  # lazy: the frame exists once the iframe is near the viewport
        page.wait_for_timeout(50)
        frame = frame_element.content_frame()
    frame.wait_for_selector("body[data-ready='1']", state="attached")
    live = time.perf_counter() - t0
    context.close()
    return {"chapter_s": chapter, "live_s": live, "bytes": CountingHandler.sent - before, "outside": len(outside)}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("site", type=Path, help="a folder that `python docs/build.py --site-dir` wrote")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--json", type=Path, help="also write the figures here")
    args = p.parse_args(argv)
    site = args.site.resolve()
    if not (site / "index.html").is_file():
        raise SystemExit(f"error: {args.site} is not a built site (no index.html)")
    chapters = live_chapters(site)
    if not chapters or not (site / "live" / "index.html").is_file():
        raise SystemExit(f"error: {args.site} has no live page (was onnxruntime-web installed when it was built?)")
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(CountingHandler, directory=str(site)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}/"
    rows = {}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM)
        for path in chapters:
            runs = [measure(browser, base, path) for _ in range(args.repeats)]
            rows[path] = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        browser.close()
    server.shutdown()
    print(f"load average {os.getloadavg()[0]:.2f}; medians of {args.repeats} fresh contexts (nothing cached)")
    print(f"{'page':<40}{'chapter (s)':>12}{'live page (s)':>15}{'MB sent':>10}{'outside':>9}")
    for path, r in rows.items():
        print(f"{path:<40}{r['chapter_s']:>12.2f}{r['live_s']:>15.2f}{r['bytes'] / 1e6:>10.1f}{r['outside']:>9.0f}")
    sizes = {"site": folder_bytes(site), "live": folder_bytes(site / "live"), "zh": folder_bytes(site / "zh")}
    print("on disk: " + ", ".join(f"{k} {v / 1e6:.1f} MB" for k, v in sizes.items()))
    if args.json:
        args.json.write_text(json.dumps({"pages": rows, "bytes_on_disk": sizes}, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
