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
// Tokens are drawn as the explorer draws them: explorer.js, which the pages inline before this script.

(() => {  // the page's other scripts see only window.RedthreadNextToken

function count(n) { return n.toLocaleString("en-US"); }  // 50,257 in every browser, as the English around it
function pct(p) { return `${(100 * p).toFixed(1)}%`; }

function element(tag, className, text) {
  const el = document.createElement(tag);
  if (className) el.className = className;
  if (text !== undefined) el.textContent = text;
  return el;
}

function statsText(dist, context) {
  const text = `the model: entropy ${dist.entropy.toFixed(3)} nats · perplexity ${dist.perplexity.toFixed(2)} `
    + `of ${count(dist.vocab_size)} tokens; sampled from: entropy ${dist.entropy_sample.toFixed(3)} nats · `
    + `perplexity ${dist.perplexity_sample.toFixed(2)}`;
  return context ? `${text} · context: ${dist.tokens.length} tokens` : text;
}

function cutText(dist, listed) {
  const V = count(dist.vocab_size);
  if (dist.kept === dist.vocab_size) return `— no cut: all ${V} tokens kept —`;
  if (dist.kept > listed) return `— cut below the list: ${count(dist.kept)} of ${V} tokens kept —`;
  return `— cut: ${count(dist.kept)} of ${V} tokens kept —`;
}

function row(c, max, onAppend) {
  const el = element(onAppend ? "button" : "div", c.kept ? "cand" : "cand cut");
  Object.assign(el.dataset, { id: c.id, p: c.p, pSample: c.p_sample });
  el.title = `token ${c.id}: ${JSON.stringify(c.token)}` + (onAppend ? " · click to append it" : "");
  const bars = element("span", "bars"), p = element("span", "bar p"), ps = element("span", "bar ps");
  p.style.width = `${(100 * c.p / max).toFixed(2)}%`;  // the longest bar of either kind is the full width
  ps.style.width = `${(100 * c.p_sample / max).toFixed(2)}%`;
  bars.append(p, ps);
  el.append(element("span", "tok", window.RedthreadExplorer.shown(c.token)), bars,
    element("span", "num p", pct(c.p)), element("span", "num ps", c.kept ? pct(c.p_sample) : "cut"));
  if (onAppend) el.onclick = () => onAppend(c.token);
  return el;
}

// The kept candidates come first (every filter keeps the most probable tokens), so the cut is a line
// after the last kept row; after the list when every candidate listed is kept.
function rows(dist, onAppend) {
  const cands = dist.candidates;
  const max = Math.max(...cands.map((c) => Math.max(c.p, c.p_sample))) || 1;
  const head = element("div", "cand-head");
  head.append(element("span", "", "token"), element("span", "", ""), element("span", "", "p"),
    element("span", "", "sample"));
  const cut = element("div", "cut-line", cutText(dist, cands.length));
  cut.id = "kept-count";
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
  const stats = root.querySelector("#next-stats");
  stats.textContent = statsText(dist, options.context);
  stats.dataset.entropy = dist.entropy;
  stats.dataset.entropySample = dist.entropy_sample;
  root.querySelector("#candidates").replaceChildren(...rows(dist, options.onAppend));
}

window.RedthreadNextToken = { render };

// the notebook's page carries its distribution; the web app has none and calls render() itself
const embedded = document.getElementById("next-token");
if (embedded) {
  render(document.body, JSON.parse(embedded.textContent), { context: true });
  document.body.dataset.ready = "1";  // for tests and screenshots: everything is drawn
}

})();
