"""Build the docs site: execute the guided tour once, then `mkdocs build --strict` into site/.

    python docs/build.py               the tour (into build/tour), then the site (into site/)
    python docs/build.py --skip-tour   the site alone, from the tour executed before (a stale chapter fails it)
    python docs/build.py --serve       the same, served on http://127.0.0.1:8000 and rebuilt when a file changes

Any broken link, anchor or cross-reference fails the build (mkdocs.yml's validation, and --strict).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import build_tour

REPO = Path(__file__).resolve().parent.parent


def mkdocs(command: str, site: Path | None = None, tour: Path = build_tour.OUT, config: Path = REPO / "mkdocs.yml",
           extra: tuple = (), **run) -> subprocess.CompletedProcess:
    """Run `mkdocs COMMAND --strict` with this checkout's redthread and the tour executed into `tour`."""
    env = dict(os.environ, REDTHREAD_TOUR_BUILD=str(tour), NO_MKDOCS_2_WARNING="1")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO / "src"), env.get("PYTHONPATH")]))
    args = [sys.executable, "-m", "mkdocs", command, "--strict", "--config-file", str(config)]
    if site is not None:
        args += ["--site-dir", str(site)]
    return subprocess.run([*args, *extra], env=env, cwd=REPO, **run)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Execute the guided tour, then build the docs site with --strict.")
    parser.add_argument("--serve", action="store_true", help="serve the site on 127.0.0.1:8000 instead of writing it")
    parser.add_argument("--skip-tour", action="store_true", help="do not execute the tour again")
    parser.add_argument("--site-dir", type=Path, help="where the site goes (default site/)")
    parser.add_argument("--dev-addr", default="127.0.0.1:8000", help="where --serve listens (default 127.0.0.1:8000)")
    args = parser.parse_args(argv)
    if args.serve and args.site_dir:
        parser.error("--site-dir is for a build; --serve keeps the site in memory")
    start = time.monotonic()
    if not args.skip_tour:
        try:
            build_tour.build(build_tour.chapters(), build_tour.OUT, prune=True)
        except build_tour.ChapterFailed as e:
            print(f"error: {e}", file=sys.stderr)
            return 1
        print(f"tour: {time.monotonic() - start:.1f} s")
    if args.serve:
        status = mkdocs("serve", extra=("--dev-addr", args.dev_addr)).returncode
    else:
        status = mkdocs("build", args.site_dir).returncode
    print(f"{'served' if args.serve else 'built'} in {time.monotonic() - start:.1f} s" if status == 0 else "error: the site build failed")
    return status


if __name__ == "__main__":
    sys.exit(main())
