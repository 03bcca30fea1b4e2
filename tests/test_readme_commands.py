"""Every shell command the READMEs show runs (issue 25: `--checkpoint runs/demo` once failed for
every newcomer who followed the README).

The ```bash blocks of README.md and README.zh-CN.md are read and run in order, in a fresh copy of
the repository's tracked files (with this environment's .venv), as a newcomer would run them. A block
is skipped only when the line above its fence says `<!-- illustrative: why -->`: a synopsis with
placeholders, a command for hardware this machine does not have, a run of hours whose smoke test is
shown and run here. Commands that train get tiny sizes through their own flags (added after the
README's, so they win); commands that serve (`redthread serve`, `jupyter lab`) get a free port (and
Jupyter no browser, and --allow-root under root) and run until they answer an HTTP request on
127.0.0.1, then stop. `bash setup.sh` made the environment these tests run in,
and the quick start's test command is this suite, so those two parts of the quick start are not
run again.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # every command of the READMEs, one after the other: about ten minutes of CPU

ROOT = Path(__file__).resolve().parents[1]
READMES = ("README.md", "README.zh-CN.md")
FENCE = re.compile(r"^```bash\n(.*?)^```$", re.S | re.M)
ILLUSTRATIVE = "<!-- illustrative:"
VENV = Path(sys.executable).parent  # the environment running these tests: .venv/bin

# flags appended to a command that trains, so that it takes seconds (argparse: the last one wins)
TINY = {
    "demo": ["--minutes", "0.05"],
    "train": ["--max-iters", "2", "--eval-batches", "1", "--no-progress"],
    "ladder": ["--steps", "2", "--no-progress"],
    "experiment": ["--quick", "--no-progress"],
    "sample": ["--max-new-tokens", "5"],
}
TINY_TASK = {"caption-shapes": ["--scenes", "64"], "caption-digits": ["--scenes", "64"]}
SERVERS = {"serve": "/", "lab": "/lab"}  # subcommand -> the page that answers once it is up
SETUP_OR_SUITE = re.compile(r"^bash setup\.sh\b|-m pytest\b")


def blocks(name: str) -> list[str]:
    """The README's ```bash blocks that are meant to run (no illustrative marker above the fence)."""
    text = (ROOT / name).read_text(encoding="utf-8")
    runnable = []
    for match in FENCE.finditer(text):
        above = text[: match.start()].rstrip("\n").splitlines()[-1:]
        if not (above and above[0].startswith(ILLUSTRATIVE)):
            runnable.append(match[1])
    return runnable


def commands(name: str) -> list[list[str]]:
    """Each command of the runnable blocks as argv: continuations joined, comments dropped, `a && b` split,
    and the quick start's setup and test-suite parts left out (see the module docstring)."""
    out = []
    for block in blocks(name):
        for line in block.replace("\\\n", " ").splitlines():
            for part in line.split("&&"):
                argv = shlex.split(part, comments=True)
                if argv and not SETUP_OR_SUITE.search(part):
                    out.append(argv)
    return out


def test_both_readmes_show_the_same_commands_and_mark_what_does_not_run():
    english, chinese = (commands(name) for name in READMES)
    assert english == chinese
    assert len(english) >= 20
    for name in READMES:
        text = (ROOT / name).read_text(encoding="utf-8")
        for line in text.splitlines():
            if line.startswith(ILLUSTRATIVE):
                assert line.endswith("-->") and len(line) > len(ILLUSTRATIVE) + 8, f"{name}: say why: {line}"
    for argv in english:  # a placeholder or an alternative in a runnable block is a command that cannot run
        assert not any(re.fullmatch(r"\[.*|.*\]|\||FILE|DIR|N", word) for word in argv), argv


# where a command writes when the README gives it no --out (the commands' own defaults)
DEFAULT_OUT = {"attention": "attention.html", "ladder": "runs/ladder", "demo": "runs/demo"}


def written(argv: list[str]) -> list[str]:
    """The files and folders a README command writes: its --out (or its default) and its --figure."""
    sub = argv[1] if len(argv) > 1 and Path(argv[0]).name == "redthread" else ""
    out = [argv[argv.index(flag) + 1] for flag in ("--out", "--figure") if flag in argv]
    if "--out" not in argv and sub in DEFAULT_OUT:
        out.append(DEFAULT_OUT[sub])
    return out


def test_no_readme_command_writes_where_an_earlier_one_did():
    """Run in order, a second command writing the same path without --overwrite is refused (a3f7116's CI:
    two attention commands both wrote attention.html)."""
    for name in READMES:
        seen: dict[str, str] = {}
        for argv in commands(name):
            for path in written(argv):
                assert path not in seen or "--overwrite" in argv, \
                    f"{name}: {shlex.join(argv)} writes {path}, which {seen[path]} wrote before it"
                seen[path] = shlex.join(argv)


def program(argv: list[str]) -> list[str]:
    """argv with its program taken from this environment (`redthread`, `.venv/bin/redthread`, ...)."""
    head = Path(argv[0]).name
    if head.startswith("python"):
        return [sys.executable, *argv[1:]]
    assert (VENV / head).exists(), f"the README runs {argv[0]}, which this environment does not have"
    return [str(VENV / head), *argv[1:]]


def tiny(argv: list[str]) -> list[str]:
    sub = argv[1] if len(argv) > 1 else ""
    extra = list(TINY.get(sub, [])) if Path(argv[0]).name == "redthread" else []
    if "--task" in argv:
        extra += TINY_TASK.get(argv[argv.index("--task") + 1], [])
    return argv + extra


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve_until_it_answers(argv: list[str], page: str, cwd: Path, env: dict, limit: float = 120) -> None:
    port = free_port()
    extra = ["--port", str(port)] if Path(argv[0]).name == "redthread" else [f"--port={port}", "--no-browser"]
    if Path(argv[0]).name == "jupyter" and os.geteuid() == 0:
        extra.append("--allow-root")  # CI runs as root, which Jupyter refuses without it
    proc = subprocess.Popen(argv + extra, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            assert proc.poll() is None, f"{shlex.join(argv)} stopped: {proc.stdout.read()[-2000:]}"
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}{page}", timeout=5) as answer:
                    assert answer.status == 200
                    return
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                time.sleep(1)
        pytest.fail(f"{shlex.join(argv)} did not answer on 127.0.0.1:{port}{page} within {limit:.0f} s")
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.fixture(scope="module")
def clone(tmp_path_factory) -> Path:
    """The repository's tracked files in a fresh folder, with this environment's .venv beside them."""
    folder = tmp_path_factory.mktemp("fresh-clone")
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    for rel in filter(None, listed.decode().split("\0")):
        if (ROOT / rel).is_file():
            (folder / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, folder / rel)
    (folder / ".venv").symlink_to(VENV.parent)
    return folder


def test_every_readme_command_runs(clone, tmp_path_factory):
    env = dict(os.environ, OMP_NUM_THREADS="1", REDTHREAD_CACHE=str(tmp_path_factory.mktemp("cache")),
               JUPYTER_CONFIG_DIR=str(tmp_path_factory.mktemp("jupyter")))
    for argv in commands(READMES[0]):
        run = program(tiny(argv))
        sub = argv[1] if len(argv) > 1 else ""
        if sub in SERVERS:
            serve_until_it_answers(run, SERVERS[sub], clone, env)
            continue
        done = subprocess.run(run, cwd=clone, env=env, capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, f"README command failed: {shlex.join(argv)}\n{done.stderr[-3000:]}"
