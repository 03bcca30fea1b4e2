"""The live page (`redthread page`, viz/page.py) in a real browser (Chromium, see tests/conftest.py), served from its
folder by a thread of http.server on 127.0.0.1, every request outside that origin aborted and recorded.

Its numbers are PyTorch's: for every exported rung and position kind, the logits and every intermediate the page
computes with ONNX Runtime Web equal the model's (max abs difference <= 1e-4, float32), and so do the numbers the
walk-through computes by hand; the sampling controls give the logits processors' distribution
(generate/processors.py); greedy generation gives redthread.generate's tokens, sliding window included; seeded
sampling repeats itself and its draws follow the exact distribution (total variation); the explorer draws the
in-browser model's attention; the runs side by side give each model's distribution; the language toggle leaves no
English prose in Chinese (an allow-list of identifiers), sets the html element's lang and changes no number shown
(the distribution's, the walk-through's); no console error.
Tiny random-init models built here, char and BPE tokenizers: no training, no download.
"""

from __future__ import annotations

import functools
import http.server
import math
import os
import threading
from urllib.parse import quote, urlencode

import numpy as np
import pytest
import torch

import redthread as rt
from redthread.data.tokenizers import BPETokenizer, CharTokenizer
from redthread.errors import RedthreadError
from redthread.generate.config import SampleConfig
from redthread.interop.onnx_export import onnx_graph, tokenizer_description
from redthread.viz.page import PageRun, runtime_folder, write_page

pytest.importorskip("onnxruntime")
pytestmark = pytest.mark.slow  # Chromium (the browser fixture marks it so too)

TOL = 1e-4  # the page's numbers against PyTorch's (ONNX Runtime Web, float32)
BLOCK = 16
CORPUS = "to be, or not to be: that is the question.\nwhether 'tis nobler in the mind\n"
ZH = "床前明月光，疑是地上霜。举头望明月，低头思故乡。\n"
SHORT, LONG = "to be or", "whether 'tis nobler in the mind to be, or not"  # LONG: more tokens than the window
DUMP = """() => { const l = window.redthreadPage.last;
    return {ids: l.ids, window: l.window, start: l.start, labels: l.labels,
            outputs: Object.fromEntries(Object.entries(l.outputs).map(([k, v]) => [k, {dims: v.dims, data: Array.from(v.data)}]))}; }"""
VECTORS = """els => els.map(e => [e.dataset.what, e.dataset.values.split(',').map(Number),
    [...e.querySelectorAll('.cell')].map(c => c.textContent)])"""
SET = """([id, value]) => { const e = document.getElementById(id); e.value = value;
    e.dispatchEvent(new Event('input', {bubbles: true})); e.dispatchEvent(new Event('change', {bubbles: true})); }"""


def transformer(tok, **overrides):
    cfg = dict(vocab_size=tok.vocab_size, block_size=BLOCK, n_layer=2, n_head=2, d_model=16)
    return rt.TransformerLM(rt.TransformerConfig(**{**cfg, **overrides}))


def build_runs() -> dict[str, tuple]:
    """name -> (model, tokenizer): every exportable rung, the Transformer with every position kind and its variants,
    a BPE Transformer and a Chinese character model."""
    tok = CharTokenizer.from_text(CORPUS)
    V = tok.vocab_size
    torch.manual_seed(0)
    bigram = rt.BigramLM(rt.BigramConfig(vocab_size=V, block_size=BLOCK))
    torch.nn.init.normal_(bigram.logits.weight)  # it starts at zeros: uniform, where anything would agree
    runs = {"bigram": bigram,
            "mlp": rt.MLPLM(rt.MLPConfig(vocab_size=V, block_size=BLOCK, context=4, d_embed=8, d_hidden=16))}
    for cell in ("rnn", "lstm", "gru"):
        runs[cell] = rt.RecurrentLM(rt.RecurrentConfig(vocab_size=V, block_size=BLOCK, cell=cell, n_layer=2, d_embed=8,
                                                       d_hidden=12))
    for pos in ("sinusoidal", "learned", "rope", "none"):
        runs[f"transformer-{pos}"] = transformer(tok, pos=pos)
    runs["transformer-variants"] = transformer(tok, pos="rope", norm="post", qk_norm=True, activation="relu2",
                                               logit_softcap=3.0, bias=False, tie_weights=False, d_ff=24)
    runs["transformer-gpt2"] = transformer(tok, pos="learned", activation="gelu_tanh", n_head=4, n_layer=3)  # as in
    # tests/interop/test_onnx.py: GPT-2's shape (learned positions, tanh GELU, pre-norm, tied head), smaller
    out = {name: (model.eval(), tok) for name, model in runs.items()}
    bpe = BPETokenizer.train(CORPUS * 4 + ZH * 4, 300)
    out["transformer-bpe"] = (transformer(bpe, pos="learned").eval(), bpe)
    zh = CharTokenizer.from_text(ZH)
    out["tang"] = (transformer(zh, n_layer=1).eval(), zh)
    return out


@pytest.fixture(scope="module")
def runs():
    return build_runs()


@pytest.fixture(scope="module")
def served(runs, tmp_path_factory):
    """The page folder, served on 127.0.0.1: (base URL, folder)."""
    try:
        runtime_folder()
    except RedthreadError:
        if os.environ.get("CI") == "true":
            raise
        pytest.skip("onnxruntime-web is not installed (bash setup.sh installs it)")
    folder = tmp_path_factory.mktemp("page") / "page"
    write_page([PageRun(name, model, tok) for name, (model, tok) in runs.items()], folder)

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    class Server(http.server.ThreadingHTTPServer):
        def handle_error(self, *args):  # a browser that drops a connection it no longer needs is no failure
            pass

    server = Server(("127.0.0.1", 0), functools.partial(Quiet, directory=str(folder)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/", folder
    server.shutdown()
    thread.join(timeout=10)


class LivePage:
    """The page in its own browser context: every request outside the server aborted and recorded, console errors
    and uncaught exceptions recorded."""

    def __init__(self, browser, base, url=None, viewport=(1400, 1000)):
        self.base = base
        self.context = browser.new_context(viewport={"width": viewport[0], "height": viewport[1]})
        self.context.set_default_timeout(60_000)
        self.outside, self.errors = [], []

        def only_the_page(route):
            if route.request.url.startswith(base):
                return route.continue_()
            self.outside.append(route.request.url)
            return route.abort()

        self.context.route("**/*", only_the_page)
        self.page = self.context.new_page()
        self.page.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.goto(url or base)
        self.page.wait_for_selector("body:not([data-ready='0'])", state="attached")

    def idle(self):
        self.page.wait_for_selector("body[data-busy='0']", state="attached")

    def select(self, name):
        names = self.page.evaluate("() => window.redthreadPage.runs")
        self.page.select_option("#run-select", str(names.index(name)))
        self.idle()

    def type(self, text):
        self.page.fill("#text", text)
        self.idle()

    def set(self, control, value):
        self.page.evaluate(SET, [control, "" if value is None else str(value)])
        self.idle()

    def settings(self, temperature=1.0, top_k=None, top_p=1.0, min_p=0.0):
        for control, value in (("temperature", temperature), ("top-k", top_k), ("top-p", top_p), ("min-p", min_p)):
            self.set(control, value)

    def view(self, name):
        self.page.click(f"#views button[data-view='{name}']")
        self.idle()

    def dump(self):
        return self.page.evaluate(DUMP)

    def assert_clean(self):
        assert self.errors == [], self.errors
        assert self.outside == [], self.outside


@pytest.fixture(scope="module")
def live(browser, served):
    """One page for the tests of numbers: each sets the run, the text and the settings it needs."""
    opened = LivePage(browser, served[0])
    assert opened.page.get_attribute("body", "data-ready") == "1"
    yield opened
    opened.assert_clean()
    opened.context.close()


def torch_outputs(model, ids) -> dict[str, np.ndarray]:
    """The graph module's outputs in PyTorch (what the ONNX graph computes), by name."""
    graph, outputs = onnx_graph(model)
    with torch.no_grad():
        values = graph(torch.tensor([ids]))
    return {o.name: v.float().numpy() for o, v in zip(outputs, values)}


def max_diff(a, b) -> float:
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    assert a.shape == b.shape, (a.shape, b.shape)
    finite = np.isfinite(a)
    assert np.array_equal(finite, np.isfinite(b)) and np.array_equal(a[~finite], b[~finite])  # -inf where masked
    return float(np.abs(a[finite] - b[finite]).max()) if finite.any() else 0.0


# --- the numbers: every output of every rung ------------------------------------------------------------------


def test_the_page_gives_pytorchs_logits_and_intermediates_for_every_rung(live, runs):
    worst = {}
    for name, (model, tok) in runs.items():
        live.select(name)
        for text in ((SHORT, LONG) if name != "tang" else (ZH[:5], ZH[:-1])):
            live.type(text)
            got = live.dump()
            ids = tok.encode(text)
            assert got["ids"] == ids and got["window"] == ids[-BLOCK:] and got["start"] == max(0, len(ids) - BLOCK)
            assert got["labels"] == [tok.decode([i]) for i in got["window"]] or tok.kind == "bpe"
            want = torch_outputs(model, got["window"])
            assert sorted(got["outputs"]) == sorted(want)  # every output of the graph reached the page
            for out, value in want.items():
                page = np.array(got["outputs"][out]["data"], dtype=np.float64).reshape(got["outputs"][out]["dims"])
                worst[(name, out)] = max(worst.get((name, out), 0.0), max_diff(page, value))
    print("largest difference per rung:", {n: f"{max(v for (m, _), v in worst.items() if m == n):.1e}" for n in runs})
    assert max(worst.values()) <= TOL, {k: v for k, v in worst.items() if v > TOL}
    assert len(worst) == sum(len(torch_outputs(m, [0])) for m, _ in runs.values())
    live.assert_clean()


def test_the_tokenizers_encode_and_decode_as_redthreads(live, runs):
    texts = [SHORT, LONG, "  to  be\n\nor\tnot", ZH, "to 床前 be 🐈 明月光!!", "'s 'll 're 12 345 x", ""]
    for name in ("transformer-bpe", "transformer-sinusoidal", "tang"):
        tok = runs[name][1]
        description = tokenizer_description(tok)
        got = live.page.evaluate("""([d, texts]) => { const t = window.RedthreadTokenizer.load(d);
            return texts.map((x) => { const e = t.encode(x); return [e.ids, e.unknown, t.decode(e.ids)]; }); }""",
                                 [description, texts])
        for text, (ids, unknown, decoded) in zip(texts, got):
            if tok.kind == "bpe":
                assert ids == tok.encode(text) and unknown == [] and decoded == text, text
            else:
                known = "".join(ch for ch in text if ch in tok.chars)
                assert ids == tok.encode(known) and decoded == known, text
                assert sorted(unknown) == sorted(set(text) - set(tok.chars)), text


# --- sampling ---------------------------------------------------------------------------------------------------


def processors(logits, settings) -> torch.Tensor:
    """redthread's distribution for the page's settings (top-p 1 and min-p 0 are off, as the page reads them)."""
    config = SampleConfig(temperature=settings["temperature"], top_k=settings.get("top_k"),
                          top_p=settings.get("top_p"), min_p=settings.get("min_p"))
    x = torch.tensor([logits], dtype=torch.float32)
    return config.probabilities(x, torch.zeros(1, 1, dtype=torch.long))[0].double()


def test_each_sampling_control_reshapes_the_distribution_as_the_processors_do(live):
    live.select("transformer-sinusoidal")
    live.type(LONG)
    logits = live.page.evaluate("() => Array.from(window.redthreadPage.last.logits)")
    cases = [dict(temperature=0.7), dict(temperature=1.5), dict(top_k=3), dict(top_p=0.5), dict(min_p=0.2),
             dict(temperature=1.3, top_k=8, top_p=0.7, min_p=0.05), dict(temperature=0.0, top_k=2),
             dict(temperature=2.0, top_p=0.95)]
    for case in cases:
        live.settings(**case)
        settings = {"temperature": case.get("temperature", 1.0), "top_k": case.get("top_k"),
                    "top_p": case.get("top_p"), "min_p": case.get("min_p")}
        assert live.page.evaluate("() => window.redthreadPage.settings()") == settings
        want = processors(logits, settings)
        dist = live.page.evaluate("() => ({ps: Array.from(window.redthreadPage.dist.pSample), kept: window.redthreadPage.dist.kept})")
        assert np.abs(np.array(dist["ps"]) - want.numpy()).max() <= 1e-6, case
        assert dist["kept"] == int((want > 0).sum()), case
        rows = live.page.eval_on_selector_all("#candidates .cand", "els => els.map(e => [+e.dataset.id, e.classList.contains('cut')])")
        assert rows and all(cut == (want[i] == 0) for i, cut in rows), case  # the rows cut are the tokens cut
    live.settings()
    live.assert_clean()


def test_a_candidate_row_appends_its_token(live, runs):
    for name in ("transformer-sinusoidal", "transformer-bpe"):
        _, tok = runs[name]
        live.select(name)
        live.type(SHORT)
        ids = live.page.evaluate("() => window.redthreadPage.last.ids")
        second = live.page.evaluate("() => window.redthreadPage.dist.candidates[1].id")
        live.page.click("#candidates .cand >> nth=1")
        live.idle()
        assert live.page.evaluate("() => window.redthreadPage.last.ids") == ids + [second]
        assert live.page.input_value("#text") == tok.decode(ids + [second])
    live.assert_clean()


def test_the_page_keeps_the_processors_semantics_on_ties_and_edges(live):
    """RedthreadSampling.probabilities against the processors on random logits and on ties: the same distribution
    (1e-6: float64 against float32), except where tied logits straddle the top-p boundary in a long vocabulary
    (torch's sort is not stable there): the same number kept, the same probabilities."""
    rng = np.random.default_rng(0)
    cases = []
    for _ in range(150):
        V = int(rng.integers(2, 60))
        logits = (rng.normal(size=V) * rng.choice([0.5, 2.0, 6.0])).astype(np.float32).tolist()
        cases.append((logits, {"temperature": float(rng.choice([0.0, 0.3, 1.0, 1.7])),
                               "top_k": None if rng.random() < 0.5 else int(rng.integers(1, V + 3)),
                               "top_p": None if rng.random() < 0.5 else float(rng.uniform(0.05, 0.99)),
                               "min_p": None if rng.random() < 0.5 else float(rng.uniform(0.01, 1.0))}))
    ties = [1.0, 1.0, 1.0, 1.0, 0.5, 2.0, 1.0, 1.0]  # a small vocabulary: torch's sort keeps ties in order
    for settings in ({"top_k": 1}, {"top_k": 2}, {"top_k": 3}, {"top_p": 0.3}, {"top_p": 0.5}, {"top_p": 0.6},
                     {"top_p": 0.75}, {"top_p": 0.9}, {"min_p": 1.0}, {"min_p": 0.5}, {"temperature": 0.0},
                     {"temperature": 1e-30}, {"temperature": 3.0, "top_k": 3, "top_p": 0.6}):
        cases.append((ties, {"temperature": 1.0, "top_k": None, "top_p": None, "min_p": None, **settings}))
    got = live.page.evaluate("""cases => cases.map(([l, s]) => {
        const r = window.RedthreadSampling.probabilities(l, s); return [Array.from(r.pSample), r.kept]; })""", cases)
    for (logits, settings), (ps, kept) in zip(cases, got):
        want = processors(logits, settings)
        assert np.abs(np.array(ps) - want.numpy()).max() <= 1e-6, (logits, settings)
        assert kept == int((want > 0).sum())
    long_ties = (np.arange(120) % 3).astype(np.float32).tolist()  # 40 tokens each at 0, 1 and 2
    for p in (0.3, 0.5, 0.8):
        settings = {"temperature": 1.0, "top_k": None, "top_p": p, "min_p": None}
        ps, kept = live.page.evaluate("([l, s]) => { const r = window.RedthreadSampling.probabilities(l, s); "
                                      "return [Array.from(r.pSample), r.kept]; }", [long_ties, settings])
        want = processors(long_ties, settings).numpy()
        assert kept == int((want > 0).sum()) and np.allclose(sorted(ps), sorted(want), atol=1e-6), p


def test_greedy_generation_is_redthreads_greedy_decoding(live, runs):
    """Temperature 0, 20 tokens from a 10-token prompt in a 16-token window: the window slides as the sampler's."""
    for name in ("transformer-sinusoidal", "lstm", "mlp"):
        model, tok = runs[name]
        live.select(name)
        live.type("to be, or ")
        live.settings(temperature=0.0)
        live.page.click("#generate")
        live.idle()
        got = live.page.evaluate("() => window.redthreadPage.last.ids")
        prompt = torch.tensor([tok.encode("to be, or ")])
        want = rt.generate(model, prompt, 20, temperature=0)[0].tolist()
        assert got == want, name
        assert live.page.input_value("#text") == tok.decode(want)
    live.settings()
    live.assert_clean()


def test_seeded_sampling_repeats_and_its_draws_follow_the_exact_distribution(live):
    live.select("transformer-rope")
    live.settings(temperature=1.0)
    texts = {}
    for seed in (5, 6, 5):
        live.set("seed", seed)
        live.type("to be")  # typing restarts the generator from the seed
        live.page.click("#generate")
        live.idle()
        texts.setdefault(seed, []).append(live.page.input_value("#text"))
    assert texts[5][0] == texts[5][1] and texts[5][0] != texts[6][0] and len(texts[5][0]) == len("to be") + 20
    # one token at a time: the same as the generate button's
    live.set("seed", 5)
    live.type("to be")
    for _ in range(20):
        live.page.click("#sample-one")
        live.idle()
    assert live.page.input_value("#text") == texts[5][0]

    live.type(LONG)
    live.settings(temperature=1.5, top_k=6)
    logits = live.page.evaluate("() => Array.from(window.redthreadPage.last.logits)")
    exact = processors(logits, {"temperature": 1.5, "top_k": 6, "top_p": None, "min_p": None}).numpy()
    n = 20_000
    counts = np.array(live.page.evaluate("""n => { const S = window.RedthreadSampling, p = window.redthreadPage.dist.pSample;
        const rng = new S.Rng(1234), counts = new Array(p.length).fill(0);
        for (let i = 0; i < n; i++) counts[S.draw(p, rng)] += 1; return counts; }""", n))
    tv = 0.5 * np.abs(counts / n - exact).sum()
    # E[TV] <= 1/2 sum sqrt(p (1 - p) / n): about 0.007 here; three times it
    bound = 3 * 0.5 * np.sqrt(exact * (1 - exact) / n).sum()
    print(f"total variation of {n} draws: {tv:.4f} (bound {bound:.4f})")
    assert tv <= bound and (counts[exact == 0] == 0).all() and (counts[exact > 0] > 0).all()
    live.settings()
    live.assert_clean()


def test_the_generator_is_xoshiro128_starstar_seeded_by_splitmix32(live):
    """The documented generator, written out here in Python: the same 32-bit outputs and uniforms."""
    def splitmix32(state):
        state = (state + 0x9E3779B9) & 0xFFFFFFFF
        z = state
        z = ((z ^ (z >> 16)) * 0x85EBCA6B) & 0xFFFFFFFF
        z = ((z ^ (z >> 13)) * 0xC2B2AE35) & 0xFFFFFFFF
        return state, z ^ (z >> 16)

    def rotl(x, k):
        return ((x << k) | (x >> (32 - k))) & 0xFFFFFFFF

    def outputs(seed, n):
        a, b = seed & 0xFFFFFFFF, (seed >> 32) ^ 0x6A09E667
        s = [0] * 4
        a, s[0] = splitmix32(a)
        a, s[1] = splitmix32(a)
        b, s[2] = splitmix32(b)
        b, s[3] = splitmix32(b)
        out = []
        for _ in range(n):
            out.append((rotl((s[1] * 5) & 0xFFFFFFFF, 7) * 9) & 0xFFFFFFFF)
            t = (s[1] << 9) & 0xFFFFFFFF
            s[2] ^= s[0]
            s[3] ^= s[1]
            s[1] ^= s[2]
            s[0] ^= s[3]
            s[2] ^= t
            s[3] = rotl(s[3], 11)
        return out

    for seed in (0, 1, 5, 2**32 + 7, 2**53 - 1):
        got = live.page.evaluate("""seed => { const r = new window.RedthreadSampling.Rng(seed);
            const a = []; for (let i = 0; i < 8; i++) a.push(r.next32());
            const r2 = new window.RedthreadSampling.Rng(seed); const u = [r2.uniform(), r2.uniform()]; return [a, u]; }""", seed)
        want = outputs(seed, 8)
        assert got[0] == want, seed
        assert got[1] == [((want[0] >> 5) * 2**26 + (want[1] >> 6)) / 2**53, ((want[2] >> 5) * 2**26 + (want[3] >> 6)) / 2**53]


# --- one forward pass, explained --------------------------------------------------------------------------------


def walk_expected(model, out, t, layer, head) -> dict[str, np.ndarray]:
    """What each data-what of the walk-through must hold: the graph's outputs at the position (and head), and the
    numbers it computes by hand."""
    expected = {"graph:logits": out["logits"][0, t], "js:probs": torch.tensor(out["logits"][0, t]).softmax(-1).numpy()}
    if isinstance(model, rt.TransformerLM):
        b = f"blocks.{layer}"
        q, k = out[f"{b}.self_attn.q"][0, head, t], out[f"{b}.self_attn.k"][0, head, : t + 1]
        stream = "embed" if layer == 0 else f"blocks.{layer - 1}.ffn_res"
        expected |= {
            "graph:embed.tok_emb": out["embed.tok_emb"][0, t], "graph:embed": out["embed"][0, t],
            "js:embed": out["embed"][0, t], f"graph:{stream}": out[stream][0, t],
            "js:ln1": out[f"{b}.self_attn.input"][0, t], f"graph:{b}.self_attn.input": out[f"{b}.self_attn.input"][0, t],
            f"graph:{b}.self_attn.q": q, "js:qk": k @ q,
            "js:scores": out[f"{b}.self_attn.scores"][0, head, t, : t + 1],
            f"graph:{b}.self_attn.scores": out[f"{b}.self_attn.scores"][0, head, t, : t + 1],
            "js:weights": out[f"{b}.self_attn.weights"][0, head, t, : t + 1],
            f"graph:{b}.self_attn.weights": out[f"{b}.self_attn.weights"][0, head, t, : t + 1],
            "js:heads": out[f"{b}.self_attn.heads"][0, head, t], f"graph:{b}.self_attn.heads": out[f"{b}.self_attn.heads"][0, head, t],
            f"graph:{b}.self_attn.output": out[f"{b}.self_attn.output"][0, t],
            "js:attn_res": out[f"{b}.self_attn_res"][0, t], f"graph:{b}.self_attn_res": out[f"{b}.self_attn_res"][0, t],
            "js:ln2": out[f"{b}.ffn.input"][0, t], f"graph:{b}.ffn.input": out[f"{b}.ffn.input"][0, t],
            f"graph:{b}.ffn.hidden": out[f"{b}.ffn.hidden"][0, t], f"graph:{b}.ffn.output": out[f"{b}.ffn.output"][0, t],
            "js:ffn_res": out[f"{b}.ffn_res"][0, t], f"graph:{b}.ffn_res": out[f"{b}.ffn_res"][0, t],
            "js:norm_f": out["norm_f"][0, t], "graph:norm_f": out["norm_f"][0, t],
        }
        if "embed.pos_emb" in out:
            expected["graph:embed.pos_emb"] = out["embed.pos_emb"][t]
    for name in out:
        if name == "hidden" or name.startswith("cells."):
            expected[f"graph:{name}"] = out[name][0, t]
    return expected


@pytest.mark.parametrize("name, t, layer, head", [
    ("transformer-sinusoidal", 5, 1, 1), ("transformer-learned", 0, 0, 0), ("transformer-variants", 11, 1, 0),
    ("transformer-rope", 15, 0, 1), ("transformer-none", 8, 1, 0), ("transformer-gpt2", 9, 2, 3), ("bigram", 3, 0, 0),
    ("mlp", 2, 0, 0), ("rnn", 9, 0, 0), ("lstm", 4, 0, 0), ("gru", 7, 0, 0),
])
def test_the_walk_through_shows_the_models_own_numbers(live, runs, name, t, layer, head):
    model, _ = runs[name]
    live.select(name)
    live.type(LONG)
    live.view("walk")
    live.page.click(f"#view-walk .walk-tokens button[data-position='{t}']")
    if isinstance(model, rt.TransformerLM):
        live.page.select_option("#walk-layer", str(layer))
        live.page.select_option("#walk-head", str(head))
    root = live.page.locator("#view-walk")
    assert root.get_attribute("data-position") == str(t) and root.get_attribute("data-rung") == runs[name][0].__class__.__name__ \
        .replace("TransformerLM", "transformer").replace("BigramLM", "bigram").replace("MLPLM", "mlp").replace("RecurrentLM", name)
    if isinstance(model, rt.TransformerLM):
        assert (root.get_attribute("data-layer"), root.get_attribute("data-head")) == (str(layer), str(head))
    got = live.dump()
    expected = walk_expected(model, torch_outputs(model, got["window"]), t, layer, head)
    vectors = live.page.eval_on_selector_all("#view-walk .vec", VECTORS)
    shown = {what for what, _, _ in vectors}
    # what may be absent: the sum of token and position without positions; LayerNorm's input with post-norm (attention
    # and the FFN read the stream itself; the LayerNorm is applied after the residual sum, shown there)
    optional = {"js:embed"} if "graph:embed.pos_emb" not in expected else set()
    if isinstance(model, rt.TransformerLM) and model.cfg.norm == "post":
        optional |= {"js:ln1", "js:ln2", "js:norm_f", "graph:norm_f", f"graph:blocks.{layer}.self_attn.input",
                     f"graph:blocks.{layer}.ffn.input"}
    assert shown <= set(expected) and shown >= set(expected) - optional, (set(expected) - optional - shown, shown - set(expected))
    for what, values, cells in vectors:
        assert max_diff(values, expected[what]) <= TOL, what
        for cell, value in zip(cells, values):  # the numbers drawn are these, to 3 decimals
            assert abs(float(cell.replace("−∞", "-inf")) - value) <= 5e-4 + 1e-9 or (cell == "−∞" and value == -math.inf)
    checks = live.page.eval_on_selector_all("#view-walk .check", "els => els.map(e => +e.dataset.diff)")
    assert (len(checks) >= 5) == isinstance(model, rt.TransformerLM) and max(checks, default=0) <= TOL
    if name == "transformer-rope":
        assert "rotated" in live.page.text_content("#walk-embedding")
    live.assert_clean()


# --- the explorer and the runs side by side ---------------------------------------------------------------------


def test_the_explorer_draws_the_in_browser_models_attention(live, runs):
    model, tok = runs["transformer-sinusoidal"]
    live.select("transformer-sinusoidal")
    live.type(SHORT)
    live.view("explorer")
    ids = tok.encode(SHORT)
    want = torch_outputs(model, ids)
    assert live.page.locator("#thumbs canvas").count() == 2 * 2
    # the head view on show (layer 0, head 0): one line per pair weighing 0.01 or more, its opacity the weight
    weights = want["blocks.0.self_attn.weights"][0, 0]
    drawn = live.page.eval_on_selector_all("#head-svg #lines-all line", "els => els.map(e => +e.getAttribute('stroke-opacity'))")
    assert sorted(drawn) == pytest.approx(sorted(round(float(w), 3) for w in weights.ravel() if w >= 0.01), abs=1e-3)
    # the neuron view of layer 1, head 1: its softmax recomputed from the page's q and k is PyTorch's row
    live.page.select_option("#layer-select", "1")
    live.page.select_option("#head-select", "1")
    live.page.click("#neuron-message button")  # q and k of layer 1, from the in-browser model
    recomputed = [float(x) for x in live.page.get_attribute("#neuron-table", "data-weights").split(",")]
    assert max_diff(recomputed, want["blocks.1.self_attn.weights"][0, 1, len(ids) - 1]) <= 1e-6 + 5e-7
    assert live.page.text_content("#explorer #title") == SHORT
    live.select("lstm")
    assert live.page.is_visible("#explorer-none") and live.page.is_hidden("#explorer")
    assert "no attention" in live.page.text_content("#explorer-none")
    live.view("walk")
    live.assert_clean()


def test_the_runs_side_by_side_give_each_models_distribution(live, runs):
    live.select("transformer-sinusoidal")
    live.type(SHORT)
    live.view("compare")
    columns = live.page.eval_on_selector_all("#compare-columns .rung", """els => els.map(e => [e.dataset.run,
        [...e.querySelectorAll('.cand')].map(c => [+c.dataset.id, +c.dataset.p])])""")
    readers = [name for name, (_, tok) in runs.items() if set(SHORT) <= set(tok.decode(list(range(tok.vocab_size))))
               or tok.kind == "bpe"]
    assert [name for name, _ in columns] == readers and "tang" not in readers
    for name, rows in columns:
        model, tok = runs[name]
        ids = tok.encode(SHORT)[-BLOCK:]
        with torch.no_grad():
            p = model(torch.tensor([ids]))[0, -1].softmax(-1).numpy()
        order = np.argsort(-p, kind="stable")[:8]
        assert [i for i, _ in rows] == order.tolist() or np.allclose(sorted(p[[i for i, _ in rows]]), sorted(p[order]), atol=1e-6)
        assert max(abs(q - p[i]) for i, q in rows) <= TOL, name
    unreadable = live.page.eval_on_selector_all("#compare-unreadable li", "els => els.map(e => e.dataset.run)")
    assert unreadable == ["tang"] and "never seen" in live.page.text_content("#compare-unreadable")
    # a Chinese text: the Chinese model and the BPE read it, the others cannot
    live.type(ZH[:5])
    names = live.page.eval_on_selector_all("#compare-columns .rung", "els => els.map(e => e.dataset.run)")
    assert names == ["transformer-bpe", "tang"]
    live.view("walk")
    live.assert_clean()


# --- the language toggle, the page opened from a file ---------------------------------------------------------

# identifiers the Chinese page may show as they are: maths, model names, the runtime, the language toggle's own name
ALLOWED = {"q", "k", "v", "softmax", "logits", "logit", "top", "min", "MLP", "RNN", "LSTM", "GRU", "Transformer",
           "ONNX", "Runtime", "Web", "WebAssembly", "redthread", "GELU", "ReLU", "RoPE", "tanh", "exp", "act",
           "English", "MB", "generate", "export", "format", "onnx", "Esc"}
VISIBLE_TEXT = """() => {
    const out = [];
    const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
        const el = n.parentElement;
        if (!el || !n.textContent.trim()) continue;
        // model text and names: tokens, the text box, run names; and what is not drawn: scripts, tooltips, selects
        if (el.closest('.tok, [translate="no"], textarea, script, style, title, select, .run-name')) continue;
        if (!el.getClientRects().length || getComputedStyle(el).visibility === 'hidden') continue;
        out.push(n.textContent.trim());
    }
    return out;
}"""


def english_words(texts):
    import re

    return sorted({w for t in texts for w in re.findall(r"[A-Za-z]+", t) if len(w) > 1 and w not in ALLOWED})


NUMBERS_SHOWN = """() => {
    const walk = document.getElementById('view-walk'), stats = document.getElementById('next-stats');
    return {
        candidates: [...document.querySelectorAll('#candidates .cand')].map(e => [e.dataset.id, e.dataset.p,
            e.dataset.pSample, e.querySelector('.num.p').textContent, e.classList.contains('cut') ? null
            : e.querySelector('.num.ps').textContent]),
        entropy: [stats.dataset.entropy, stats.dataset.entropySample], stats: stats.textContent,
        walk: [walk.dataset.position, walk.dataset.layer, walk.dataset.head],
        vectors: [...walk.querySelectorAll('.vec')].map(e => [e.dataset.what, e.dataset.values,
            [...e.querySelectorAll('.cell')].map(c => c.textContent)]),
        checks: [...walk.querySelectorAll('.check')].map(e => e.dataset.diff),
    };
}"""


def numbers_in(text: str) -> list[str]:
    """The numbers a text spells (the words around them are the language's)."""
    import re

    return re.findall(r"\d[\d,]*(?:\.\d+)?", text)


def test_the_language_toggle_changes_the_words_and_not_the_numbers(browser, served, runs):
    """The distribution (its candidates' probabilities, its entropies) and the walk-through's values, read before and
    after 中文 and back: the same numbers, and they are PyTorch's."""
    page = LivePage(browser, served[0])
    p = page.page
    page.select("transformer-sinusoidal")
    p.click("#lang-en")
    page.settings(temperature=0.8, top_k=5)  # a cut, so that the sampled-from numbers differ from the model's
    page.type(LONG)
    page.view("walk")
    p.click("#view-walk .walk-tokens button[data-position='5']")
    p.select_option("#walk-layer", "1")
    p.select_option("#walk-head", "1")
    page.idle()
    english = p.evaluate(NUMBERS_SHOWN)
    p.click("#lang-zh")
    page.idle()
    assert p.get_attribute("html", "lang") == "zh-CN"
    chinese = p.evaluate(NUMBERS_SHOWN)
    assert chinese["stats"] != english["stats"]  # the words did change
    assert numbers_in(chinese.pop("stats")) == numbers_in(english.pop("stats"))
    assert chinese == english
    assert english["walk"] == ["5", "1", "1"] and len(english["vectors"]) > 10 and len(english["candidates"]) >= 5
    p.click("#lang-en")
    page.idle()
    again = p.evaluate(NUMBERS_SHOWN)
    again.pop("stats")
    assert again == english
    model, tok = runs["transformer-sinusoidal"]
    with torch.no_grad():
        probs = model(torch.tensor([tok.encode(LONG)[-BLOCK:]]))[0, -1].softmax(-1).double()
    entropy = float(-(probs * probs.clamp_min(1e-300).log()).sum())
    assert abs(float(english["entropy"][0]) - entropy) <= TOL
    assert max(abs(float(q) - float(probs[int(i)])) for i, q, *_ in english["candidates"]) <= TOL
    page.settings()
    page.assert_clean()
    page.context.close()


def test_the_language_toggle_switches_every_label(browser, served):
    page = LivePage(browser, served[0])
    p = page.page
    page.select("transformer-sinusoidal")
    page.view("explorer")  # drawn once, so that its fixed words are written by explorer.js too
    p.click("#lang-en")
    english = p.eval_on_selector_all("[data-say]", "els => els.map(e => [e.dataset.say, e.textContent])")
    p.click("#lang-zh")
    assert p.get_attribute("html", "lang") == "zh-CN"
    assert p.get_attribute("#lang-zh", "aria-pressed") == "true"
    chinese = p.eval_on_selector_all("[data-say]", "els => els.map(e => [e.dataset.say, e.textContent])")
    same = [k for (k, a), (_, b) in zip(english, chinese) if a == b and k not in ("topK", "topP", "minP")]
    assert same == [], same  # every fixed label has its Chinese
    leftovers = {}
    for name, text in (("transformer-sinusoidal", LONG), ("lstm", LONG), ("tang", ZH[:8])):
        page.select(name)
        page.type(text)
        for view in ("walk", "explorer", "compare", "about"):
            page.view(view)
            if view == "explorer" and name == "transformer-sinusoidal":
                assert "全部（平均）" in p.eval_on_selector_all("#head-select option", "os => os.map(o => o.textContent)")
                p.select_option("#layer-select", "1")
                assert "只有层 0" in p.text_content("#neuron-message")
                p.click("#neuron-message button")
            found = english_words(p.evaluate(VISIBLE_TEXT))
            if found:
                leftovers[(name, view)] = found
    assert leftovers == {}, leftovers  # no English prose in Chinese
    # the Chinese model's tokens keep Chinese glyphs whatever the page's language
    page.select("tang")
    page.view("walk")
    assert set(p.eval_on_selector_all("#view-walk .tok", "els => els.map(e => e.lang)")) == {"zh-CN"}
    p.click("#lang-en")
    assert p.get_attribute("html", "lang") == "en"
    page.select("transformer-sinusoidal")
    page.type(LONG)
    import re

    for view in ("walk", "explorer", "compare", "about"):
        page.view(view)
        han = [t for t in p.evaluate(VISIBLE_TEXT) if re.search(r"[\u3400-\u9fff]", t) and t != "中文"]
        assert han == [], (view, han)
    page.assert_clean()
    page.context.close()


def test_opened_from_a_file_the_page_says_to_serve_it(browser, served):
    folder = served[1]
    url = (folder / "index.html").as_uri()
    page = LivePage(browser, folder.as_uri() + "/", url=url)
    assert page.page.get_attribute("body", "data-ready") == "file"
    message = page.page.text_content("#page-message")
    assert "file://" in message and "python -m http.server" in message
    page.assert_clean()
    page.context.close()


def test_the_address_chooses_the_runs_the_view_the_text_and_the_language(browser, served, runs):
    """What the docs site's chapters embed: ?runs=&view=&text=&lang= open the page on those runs (only those, in that
    order), that view and that text, in that language; a run the folder lacks is a message naming what it has."""
    base = served[0]
    url = base + "index.html?" + urlencode({"runs": "gru,mlp", "view": "compare", "text": SHORT, "lang": "zh"},
                                           quote_via=quote)
    page = LivePage(browser, base, url=url)
    assert page.page.get_attribute("body", "data-ready") == "1"
    page.idle()
    assert page.page.evaluate("() => window.redthreadPage.runs") == ["gru", "mlp"]
    assert page.page.input_value("#text") == SHORT
    assert page.page.get_attribute("html", "lang").startswith("zh")
    assert page.page.is_visible("#view-compare") and not page.page.is_visible("#view-walk")
    columns = page.page.eval_on_selector_all("#compare-columns .rung", "els => els.map(e => e.dataset.run)")
    assert columns == ["gru", "mlp"]
    model, tok = runs["gru"]
    with torch.no_grad():
        p = model(torch.tensor([tok.encode(SHORT)[-BLOCK:]]))[0, -1].softmax(-1).numpy()
    shown = page.page.eval_on_selector_all("#compare-columns .rung:first-child .cand", "els => els.map(c => [+c.dataset.id, +c.dataset.p])")
    assert shown and max(abs(q - p[i]) for i, q in shown) <= TOL
    page.assert_clean()
    page.context.close()
    wrong = LivePage(browser, base, url=base + "index.html?runs=nonesuch")
    assert wrong.page.get_attribute("body", "data-ready") == "error"
    assert "nonesuch" in wrong.page.text_content("#page-message") and "gru" in wrong.page.text_content("#page-message")
    wrong.context.close()
