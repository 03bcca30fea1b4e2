"""`redthread page RUN [RUN ...] --out DIR` without a browser: the folder it writes (the page, its scripts, ONNX Runtime
Web, each run's graph, description and LayerNorm numbers), a ladder's report folder taken rung by rung, the page's
references (none outside its folder), and bad input as one line: an unknown run, a run that cannot be exported or has
no tokenizer, an --out that is a file, someone else's folder or a page already there, no runtime. Tiny random-init
runs; a stand-in runtime (three small files) except where the real one is checked. The page in Chromium:
tests/viz/test_page_browser.py."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import torch

import redthread as rt
from redthread.data.tokenizers import CharTokenizer
from redthread.viz.page import FORMAT, OWN_ASSETS, RUNTIME_FILES, SHARED_ASSETS, runtime_folder
from tests.cli_helpers import assert_one_line_error, cli, digest
from tests.tiny import save_tiny_run, save_tiny_vit_run

pytest.importorskip("onnxruntime")

TEXT = "to be or not to be\n"
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Path:
    """A Transformer run, a bigram run, a ladder report (n-gram, bigram, LSTM rungs), a ViT run, a run without tokenizer."""
    root = tmp_path_factory.mktemp("runs")
    tok = save_tiny_run(root / "tiny", TEXT, block_size=16)
    V = tok.vocab_size
    torch.manual_seed(0)
    rt.save_checkpoint(root / "bigram", rt.build_model("bigram", vocab_size=V, block_size=16), tokenizer=tok)
    rungs = root / "ladder" / "rungs"
    for rung in ("ngram", "bigram", "lstm"):
        rt.save_checkpoint(rungs / rung, rt.build_model(rung, vocab_size=V, block_size=16), tokenizer=tok,
                           extra={"rung": rung})
    (root / "ladder" / "ladder.md").write_text("# a ladder\n", encoding="utf-8")
    rt.save_checkpoint(root / "no-tokenizer", rt.build_model("bigram", vocab_size=V, block_size=16))
    save_tiny_vit_run(root / "vit")
    return root


@pytest.fixture(scope="module")
def fake_runtime(tmp_path_factory) -> Path:
    """Three files with onnxruntime-web's names, and its package.json one folder up: what the command copies."""
    dist = tmp_path_factory.mktemp("onnxruntime-web") / "dist"
    dist.mkdir()
    for name in RUNTIME_FILES:
        (dist / name).write_text(f"/* {name} */\n//# sourceMappingURL={name}.map\n", encoding="utf-8")
    (dist.parent / "package.json").write_text('{"name": "onnxruntime-web", "version": "0.0.0-test"}', encoding="utf-8")
    return dist


def manifest(folder: Path) -> dict:
    text = (folder / "index.html").read_text(encoding="utf-8")
    found = re.search(r'<script type="application/json" id="manifest">(.*?)</script>', text, re.S)
    return json.loads(found[1])


def test_the_folder_holds_the_page_its_scripts_the_runtime_and_each_model(runs, fake_runtime, tmp_path):
    out = tmp_path / "page"
    code, stdout, err = cli("page", runs / "tiny", runs / "bigram" / "checkpoint.safetensors", "--out", out,
                            "--runtime", fake_runtime)
    assert code == 0, err
    assert sorted(p.name for p in out.iterdir()) == ["assets", "index.html", "models", "ort"]
    assert sorted(p.name for p in (out / "assets").iterdir()) == sorted(SHARED_ASSETS + OWN_ASSETS)
    for name in SHARED_ASSETS:  # one copy of the code: the explorer's and the next-token view's files as they are
        assert (out / "assets" / name).read_bytes() == (ROOT / "src/redthread/viz/assets" / name).read_bytes()
    assert sorted(p.name for p in (out / "ort").iterdir()) == sorted(RUNTIME_FILES)
    assert "sourceMappingURL" not in (out / "ort" / "ort.wasm.min.js").read_text(encoding="utf-8")  # no map is copied
    m = manifest(out)
    assert m["format"] == FORMAT and m["runtime"] == {"package": "onnxruntime-web", "version": "0.0.0-test",
                                                       "files": list(RUNTIME_FILES)}
    assert [(r["name"], r["rung"], r["folder"]) for r in m["runs"]] == [
        ("tiny", "transformer", "models/0-tiny"), ("bigram", "bigram", "models/1-bigram")]
    for r in m["runs"]:
        folder = out / r["folder"]
        assert sorted(p.name for p in folder.iterdir()) == ["model.json", "model.onnx", "walk.json"]
        assert r["onnx_bytes"] == (folder / "model.onnx").stat().st_size
        assert json.loads((folder / "model.json").read_text(encoding="utf-8"))["tokenizer"]["kind"] == "char"
    model = rt.load_checkpoint(runs / "tiny")
    walk = json.loads((out / "models/0-tiny/walk.json").read_text(encoding="utf-8"))
    assert sorted(walk["norms"]) == sorted([f"blocks.{i}.{s}.norm" for i in range(2) for s in ("self_attn_res", "ffn_res")]
                                           + ["norm_f"])
    assert walk["norms"]["norm_f"]["weight"] == pytest.approx(model.norm_f.weight.tolist())
    assert walk["norms"]["blocks.1.ffn_res.norm"]["bias"] == pytest.approx(model.blocks[1].ffn_res.norm.bias.tolist())
    assert json.loads((out / "models/1-bigram/walk.json").read_text(encoding="utf-8"))["norms"] == {}
    assert "tiny: transformer, " in stdout and "onnxruntime gives PyTorch's 31 outputs to" in stdout
    assert f"page: {out}/index.html (2 runs" in stdout and f"python -m http.server --directory {out} 8000" in stdout


def test_the_page_names_nothing_outside_its_folder(runs, fake_runtime, tmp_path):
    out = tmp_path / "page"
    assert cli("page", runs / "tiny", "--out", out, "--runtime", fake_runtime)[0] == 0
    index = (out / "index.html").read_text(encoding="utf-8")
    refs = re.findall(r'\b(?:src|href)="([^"]*)"', index)
    assert refs and all(r == "data:," or (out / r).is_file() for r in refs), refs  # every file it loads is there
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]*)"', index)[1]
    assert "default-src 'self'" in csp and "connect-src 'self'" in csp and "http" not in csp
    for path in [out / "index.html", *(out / "assets").iterdir()]:
        text = path.read_text(encoding="utf-8")
        urls = re.findall(r"[a-z][a-z0-9+.-]*://[^\s\"'`<>)]*", text)
        # the one URL the page spells is where to open it after serving it, in words.js's message about file://
        assert {u for u in urls if not u.startswith("file://")} <= {"http://127.0.0.1:8000/"}, (path.name, urls)
        assert not re.search(r"""(?:fetch|import)\(\s*["'`](?:https?:)?//""", text), path.name
    for r in manifest(out)["runs"]:  # the scripts fetch each run by its folder, inside this one
        assert not re.match(r"[a-z]+:|/", r["folder"]) and (out / r["folder"] / "model.onnx").is_file()


def test_a_ladder_report_folder_gives_its_rungs_that_export(runs, fake_runtime, tmp_path):
    out = tmp_path / "page"
    code, stdout, err = cli("page", runs / "ladder", runs / "tiny", "--out", out, "--runtime", fake_runtime)
    assert code == 0, err
    assert "left out ngram (a count table has no ONNX graph)" in stdout
    assert [(r["name"], r["rung"]) for r in manifest(out)["runs"]] == [
        ("bigram", "bigram"), ("lstm", "lstm"), ("tiny", "transformer")]


def test_two_runs_with_one_folder_name_are_told_apart(runs, fake_runtime, tmp_path):
    out = tmp_path / "page"
    code, _, err = cli("page", runs / "bigram", runs / "ladder" / "rungs" / "bigram", "--out", out, "--runtime", fake_runtime)
    assert code == 0, err
    names = [r["name"] for r in manifest(out)["runs"]]
    assert names[0].endswith("/bigram") and names[1] == "ladder/bigram" and len(set(names)) == 2


@pytest.mark.parametrize("run, needles", [
    ("missing", ("missing",)),
    ("ladder/rungs/ngram", ("ngram", "NGramLM does not export to ONNX")),
    ("vit", ("vit", "ViT does not export to ONNX", "reads no text")),
    ("no-tokenizer", ("no-tokenizer has no tokenizer",)),
])
def test_a_run_the_page_cannot_hold_is_one_line(runs, fake_runtime, tmp_path, run, needles):
    out = tmp_path / "page"
    code, _, err = cli("page", runs / "tiny", runs / run, "--out", out, "--runtime", fake_runtime)
    assert_one_line_error(code, err, *needles)
    assert not out.exists()  # refused before anything is written
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".page.")]  # and no staging folder is left


def test_an_out_that_is_taken_is_one_line(runs, fake_runtime, tmp_path):
    afile = tmp_path / "afile"
    afile.write_text("x", encoding="utf-8")
    code, _, err = cli("page", runs / "tiny", "--out", afile, "--runtime", fake_runtime)
    assert_one_line_error(code, err, "exists and is not a folder")
    foreign = tmp_path / "docs"
    foreign.mkdir()
    (foreign / "notes.md").write_text("mine", encoding="utf-8")
    for extra in ((), ("--overwrite",)):
        code, _, err = cli("page", runs / "tiny", "--out", foreign, "--runtime", fake_runtime, *extra)
        assert_one_line_error(code, err, "is not empty and holds no page")
    assert sorted(p.name for p in foreign.iterdir()) == ["notes.md"]

    out = tmp_path / "page"
    assert cli("page", runs / "tiny", "--out", out, "--runtime", fake_runtime)[0] == 0
    (out / "mine.txt").write_text("kept", encoding="utf-8")
    before = digest(out / "index.html")
    code, _, err = cli("page", runs / "bigram", "--out", out, "--runtime", fake_runtime)
    assert_one_line_error(code, err, "already holds a page", "--overwrite")
    assert digest(out / "index.html") == before
    code, _, err = cli("page", runs / "bigram", "--out", out, "--runtime", fake_runtime, "--overwrite")
    assert code == 0, err
    assert [r["name"] for r in manifest(out)["runs"]] == ["bigram"] and not (out / "models" / "0-tiny").exists()
    assert (out / "mine.txt").read_text(encoding="utf-8") == "kept"  # only the page's own entries are replaced


def test_no_runtime_is_one_line_that_says_how_to_get_it(runs, tmp_path, monkeypatch):
    empty = tmp_path / "empty"
    empty.mkdir()
    code, _, err = cli("page", runs / "tiny", "--out", tmp_path / "page", "--runtime", empty)
    assert_one_line_error(code, err, "lacks onnxruntime-web's ort.wasm.min.js")
    monkeypatch.setenv("REDTHREAD_ONNXRUNTIME_WEB", str(empty))
    code, _, err = cli("page", runs / "tiny", "--out", tmp_path / "page")
    assert_one_line_error(code, err, "REDTHREAD_ONNXRUNTIME_WEB")
    monkeypatch.delenv("REDTHREAD_ONNXRUNTIME_WEB")
    monkeypatch.setattr("redthread.viz.page.runtime_places", lambda: [empty])  # neither setup's install nor a node_modules
    with pytest.raises(rt.RedthreadError, match="bash setup.sh"):
        runtime_folder()


def test_setup_installs_the_runtime_the_lock_file_pins():
    lock = json.loads((ROOT / "package-lock.json").read_text(encoding="utf-8"))
    pinned = lock["packages"]["node_modules/onnxruntime-web"]["version"]
    poetry = lock["packages"]["node_modules/chinese-poetry"]["version"]  # the Tang corpus's source (data/tang.py)
    assert json.loads((ROOT / "package.json").read_text(encoding="utf-8"))["dependencies"] == {
        "onnxruntime-web": pinned, "chinese-poetry": poetry}
    try:
        folder = runtime_folder()
    except rt.RedthreadError:
        if __import__("os").environ.get("CI") == "true":
            raise
        pytest.skip("onnxruntime-web is not installed here (bash setup.sh installs it)")
    assert json.loads((folder.parent / "package.json").read_text(encoding="utf-8"))["version"] == pinned
    script = (folder / "ort.wasm.min.js").read_text(encoding="utf-8")
    # the one URL inside the runtime's script is a link in an error message; it loads its module from where it is told
    assert set(re.findall(r"https?://[^\s\"'`<>)]*", script)) <= {"https://web.dev/cross-origin-isolation-guide/"}


def test_a_chinese_tokenizer_and_every_rung_name_reach_the_manifest(fake_runtime, tmp_path):
    tok = CharTokenizer.from_text("床前明月光，疑是地上霜。\n")
    torch.manual_seed(0)
    model = rt.build_model("gru", vocab_size=tok.vocab_size, block_size=8)
    rt.save_checkpoint(tmp_path / "诗", model, tokenizer=tok)
    code, _, err = cli("page", tmp_path / "诗", "--out", tmp_path / "page", "--runtime", fake_runtime)
    assert code == 0, err
    (entry,) = manifest(tmp_path / "page")["runs"]
    assert entry["name"] == "诗" and entry["rung"] == "gru" and entry["folder"] == "models/0-run"
    meta = json.loads((tmp_path / "page" / entry["folder"] / "model.json").read_text(encoding="utf-8"))
    assert "".join(meta["tokenizer"]["tokens"]) == tok.chars
