"use strict";
// The attention explorer: draws a payload (the JSON described in explorer.py) into an element
// holding the explorer's markup (#head-svg, #thumbs, #layer-select, ... as in explorer.html).
//   head view:  queries (left) and keys (right), one line per (query, key) pair whose opacity is
//               the attention weight of the selected layer and head, or the mean over the heads;
//               hovering (or clicking, to pin) a token shows only its lines, and its weights as
//               bars and percentages.
//   model view: one small heatmap per layer x head; a click shows that head in the head view.
//   neuron view (a tab with `vectors`): one head's q and k for a query and a key, q⊙k, the score and
//               the softmax over the keys, recomputed from the vectors.
// weights[layer][head][t][s]: T queries, S keys, each row t a distribution over the keys.
// With tab.image the keys are `offset` tokens then the rows x cols patches of an image, drawn
// as the image under a heat overlay (a veil lifted by the focused query's weights).
//
// window.RedthreadExplorer.render(root, payload) draws, or draws again: the static page calls it
// once on the JSON of its element #payload, the web app (redthread serve) on every answer of
// /api/attention. One explorer per page: a render replaces the previous drawing and its handlers
// (assigned, never added), and keeps the tab, layer and head on show where the new payload has them.
// Its words are English (EN below) unless render() is given others (options.words: the live page's Chinese,
// viz/assets/page/words.js); the markup's fixed words carry data-say="KEY" and are written from the same table.

(() => {  // the page's other scripts see only window.RedthreadExplorer

// the payload and the elements of the explorer on show, set by render(); hooks: what the page around offers
let P = null, root = null, svg = null, headView = null, layerSelect = null, headSelect = null, hooks = {};

// head-view geometry, in pixels: [bars | query column | lines | key column | bars]
const ROW = 20;                   // one token per row, at most
const MIN_ROW = 9;                // ... and at least: a long text (characters) gets compact rows
const TALL = 1400;                // the head view's height above which rows shrink towards MIN_ROW
let row = ROW;                    // the row height of the text on show (drawHeadView sets it)
const PAD = 8;                    // above the first row and below the last
const BAR = 64;                   // room for a bar and its percentage outside each column
const BAR_MAX = 30;               // the longest bar
const TEXT = 130;                 // a token column
const GAP = 170;                  // between the columns, where the lines go
const KX = BAR + TEXT + GAP;      // left edge of the key column
const WIDTH = KX + TEXT + BAR;
const MIN_LINE = 0.01;            // fainter lines cannot be seen; skipping them keeps 130 x 130 fast
const MAX_CHARS = 16;             // longer tokens are cut; the tooltip has the whole text
const THUMB = 44;                 // model-view thumbnail size at most (as in the CSS)
const MIN_THUMB = 14;             // ... and at least, when many heads share a narrow page

// Every word the explorer draws: a string, or a function of the numbers (and tokens) it spells out.
const EN = {
  tabs: { encoder: "encoder self-attention", decoder: "decoder self-attention (causal)", cross: "cross-attention" },
  layer: "layer", head: "head", headsShown: "heads shown", hint: "hover a token to focus it · click to pin · Esc to unpin",
  headView: "head view", queries: "queries", keys: "keys", modelView: "model view", neuronView: "neuron view",
  modelCaption: "every layer × head · click one to show it · click a layer name for the mean of its heads",
  neuronCaption: "neuron view · one head's query q and keys k: score = q·k × scale, then the softmax over the keys · "
    + "click a query, then hover the keys (in the head view or here)",
  query: "query", key: "key", readoutHint: "hover a strip: one dimension's q, k and q⊙k",
  allMean: "all (mean)", eachColour: "each, in colour",
  layerN: (l) => `layer ${l}`, layerMean: (l) => `layer ${l}, mean over its heads`, layerHead: (l, h) => `layer ${l}, head ${h}`,
  headToggle: (h) => `head ${h}: show or hide its lines`,
  tokenTitle: (side, i, tok) => `${side === "q" ? "query" : "key"} ${i}: ${tok}`,
  patchTitle: (i, tok, r, c) => `key ${i}: ${tok} (patch row ${r}, column ${c})`,
  oneHead: "the neuron view shows one head: pick a head number, or click a thumbnail",
  onlyLayer: (l, hint) => `q and k are here for layer ${l} only${hint ? " (write the page with --neuron-layer N for another)" : ""}`,
  recordLayer: (l) => `record layer ${l}`, showLayer: (l) => `show layer ${l}`,
  columns: ["key", "k", "q ⊙ k", "score", "softmax"], queryRow: (i, tok) => `query ${i}: ${tok}`, qNote: "← q",
  masked: "masked",
  maskedSum: (s, i) => `key ${s} comes after query ${i}: masked (score −∞), softmax `,
  recorded: " · the head view's weight: ",
  dot: "q·k = Σ q⊙k = ", scaled: (scale) => ` · × ${scale} → score `,
  softmaxOver: (n, i) => ` · softmax over the ${n} keys query ${i} sees → `,
  readout: (d, q, s, k, qk) => `dimension ${d}: q = ${q} · k (key ${s}) = ${k} · q⊙k = ${qk}`,
};
let say = EN;  // the words on show: EN, or EN overridden by render()'s options.words
// single-hue ramp for the heatmaps (ColorBrewer "Blues"), from weight 0 to the maximum
const BLUES = [[247, 251, 255], [222, 235, 247], [198, 219, 239], [158, 202, 225], [107, 174, 214],
               [66, 146, 198], [33, 113, 181], [8, 81, 156], [8, 48, 107]];

// one colour per head in the "each head" view (Tableau 10, then two more), repeating past twelve
const HEAD_COLOURS = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7",
                      "#9c755f", "#bab0ac", "#1f77b4", "#8c564b"];

// head: a head's number, "all" (their mean) or "each" (every head at once, one colour each, `off` the hidden ones)
// focus: null or {side: "q" | "k", i: token index}; pinned: a click holds the focus
// neuron: the query and key of the neuron view (a tab with `vectors`)
const state = { tab: 0, layer: 0, head: 0, focus: null, pinned: false, off: new Set(), neuron: { q: 0, k: 0 } };
const means = new Map();  // mean over heads, by "tab/layer"

function tab() { return P.tabs[state.tab]; }

function $(id) { return root.querySelector(`#${id}`); }

// The T x S matrix on show: one head, or the mean over the heads of the layer.
function matrix() {
  const heads = tab().weights[state.layer];
  if (state.head !== "all" && state.head !== "each") return heads[state.head];
  const key = `${state.tab}/${state.layer}`;
  if (!means.has(key)) {
    means.set(key, heads[0].map((row, t) => row.map((_, s) =>
      heads.reduce((sum, h) => sum + h[t][s], 0) / heads.length)));
  }
  return means.get(key);
}

function eachHead() {  // [head, its T x S weights, its colour] for the heads shown in the "each head" view
  if (state.head !== "each") return [];
  return tab().weights[state.layer].map((w, h) => [h, w, HEAD_COLOURS[h % HEAD_COLOURS.length]])
    .filter(([h]) => !state.off.has(h));
}

function blue(x) {  // x in [0, 1] -> [r, g, b]
  const f = Math.min(Math.max(x, 0), 1) * (BLUES.length - 1);
  const i = Math.min(Math.floor(f), BLUES.length - 2), u = f - i;
  return BLUES[i].map((c, k) => Math.round(c + (BLUES[i + 1][k] - c) * u));
}

function node(tag, attrs, parent, text) {  // an SVG element
  const el = document.createElementNS(svg.namespaceURI, tag);  // from the inline <svg>: no URL spelled out
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, v);
  if (text !== undefined) el.textContent = text;
  if (parent) parent.appendChild(el);
  return el;
}

function html(tag, text, className) {  // an HTML element
  const el = document.createElement(tag);
  if (text !== undefined) el.textContent = text;
  if (className) el.className = className;
  return el;
}

// A token as drawn: whitespace made visible, long ones cut (by code point, so an emoji stays whole).
function shown(tok) {
  let s = tok.replace(/\n/g, "↵").replace(/\t/g, "⇥");
  if (s.trim() === "") s = s.replace(/ /g, "␣") || "∅";
  const chars = Array.from(s);
  return chars.length > MAX_CHARS ? chars.slice(0, MAX_CHARS - 1).join("") + "…" : s;
}

function rowY(i) { return PAD + i * row + row / 2; }  // centre of row i

// With an image the keys are `offset` tokens (rows at the top) then a grid of square patches below.
function imageBox(t) {
  if (!t.image) return null;
  const [rows, cols] = t.image.grid, offset = t.image.offset;
  const w = TEXT + BAR - 8;
  return { x: KX + 4, y: PAD + offset * row + 6, w, h: w * rows / cols, rows, cols, offset };
}

// ---- head view ----------------------------------------------------------------------------

function drawHeadView() {
  const t = tab(), T = t.queries.length, S = t.keys.length;
  row = Math.max(MIN_ROW, Math.min(ROW, Math.floor(TALL / Math.max(T, S))));  // compact for long texts
  const att = matrix(), img = imageBox(t);
  svg.style.fontSize = `${Math.min(12, row - 2)}px`;
  const height = Math.max(T * row, img ? img.y - PAD + img.h : S * row) + 2 * PAD;
  svg.replaceChildren();
  svg.setAttribute("width", WIDTH);
  svg.setAttribute("height", height);
  svg.setAttribute("viewBox", `0 0 ${WIDTH} ${height}`);

  // every pair at once, opacity = weight; hidden while a token has the focus
  const all = node("g", { id: "lines-all" }, svg);
  if (!img && state.head === "each") {  // every head at once, each in its colour
    for (const [h, w, colour] of eachHead()) {
      const g = node("g", { class: `head-lines`, "data-head": h }, all);
      for (let q = 0; q < T; q++) {
        for (let k = 0; k < S; k++) if (w[q][k] >= MIN_LINE) line(g, q, k, w[q][k], 1.5, colour);
      }
    }
  } else if (!img) {
    for (let q = 0; q < T; q++) {
      for (let k = 0; k < S; k++) if (att[q][k] >= MIN_LINE) line(all, q, k, att[q][k], 1.5);
    }
  }
  drawToggles();
  node("g", { id: "lines-focus" }, svg);
  node("g", { id: "bars" }, svg);
  column(t.queries, "q", BAR, "end", BAR + TEXT - 6);
  column(img ? t.keys.slice(0, img.offset) : t.keys, "k", KX, "start", KX + 6);
  if (img) drawImage(t, img);
  applyFocus();
}

function line(parent, q, k, opacity, width, colour) {
  const el = node("line", { x1: BAR + TEXT + 2, y1: rowY(q), x2: KX - 2, y2: rowY(k),
                            "stroke-opacity": opacity.toFixed(3), "stroke-width": width.toFixed(2) }, parent);
  if (colour) el.style.stroke = colour;  // a head's own colour (the CSS gives the one-head colour)
}

// The "each head" view's toggles: one checkbox per head, in its colour; hidden in the other views.
function drawToggles() {
  const box = $("head-toggles");
  if (!box) return;
  box.hidden = state.head !== "each";
  if (box.hidden) return box.replaceChildren();
  const H = tab().weights[state.layer].length;
  box.replaceChildren(...Array.from({ length: H }, (_, h) => {
    const label = html("label", undefined, "head-toggle");
    const check = html("input");
    check.type = "checkbox";
    check.checked = !state.off.has(h);
    check.dataset.head = h;
    check.onchange = () => {
      if (check.checked) state.off.delete(h); else state.off.add(h);
      drawHeadView();
    };
    const swatch = html("i");
    swatch.style.background = HEAD_COLOURS[h % HEAD_COLOURS.length];
    label.append(check, swatch, document.createTextNode(`${h}`));
    label.title = say.headToggle(h);
    return label;
  }));
}

// A column of tokens; each is a hover target carrying its side and index.
function column(tokens, side, x, anchor, textX) {
  const g = node("g", { class: `column ${side}` }, svg);
  tokens.forEach((tok, i) => {
    const el = node("g", { class: `tok ${side}`, "data-side": side, "data-i": i }, g);
    node("rect", { class: "hit", x, y: PAD + i * row, width: TEXT, height: row, rx: 3 }, el);
    node("text", { x: textX, y: rowY(i), "text-anchor": anchor }, el, shown(tok));
    node("title", {}, el, say.tokenTitle(side, i, tok));
  });
}

// The image, and over it one rect per patch: the heat overlay and the hover target of that key.
function drawImage(t, box) {
  const g = node("g", { id: "image" }, svg);
  node("image", { href: t.image.src, x: box.x, y: box.y, width: box.w, height: box.h,
                  preserveAspectRatio: "none" }, g);
  const pw = box.w / box.cols, ph = box.h / box.rows;
  for (let r = 0; r < box.rows; r++) {
    for (let c = 0; c < box.cols; c++) {
      const i = box.offset + r * box.cols + c;
      const el = node("rect", { class: "patch", "data-side": "k", "data-i": i, "fill-opacity": 0,
                                x: box.x + c * pw, y: box.y + r * ph, width: pw, height: ph }, g);
      node("title", {}, el, say.patchTitle(i, t.keys[i], r, c));
    }
  }
}

// Show the focused token's weights (or every line when none has the focus).
function applyFocus() {
  const t = tab(), att = matrix(), img = imageBox(t);
  // an image tab always shows one query's heat: the focused one, else the first (a class token)
  const f = state.focus || (img ? { side: "q", i: 0 } : null);
  svg.classList.toggle("focused", f !== null);
  for (const el of svg.querySelectorAll("[data-side]")) {
    el.classList.toggle("focus", f !== null && el.dataset.side === f.side && +el.dataset.i === f.i);
  }
  svg.querySelector("#lines-all").style.display = f ? "none" : "";
  const lines = svg.querySelector("#lines-focus"), bars = svg.querySelector("#bars");
  lines.replaceChildren();
  bars.replaceChildren();
  if (f) {
    // a query's weights are its row of att, a key's are its column; in focus the strongest
    // line and bar are drawn full, and the percentages give the weights themselves
    const ws = f.side === "q" ? att[f.i] : att.map((row) => row[f.i]);
    const max = Math.max(...ws) || 1;
    for (const [, w, colour] of img ? [] : eachHead()) {  // each head's own lines from the focused token
      const hs = f.side === "q" ? w[f.i] : w.map((row) => row[f.i]);
      const hmax = Math.max(...hs) || 1;
      hs.forEach((x, j) => {
        const [q, k] = f.side === "q" ? [f.i, j] : [j, f.i];
        if (x >= MIN_LINE) line(lines, q, k, x / hmax, 0.5 + 2.5 * x / hmax, colour);
      });
    }
    ws.forEach((w, j) => {
      const [q, k] = f.side === "q" ? [f.i, j] : [j, f.i];
      const patch = img !== null && k >= img.offset;  // no row to draw a line to
      if (!patch && state.head !== "each") line(lines, q, k, w / max, 0.5 + 2.5 * w / max);
      if (f.side === "k") bar(bars, "q", j, w, max);
      else if (!patch) bar(bars, "k", j, w, max);  // a patch's weight is its overlay, below
    });
    // the overlay is a dark veil, lifted where the focused query attends: a heat map readable
    // over any picture, with the strongest patch fully clear
    for (const p of svg.querySelectorAll(".patch")) {
      const veil = f.side === "q" ? 0.85 * (1 - ws[+p.dataset.i] / max) : 0;
      p.setAttribute("fill-opacity", veil.toFixed(3));
    }
  }
  Object.assign(headView.dataset, {
    kind: t.kind, layer: state.layer, head: state.head,
    focus: state.focus ? `${state.focus.side}:${state.focus.i}` : "", pinned: state.pinned ? "1" : "0",
  });
}

// A bar and a percentage beside token j of a side, outside its column.
function bar(parent, side, j, w, max) {
  const len = Math.max(1, BAR_MAX * w / max), y = rowY(j);
  const pct = `${(100 * w).toFixed(w < 0.1 ? 1 : 0)}%`;
  if (side === "k") {
    node("rect", { class: "bar", x: KX + TEXT + 4, y: y - 4, width: len, height: 8, rx: 2 }, parent);
    node("text", { class: "pct", x: WIDTH - 2, y, "text-anchor": "end" }, parent, pct);
  } else {
    node("rect", { class: "bar", x: BAR - 4 - len, y: y - 4, width: len, height: 8, rx: 2 }, parent);
    node("text", { class: "pct", x: 2, y, "text-anchor": "start" }, parent, pct);
  }
}

function setFocus(f) {
  state.focus = f;
  applyFocus();
}

function target(e) {  // the token or patch under the pointer, as a focus
  const el = e.target.closest("[data-side]");
  return el ? { side: el.dataset.side, i: +el.dataset.i } : null;
}

function onMouseOver(e) {
  const f = target(e), now = state.focus;
  const same = f && now && f.side === now.side && f.i === now.i;
  neuronFollows(f);
  if (!state.pinned && !same && (f || now)) setFocus(f);
}

function onClick(e) {
  // a click pins the token under the pointer; a click on the pinned one or on the background unpins
  const f = target(e), now = state.focus;
  const same = f && now && state.pinned && f.side === now.side && f.i === now.i;
  state.pinned = false;
  neuronFollows(f);  // a click always chooses, whatever was pinned
  state.pinned = f !== null && !same;
  setFocus(f);
}

document.addEventListener("keydown", (e) => {  // added once, when the script runs
  if (e.key === "Escape" && P !== null) { state.pinned = false; setFocus(null); }
});

// ---- neuron view --------------------------------------------------------------------------
// One head of the layer whose queries and keys the tab carries (tab.vectors): the query's q, each
// key's k and q⊙k as strips of D cells, the score q·k × scale, and the softmax over the keys the
// query may see, recomputed here from q and k: it equals the head view's weight up to rounding.

const NEG = [178, 24, 43], POS = [33, 102, 172];  // diverging: red below zero, white at zero, blue above

function diverging(x, max) {  // x in [-max, max] -> "rgb(...)"
  const u = Math.min(Math.abs(x) / (max || 1), 1), end = x < 0 ? NEG : POS;
  return end.map((c) => Math.round(255 + (c - 255) * u));
}

// The numbers of one query against every key: q, each k, q⊙k, the scores and the softmax.
function neuronNumbers() {
  const t = tab(), v = t.vectors, h = state.head, i = state.neuron.q;
  const T = t.queries.length, S = t.keys.length;
  const q = v.q[h][i], ks = v.k[h];
  const prods = ks.map((k) => k.map((x, d) => q[d] * x));
  const dots = prods.map((p) => p.reduce((a, b) => a + b, 0));
  const seen = ks.map((_, s) => t.kind !== "decoder" || s <= i + S - T);  // a decoder query sees no later key
  const scores = dots.map((dot) => dot * v.scale);
  const top = Math.max(...scores.filter((_, s) => seen[s]));
  const exps = scores.map((x, s) => (seen[s] ? Math.exp(x - top) : 0));
  const total = exps.reduce((a, b) => a + b, 0);
  return { q, ks, prods, dots, seen, scores, weights: exps.map((e) => e / total) };
}

function strip(values, max, cell, kind) {  // one canvas pixel per dimension, scaled up by the CSS
  const c = html("canvas", undefined, `strip ${kind}`);
  c.width = values.length;
  c.height = 1;
  c.style.width = `${values.length * cell}px`;
  const ctx = c.getContext("2d"), image = ctx.createImageData(values.length, 1);
  values.forEach((x, d) => image.data.set([...diverging(x, max), 255], 4 * d));
  ctx.putImageData(image, 0, 0);
  return c;
}

// Why the view cannot show numbers now, or null: no single head, or q and k of another layer.
function neuronProblem() {
  const v = tab().vectors;
  if (typeof state.head !== "number") {
    return { text: say.oneHead };
  }
  if (state.layer !== v.layer) {
    const more = hooks.vectorsFor ? { button: say.recordLayer(state.layer), act: () => hooks.vectorsFor(state.layer) }
      : { hint: true };
    return { text: say.onlyLayer(v.layer, more.hint || false),
             button: more.button || say.showLayer(v.layer), act: more.act || (() => select({ layer: v.layer })) };
  }
  return null;
}

function drawNeuronView() {
  const section = $("neuron-view");
  if (!section) return;
  const t = tab();
  section.hidden = !t.vectors;
  if (!t.vectors) return;
  const T = t.queries.length, S = t.keys.length;
  state.neuron.q = Math.min(state.neuron.q, T - 1);
  state.neuron.k = Math.min(state.neuron.k, S - 1);
  const qs = $("neuron-query"), ks = $("neuron-key");
  if (qs.options.length !== T || qs.dataset.tab !== String(state.tab)) {
    qs.replaceChildren(...t.queries.map((tok, i) => option(i, `${i}: ${shown(tok)}`)));
    ks.replaceChildren(...t.keys.map((tok, s) => option(s, `${s}: ${shown(tok)}`)));
    qs.dataset.tab = String(state.tab);
  }
  qs.value = String(state.neuron.q);
  ks.value = String(state.neuron.k);
  const problem = neuronProblem(), message = $("neuron-message");
  message.hidden = problem === null;
  $("neuron-body").hidden = problem !== null;
  Object.assign(section.dataset, { layer: t.vectors.layer, head: state.head, query: state.neuron.q, key: state.neuron.k });
  if (problem) {
    message.querySelector("span").textContent = problem.text;
    const button = message.querySelector("button");
    button.hidden = !problem.button;
    button.textContent = problem.button || "";
    button.onclick = problem.act || null;
    return;
  }
  const n = neuronNumbers(), D = n.q.length;
  const width = section.clientWidth || 400;  // the strips share what the token, score and softmax columns leave
  const cell = Math.max(1, Math.min(8, Math.floor((width - 270) / (2 * D))));
  const vmax = Math.max(...n.q.map(Math.abs), ...n.ks.map((k) => Math.max(...k.map(Math.abs))));
  const pmax = Math.max(...n.prods.map((p) => Math.max(...p.map(Math.abs))));
  const wmax = Math.max(...n.weights) || 1;
  const table = $("neuron-table");
  table.style.gridTemplateColumns = `minmax(40px, 90px) ${D * cell}px ${D * cell}px 56px 96px`;
  const head = say.columns.map((x) => html("span", x, "th"));
  const qrow = [html("span", say.queryRow(state.neuron.q, shown(t.queries[state.neuron.q])), "tok q"),
                strip(n.q, vmax, cell, "q"), html("span", say.qNote, "note"), html("span"), html("span")];
  qrow[1].dataset.row = "q";
  const rows = n.ks.map((k, s) => {
    const cls = `nrow${n.seen[s] ? "" : " masked"}`;
    const bar = html("span", undefined, "wbar");
    bar.style.width = `${n.seen[s] ? Math.max(1, 50 * n.weights[s] / wmax) : 0}px`;
    const cells = [html("span", `${s}: ${shown(t.keys[s])}`, "tok"), strip(k, vmax, cell, "k"), strip(n.prods[s], pmax, cell, "qk"),
                   html("span", n.seen[s] ? n.scores[s].toFixed(3) : say.masked, "num score"),
                   html("span", undefined, "soft")];
    cells[4].append(bar, html("span", n.seen[s] ? `${(100 * n.weights[s]).toFixed(1)}%` : "0", "num"));
    for (const c of cells) {
      c.classList.add(...cls.split(" "));
      Object.assign(c.dataset, { key: s, row: c.dataset.row || "k" });
      c.onmouseover = () => setNeuronKey(s);
    }
    cells[0].title = say.tokenTitle("k", s, t.keys[s]);
    return cells;
  });
  table.replaceChildren(...head, ...qrow, ...rows.flat());
  table.onmousemove = (e) => readout(e, n);
  table.dataset.weights = n.weights.map((w) => w.toFixed(6)).join(",");
  markNeuronKey(n);
}

// The chosen key: its row stands out, and the sum above spells its numbers out.
function markNeuronKey(n) {
  const t = tab(), s = state.neuron.k, h = state.head, i = state.neuron.q, v = t.vectors;
  for (const el of $("neuron-table").querySelectorAll("[data-key]")) el.classList.toggle("chosen", +el.dataset.key === s);
  const D = n.q.length, recorded = t.weights[v.layer][h][i][s];
  const scale = Math.abs(v.scale * Math.sqrt(D) - 1) < 1e-9 ? `1/√${D}` : v.scale.toPrecision(4);
  const sum = $("neuron-sum");
  const b = (id, text) => { const el = html("b", text); el.id = id; return el; };
  if (!n.seen[s]) {
    sum.replaceChildren(say.maskedSum(s, i), b("neuron-softmax", "0"), say.recorded, b("neuron-weight", recorded.toFixed(4)));
    return;
  }
  sum.replaceChildren(say.dot, b("neuron-dot", n.dots[s].toFixed(4)), say.scaled(scale),
    b("neuron-score", n.scores[s].toFixed(4)), say.softmaxOver(n.seen.filter(Boolean).length, i),
    b("neuron-softmax", n.weights[s].toFixed(4)), say.recorded, b("neuron-weight", recorded.toFixed(4)));
}

function readout(e, n) {  // the dimension under the pointer on a strip
  const c = e.target.closest("canvas.strip");
  if (!c) return;
  const D = n.q.length, d = Math.min(D - 1, Math.max(0, Math.floor(e.offsetX / (c.clientWidth / D))));
  const s = c.dataset.row === "q" ? state.neuron.k : +c.dataset.key;
  const k = n.ks[s][d], q = n.q[d];
  $("neuron-readout").textContent = say.readout(d, q.toFixed(4), s, k.toFixed(4), (q * k).toFixed(4));
  $("neuron-readout").dataset.dim = d;
}

function setNeuronKey(s) {
  if (s === state.neuron.k || !tab().vectors) return;
  state.neuron.k = s;
  $("neuron-key").value = String(s);
  $("neuron-view").dataset.key = s;
  if (neuronProblem() === null) markNeuronKey(neuronNumbers());
}

// The head view's tokens choose the pair: a query or key under the pointer (or clicked) becomes the
// neuron view's, except on the side of a pinned token, so a pinned query holds while the keys are hovered.
function neuronFollows(f) {
  if (!f || !tab().vectors || (state.pinned && state.focus && state.focus.side === f.side)) return;
  if (f.side === "k") setNeuronKey(f.i);
  else if (f.i !== state.neuron.q) { state.neuron.q = f.i; drawNeuronView(); }
}

// ---- model view ---------------------------------------------------------------------------

function drawModelView() {
  const t = tab(), L = t.weights.length, H = t.weights[0].length;
  const T = t.queries.length, S = t.keys.length;
  const box = $("thumbs");
  box.replaceChildren();
  box.style.gridTemplateColumns = `auto repeat(${H}, minmax(${MIN_THUMB}px, ${THUMB}px))`;  // shrinks to fit the width
  box.appendChild(html("div", say.head, "col-label corner"));
  for (let h = 0; h < H; h++) box.appendChild(html("div", `${h}`, "col-label"));
  for (let l = 0; l < L; l++) {
    const label = html("div", say.layerN(l), "row-label");
    label.title = say.layerMean(l);
    label.onclick = () => select({ layer: l, head: "all" });
    box.appendChild(label);
    for (let h = 0; h < H; h++) {
      const c = html("canvas");
      c.width = S;  // one pixel per weight, scaled by the CSS
      c.height = T;
      Object.assign(c.dataset, { layer: l, head: h });
      c.title = say.layerHead(l, h);
      // few tokens: sharp cells scaled up; many: scaled down smoothly rather than dropping rows
      c.style.imageRendering = Math.max(T, S) <= THUMB ? "pixelated" : "auto";
      heatmap(c, t.weights[l][h]);
      c.onclick = () => select({ layer: l, head: h });
      box.appendChild(c);
    }
  }
}

// Each thumbnail is shaded to its own maximum, so a pattern shows even when weights are spread thin.
function heatmap(canvas, att) {
  const T = att.length, S = att[0].length;
  const max = Math.max(...att.map((row) => Math.max(...row))) || 1;
  const ctx = canvas.getContext("2d"), image = ctx.createImageData(S, T);
  for (let t = 0; t < T; t++) {
    for (let s = 0; s < S; s++) image.data.set([...blue(att[t][s] / max), 255], 4 * (t * S + s));
  }
  ctx.putImageData(image, 0, 0);
}

function markSelected() {
  for (const c of root.querySelectorAll("#thumbs canvas")) {
    const inLayer = +c.dataset.layer === state.layer;
    c.classList.toggle("in-layer", inLayer && (state.head === "all" || state.head === "each"));
    c.classList.toggle("selected", inLayer && +c.dataset.head === state.head);
  }
}

// ---- controls -----------------------------------------------------------------------------

function option(value, text) {
  const o = html("option", text);
  o.value = value;
  return o;
}

function fillSelects() {
  const t = tab(), L = t.weights.length, H = t.weights[0].length;
  layerSelect.replaceChildren(...Array.from({ length: L }, (_, l) => option(l, `${l}`)));
  headSelect.replaceChildren(option("all", say.allMean), option("each", say.eachColour),
    ...Array.from({ length: H }, (_, h) => option(h, `${h}`)));
}

// The one way the selection changes: the selects, the tabs and the thumbnails all call it.
function select(change) {
  const newTab = change.tab !== undefined && change.tab !== state.tab;
  Object.assign(state, change);
  if (newTab) {
    const t = tab();
    state.focus = null;  // token indices of one tab mean nothing in another
    state.pinned = false;
    state.layer = Math.min(state.layer, t.weights.length - 1);
    if (typeof state.head === "number") state.head = Math.min(state.head, t.weights[0].length - 1);
    state.neuron = neuronStart();
    fillSelects();
    drawModelView();
  }
  layerSelect.value = String(state.layer);
  headSelect.value = String(state.head);
  for (const b of root.querySelectorAll("#tabs button")) {
    b.setAttribute("aria-selected", b.id === `tab-${tab().kind}` ? "true" : "false");
  }
  drawHeadView();
  drawNeuronView();
  markSelected();
}

// The neuron view's first pair: the last query (a language model's next-token position) and the key
// it attends to most in head 0 of the layer with vectors.
function neuronStart() {
  const t = tab(), i = t.queries.length - 1;
  if (!t.vectors) return { q: i, k: 0 };
  const row = t.weights[t.vectors.layer][0][i];
  return { q: i, k: row.indexOf(Math.max(...row)) };
}

// Draw a payload into root. Drawn again (same root), it keeps the tab, layer, head and the neuron
// view's pair on show where the new payload has them, so stepping through generation keeps the head
// in view. options.vectorsFor(layer), where the page can ask for another layer's q and k (the web app).
function render(el, payload, options = {}) {
  const was = root === el && P !== null
    ? { kind: tab().kind, layer: state.layer, head: state.head, neuron: { ...state.neuron } } : null;
  root = el;
  P = payload;
  hooks = options;
  say = { ...EN, ...(options.words || {}) };
  for (const el of root.querySelectorAll("[data-say]")) {  // the markup's fixed words
    if (typeof say[el.dataset.say] === "string") el.textContent = say[el.dataset.say];
  }
  for (const el of root.querySelectorAll("[data-say-label]")) {
    if (typeof say[el.dataset.sayLabel] === "string") el.setAttribute("aria-label", say[el.dataset.sayLabel]);
  }
  svg = $("head-svg");
  headView = $("head-view");
  layerSelect = $("layer-select");
  headSelect = $("head-select");
  means.clear();
  Object.assign(state, { tab: 0, layer: 0, head: 0, focus: null, pinned: false, off: new Set() });
  if (was) {
    state.tab = Math.max(0, P.tabs.findIndex((t) => t.kind === was.kind));
    const L = tab().weights.length, H = tab().weights[0].length;
    if (was.layer < L) state.layer = was.layer;
    if (typeof was.head !== "number" || was.head < H) state.head = was.head;
  }
  state.neuron = was && was.kind === tab().kind ? was.neuron : neuronStart();  // drawNeuronView clamps it

  const own = options.lang === "zh" && P.zh ? P.zh : P;  // the model's description and the notice, in Chinese too
  $("title").textContent = own.title || P.title;  // an image's title has its Chinese; a text's title is the text
  $("title").setAttribute("translate", "no");  // the user's text: never translated by the browser
  svg.setAttribute("translate", "no");  // the tokens
  $("model").textContent = own.model;
  const notice = $("notice");
  notice.textContent = own.notice || "";
  notice.hidden = !own.notice;

  const tabs = $("tabs");
  tabs.replaceChildren();
  tabs.hidden = P.tabs.length <= 1;  // one kind needs no tabs
  if (P.tabs.length > 1) {
    P.tabs.forEach((t, i) => {
      const b = html("button", say.tabs[t.kind]);
      b.id = `tab-${t.kind}`;
      b.setAttribute("role", "tab");
      b.onclick = () => select({ tab: i });
      tabs.appendChild(b);
    });
  }
  layerSelect.onchange = () => select({ layer: +layerSelect.value });
  headSelect.onchange = () => select({ head: ["all", "each"].includes(headSelect.value) ? headSelect.value : +headSelect.value });
  svg.onmouseover = onMouseOver;
  svg.onmouseleave = () => { if (!state.pinned) setFocus(null); };
  svg.onclick = onClick;
  const nq = $("neuron-query"), nk = $("neuron-key");
  if (nq) {
    nq.onchange = () => { state.neuron.q = +nq.value; drawNeuronView(); };
    nk.onchange = () => setNeuronKey(+nk.value);
    delete nq.dataset.tab;  // the token lists are filled again
  }

  fillSelects();
  drawModelView();
  select({});
}

// render()'s options for a language: "en" (EN above) or "zh" (the live page's Chinese, page/words.js, when loaded);
// with the next-token view's words (nextWords) and the web app's (appWords), over their own English
function languageOptions(lang) {
  const zh = lang === "zh" && window.RedthreadPageWords ? window.RedthreadPageWords.zh : null;
  return { lang: zh ? "zh" : "en", words: zh ? zh.explorer : {}, nextWords: zh ? zh.nextToken : {},
           appWords: zh ? zh.app : {} };
}

// The page's language: ?lang=zh|en, else the one it was written in (<html lang>, from redthread's --lang).
function pageLanguage() {
  const asked = new URLSearchParams(location.search).get("lang");
  if (asked === "zh" || asked === "en") return asked;
  return document.documentElement.lang.startsWith("zh") ? "zh" : "en";
}

// A 中文 / English button: each click draws the page again in the other language, <html lang> set to match (so
// Chinese characters take Chinese glyphs). draw(lang) redraws; the button names the language it switches to.
function languageToggle(button, lang, draw) {
  const show = (l) => {
    document.documentElement.lang = l === "zh" ? "zh-CN" : "en";
    button.textContent = l === "zh" ? "English" : "中文";
    button.lang = l === "zh" ? "en" : "zh-CN";
    button.dataset.lang = l;
    draw(l);
  };
  button.onclick = () => show(button.dataset.lang === "zh" ? "en" : "zh");
  show(lang);
}

window.RedthreadExplorer = { render, shown, languageOptions, pageLanguage, languageToggle };

// the static page carries its payload; the web app has none and calls render() itself
const embedded = document.getElementById("payload");
if (embedded) {
  const payload = JSON.parse(embedded.textContent);
  const draw = (lang) => render(document.body, payload, languageOptions(lang));
  const toggle = document.getElementById("lang-toggle");
  if (toggle) languageToggle(toggle, pageLanguage(), draw);
  else draw(pageLanguage());
  document.body.dataset.ready = "1";  // for tests and screenshots: everything is drawn
}


})();
