"use strict";
// The web app of `redthread serve`: asks its own server's JSON API (app.py) and shows the answers.
//   Show attention  POST /api/attention -> the explorer (explorer.js) draws every layer x head, and the
//                                          neuron view one layer's q and k (another layer: asked again)
//                   POST /api/image     -> the same for a test image of an image run (ViT, captioner),
//                                          or for an image file chosen by the user (sent as a data: URL)
//   next token      POST /api/next      -> the top candidates: p (the model) and p sample (after
//                                          temperature, top-k, top-p, min-p), where the cut falls, and
//                                          both distributions' entropies, drawn by next_token.js (as in
//                                          the notebook); a click on a candidate appends it
//   Compare models  POST /api/compare   -> one column per model that reads the text, in the ladder's
//                                          order; the others listed with the characters they lack
//   Step            POST /api/step      -> one token drawn with the settings, appended to the text
// Every request goes through act(): an error answer ({"error": "one line"}) or a lost server is
// shown in #error, never thrown.
// Its words are English (EN below) or Chinese (page/words.js's zh.app, inlined before explorer.js), switched by the
// 中文 / English button (explorer.js's languageToggle, <html lang> set to match); the page opens in ?lang=zh|en, else
// in the language `redthread --lang zh serve` (or REDTHREAD_LANG) wrote into <html lang>. A switch redraws what is on
// show (the explorer, the next-token panel, the comparison) from the answers kept, asking the server nothing. body[data-ready="1"] once the models are listed; body[data-busy]
// counts the actions in flight (tests and screenshots wait for "0").

(() => {

const CONFIG = JSON.parse(document.getElementById("app-config").textContent);
const CANDIDATES = 20;  // rows in the next-token panel

// Every word the app writes: a string, or a function of what it spells out. The markup's fixed words carry
// data-app="KEY" (data-app="KEY.0": an item of a list), data-app-placeholder, data-app-title, data-app-label.
const EN = {
  title: "redthread · look inside a Transformer",
  model: "model",
  textPlaceholder: "type a text (Ctrl+Enter shows its attention)",
  testImage: "test image", ownImage: "or your own",
  run: "Show attention",
  compare: "Compare models",
  compareTip: "P(next token | this text) from every language model here, side by side",
  compareLabel: "the models compared",
  compareTitle: "P(next token | the same text), model by model",
  close: "close",
  notCompared: "Not compared: these models were trained on another alphabet and have never seen some characters of the text.",
  placeholder: ["Pick a model, type a text (or, for an image run, pick one of its test images) and press ",
    ": every layer and head of its attention appears here, and for a language model its next-token distribution on the right."],
  nextLabel: "next token",
  nextTitle: "Next token: P(token | text)",
  nextBefore: ["Shown for a language model after ", "."],
  temperature: "temperature", topK: "top-k", topP: "top-p", minP: "min-p", off: "off", greedy: "greedy",
  step: "Step",
  stepNote: "draws one token with these settings; or click a candidate to append it",
  legendP: "p: the model", legendPs: "p sample: after the settings",
  chars: (n, max) => `${n} / ${max} characters`,
  pretrained: (name) => `${name} (pretrained)`,
  unavailable: (why) => ` — unavailable: ${why}`,
  noModels: "no Transformer, ViT or captioner runs under the runs folder: train one with `redthread train` or `redthread demo`",
  noServer: (path) => `no answer from the server (${path}): is redthread serve still running?`,
  httpError: (path, status) => `${path}: HTTP ${status}`,
  notJson: (path) => `${path}: the answer is not JSON`,
  cannotReadFile: (name) => `cannot read ${name}`,
  badTopK: "top_k: a whole number of 1 or more, or the box left empty (off)",
  rungNoAttention: (model) => `${model} is a ladder rung without attention: it conditions on the text `
    + "without attending to it, so there is no map to draw. Its P(next token | text) is on the right; "
    + "Compare models shows it beside the others.",
  noNext: {
    encoder: (model) => `${model} is an encoder: it reads the whole text at once, in both directions, so it gives no `
      + "next-token distribution (and cannot step).",
    image: (model) => `${model} is an image model: the explorer shows its attention over the image's patches (and a `
      + "captioner's greedy caption, word by word, over the image); no next-token panel here.",
  },
  nextMessage: "The most probable next tokens; the sample is drawn from the kept ones only.",
  context: (json) => `context: ${json}`,
  cannotRead: (error) => ` cannot read this text: ${error}`,
  stats: (e, ppl) => `entropy ${e} nats · perplexity ${ppl}`,
  hasAttention: " · has attention", noAttention: " · no attention",
  rowTitle: (id, json) => `token ${id}: ${json}`,
};
const EXPLORER = window.RedthreadExplorer;
let lang = "en", say = EN;  // the language on show and its words (setLanguage)

// A message in words: thrown, it is shown in #error in the language on show, and again in the other after a switch.
class Said extends Error {
  constructor(key, ...args) {
    super(phrase(key, args));
    this.key = key;
    this.args = args;
  }
}

function phrase(key, args = []) {
  const word = say[key];
  return typeof word === "function" ? word(...args) : word;
}

const told = new Map();  // element id -> () => the message it shows, in the words on show
function tell(id, text) {
  told.set(id, text);
  $(id).textContent = text();
}

const $ = (id) => document.getElementById(id);
const modelSelect = $("model-select"), textInput = $("text-input"), runButton = $("run-button");
const stepButton = $("step-button"), panel = $("next-panel"), indexInput = $("index-input");
const imageFile = $("image-file");
const settings = { temperature: $("temperature"), topK: $("top-k"), topP: $("top-p"), minP: $("min-p") };

// what is on show: the model and text of the last answer of /api/attention, and its kind; the answers drawn,
// kept to draw them again in the other language
let shown = null;
const drawn = { payload: null, dist: null, compare: null };
let inputs = {};  // model name -> what it reads: "text" or "image"
let attends = {};  // model name -> whether it has attention to show (a ladder rung like the bigram has not)
let catalogue = [];  // /api/models
let busy = 0;
const latest = { attention: 0, next: 0 };  // the newest request of each kind; older answers are dropped
// the layer whose q and k the neuron view asked for, by model (-1, the last, until another is asked for)
let neuron = { model: null, layer: -1 };

// ---- talking to the server --------------------------------------------------------------------

async function api(path, body) {
  const init = body === undefined ? {} : {
    method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body),
  };
  let r;
  try {
    r = await fetch(path, init);
  } catch (e) {
    throw new Said("noServer", path);
  }
  let data = null;
  try { data = await r.json(); } catch (e) { /* not JSON: said below */ }
  if (!r.ok) {
    if (data && typeof data.error === "string") {  // the server's own line, and in Chinese where it has one
      const e = new Error(data.error);
      if (typeof data.error_zh === "string") e.zh = data.error_zh;
      throw e;
    }
    throw new Said("httpError", path, r.status);
  }
  if (data === null) throw new Said("notJson", path);
  return data;
}

// Run one user action: errors go to #error, and body[data-busy] counts what is in flight.
async function act(fn) {
  setBusy(+1);
  try {
    await fn();
  } catch (e) {
    showError(e);
  } finally {
    setBusy(-1);
  }
}

function setBusy(change) {
  busy += change;
  document.body.dataset.busy = String(busy);
  runButton.disabled = busy > 0 || !modelSelect.value;
  $("compare-button").disabled = busy > 0 || comparable().length === 0;
  stepButton.disabled = busy > 0 || !shown || shown.kind !== "lm";
}

function showError(e) {
  const message = e instanceof Error ? e.message : String(e);
  tell("error", e instanceof Said ? () => phrase(e.key, e.args) : () => (lang === "zh" && e.zh ? e.zh : message));
  $("error").hidden = false;
}

function clearError() { $("error").hidden = true; }

// ---- models and text --------------------------------------------------------------------------

// A run that cannot be loaded (a corrupt file) is listed, greyed out, with the reason.
async function loadModels() {
  const models = await api("/api/models");
  modelSelect.replaceChildren(...models.map((m) => {
    const o = document.createElement("option");
    o.value = m.name;
    if (m.available === false) {
      o.disabled = true;
      o.title = String(m.reason || `${m.name} is unavailable`);
    }
    return o;
  }));
  const first = models.find((m) => m.available !== false);
  if (first) modelSelect.value = first.name;
  inputs = Object.fromEntries(models.map((m) => [m.name, m.input]));
  attends = Object.fromEntries(models.map((m) => [m.name, m.attention !== false]));
  catalogue = models;
  nameModels();
  modelSelect.disabled = models.length === 0;
  tell("no-models", () => say.noModels);
  $("no-models").hidden = models.length > 0;
  showInput();
}

// Each option's words: the run's name (as it is), pretrained or unavailable (with the reason) in the words on show.
function nameModels() {
  for (const o of modelSelect.options) {
    const m = catalogue.find((c) => c.name === o.value);
    o.textContent = m.source === "pretrained" ? say.pretrained(m.name) : m.name;
    if (m.available === false) {
      const why = o.title.replace(`${m.name} is unavailable: `, "");
      o.textContent += say.unavailable(why.length > 80 ? `${why.slice(0, 79)}…` : why);
    }
  }
}

// A text box for a model that reads text, a test-image number for an image run.
function showInput() {
  const image = inputs[modelSelect.value] === "image";
  $("text-box").hidden = image;
  $("index-box").hidden = !image;
  $("upload-box").hidden = !image;
}

function countChars() {
  const n = textInput.value.length;
  $("char-count").textContent = say.chars(count(n), count(CONFIG.maxChars));
  $("char-count").classList.toggle("over", n > CONFIG.maxChars);
}

function count(n) { return n.toLocaleString("en-US"); }  // 2,000 in every browser and either language

function setText(text) {
  textInput.value = text;
  markHan(textInput, text);
  countChars();
}

// ---- attention and the next-token panel -------------------------------------------------------

// upload: {image: a data: URL, name} for a file of the user's; else the text, or the test image's number
async function showAttention(upload) {
  const model = modelSelect.value, text = textInput.value;
  if (!model) throw new Said("noModels");
  const seq = ++latest.attention;
  if (!upload && inputs[model] === "text" && !attends[model]) {  // a ladder rung: no attention, its P(next | text)
    clearError();
    $("explorer").hidden = true;
    $("placeholder").hidden = false;
    tell("placeholder", () => say.rungNoAttention(model));
    shown = { model, text, kind: "lm" };
    await showNext();
    return;
  }
  let payload;
  if (upload) payload = await api("/api/image", { model, ...upload });
  else if (inputs[model] === "image") payload = await api("/api/image", { model, index: Number(indexInput.value) });  // a bad number is the API's to explain
  else payload = await api("/api/attention", { model, text, neuron_layer: neuron.model === model ? neuron.layer : -1 });
  if (seq !== latest.attention) return;  // a newer request is on its way
  clearError();
  $("placeholder").hidden = true;
  $("explorer").hidden = false;
  drawExplorer(payload);
  shown = { model, text, kind: payload.kind };
  if (payload.kind === "lm") {
    await showNext();
  } else {
    panelOff(model, payload.kind);
  }
}

// The neuron view asks for another layer's q and k: the same text again, with that layer's vectors.
function showVectors(layer) {
  act(async () => {
    neuron = { model: shown.model, layer };
    const seq = ++latest.attention;
    const payload = await api("/api/attention", { model: shown.model, text: shown.text, neuron_layer: layer });
    if (seq !== latest.attention) return;
    clearError();
    drawExplorer(payload);
  });
}

function drawExplorer(payload) {
  drawn.payload = payload;
  EXPLORER.render($("explorer"), payload, { ...EXPLORER.languageOptions(lang), vectorsFor: showVectors });
  modelTextLang($("explorer"));
}

// Model text keeps the glyphs of its own script whatever the page's language: Chinese characters are marked zh-CN
// (the text box, the explorer's title and tokens, the candidates' and the comparison's tokens).
const HAN = /[\u3000-\u303f\u3400-\u9fff\uf900-\ufaff\uff00-\uffef]/;
function modelTextLang(root) {
  for (const el of root.querySelectorAll("#title, #head-svg, .tok")) markHan(el, el.textContent);
}

function markHan(el, text) {
  if (HAN.test(text)) el.setAttribute("lang", "zh-CN");
  else el.removeAttribute("lang");
}

function panelOff(model, kind) {
  latest.next++;  // an answer still on its way is for another model
  panel.classList.add("off");
  panel.dataset.kind = kind;
  for (const el of Object.values(settings)) el.disabled = true;
  tell("next-message", () => say.noNext[kind](model));
  drawn.dist = null;
  $("next-stats").textContent = "";
  $("candidates").replaceChildren();
}

// The settings as the API takes them: an endpoint of a slider (or an empty box) means "off".
function sampling() {
  const k = settings.topK.value.trim(), p = +settings.topP.value, m = +settings.minP.value;
  if (k !== "" && !(Number.isInteger(Number(k)) && Number(k) >= 1)) throw new Said("badTopK");
  return {
    temperature: +settings.temperature.value,
    top_k: k === "" ? null : Number(k),  // a bad number is the API's to explain (422)
    top_p: p >= 1 ? null : p,
    min_p: m <= 0 ? null : m,
  };
}

function showSettings() {
  const t = +settings.temperature.value, p = +settings.topP.value, m = +settings.minP.value;
  $("temperature-value").textContent = t === 0 ? `0 ${say.greedy}` : t.toFixed(2);
  $("top-p-value").textContent = p >= 1 ? say.off : p.toFixed(2);
  $("min-p-value").textContent = m <= 0 ? say.off : m.toFixed(2);
}

async function showNext() {
  if (!shown || shown.kind !== "lm") return;
  const seq = ++latest.next;
  const dist = await api("/api/next", { model: shown.model, text: shown.text, candidates: CANDIDATES, ...sampling() });
  if (seq !== latest.next) return;
  clearError();
  panel.classList.remove("off");
  panel.dataset.kind = "lm";
  for (const el of Object.values(settings)) el.disabled = false;
  tell("next-message", () => say.nextMessage);
  drawNext(dist);
}

// the stats and one row per candidate, drawn as the notebook draws them (viz/assets/next_token.js)
function drawNext(dist) {
  drawn.dist = dist;
  window.RedthreadNextToken.render(panel, dist, {
    onAppend: (token) => act(() => extend(token)), words: EXPLORER.languageOptions(lang).nextWords });
  modelTextLang(panel);
}

function pct(p) { return `${(100 * p).toFixed(1)}%`; }

function span(className, text) {
  const el = document.createElement("span");
  el.className = className;
  if (text !== undefined) el.textContent = text;
  return el;
}

// Append a token to the text, then show the attention and the distribution of the longer text.
async function extend(token) {
  setText(textInput.value + token);
  await showAttention();
}

async function step() {
  const answer = await api("/api/step", { model: shown.model, text: textInput.value, candidates: CANDIDATES, ...sampling() });
  setText(answer.text);
  await showAttention();
}

// ---- the comparison: P(next | the same text) from every language model -------------------------

function comparable() {  // the language models on offer: the runs that read text (a pretrained encoder gives no next token)
  return catalogue.filter((m) => m.available !== false && m.input === "text" && m.source === "run").map((m) => m.name);
}

async function compareModels() {
  const text = textInput.value;
  const answer = await api("/api/compare", { models: comparable(), text, candidates: 8 });
  clearError();
  drawCompare(answer);
}

function drawCompare(answer) {
  drawn.compare = answer;
  $("compare-text").textContent = say.context(JSON.stringify(answer.text));
  $("compare-columns").replaceChildren(...answer.models.map(rungColumn));
  // the runs whose alphabet lacks some of the text's characters: named, with what they lack, not compared
  $("compare-unreadable").replaceChildren(...answer.unreadable.map((u) => {
    const li = document.createElement("li");
    li.dataset.model = u.model;
    li.title = described(u);
    li.append(span("name", u.model), say.cannotRead(u.error, u.error_zh));
    return li;
  }));
  $("compare-unreadable-box").hidden = answer.unreadable.length === 0;
  $("compare").hidden = false;
  modelTextLang($("compare"));
}

function described(a) { return lang === "zh" && a.description_zh ? a.description_zh : a.description; }

function rungColumn(a) {
  const box = document.createElement("div");
  box.className = "rung";
  box.dataset.model = a.model;
  const title = document.createElement("h3");
  title.textContent = a.model;
  title.title = described(a);
  const stats = span("stats", say.stats(a.entropy.toFixed(3), a.perplexity.toFixed(2))
    + (a.attention ? say.hasAttention : say.noAttention));
  box.append(title, stats);
  const max = Math.max(...a.candidates.map((c) => c.p)) || 1;
  for (const c of a.candidates) {
    const row = span("row"), bar = span("bar");
    bar.style.width = `${(100 * c.p / max).toFixed(2)}%`;
    row.title = say.rowTitle(c.id, JSON.stringify(c.token));
    row.append(span("tok", window.RedthreadExplorer.shown(c.token)), bar, span("num", pct(c.p)));
    box.append(row);
  }
  return box;
}

// ---- wiring ---------------------------------------------------------------------------------

textInput.maxLength = CONFIG.maxChars;
textInput.oninput = () => {
  countChars();
  markHan(textInput, textInput.value);
};
textInput.onkeydown = (e) => {
  if (e.key === "Enter" && (e.ctrlKey || e.metaKey) && !runButton.disabled) act(showAttention);
};
runButton.onclick = () => act(showAttention);
$("compare-button").onclick = () => act(compareModels);
$("compare-close").onclick = () => { $("compare").hidden = true; };
stepButton.onclick = () => act(step);
function readDataURL(file) {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(reader.result);
    reader.onerror = () => reject(new Said("cannotReadFile", file.name));
    reader.readAsDataURL(file);
  });
}

imageFile.onchange = () => {
  const file = imageFile.files[0];
  if (!file) return;
  act(async () => {
    const image = await readDataURL(file);
    imageFile.value = "";  // choosing the same file again is a new choice
    await showAttention({ image, name: file.name });
  });
};
indexInput.onkeydown = (e) => {
  if (e.key === "Enter" && !runButton.disabled) act(showAttention);
};
modelSelect.onchange = () => {
  showInput();
  if (shown) act(showAttention);
};
for (const el of Object.values(settings)) {
  el.oninput = () => {
    showSettings();
    if (el.type === "number") act(showNext);  // a slider asks when it is let go (onchange)
  };
  el.onchange = () => { if (el.type === "range") act(showNext); };
}
// ---- the language -----------------------------------------------------------------------------

// Write every word in `to` ("en" or "zh"): the markup's fixed words, the messages on show, and what is drawn again
// from the answers kept. explorer.js's languageToggle has set <html lang> and the button.
function setLanguage(to) {
  lang = to;
  say = { ...EN, ...EXPLORER.languageOptions(lang).appWords };
  const item = (key) => {
    const [name, i] = key.split(".");
    return i === undefined ? say[name] : say[name][+i];
  };
  for (const el of document.querySelectorAll("[data-app]")) el.textContent = item(el.dataset.app);
  for (const el of document.querySelectorAll("[data-app-placeholder]")) el.placeholder = item(el.dataset.appPlaceholder);
  for (const el of document.querySelectorAll("[data-app-title]")) el.title = item(el.dataset.appTitle);
  for (const el of document.querySelectorAll("[data-app-label]")) el.setAttribute("aria-label", item(el.dataset.appLabel));
  for (const [id, text] of told) $(id).textContent = text();
  nameModels();
  countChars();
  showSettings();
  if (drawn.payload && !$("explorer").hidden) drawExplorer(drawn.payload);
  if (drawn.dist) drawNext(drawn.dist);
  if (drawn.compare) drawCompare(drawn.compare);
  markHan(textInput, textInput.value);
}

EXPLORER.languageToggle($("lang-toggle"), EXPLORER.pageLanguage(), setLanguage);
showSettings();
countChars();
act(loadModels).then(() => { document.body.dataset.ready = "1"; });

})();
