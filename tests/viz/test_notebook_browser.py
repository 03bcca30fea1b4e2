"""The notebook views as a learner meets them: a notebook with two explorers and a next-token view is run by a
Jupyter kernel (nbclient), exported to HTML (nbconvert) and opened in Chromium (see tests/conftest.py). Each
explorer reacts to the pointer on its own, and nothing logs an error.

The kernel is this interpreter (the kernel spec "python3" runs sys.executable) with this tree's `src` first on
its path, so it imports the code under test whether or not the package is installed.
"""

import os
import re
from pathlib import Path

import pytest

import redthread
from tests.tiny import save_tiny_run

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
nbconvert = pytest.importorskip("nbconvert")
pytest.importorskip("ipykernel")  # the kernel "python3"

SETUP = """\
import torch
import redthread as rt
from redthread.data.tokenizers import CharTokenizer

tok = CharTokenizer.from_text("the cat sat on the mat")
torch.manual_seed(1)
model = rt.TransformerLM(rt.TransformerConfig(vocab_size=tok.vocab_size, block_size=32, n_layer=2, n_head=4, d_model=16))"""
# the explorers' head views: every line's opacity, in document order
DRAWING = "() => [...document.querySelectorAll('#head-svg line')].map(e => e.getAttribute('stroke-opacity')).join(',')"


def run_notebook(folder: Path, run: Path) -> Path:
    """Build, execute and export the notebook; the path of its HTML."""
    cells = [SETUP,
             "rt.show_attention(model, 'the cat sat on the mat', tokenizer=tok)",
             f"rt.show_attention({str(run)!r}, 'to be or not to be')",
             f"rt.show_next_token({str(run)!r}, 'to be or', top_k=3, temperature=0.8)"]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    src = str(Path(redthread.__file__).parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [src, os.environ.get("PYTHONPATH")]))}
    nbclient.NotebookClient(nb, kernel_name="python3", timeout=300).execute(env=env)
    errors = [o for cell in nb.cells for o in cell.outputs if o.output_type == "error"]
    assert errors == [], errors
    body, _ = nbconvert.HTMLExporter().from_notebook_node(nb)
    path = folder / "notebook.html"
    path.write_text(body, encoding="utf-8")
    return path


@pytest.fixture
def notebook(browser, tmp_path):
    """The exported notebook open in Chromium: (page, explorer frames, next-token frame, errors, frame requests)."""
    save_tiny_run(tmp_path / "run", "to be or not to be\n")
    path = run_notebook(tmp_path, tmp_path / "run")
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    # the export's own page links MathJax and require.js on a CDN: answered empty here, as there is no network
    context.route(re.compile(r"^https?://"), lambda route: route.fulfill(status=200, body=""))
    page = context.new_page()
    errors, requests = [], []
    page.on("console", lambda m: m.type == "error" and errors.append(m.text))
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("request", lambda r: r.frame != page.main_frame and requests.append(r.url))
    page.goto(path.as_uri())
    assert page.locator("iframe").count() == 3  # one per output; no other frame on the page
    frames = [page.locator("iframe").nth(i).element_handle().content_frame() for i in range(3)]
    for f in frames[:2]:
        f.wait_for_selector("body[data-ready='1']", timeout=10_000)
    yield page, frames[:2], frames[2], errors, requests
    context.close()


def focus(frame):
    return frame.get_attribute("#head-view", "data-focus")


def test_two_explorers_and_a_next_token_view_in_an_exported_notebook(notebook, tmp_path):
    page, (first, second), nxt, errors, requests = notebook
    assert first.text_content("h1") == "the cat sat on the mat" and second.text_content("h1") == "to be or not to be"
    assert first.locator("#thumbs canvas").count() == 2 * 4 and second.locator("#thumbs canvas").count() == 2 * 2
    drawings = [first.evaluate(DRAWING), second.evaluate(DRAWING)]

    first.hover("#head-svg .tok.q[data-i='4']")
    assert (focus(first), focus(second)) == ("q:4", "")  # the other explorer is untouched
    assert first.locator("#lines-focus line").count() > 0 and second.locator("#lines-focus line").count() == 0
    first.click("#head-svg .tok.q[data-i='4']")  # pinned: it holds while the pointer is in the other frame
    pinned = first.evaluate(DRAWING)
    assert pinned != drawings[0]

    second.hover("#head-svg .tok.k[data-i='2']")
    assert (focus(first), focus(second)) == ("q:4", "k:2")
    assert first.get_attribute("#head-view", "data-pinned") == "1"
    second.select_option("#head-select", "1")
    assert second.get_attribute("#head-view", "data-head") == "1" and first.get_attribute("#head-view", "data-head") == "0"
    assert second.evaluate(DRAWING) != drawings[1] and first.evaluate(DRAWING) == pinned

    rows = nxt.locator(".cand")  # the tiny run's 8 characters, all of them candidates
    assert rows.count() == 8 and nxt.locator(".cand:not(.cut)").count() == 3
    assert "temperature 0.8 · top-k 3" in nxt.text_content("#settings")
    assert nxt.evaluate("() => document.querySelector('.cand:hover')") is None
    rows.nth(1).hover()
    assert nxt.evaluate("() => document.querySelector('.cand:hover').dataset.id") == rows.nth(1).get_attribute("data-id")

    for i, frame in enumerate(page.locator("iframe").all()):  # one picture of each output, as drawn in its cell
        frame.screenshot(path=tmp_path / f"output-{i}.png")
    assert errors == [] and requests == []  # the pages logged no error and asked for nothing
