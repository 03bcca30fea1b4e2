"use strict";
// The live page (viz/page.py writes its folder): language-model runs exported to ONNX, run in this tab by ONNX
// Runtime Web (single-threaded WebAssembly), with no Python and no server.
//   the text -> each run's tokenizer (tokenizer.js) -> the graph (model.onnx: the logits and, for a Transformer,
//   every intermediate) -> P(next token | text) and what the sampling settings make of it (sampling.js), drawn by
//   next_token.js, the script the web app and the notebook draw it with; one forward pass explained
//   (walkthrough.js); the attention explorer (explorer.js, the offline explorer's and the web app's) fed from the
//   graph's q, k and softmax weights; every run side by side on the same text; every word in English or Chinese
//   (words.js), the html element's lang set to match (so Chinese characters take Chinese glyphs).
// Generation appends tokens to the ids (not to the text, which a BPE would re-cut) and slides the window as
// redthread.generate does (generate/sampler.py, window_start): a prompt keeps its last W tokens; when the
// generated text fills the window, it restarts from the last W // 2.
// window.redthreadPage holds what tests and benchmarks read: `last` (the latest forward pass of the run on
// show: its ids, tokens and every output), `dist` (its next-token distribution after the settings), the runs,
// the timings, and `idle()` (a promise that settles when nothing is pending); body[data-busy] counts the work
// in flight, body[data-ready] is 1 once every run is loaded.
// The address may choose what the page opens on (the docs site embeds one folder in several chapters this way):
//   ?runs=NAME,NAME   the runs to load, in this order (default: every run of the folder; the first is on show)
//   &view=V           the view open first: walk, explorer, compare or about (default walk)
//   &text=TEXT        the text to start from (default: the first of DEFAULT_TEXTS that the first run can read)
//   &lang=en|zh       the language (default: the reader's last choice, else the browser's)
// A run or a view that the page does not have is a message naming what it has, and nothing is loaded
// (body[data-ready] is "error").

(() => {

const manifest = JSON.parse(document.getElementById("manifest").textContent);
const WORDS = window.RedthreadPageWords, S = window.RedthreadSampling;
const $ = (id) => document.getElementById(id);
const CANDIDATES = 12;          // rows of the next-token panel
const COMPARE_CANDIDATES = 8;   // rows of each column side by side
const GENERATE = 20;            // tokens drawn by the generate button
const DEFAULT_TEXTS = ["To be, or not to be", "to be or not to be", "the ", "床前明月光", "Emma"];
const VIEWS = ["walk", "explorer", "compare", "about"];

const state = {
  lang: "en", runs: [], current: 0, text: "", ids: null, start: 0,
  t: null, layer: 0, head: 0, view: "walk", rng: null, busy: 0, version: 0, chain: Promise.resolve(),
  result: null, dist: null, compare: new Map(), explorerLayer: null, timings: {},
};
const started = performance.now();

function words() { return WORDS[state.lang]; }

// ---- work in flight: every change bumps the version; a stale update returns at once -----------------------

function busy(delta) {
  state.busy += delta;
  document.body.dataset.busy = String(state.busy);
}

function schedule(work) {  // run work() after what is queued; body[data-busy] counts it from now
  busy(1);
  const version = ++state.version;
  state.chain = state.chain.then(() => work(version)).catch(showError).finally(() => busy(-1));
  return state.chain;
}

function idle() { return state.chain.then(() => (state.busy > 0 ? idle() : undefined)); }

function showError(e) {
  console.warn(e);  // a model or text the page cannot run is a message on the page, not a console error
  message(e && e.message ? e.message : String(e));
}

function message(text, ...names) {
  const m = $("page-message");
  verbatim(m, text || "", names);
  m.hidden = !text;
}

// el's text, with each of `names` in it (run names, the user's text, characters it holds) in a span that keeps it
// as it is: translate="no", and not prose of the page's language.
function verbatim(el, text, names) {
  const wanted = [...new Set(names.filter(Boolean))].sort((a, b) => b.length - a.length);
  if (!wanted.length) { el.textContent = text; return el; }
  const rx = new RegExp(`(${wanted.map((n) => n.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join("|")})`);
  el.replaceChildren(...text.split(rx).filter((part) => part !== "").map((part) => {
    if (!wanted.includes(part)) return document.createTextNode(part);
    const span = document.createElement("span");
    span.className = "verbatim";
    span.translate = false;
    span.textContent = part;
    return span;
  }));
  return el;
}

// ---- the runs: each run's description, walk-through numbers, tokenizer and ONNX Runtime session -----------

async function loadRun(entry) {
  const t0 = performance.now();
  const get = async (name) => {
    const answer = await fetch(`${entry.folder}/${name}`);
    if (!answer.ok) throw new Error(`${entry.folder}/${name}: HTTP ${answer.status}`);
    return answer;
  };
  const [meta, walk, bytes] = await Promise.all([
    get("model.json").then((a) => a.json()), get("walk.json").then((a) => a.json()),
    get("model.onnx").then((a) => a.arrayBuffer())]);
  const session = await ort.InferenceSession.create(new Uint8Array(bytes), { executionProviders: ["wasm"] });
  return { entry, meta, walk, tok: window.RedthreadTokenizer.load(meta.tokenizer), session, queue: Promise.resolve(),
           cjk: /[\u3400-\u9fff]/.test((meta.tokenizer.tokens || []).join("")), loadMs: performance.now() - t0 };
}

function run() { return state.runs[state.current]; }

// One forward pass of `r` on ids (one run at a time per session): name -> {dims, data: Float32Array}.
async function forward(r, ids, names) {
  const input = new ort.Tensor("int64", BigInt64Array.from(ids, (i) => BigInt(i)), [1, ids.length]);
  const job = r.queue.then(() => (names ? r.session.run({ idx: input }, names) : r.session.run({ idx: input })));
  r.queue = job.catch(() => undefined);
  const out = await job;
  const plain = {};
  for (const [name, tensor] of Object.entries(out)) plain[name] = { dims: tensor.dims.map(Number), data: tensor.data };
  return plain;
}

function lastRow(logits) {  // (1, T, V) -> the next token's logits, at the last position
  const [, T, V] = logits.dims;
  return logits.data.subarray((T - 1) * V, T * V);
}

function windowStart(length, start, W) {  // generate/sampler.py, window_start
  if (length - start <= W) return start;
  return length - Math.max(1, Math.floor(W / 2));
}

// The ids the run on show reads: generated ids as they are, else the text encoded; the window's start.
function context(r) {
  const W = r.meta.input.max_length;
  if (state.ids) return { ids: state.ids, unknown: [], start: windowStart(state.ids.length, state.start, W) };
  const e = r.tok.encode(state.text);
  return { ids: e.ids, unknown: e.unknown, start: Math.max(0, e.ids.length - W) };
}

// ---- settings ----------------------------------------------------------------------------------------------

function settings() {
  const k = $("top-k").value.trim();
  const p = +$("top-p").value, m = +$("min-p").value;
  return { temperature: +$("temperature").value, top_k: k === "" ? null : Math.max(1, Math.floor(+k)),
           top_p: p >= 1 ? null : p, min_p: m > 0 ? m : null };
}

function showSettings() {
  const s = settings(), w = words();
  $("temperature-value").textContent = s.temperature === 0 ? w.greedy : s.temperature.toFixed(2);
  $("top-p-value").textContent = s.top_p === null ? w.off : s.top_p.toFixed(2);
  $("min-p-value").textContent = s.min_p === null ? w.off : s.min_p.toFixed(2);
}

function seed() {
  const v = Math.floor(+$("seed").value);
  return Number.isSafeInteger(v) && v >= 0 ? v : 0;
}

function restartRng() {
  state.rng = new S.Rng(seed());
  $("sample-note").textContent = words().seedNote(seed());
}

// ---- the run on show: one forward pass, then every view drawn from it --------------------------------------

async function update(version) {
  if (version !== state.version) return;
  const r = run(), w = words();
  const c = context(r);
  if (c.unknown.length || c.ids.length === 0) {  // the run on show cannot read the text: the others may
    state.result = null;
    const chars = c.unknown.map((ch) => JSON.stringify(ch)).join(" ");
    if (c.unknown.length) message(w.unknownChars(r.entry.name, chars), r.entry.name, chars);
    else message(w.typeSomething);
  } else {
    message("");
    const ids = c.ids.slice(c.start);
    const outputs = await forward(r, ids);
    if (version !== state.version) return;
    state.start = c.start;
    const labels = ids.map((i) => r.tok.label(i));
    state.result = { run: r.entry.name, text: state.text, ids: c.ids, start: c.start, window: ids, labels, outputs,
                     logits: lastRow(outputs.logits) };
    if (state.t === null || state.t >= ids.length) state.t = ids.length - 1;
  }
  drawAll();
  if (state.view === "compare") await compareAll(version);
}

function drawAll() {
  drawContext();
  drawNext();
  drawView();
  publish();
}

function drawContext() {
  const r = run(), w = words(), res = state.result;
  $("context-note").textContent = res ? w.contextNote(res.window.length, res.ids.length, r.meta.input.max_length) : "";
}

function drawNext() {
  const res = state.result;
  if (!res) {
    state.dist = null;
    $("next-stats").textContent = "";
    $("candidates").replaceChildren();
    return;
  }
  const r = run();
  state.dist = S.distribution(res.logits, settings(), (i) => r.tok.label(i), CANDIDATES);
  state.dist.tokens = res.labels;
  window.RedthreadNextToken.render($("next-panel"), state.dist, {
    words: words().nextToken,
    // a row appends its token, by id (a BPE token's text may hold part of a character)
    onAppend: (token) => {
      const c = state.dist.candidates.find((x) => x.token === token);
      if (c) schedule(() => append(c.id));
    },
  });
  for (const row of $("candidates").querySelectorAll(".tok")) row.setAttribute("translate", "no");
}

function drawView() {
  for (const b of document.querySelectorAll("#views button")) b.setAttribute("aria-selected", String(b.dataset.view === state.view));
  for (const v of VIEWS) $(`view-${v}`).hidden = v !== state.view;
  if (state.view === "walk") drawWalk();
  else if (state.view === "explorer") drawExplorer();
  else if (state.view === "compare") drawCompare();
  else drawAbout();
}

function drawWalk() {
  const res = state.result, root = $("view-walk");
  if (!res) return root.replaceChildren();
  const r = run();
  if (r.meta.rung === "transformer") {
    state.layer = Math.min(state.layer, r.meta.config.n_layer - 1);
    state.head = Math.min(state.head, r.meta.config.n_head - 1);
  }
  window.RedthreadWalk.render(root, {
    run: r, labels: res.labels, ids: res.window, outputs: res.outputs, t: state.t, layer: state.layer, head: state.head,
    words: words().walk, shown: window.RedthreadExplorer.shown, label: (i) => r.tok.label(i),
    onChange: (change) => {
      if (change.t !== undefined) state.t = change.t;
      if (change.layer !== undefined) state.layer = change.layer;
      if (change.head !== undefined) state.head = change.head;
      drawWalk();
    },
  });
  setTokenLang(root);
}

// The explorer's payload (viz/explorer.py's contract) from the graph: every layer's softmax weights, and the
// queries and keys of one layer for the neuron view.
function explorerPayload(layer) {
  const res = state.result, r = run(), cfg = r.meta.config, T = res.window.length;
  const L = cfg.n_layer, H = cfg.n_head, D = cfg.d_model / cfg.n_head;
  const nested = (name, inner) => {
    const data = res.outputs[name].data, out = [];
    for (let h = 0; h < H; h++) {
      const rows = [];
      for (let t = 0; t < T; t++) rows.push(Array.from(data.subarray((h * T + t) * inner, (h * T + t + 1) * inner)));
      out.push(rows);
    }
    return out;
  };
  const weights = [];
  for (let l = 0; l < L; l++) weights.push(nested(`blocks.${l}.self_attn.weights`, T));
  return {
    title: res.text.trim() || res.labels.join(""), model: words().explorerModel(r.entry.name, r.meta), notice: null,
    tabs: [{ kind: "decoder", queries: res.labels, keys: res.labels, weights,
             vectors: { layer, scale: r.meta.attention.scale, q: nested(`blocks.${layer}.self_attn.q`, D),
                        k: nested(`blocks.${layer}.self_attn.k`, D) } }],
  };
}

function drawExplorer() {
  const res = state.result, r = run(), none = $("explorer-none");
  const attends = res && r.meta.rung === "transformer";
  none.hidden = attends;
  $("explorer").hidden = !attends;
  if (!res) return;
  if (!attends) { verbatim(none, words().noAttention(r.entry.name, words().rungName(r.meta.rung)), [r.entry.name]); return; }
  const L = r.meta.config.n_layer;
  if (state.explorerLayer === null || state.explorerLayer >= L) state.explorerLayer = 0;  // the layer on show first
  window.RedthreadExplorer.render($("explorer"), explorerPayload(state.explorerLayer), {
    words: words().explorer,
    vectorsFor: (layer) => { state.explorerLayer = layer; drawExplorer(); },
  });
  const model = $("explorer").querySelector("#model");
  verbatim(model, model.textContent, [r.entry.name]);
  $("explorer").querySelector("#title").translate = false;  // the text itself
  setTokenLang($("explorer"));
}

// ---- side by side: every run's P(next token) for the same text ---------------------------------------------

async function compareAll(version) {
  if (state.compare.size > 1000) state.compare.clear();  // a distribution per run and text typed: keep it bounded
  for (const r of state.runs) {
    if (version !== state.version) return;
    const key = `${r.entry.name}\u0000${state.text}`;
    if (state.compare.has(key)) continue;
    const e = r.tok.encode(state.text);
    if (e.unknown.length || e.ids.length === 0) { state.compare.set(key, { unknown: e.unknown }); continue; }
    const ids = e.ids.slice(Math.max(0, e.ids.length - r.meta.input.max_length));
    const out = await forward(r, ids, ["logits"]);
    state.compare.set(key, { logits: lastRow(out.logits), tokens: ids.length });
  }
  if (version === state.version) drawCompare();
}

function drawCompare() {
  const w = words(), cols = [], unreadable = [];
  verbatim($("compare-text"), w.compareText(JSON.stringify(state.text)), [JSON.stringify(state.text)]);
  const s = settings();
  for (const r of state.runs) {
    const got = state.compare.get(`${r.entry.name}\u0000${state.text}`);
    if (!got) continue;
    if (!got.logits) {
      const li = document.createElement("li");
      li.dataset.run = r.entry.name;
      const chars = got.unknown.map((ch) => JSON.stringify(ch)).join(" ");
      verbatim(li, got.unknown.length ? w.cannotRead(r.entry.name, chars) : w.typeSomething, [r.entry.name, chars]);
      unreadable.push(li);
      continue;
    }
    const box = document.createElement("div");
    box.className = "rung";
    box.dataset.run = r.entry.name;
    const h3 = document.createElement("h3");
    const name = document.createElement("span");
    name.className = "run-name";
    name.translate = false;
    name.textContent = r.entry.name;
    h3.append(name, ` · ${w.rungName(r.meta.rung)}`);
    const info = document.createElement("p");
    info.className = "rung-info";
    info.textContent = w.rungInfo(r.entry.params.toLocaleString("en-US"), got.tokens);
    const panel = document.createElement("div");
    panel.innerHTML = '<p class="next-stats"></p><div class="candidates"></div>';
    const dist = S.distribution(got.logits, s, (i) => r.tok.label(i), COMPARE_CANDIDATES);
    dist.tokens = [];
    window.RedthreadNextToken.render(panel, dist, { words: w.nextToken });
    box.append(h3, info, panel);
    box.dataset.entropy = dist.entropy;
    cols.push(box);
  }
  $("compare-columns").replaceChildren(...cols);
  const list = document.createElement("ul");
  list.append(...unreadable);
  $("compare-unreadable").replaceChildren(...(unreadable.length ? [document.createTextNode(w.notCompared), list] : []));
  setTokenLang($("view-compare"));
}

function drawAbout() {
  const w = words(), table = $("about-runs");
  const head = document.createElement("tr");
  for (const c of w.aboutColumns) { const th = document.createElement("th"); th.textContent = c; head.append(th); }
  const rows = state.runs.map((r) => {
    const tr = document.createElement("tr");
    const cells = [r.entry.name, w.rungName(r.meta.rung), r.entry.params.toLocaleString("en-US"),
                   (r.entry.onnx_bytes / 1e6).toFixed(2), r.meta.input.max_length, r.loadMs.toFixed(0)];
    cells.forEach((c, i) => {
      const td = document.createElement("td");
      td.textContent = String(c);
      if (i === 0) { td.className = "run-name"; td.translate = false; }
      tr.append(td);
    });
    return tr;
  });
  table.replaceChildren(head, ...rows);
  $("about-runtime").textContent = w.aboutRuntime(manifest.runtime.version, manifest.redthread_version);
  const t = state.timings;
  $("about-timings").textContent = t.ready_ms === undefined ? "" : w.aboutTimings(t.ready_ms.toFixed(0),
    t.last_update_ms === undefined ? "—" : t.last_update_ms.toFixed(1));
}

// ---- sampling, token by token ------------------------------------------------------------------------------

async function sampleOne(version, refresh = true) {
  if (version !== undefined && version !== state.version) return false;
  if (!state.result || !state.dist) return false;
  if (!state.rng) restartRng();
  const next = state.dist.greedy ? S.argmax(state.dist.pSample) : S.draw(state.dist.pSample, state.rng);
  await append(next, refresh);
  return true;
}

async function append(id, refresh = true) {  // the context grows by one token: its ids, and the text they spell
  const res = state.result, r = run();
  if (!res) return;
  const ids = [...res.ids, id];
  state.ids = ids;
  state.start = res.start;
  state.text = r.tok.kind === "char" ? state.text + r.tok.label(id) : r.tok.decode(ids);
  $("text").value = state.text;
  state.t = null;
  if (refresh) await update(state.version);
}

async function generate(n, version) {
  for (let i = 0; i < n; i++) {
    if (version !== state.version) return;  // the text was edited meanwhile: stop
    const t0 = performance.now();
    if (!(await sampleOne(undefined, false))) return;
    // the next distribution: the logits only, until the last token (then every output, for the views)
    const r = run(), c = context(r), ids = c.ids.slice(c.start);
    if (i < n - 1) {
      const out = await forward(r, ids, ["logits"]);
      state.start = c.start;
      state.result = { ...state.result, text: state.text, ids: c.ids, start: c.start, window: ids,
                       labels: ids.map((j) => r.tok.label(j)), outputs: out, logits: lastRow(out.logits) };
      drawNext();
      drawContext();
      publish();
    } else {
      await update(state.version);
    }
    state.timings.last_token_ms = performance.now() - t0;
  }
}

// ---- the language ------------------------------------------------------------------------------------------

function setLang(lang) {
  state.lang = lang;
  const w = words();
  document.documentElement.lang = w.htmlLang;
  for (const el of document.querySelectorAll("[data-say]")) {
    if (el.closest("#explorer")) continue;  // the explorer writes its own, from words().explorer
    if (typeof w[el.dataset.say] === "string") el.textContent = w[el.dataset.say];
  }
  for (const el of document.querySelectorAll("[data-say-placeholder]")) el.placeholder = w[el.dataset.sayPlaceholder];
  for (const el of document.querySelectorAll("[data-say-label]")) {
    if (!el.closest("#explorer")) el.setAttribute("aria-label", w[el.dataset.sayLabel]);
  }
  for (const b of document.querySelectorAll("#lang-toggle button")) b.setAttribute("aria-pressed", String(b.dataset.lang === lang));
  document.title = `redthread · ${w.pageTitle}`;
  try { localStorage.setItem("redthread-page-lang", lang); } catch (e) { /* storage off: the choice lasts the visit */ }
  fillRuns();
  showSettings();
  if (state.rng) $("sample-note").textContent = w.seedNote(seed());
  if (state.runs.length) drawAll();
}

function setTokenLang(root) {  // model text keeps the glyphs of its own script, whatever the page's language
  const lang = run() && run().cjk ? "zh-CN" : null;
  for (const el of root.querySelectorAll(".tok")) {
    if (lang) el.setAttribute("lang", lang); else el.removeAttribute("lang");
    el.setAttribute("translate", "no");
  }
}

function fillRuns() {
  const select = $("run-select"), w = words();
  select.replaceChildren(...state.runs.map((r, i) => {
    const o = document.createElement("option");
    o.value = String(i);
    o.textContent = `${r.entry.name} · ${w.rungName(r.meta.rung)}`;
    return o;
  }));
  select.value = String(state.current);
  const r = run();
  $("run-info").textContent = r ? w.runInfo(w.rungName(r.meta.rung), r.entry.params.toLocaleString("en-US"),
    r.meta.input.max_length) : "";
}

// ---- the test and benchmark hook ---------------------------------------------------------------------------

function publish() {
  window.redthreadPage.last = state.result;
  window.redthreadPage.dist = state.dist;
  window.redthreadPage.timings = state.timings;
}

window.redthreadPage = {
  manifest, last: null, dist: null, timings: state.timings, idle,
  settings, words: WORDS, sampling: S,
  get lang() { return state.lang; },
  get runs() { return state.runs.map((r) => r.entry.name); },
  // for benchmarks: one next-token update of the run on show (the forward pass and the panel), its milliseconds
  async timeUpdate(text) {
    const t0 = performance.now();
    setText(text);
    await idle();
    return performance.now() - t0;
  },
  // for benchmarks: one forward pass of the run on show on the text's last window, every output or the logits only
  async timeForward(text, all = true) {
    const r = run(), ids = r.tok.encode(text).ids.slice(-r.meta.input.max_length);
    const t0 = performance.now();
    await forward(r, ids, all ? undefined : ["logits"]);
    return performance.now() - t0;
  },
  async generate(n) { await schedule((v) => generate(n, v)); },
};

// ---- wiring ------------------------------------------------------------------------------------------------

function setText(text) {
  state.text = text;
  $("text").value = text;
  state.ids = null;
  state.t = null;
  restartRng();
  return schedule(async (v) => {
    const t0 = performance.now();
    await update(v);
    state.timings.last_update_ms = performance.now() - t0;
  });
}

function wire() {
  $("text").oninput = () => setText($("text").value);
  for (const id of ["temperature", "top-k", "top-p", "min-p"]) {
    $(id).oninput = () => {
      showSettings();
      drawNext();
      if (state.view === "compare") drawCompare();
      publish();
    };
  }
  $("seed").onchange = () => restartRng();
  $("reset-rng").onclick = () => restartRng();
  $("sample-one").onclick = () => schedule((v) => sampleOne(v));
  $("generate").onclick = () => schedule((v) => generate(GENERATE, v));
  $("run-select").onchange = () => {
    state.current = +$("run-select").value;
    state.ids = null;  // ids belong to one vocabulary: the text is encoded again
    state.t = null;
    fillRuns();
    setTokenLang(document);
    $("text").lang = run().cjk ? "zh-CN" : "";
    schedule(update);
  };
  for (const b of document.querySelectorAll("#views button")) {
    b.onclick = () => {
      state.view = b.dataset.view;
      drawView();
      if (state.view === "compare") schedule(compareAll);
    };
  }
  for (const b of document.querySelectorAll("#lang-toggle button")) b.onclick = () => setLang(b.dataset.lang);
}

// What the address asks for (see the top of this file): the manifest's entries to load, the view, the text (null:
// the default); an Error naming what the page has when it asks for something else.
function asked() {
  const q = new URLSearchParams(location.search), w = words();
  const names = manifest.runs.map((r) => r.name);
  let entries = manifest.runs;
  if (q.has("runs")) {
    const wanted = [...new Set(q.get("runs").split(",").map((n) => n.trim()).filter(Boolean))];
    const unknown = wanted.filter((n) => !names.includes(n));
    if (unknown.length || !wanted.length) throw new Error(w.badRuns(unknown.join(",") || '""', names.join(", ")));
    entries = wanted.map((n) => manifest.runs.find((r) => r.name === n));
  }
  const view = q.has("view") ? q.get("view") : "walk";
  if (!VIEWS.includes(view)) throw new Error(w.badView(view, VIEWS.join(", ")));
  return { entries, view, text: q.get("text") };
}

function firstLang() {
  const asked = new URLSearchParams(location.search).get("lang");
  if (asked === "zh" || asked === "en") return asked;
  try {
    const saved = localStorage.getItem("redthread-page-lang");
    if (saved === "zh" || saved === "en") return saved;
  } catch (e) { /* storage off */ }
  return (navigator.language || "").toLowerCase().startsWith("zh") ? "zh" : "en";
}

async function main() {
  wire();
  setLang(firstLang());
  if (location.protocol === "file:") {  // WebAssembly and fetch need http: say how to serve the folder
    message(words().fileProtocol);
    document.body.dataset.ready = "file";
    return;
  }
  let want;
  try {
    want = asked();
  } catch (e) {
    showError(e);
    document.body.dataset.ready = "error";
    return;
  }
  state.view = want.view;
  drawView();
  ort.env.wasm.numThreads = 1;  // single-threaded: no SharedArrayBuffer, no cross-origin isolation needed
  ort.env.wasm.wasmPaths = new URL("ort/", location.href).href;
  message(words().loading(want.entries.length));
  busy(1);
  try {
    state.runs = await Promise.all(want.entries.map(loadRun));
  } catch (e) {
    busy(-1);
    showError(e);
    document.body.dataset.ready = "error";
    return;
  }
  busy(-1);
  message("");
  state.timings.ready_ms = performance.now() - started;
  state.timings.navigation_ms = performance.now();  // since the navigation started
  fillRuns();
  const r = run();
  $("text").lang = r.cjk ? "zh-CN" : "";
  const text = want.text !== null ? want.text : DEFAULT_TEXTS.find((x) => r.tok.encode(x).unknown.length === 0)
    || r.tok.decode(Array.from({ length: Math.min(8, r.tok.vocabSize) }, (_, i) => i));
  await setText(text);
  await idle();
  document.body.dataset.ready = "1";
}

main();

})();
