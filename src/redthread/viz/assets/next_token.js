"use strict";
// The next-token view: P(next token | text) as Inspector.next_token answers it (viz/inspector.py),
// drawn by this one script on two pages, with next_token.css:
//   the notebook's page (rt.show_next_token, viz/notebook.py) carries the answer as JSON in its element
//     #next-token and is drawn once, when it loads;
//   the web app (redthread serve, serve/assets/app.js) draws each answer of POST /api/next, its rows
//     buttons that append their token to the text.
// window.RedthreadNextToken.render(root, dist, options) fills root's #next-stats (the entropies of the
// model's distribution and of the one sampling draws from) and #candidates: one row per candidate, in
// the model's order, p and p sample as bars, and the line where the settings cut. options:
//   onAppend(token): the rows become buttons that call it (the app's click-to-append)
//   context: the stats also count the text's tokens (the notebook's page, where no text box shows it)
//   words: the words to draw in, over the English ones (EN below): the live page's Chinese (page/words.js)
// The notebook's page opens in its <html lang> (redthread's --lang, set_language) or ?lang=, and its 中文 / English
// button (explorer.js's languageToggle) draws it again in the other: its fixed words (data-say), the settings line
// (from #settings' data-values, numbers as Python wrote them), the model's description and the notice (data-zh).
// It finds #next-stats and #candidates in root, or .next-stats and .candidates (several panels on one page:
// the live page's runs side by side, whose cut line then has no id).
// Tokens are drawn as the explorer draws them: explorer.js, which the pages inline before this script.

(() => {  // the page's other scripts see only window.RedthreadNextToken

function count(n) { return n.toLocaleString("en-US"); }  // 50,257 in every browser, as the English around it
function pct(p) { return `${(100 * p).toFixed(1)}%`; }

// Every word the view draws: a string, or a function of the numbers it spells out (counts come formatted).
const EN = {
  stats: (e, ppl, V, es, ppls) => `the model: entropy ${e} nats · perplexity ${ppl} of ${V} tokens; sampled from: `
    + `entropy ${es} nats · perplexity ${ppls}`,
  context: (n) => ` · context: ${n} tokens`,
  noCut: (V) => `— no cut: all ${V} tokens kept —`,
  cutBelow: (kept, V) => `— cut below the list: ${kept} of ${V} tokens kept —`,
  cut: (kept, V) => `— cut: ${kept} of ${V} tokens kept —`,
  head: ["token", "", "p", "sample"],
  rowTitle: (id, json) => `token ${id}: ${json}`,
  append: " · click to append it",
  cutCell: "cut",
  // the notebook's page
  title: "Next token: P(token | text)",
  settings: (s, greedy) => `sampling with temperature ${s.temperature} · top-k ${s.top_k || "off"} · `
    + `top-p ${s.top_p || "off"} · min-p ${s.min_p || "off"}${greedy ? " (greedy: the most probable token)" : ""}`,
  legendP: "p: the model's probability",
  legendPs: "sample: after the settings, renormalised over the kept tokens",
};
const HAN = /[\u3000-\u303f\u3400-\u9fff\uf900-\ufaff\uff00-\uffef]/;  // Chinese characters and punctuation: lang zh-CN
let say = EN;

function element(tag, className, text) {
  const el = document.createElement(tag);
  if (className) el.className = className;
  if (text !== undefined) el.textContent = text;
  return el;
}

function statsText(dist, context) {
  const text = say.stats(dist.entropy.toFixed(3), dist.perplexity.toFixed(2), count(dist.vocab_size),
    dist.entropy_sample.toFixed(3), dist.perplexity_sample.toFixed(2));
  return context ? text + say.context(dist.tokens.length) : text;
}

function cutText(dist, listed) {
  const V = count(dist.vocab_size);
  if (dist.kept === dist.vocab_size) return say.noCut(V);
  if (dist.kept > listed) return say.cutBelow(count(dist.kept), V);
  return say.cut(count(dist.kept), V);
}

function row(c, max, onAppend) {
  const el = element(onAppend ? "button" : "div", c.kept ? "cand" : "cand cut");
  Object.assign(el.dataset, { id: c.id, p: c.p, pSample: c.p_sample });
  el.title = say.rowTitle(c.id, JSON.stringify(c.token)) + (onAppend ? say.append : "");
  const bars = element("span", "bars"), p = element("span", "bar p"), ps = element("span", "bar ps");
  p.style.width = `${(100 * c.p / max).toFixed(2)}%`;  // the longest bar of either kind is the full width
  ps.style.width = `${(100 * c.p_sample / max).toFixed(2)}%`;
  bars.append(p, ps);
  const tok = element("span", "tok", window.RedthreadExplorer.shown(c.token));
  if (HAN.test(c.token)) tok.lang = "zh-CN";
  el.append(tok, bars,
    element("span", "num p", pct(c.p)), element("span", "num ps", c.kept ? pct(c.p_sample) : say.cutCell));
  if (onAppend) el.onclick = () => onAppend(c.token);
  return el;
}

// The kept candidates come first (every filter keeps the most probable tokens), so the cut is a line
// after the last kept row; after the list when every candidate listed is kept.
function rows(dist, onAppend, id) {
  const cands = dist.candidates;
  const max = Math.max(...cands.map((c) => Math.max(c.p, c.p_sample))) || 1;
  const head = element("div", "cand-head");
  head.append(...say.head.map((word) => element("span", "", word)));
  const cut = element("div", "cut-line", cutText(dist, cands.length));
  if (id) cut.id = "kept-count";
  const out = [head];
  cands.forEach((c, i) => {
    out.push(row(c, max, onAppend));
    const last = i === cands.length - 1;
    if (c.kept && (last ? dist.kept < dist.vocab_size : !cands[i + 1].kept)) out.push(cut);
  });
  if (!out.includes(cut)) out.push(cut);  // every candidate listed is kept, and so are all the others
  return out;
}

function render(root, dist, options = {}) {
  say = { ...EN, ...(options.words || {}) };
  const byId = root.querySelector("#candidates") !== null;
  const stats = root.querySelector(byId ? "#next-stats" : ".next-stats");
  stats.textContent = statsText(dist, options.context);
  stats.dataset.entropy = dist.entropy;
  stats.dataset.entropySample = dist.entropy_sample;
  root.querySelector(byId ? "#candidates" : ".candidates").replaceChildren(...rows(dist, options.onAppend, byId));
}

window.RedthreadNextToken = { render };

// The notebook's page in a language: its own lines, then the stats and rows.
function drawPage(dist, lang) {
  const words = window.RedthreadExplorer.languageOptions(lang).nextWords;
  say = { ...EN, ...words };
  for (const el of document.querySelectorAll("[data-say]")) el.textContent = say[el.dataset.say];
  const settings = document.getElementById("settings");
  const values = JSON.parse(settings.dataset.values);
  settings.textContent = say.settings(values, values.greedy);
  for (const el of document.querySelectorAll("#model, #notice")) {
    if (el.dataset.en === undefined) el.dataset.en = el.textContent;  // as Python wrote it
    el.textContent = lang === "zh" ? el.dataset.zh : el.dataset.en;
  }
  const title = document.getElementById("title");
  if (HAN.test(title.textContent)) title.lang = "zh-CN";
  render(document.body, dist, { context: true, words });
}

// the notebook's page carries its distribution; the web app has none and calls render() itself
const embedded = document.getElementById("next-token");
if (embedded) {
  const dist = JSON.parse(embedded.textContent);
  const { languageToggle, pageLanguage } = window.RedthreadExplorer;
  const toggle = document.getElementById("lang-toggle");
  if (toggle) languageToggle(toggle, pageLanguage(), (lang) => drawPage(dist, lang));
  else drawPage(dist, pageLanguage());
  document.body.dataset.ready = "1";  // for tests and screenshots: everything is drawn
}

})();
