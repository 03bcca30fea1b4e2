"use strict";
// How the live page turns next-token logits into a choice (claim C12: generation samples P(next | context)),
// with the semantics of redthread.generate (generate/processors.py and generate/config.py), in their fixed order:
//
//   temperature t   the top logit subtracted, then divided by t (t = 1: nothing; t = 0: greedy, below)
//   top-k           keep the k largest logits and any tied with the k-th
//   top-p           sort ascending, drop the low tail whose total probability is <= 1 - p; the top token stays
//   min-p           drop tokens whose probability is below p times the top token's (after the filters above)
//   greedy (t = 0)  one-hot on the first largest logit (torch.argmax); the filters are left out
//
// A setting that does nothing (top-k off, top-p 1, min-p 0) is left out, as build_processors does. The page has
// no repetition penalty. Where it departs: the page computes in float64 (redthread in float32: a probability
// differs by ~1e-7), and where tied logits straddle the top-p boundary it keeps the tied tokens of lower id (a
// stable sort); torch's sort is not stable beyond a few elements, so redthread keeps the same number of them but
// not always the same ones.
//
// Sampling draws from the renormalised distribution with a seeded generator of its own, xoshiro128** (Blackman &
// Vigna 2018, "Scrambled linear pseudorandom number generators"), its 128-bit state filled from the seed by
// SplitMix32; one draw takes 53 random bits u in [0, 1) and returns the first token whose cumulative probability
// (in id order) exceeds u. Not torch's generator: the same seed draws other tokens than redthread does; the
// tests check the draws' distribution against the exact one (total variation) and the seed's reproducibility.
//
// window.RedthreadSampling = { probabilities(logits, settings), entropy(p), argmax(x), Rng, draw(p, rng),
//   distribution(logits, settings, label, candidates) } (the last: the object next_token.js draws).

(() => {

function argmax(x) {  // the first largest, as torch.argmax
  let best = 0;
  for (let i = 1; i < x.length; i++) if (x[i] > x[best]) best = i;
  return best;
}

function softmax(x) {
  let top = -Infinity;
  for (const v of x) if (v > top) top = v;
  const e = new Float64Array(x.length);
  let total = 0;
  for (let i = 0; i < x.length; i++) { e[i] = x[i] === -Infinity ? 0 : Math.exp(x[i] - top); total += e[i]; }
  for (let i = 0; i < x.length; i++) e[i] /= total;
  return e;
}

function entropy(p) {  // -sum p log p, in nats; a zero probability adds nothing
  let h = 0;
  for (const v of p) if (v > 0) h -= v * Math.log(v);
  return Math.max(0, h);
}

// settings: { temperature, top_k, top_p, min_p }, null (or absent) for off, as SampleConfig's fields.
// -> { p: the model's distribution, pSample: the one sampling draws from, kept: how many tokens it keeps, greedy }
function probabilities(logits, settings = {}) {
  const V = logits.length, t = settings.temperature ?? 1;
  const p = softmax(logits);
  if (t === 0) {
    const pSample = new Float64Array(V);
    pSample[argmax(logits)] = 1;
    return { p, pSample, kept: 1, greedy: true };
  }
  let x = Float64Array.from(logits);
  if (t !== 1) {
    const top = Math.max(...x);
    x = x.map((v) => (v === top ? 0 : (v - top) / t));
  }
  const k = settings.top_k;
  if (k !== null && k !== undefined) {
    const kth = Float64Array.from(x).sort().reverse()[Math.min(k, V) - 1];  // the k-th largest
    x = x.map((v) => (v < kth ? -Infinity : v));
  }
  const topP = settings.top_p;
  if (topP !== null && topP !== undefined && topP < 1) {
    const order = Array.from(x.keys()).sort((a, b) => x[a] - x[b] || a - b);  // ascending; ties by id (stable)
    const probs = softmax(order.map((i) => x[i]));
    let mass = 0;
    const drop = [];
    for (let j = 0; j < V - 1; j++) {  // the most probable (the last) always stays
      mass += probs[j];
      if (mass <= 1 - topP) drop.push(order[j]);
    }
    for (const i of drop) x[i] = -Infinity;
  }
  const minP = settings.min_p;
  if (minP !== null && minP !== undefined && minP > 0) {
    const probs = softmax(x), floor = minP * Math.max(...probs);
    x = x.map((v, i) => (probs[i] < floor ? -Infinity : v));
  }
  const pSample = softmax(x);
  return { p, pSample, kept: pSample.reduce((n, v) => n + (v > 0 ? 1 : 0), 0), greedy: false };
}

// ---- a seeded generator: xoshiro128** with a SplitMix32 seeding ------------------------------------------

function splitmix32(state) {  // -> [next state, output], 32-bit
  state = (state + 0x9e3779b9) >>> 0;
  let z = state;
  z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
  z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
  return [state, (z ^ (z >>> 16)) >>> 0];
}

class Rng {
  // seed: an integer from 0 to 2**53 - 1; its low and high 32 bits start two SplitMix32 streams
  constructor(seed) {
    if (!Number.isSafeInteger(seed) || seed < 0) throw new Error(`a seed is an integer from 0 to 2**53 - 1, got ${seed}`);
    let a = seed >>> 0, b = Math.floor(seed / 2 ** 32) ^ 0x6a09e667, out;
    this.s = new Uint32Array(4);
    [a, out] = splitmix32(a); this.s[0] = out;
    [a, out] = splitmix32(a); this.s[1] = out;
    [b, out] = splitmix32(b); this.s[2] = out;
    [b, out] = splitmix32(b); this.s[3] = out;
    if (this.s.every((v) => v === 0)) this.s[0] = 1;  // the one state xoshiro cannot leave
  }

  next32() {  // xoshiro128**: rotl(s1 * 5, 7) * 9, then the state's xor-shift step
    const s = this.s;
    const result = Math.imul(rotl(Math.imul(s[1], 5), 7), 9) >>> 0;
    const t = s[1] << 9;
    s[2] ^= s[0]; s[3] ^= s[1]; s[1] ^= s[2]; s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 11);
    return result;
  }

  uniform() {  // 53 random bits: a double in [0, 1)
    const hi = this.next32() >>> 5, lo = this.next32() >>> 6;  // 27 + 26 bits
    return (hi * 67108864 + lo) / 9007199254740992;
  }
}

function rotl(x, k) { return ((x << k) | (x >>> (32 - k))) >>> 0; }

// One token drawn from p (a distribution over ids) with the generator: the first id whose cumulative
// probability exceeds u * total (total: p's sum, 1 up to rounding).
function draw(p, rng) {
  let total = 0;
  for (const v of p) total += v;
  const u = rng.uniform() * total;
  let mass = 0, last = 0;
  for (let i = 0; i < p.length; i++) {
    if (p[i] <= 0) continue;
    mass += p[i];
    last = i;
    if (u < mass) return i;
  }
  return last;  // u within rounding of the total
}

// The object next_token.js draws (Inspector.next_token's fields): the candidates are the model's most probable.
function distribution(logits, settings, label, candidates = 20) {
  const r = probabilities(logits, settings);
  const order = Array.from(r.p.keys()).sort((a, b) => r.p[b] - r.p[a] || a - b).slice(0, Math.min(candidates, r.p.length));
  const e = entropy(r.p), es = entropy(r.pSample);
  return {
    candidates: order.map((i) => ({ id: i, token: label(i), p: r.p[i], p_sample: r.pSample[i], kept: r.pSample[i] > 0 })),
    kept: r.kept, vocab_size: r.p.length, entropy: e, perplexity: Math.exp(e), entropy_sample: es,
    perplexity_sample: Math.exp(es), greedy: r.greedy, p: r.p, pSample: r.pSample, settings: { ...settings },
  };
}

window.RedthreadSampling = { probabilities, softmax, entropy, argmax, Rng, draw, distribution };

})();
