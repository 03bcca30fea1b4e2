"use strict";
// Text -> token ids in the browser, as redthread's tokenizers do it (data/tokenizers.py), from the "tokenizer"
// field of a model.json (interop/onnx_export.py, tokenizer_description):
//   char: one token per character (code point, not UTF-16 unit); a character outside the vocabulary is not
//         encoded: it is listed in `unknown`, as redthread refuses it (encode(errors="strict")).
//   bpe:  byte-level BPE (Radford et al. 2019) from the Hugging Face tokenizer.json it carries: GPT-2's
//         pre-tokenizing regex, the text's UTF-8 bytes written in GPT-2's printable byte alphabet, then the
//         merges applied lowest rank first (Sennrich et al. 2016), as the tokenizers library does; any text encodes.
// window.RedthreadTokenizer.load(description) -> { kind, vocabSize, encode(text) -> {ids, unknown},
//   decode(ids) -> text, label(id) -> the token's text (U+FFFD where a BPE token holds part of a character) }.
// tests/viz/test_page_browser.py checks encode and decode against the Python tokenizers.

(() => {

function charTokenizer(desc) {
  const ids = new Map(desc.tokens.map((t, i) => [t, i]));
  return {
    kind: "char",
    vocabSize: desc.tokens.length,
    encode(text) {
      const out = [], unknown = new Set();
      for (const ch of text) {  // by code point: an emoji is one character
        const id = ids.get(ch);
        if (id === undefined) unknown.add(ch); else out.push(id);
      }
      return { ids: out, unknown: [...unknown] };
    },
    decode(list) { return list.map((i) => desc.tokens[i]).join(""); },
    label(id) { return desc.tokens[id]; },
  };
}

// GPT-2's byte alphabet: each byte's printable stand-in (the same table as onnx_export._byte_alphabet).
function byteAlphabet() {
  const printable = [];
  for (let b = 33; b <= 126; b++) printable.push(b);
  for (let b = 161; b <= 172; b++) printable.push(b);
  for (let b = 174; b <= 255; b++) printable.push(b);
  const codes = printable.slice();
  let n = 0;
  for (let b = 0; b < 256; b++) {
    if (!printable.includes(b)) { printable.push(b); codes.push(256 + n); n += 1; }
  }
  const table = new Array(256);
  printable.forEach((b, i) => { table[b] = String.fromCodePoint(codes[i]); });
  return table;
}

// GPT-2's pre-tokenizer: contractions, letters, numbers, other symbols, each with one leading space; whitespace
const SPLIT = /'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+/gu;

function bpeTokenizer(desc) {
  const hf = desc.hf_tokenizer, vocab = new Map(Object.entries(hf.model.vocab));
  const ranks = new Map(hf.model.merges.map((m, i) => [Array.isArray(m) ? m.join(" ") : m, i]));
  const bytes = byteAlphabet(), utf8 = new TextEncoder(), cache = new Map();
  const prefix = hf.pre_tokenizer && hf.pre_tokenizer.add_prefix_space;

  function merge(word) {  // a word's symbols -> its tokens, lowest-ranked adjacent pair merged first
    let parts = Array.from(word);
    while (parts.length > 1) {
      let best = -1, rank = Infinity;
      for (let i = 0; i < parts.length - 1; i++) {
        const r = ranks.get(parts[i] + " " + parts[i + 1]);
        if (r !== undefined && r < rank) { rank = r; best = i; }
      }
      if (best < 0) break;
      const a = parts[best], b = parts[best + 1], next = [];
      for (let i = 0; i < parts.length; i++) {  // every occurrence, left to right
        if (i < parts.length - 1 && parts[i] === a && parts[i + 1] === b) { next.push(a + b); i += 1; } else next.push(parts[i]);
      }
      parts = next;
    }
    return parts;
  }

  return {
    kind: "bpe",
    vocabSize: desc.vocab_size,
    encode(text) {
      const ids = [];
      const source = prefix && text && !text.startsWith(" ") ? " " + text : text;
      for (const piece of source.match(SPLIT) || []) {
        let got = cache.get(piece);
        if (got === undefined) {
          const word = Array.from(utf8.encode(piece), (b) => bytes[b]).join("");
          got = merge(word).map((t) => vocab.get(t));
          if (cache.size < 10000) cache.set(piece, got);
        }
        ids.push(...got);
      }
      return { ids, unknown: [] };
    },
    decode(list) {
      const all = list.flatMap((i) => desc.token_bytes[i]);
      return new TextDecoder("utf-8").decode(Uint8Array.from(all));  // an incomplete character shows as U+FFFD
    },
    label(id) { return desc.tokens[id]; },
  };
}

function load(desc) {
  if (!desc) throw new Error("this model carries no tokenizer");
  if (desc.kind === "char") return charTokenizer(desc);
  if (desc.kind === "bpe") return bpeTokenizer(desc);
  throw new Error(`unknown tokenizer kind ${desc.kind}`);
}

window.RedthreadTokenizer = { load };

})();
