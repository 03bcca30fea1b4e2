"use strict";
// One forward pass, explained: for one position of the text, from the overview (tokens -> embedding -> blocks ->
// logits -> distribution) down to the numbers, each the real value this model computes on this text in the
// browser. The graph's outputs (interop/onnx_export.py: embed.tok_emb, blocks.l.self_attn.q, ...) are shown beside
// what this script computes from them by hand, the way the paper writes it (Vaswani et al. 2017): the sum of token
// and position vectors (sections 3.4 and 3.5), q·k × 1/√d_k for every key, the softmax over the keys the causal mask leaves
// and the weighted sum of the values (eq. 1), the residual additions and LayerNorm (Ba et al. 2016; section 3.1),
// the FFN (eq. 2), the logits and their softmax; each computed number carries the largest difference from the
// graph's. The other rungs show what their graphs return: the bigram's row of logits, the MLP's window and hidden
// layer, each recurrent layer's state h_t.
//
// window.RedthreadWalk.render(root, view): view = { run: {meta, walk}, labels (the window's tokens), ids,
//   outputs (name -> {dims, data}), t (the position), layer, head, words (words.js's walk table), shown (a token
//   as drawn), onChange({t | layer | head}) }.
// Every vector drawn has data-what ("graph:NAME" for an output, "js:NAME" for a number computed here) and
// data-values (every entry, full precision), which tests/viz/test_page_browser.py compares with PyTorch.

(() => {

const SHOWN = 16;  // the entries of a long vector shown before "more"

let w = null, view = null;

function el(tag, className, text) {
  const e = document.createElement(tag);
  if (className) e.className = className;
  if (text !== undefined) e.textContent = text;
  return e;
}

function fmt(x) {
  if (x === -Infinity) return "−∞";
  return (Math.abs(x) < 5e-4 ? 0 : x).toFixed(3);
}

// The entries of output `name` at the leading indices `index` (a view of its last dimension, or more).
function at(name, index) {
  const t = view.outputs[name];
  const strides = [];
  let s = 1;
  for (let d = t.dims.length - 1; d >= 0; d--) { strides[d] = s; s *= Number(t.dims[d]); }
  let offset = 0;
  index.forEach((ix, d) => { offset += ix * strides[d]; });
  return t.data.subarray(offset, offset + strides[index.length - 1]);
}

function has(name) { return view.outputs[name] !== undefined; }

function maxDiff(a, b) {
  let m = 0;
  for (let i = 0; i < a.length; i++) if (Number.isFinite(a[i]) || Number.isFinite(b[i])) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
}

// A vector: its entries as cells shaded by sign and size, the first SHOWN, then a button for the rest.
function vector(values, what, label) {
  const box = el("div", "vec");
  box.dataset.what = what;
  box.dataset.values = Array.from(values, (x) => (Number.isFinite(x) ? x.toPrecision(9) : String(x))).join(",");
  if (label) box.append(el("span", "vec-label", label));
  const cells = el("span", "cells");
  const max = Math.max(...Array.from(values, (x) => (Number.isFinite(x) ? Math.abs(x) : 0))) || 1;
  const draw = (n) => {
    cells.replaceChildren(...Array.from(values.slice(0, n), (x, i) => {
      const c = el("span", "cell", fmt(x));
      const u = Number.isFinite(x) ? Math.min(Math.abs(x) / max, 1) : 0;
      c.style.background = x < 0 ? `rgba(178, 24, 43, ${(0.35 * u).toFixed(3)})` : `rgba(33, 102, 172, ${(0.35 * u).toFixed(3)})`;
      c.title = `[${i}] ${x}`;
      return c;
    }));
    if (n < values.length) {
      const more = el("button", "more", w.more(values.length - n));
      more.onclick = () => draw(values.length);
      cells.append(more);
    }
  };
  draw(Math.min(values.length, SHOWN));
  box.append(cells, el("span", "dim", w.entries(values.length)));
  return box;
}

function check(computed, graph) {  // "= the graph's, to 3e-8"
  const d = maxDiff(computed, graph);
  const e = el("span", "check", w.equals(d.toExponential(0)));
  e.dataset.diff = d;
  return e;
}

function card(id, title, ...body) {
  const c = el("section", "card");
  c.id = `walk-${id}`;
  c.append(el("h3", "", title), ...body.filter(Boolean));
  return c;
}

function para(text) { return el("p", "say", text); }

function formula(text) { return el("p", "formula", text); }

function tok(i) {
  const s = el("span", "tok", view.shown(view.labels[i]));
  s.title = `${i}: ${JSON.stringify(view.labels[i])} → #${view.ids[i]}`;  // position: the token → its id
  return s;
}

// ---- the parts -----------------------------------------------------------------------------------

function tokensCard() {
  const strip = el("div", "walk-tokens");
  view.labels.forEach((_, i) => {
    const b = el("button", i === view.t ? "chosen" : "");
    b.append(tok(i), el("small", "", String(view.ids[i])));
    b.dataset.position = i;
    b.onclick = () => view.onChange({ t: i });
    strip.append(b);
  });
  return card("tokens", w.tokensTitle, para(w.tokensSay(view.labels.length, view.t, view.ids[view.t])), strip);
}

function layerNorm(x, norm) {  // LayerNorm by hand: (x - mean) / sqrt(var + eps) * weight + bias
  const n = x.length, mean = x.reduce((a, b) => a + b, 0) / n;
  const variance = x.reduce((a, b) => a + (b - mean) ** 2, 0) / n;
  const sd = Math.sqrt(variance + norm.eps);
  const y = Float64Array.from(x, (v, i) => ((v - mean) / sd) * (norm.weight ? norm.weight[i] : 1) + (norm.bias ? norm.bias[i] : 0));
  return { mean, sd, y };
}

function normPart(x, normName, graphName, what) {  // the LayerNorm of x, by hand, beside the graph's
  const norm = view.run.walk.norms[normName];
  const r = layerNorm(x, norm);
  return [formula(w.lnFormula(fmt(r.mean), fmt(r.sd), norm.eps)), vector(r.y, `js:${what}`, w.lnByHand),
          vector(at(graphName, [0, view.t]), `graph:${graphName}`, w.graphSays), check(r.y, at(graphName, [0, view.t]))];
}

function embeddingCard() {
  const { t } = view, cfg = view.run.meta.config;
  const tokVec = at("embed.tok_emb", [0, t]), x = at("embed", [0, t]);
  const parts = [para(w.embedSay(cfg.d_model)), vector(tokVec, "graph:embed.tok_emb", w.tokEmb(view.ids[t]))];
  if (has("embed.pos_emb")) {
    const pos = at("embed.pos_emb", [t]);
    const sum = Float64Array.from(tokVec, (v, i) => v + pos[i]);
    parts.push(vector(pos, "graph:embed.pos_emb", w.posEmb(cfg.pos, t)), vector(sum, "js:embed", w.sum),
               check(sum, x));
  } else {
    parts.push(para(cfg.pos === "rope" ? w.ropeSay : w.noPosSay));
  }
  parts.push(vector(x, "graph:embed", w.stream0));
  return card("embedding", w.embedTitle, ...parts);
}

function streamBefore(l) { return l === 0 ? "embed" : `blocks.${l - 1}.ffn_res`; }

function attentionCards() {
  const { t, layer: l, head: h } = view, meta = view.run.meta, cfg = meta.config;
  const b = `blocks.${l}`, pre = cfg.norm === "pre", scale = meta.attention.scale;
  const x = at(streamBefore(l), [0, t]);
  const out = [];
  // what attention reads
  out.push(card("attn-in", w.attnInTitle(l), para(pre ? w.preSay : w.postSay), vector(x, `graph:${streamBefore(l)}`, w.streamIn),
    ...(pre ? normPart(x, `${b}.self_attn_res.norm`, `${b}.self_attn.input`, "ln1") : [])));
  // q . k for every key, scaled; the softmax; the weighted sum of the values
  const q = at(`${b}.self_attn.q`, [0, h, t]), D = q.length;
  const T = view.labels.length;
  const dots = [], scores = [];
  for (let s = 0; s <= t; s++) {
    const k = at(`${b}.self_attn.k`, [0, h, s]);
    let dot = 0;
    for (let d = 0; d < D; d++) dot += q[d] * k[d];
    dots.push(dot);
    scores.push(dot * scale);
  }
  const top = Math.max(...scores), exps = scores.map((z) => Math.exp(z - top)), total = exps.reduce((a, c) => a + c, 0);
  const weights = exps.map((e) => e / total);
  const graphScores = at(`${b}.self_attn.scores`, [0, h, t]), graphWeights = at(`${b}.self_attn.weights`, [0, h, t]);
  const table = el("div", "keys");
  table.append(...w.keyColumns.map((c) => el("span", "th", c)));
  for (let s = 0; s < T; s++) {
    const seen = s <= t;
    const bar = el("span", "wbar");
    bar.style.width = `${seen ? Math.max(1, 80 * weights[s]) : 0}px`;
    const cells = [tok(s), el("span", "num", seen ? fmt(dots[s]) : "—"), el("span", "num", seen ? fmt(scores[s]) : w.masked),
                   el("span", "num", fmt(graphScores[s])), el("span", "soft")];
    cells[4].append(bar, el("span", "num", seen ? `${(100 * weights[s]).toFixed(1)}%` : "0"));
    for (const c of cells) { if (!seen) c.classList.add("masked"); table.append(c); }
  }
  const heads = new Float64Array(D);
  for (let s = 0; s <= t; s++) {
    const v = at(`${b}.self_attn.v`, [0, h, s]);
    for (let d = 0; d < D; d++) heads[d] += weights[s] * v[d];
  }
  const graphHeads = at(`${b}.self_attn.heads`, [0, h, t]);
  out.push(card("scores", w.scoresTitle(l, h),
    para(w.scoresSay(t, D, meta.attention.scale === 1 ? "1" : `1/√${D}`, cfg.pos === "rope")),
    vector(q, `graph:${b}.self_attn.q`, w.qOf(t)),
    formula(w.scoresFormula(D)), table,
    vector(Float64Array.from(dots), "js:qk", "q·k"), vector(Float64Array.from(scores), "js:scores", w.scoresByHand),
    vector(graphScores.slice(0, t + 1), `graph:${b}.self_attn.scores`, w.graphSays), check(scores, graphScores.slice(0, t + 1)),
    vector(Float64Array.from(weights), "js:weights", w.softmaxByHand),
    vector(graphWeights.slice(0, t + 1), `graph:${b}.self_attn.weights`, w.graphSays), check(weights, graphWeights.slice(0, t + 1))));
  out.push(card("values", w.valuesTitle(l, h), para(w.valuesSay(t)), formula(w.valuesFormula),
    vector(heads, "js:heads", w.sumByHand), vector(graphHeads, `graph:${b}.self_attn.heads`, w.graphSays), check(heads, graphHeads)));
  // the heads together, projected; the residual connection
  const y = at(`${b}.self_attn.output`, [0, t]), res = at(`${b}.self_attn_res`, [0, t]);
  const sum = Float64Array.from(x, (v, i) => v + y[i]);
  const after = pre ? sum : layerNorm(sum, view.run.walk.norms[`${b}.self_attn_res.norm`]).y;
  out.push(card("attn-out", w.attnOutTitle(l), para(w.attnOutSay(cfg.n_head)), vector(y, `graph:${b}.self_attn.output`, w.attnOut),
    formula(pre ? w.residualPre : w.residualPost), vector(after, "js:attn_res", w.residualByHand),
    vector(res, `graph:${b}.self_attn_res`, w.graphSays), check(after, res)));
  return out;
}

function ffnCard() {
  const { t, layer: l } = view, cfg = view.run.meta.config, b = `blocks.${l}`, pre = cfg.norm === "pre";
  const x = at(`${b}.self_attn_res`, [0, t]);
  const hidden = at(`${b}.ffn.hidden`, [0, t]), y = at(`${b}.ffn.output`, [0, t]), res = at(`${b}.ffn_res`, [0, t]);
  const active = hidden.reduce((n, v) => n + (v > 0 ? 1 : 0), 0);
  const sum = Float64Array.from(x, (v, i) => v + y[i]);
  const after = pre ? sum : layerNorm(sum, view.run.walk.norms[`${b}.ffn_res.norm`]).y;
  return card("ffn", w.ffnTitle(l), para(w.ffnSay(cfg.d_model, hidden.length, cfg.activation)),
    ...(pre ? normPart(x, `${b}.ffn_res.norm`, `${b}.ffn.input`, "ln2") : []),
    vector(hidden, `graph:${b}.ffn.hidden`, w.hidden(active, hidden.length)),
    vector(y, `graph:${b}.ffn.output`, w.ffnOut),
    formula(pre ? w.residualPre : w.residualPost), vector(after, "js:ffn_res", w.residualByHand),
    vector(res, `graph:${b}.ffn_res`, w.graphSays), check(after, res));
}

function finalCards() {
  const { t } = view, meta = view.run.meta, cfg = meta.config, rung = meta.rung;
  const out = [];
  if (rung === "transformer" && view.run.walk.norms.norm_f) {
    const L = cfg.n_layer, x = at(`blocks.${L - 1}.ffn_res`, [0, t]);
    const r = layerNorm(x, view.run.walk.norms.norm_f);
    out.push(card("norm-f", w.normFTitle, para(w.normFSay),
      formula(w.lnFormula(fmt(r.mean), fmt(r.sd), view.run.walk.norms.norm_f.eps)), vector(r.y, "js:norm_f", w.lnByHand),
      vector(at("norm_f", [0, t]), "graph:norm_f", w.graphSays), check(r.y, at("norm_f", [0, t]))));
  }
  const logits = at("logits", [0, t]);
  const p = window.RedthreadSampling.softmax(logits);
  const order = Array.from(p.keys()).sort((a, b) => p[b] - p[a] || a - b).slice(0, 8);
  const list = el("div", "top-tokens");
  list.append(...w.topColumns.map((c) => el("span", "th", c)));
  for (const i of order) {
    const s = el("span", "tok", view.shown(view.label(i)));
    s.title = `#${i}: ${JSON.stringify(view.label(i))}`;
    const bar = el("span", "wbar");
    bar.style.width = `${Math.max(1, 80 * p[i] / p[order[0]])}px`;
    const soft = el("span", "soft");
    soft.append(bar, el("span", "num", `${(100 * p[i]).toFixed(1)}%`));
    list.append(s, el("span", "num", fmt(logits[i])), soft);
  }
  out.push(card("logits", w.logitsTitle, para(w.logitsSay[rung] || w.logitsSay.transformer),
    vector(logits, "graph:logits", w.logitsOf(t))));
  const next = t + 1 < view.ids.length ? view.ids[t + 1] : null;
  out.push(card("distribution", w.distTitle, para(w.distSay), formula(w.softmaxFormula), list,
    vector(p, "js:probs", w.probs),
    para(next === null ? w.distLast : w.distNext(view.shown(view.label(next)), (100 * p[next]).toFixed(1), -Math.log(p[next]).toFixed(3)))));
  return out;
}

function otherRungCards() {  // bigram, MLP, RNN / LSTM / GRU: what their graphs return
  const { t } = view, meta = view.run.meta, cfg = meta.config, rung = meta.rung;
  if (rung === "mlp") {
    const c = cfg.context, window = [];
    for (let j = t - c + 1; j <= t; j++) window.push(j < 0 ? el("span", "tok pad", "∅") : tok(j));
    const box = el("div", "walk-window");
    box.append(...window);
    return [card("window", w.mlpTitle, para(w.mlpSay(c, cfg.d_embed, cfg.d_hidden)), box,
      vector(at("hidden", [0, t]), "graph:hidden", w.mlpHidden))];
  }
  if (["rnn", "lstm", "gru"].includes(rung)) {
    const parts = [para(w.rnnSay[rung](cfg.d_embed, cfg.d_hidden))];
    for (let i = 0; i < cfg.n_layer; i++) parts.push(vector(at(`cells.${i}.h`, [0, t]), `graph:cells.${i}.h`, w.rnnState(i, t)));
    return [card("state", w.rnnTitle, ...parts)];
  }
  return [card("row", w.bigramTitle, para(w.bigramSay))];
}

function overview() {  // the chips: tokens -> embedding -> layers -> final LayerNorm -> logits -> distribution
  const meta = view.run.meta, rung = meta.rung, bar = el("nav", "walk-overview");
  const chip = (text, target, change, chosen) => {
    const b = el("button", chosen ? "chosen" : "", text);
    b.dataset.target = target;
    b.onclick = () => {
      if (change) view.onChange(change);
      const c = document.getElementById(`walk-${target}`);
      if (c) c.scrollIntoView({ block: "nearest" });
    };
    return b;
  };
  const arrow = () => el("span", "arrow", "→");
  const parts = [chip(w.chipTokens, "tokens")];
  if (rung === "transformer") {
    parts.push(chip(w.chipEmbedding, "embedding"));
    for (let l = 0; l < meta.config.n_layer; l++) parts.push(chip(w.chipLayer(l), "attn-in", { layer: l }, l === view.layer));
    if (view.run.walk.norms.norm_f) parts.push(chip(w.chipNorm, "norm-f"));
  } else {
    parts.push(chip(w.chipRung[rung], rung === "mlp" ? "window" : ["rnn", "lstm", "gru"].includes(rung) ? "state" : "row"));
  }
  parts.push(chip(w.chipLogits, "logits"), chip(w.chipDist, "distribution"));
  parts.forEach((p, i) => { if (i) bar.append(arrow()); bar.append(p); });
  return bar;
}

function controls() {
  const meta = view.run.meta, box = el("div", "walk-controls");
  const select = (label, n, value, name, text) => {
    const lab = el("label", "", `${label} `);
    const s = el("select");
    s.id = `walk-${name}`;
    for (let i = 0; i < n; i++) { const o = el("option", "", text(i)); o.value = i; s.append(o); }
    s.value = String(value);
    s.onchange = () => view.onChange({ [name === "position" ? "t" : name]: +s.value });
    lab.append(s);
    return lab;
  };
  box.append(select(w.position, view.labels.length, view.t, "position", (i) => `${i}: ${view.shown(view.labels[i])}`));
  if (meta.rung === "transformer") {
    box.append(select(w.layer, meta.config.n_layer, view.layer, "layer", String),
               select(w.head, meta.config.n_head, view.head, "head", String));
  }
  return box;
}

function render(root, v) {
  view = v;
  w = v.words;
  const parts = [controls(), overview(), tokensCard()];
  if (v.run.meta.rung === "transformer") parts.push(embeddingCard(), ...attentionCards(), ffnCard());
  else parts.push(...otherRungCards());
  parts.push(...finalCards());
  root.replaceChildren(...parts);
  Object.assign(root.dataset, { position: v.t, layer: v.layer, head: v.head, rung: v.run.meta.rung });
}

window.RedthreadWalk = { render, layerNorm };

})();
