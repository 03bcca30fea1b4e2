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
// shown in #error, never thrown. body[data-ready="1"] once the models are listed; body[data-busy]
// counts the actions in flight (tests and screenshots wait for "0").

(() => {

const CONFIG = JSON.parse(document.getElementById("app-config").textContent);
const CANDIDATES = 20;  // rows in the next-token panel
const NO_MODELS = "no Transformer, ViT or captioner runs under the runs folder: train one with `redthread train` or `redthread demo`";

const $ = (id) => document.getElementById(id);
const modelSelect = $("model-select"), textInput = $("text-input"), runButton = $("run-button");
const stepButton = $("step-button"), panel = $("next-panel"), indexInput = $("index-input");
const imageFile = $("image-file");
const settings = { temperature: $("temperature"), topK: $("top-k"), topP: $("top-p"), minP: $("min-p") };

// what is on show: the model and text of the last answer of /api/attention, and its kind
let shown = null;
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
    throw new Error(`no answer from the server (${path}): is redthread serve still running?`);
  }
  let data = null;
  try { data = await r.json(); } catch (e) { /* not JSON: said below */ }
  if (!r.ok) throw new Error(data && typeof data.error === "string" ? data.error : `${path}: HTTP ${r.status}`);
  if (data === null) throw new Error(`${path}: the answer is not JSON`);
  return data;
}

// Run one user action: errors go to #error, and body[data-busy] counts what is in flight.
async function act(fn) {
  setBusy(+1);
  try {
    await fn();
  } catch (e) {
    showError(e instanceof Error ? e.message : String(e));
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

function showError(message) {
  $("error").textContent = message;
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
    o.textContent = m.source === "pretrained" ? `${m.name} (pretrained)` : m.name;
    if (m.available === false) {
      const reason = String(m.reason || `${m.name} is unavailable`);
      const why = reason.replace(`${m.name} is unavailable: `, "");
      o.disabled = true;
      o.title = reason;
      o.textContent += ` — unavailable: ${why.length > 80 ? `${why.slice(0, 79)}…` : why}`;
    }
    return o;
  }));
  const first = models.find((m) => m.available !== false);
  if (first) modelSelect.value = first.name;
  inputs = Object.fromEntries(models.map((m) => [m.name, m.input]));
  attends = Object.fromEntries(models.map((m) => [m.name, m.attention !== false]));
  catalogue = models;
  modelSelect.disabled = models.length === 0;
  $("no-models").textContent = NO_MODELS;
  $("no-models").hidden = models.length > 0;
  showInput();
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
  $("char-count").textContent = `${n.toLocaleString()} / ${CONFIG.maxChars.toLocaleString()} characters`;
  $("char-count").classList.toggle("over", n > CONFIG.maxChars);
}

function setText(text) {
  textInput.value = text;
  countChars();
}

// ---- attention and the next-token panel -------------------------------------------------------

// upload: {image: a data: URL, name} for a file of the user's; else the text, or the test image's number
async function showAttention(upload) {
  const model = modelSelect.value, text = textInput.value;
  if (!model) throw new Error(NO_MODELS);
  const seq = ++latest.attention;
  if (!upload && inputs[model] === "text" && !attends[model]) {  // a ladder rung: no attention, its P(next | text)
    clearError();
    $("explorer").hidden = true;
    $("placeholder").hidden = false;
    $("placeholder").textContent = `${model} is a ladder rung without attention: it conditions on the text `
      + "without attending to it, so there is no map to draw. Its P(next token | text) is on the right; "
      + "Compare models shows it beside the others.";
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
  window.RedthreadExplorer.render($("explorer"), payload, { vectorsFor: showVectors });
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
    window.RedthreadExplorer.render($("explorer"), payload, { vectorsFor: showVectors });
  });
}

const NO_NEXT = {
  encoder: "is an encoder: it reads the whole text at once, in both directions, so it gives no "
    + "next-token distribution (and cannot step).",
  image: "is an image model: the explorer shows its attention over the image's patches (and a "
    + "captioner's greedy caption, word by word, over the image); no next-token panel here.",
};

function panelOff(model, kind) {
  latest.next++;  // an answer still on its way is for another model
  panel.classList.add("off");
  panel.dataset.kind = kind;
  for (const el of Object.values(settings)) el.disabled = true;
  $("next-message").textContent = `${model} ${NO_NEXT[kind]}`;
  $("next-stats").textContent = "";
  $("candidates").replaceChildren();
}

// The settings as the API takes them: an endpoint of a slider (or an empty box) means "off".
function sampling() {
  const k = settings.topK.value.trim(), p = +settings.topP.value, m = +settings.minP.value;
  return {
    temperature: +settings.temperature.value,
    top_k: k === "" ? null : Number(k),  // a bad number is the API's to explain (422)
    top_p: p >= 1 ? null : p,
    min_p: m <= 0 ? null : m,
  };
}

function showSettings() {
  const t = +settings.temperature.value, p = +settings.topP.value, m = +settings.minP.value;
  $("temperature-value").textContent = t === 0 ? "0 greedy" : t.toFixed(2);
  $("top-p-value").textContent = p >= 1 ? "off" : p.toFixed(2);
  $("min-p-value").textContent = m <= 0 ? "off" : m.toFixed(2);
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
  $("next-message").textContent = "The most probable next tokens; the sample is drawn from the kept ones only.";
  // the stats and one row per candidate, drawn as the notebook draws them (viz/assets/next_token.js)
  window.RedthreadNextToken.render(panel, dist, { onAppend: (token) => act(() => extend(token)) });
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
  $("compare-text").textContent = `context: ${JSON.stringify(answer.text)}`;
  $("compare-columns").replaceChildren(...answer.models.map(rungColumn));
  // the runs whose alphabet lacks some of the text's characters: named, with what they lack, not compared
  $("compare-unreadable").replaceChildren(...answer.unreadable.map((u) => {
    const li = document.createElement("li");
    li.dataset.model = u.model;
    li.title = u.description;
    li.append(span("name", u.model), ` cannot read this text: ${u.error}`);
    return li;
  }));
  $("compare-unreadable-box").hidden = answer.unreadable.length === 0;
  $("compare").hidden = false;
}

function rungColumn(a) {
  const box = document.createElement("div");
  box.className = "rung";
  box.dataset.model = a.model;
  const title = document.createElement("h3");
  title.textContent = a.model;
  title.title = a.description;
  const stats = span("stats", `entropy ${a.entropy.toFixed(3)} nats · perplexity ${a.perplexity.toFixed(2)}`
    + (a.attention ? " · has attention" : " · no attention"));
  box.append(title, stats);
  const max = Math.max(...a.candidates.map((c) => c.p)) || 1;
  for (const c of a.candidates) {
    const row = span("row"), bar = span("bar");
    bar.style.width = `${(100 * c.p / max).toFixed(2)}%`;
    row.title = `token ${c.id}: ${JSON.stringify(c.token)}`;
    row.append(span("tok", window.RedthreadExplorer.shown(c.token)), bar, span("num", pct(c.p)));
    box.append(row);
  }
  return box;
}

// ---- wiring ---------------------------------------------------------------------------------

textInput.maxLength = CONFIG.maxChars;
textInput.oninput = countChars;
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
    reader.onerror = () => reject(new Error(`cannot read ${file.name}`));
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
showSettings();
countChars();
act(loadModels).then(() => { document.body.dataset.ready = "1"; });

})();
