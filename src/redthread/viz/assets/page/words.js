"use strict";
// Every word the live page shows, in English (en) and Chinese (zh): the page's own (page.js), the walk-through's
// (walk, walkthrough.js), the next-token rows' (nextToken, for next_token.js) and the explorer's (explorer, for
// explorer.js), and the web app's (app, for serve/assets/app.js, which `redthread serve` inlines with this file),
// whose English defaults live in those scripts. A word is a string, or a function of the numbers and
// names it spells out. The Chinese uses one term per concept, as docs/glossary.md lists them (词元, 层归一化,
// 前馈网络, 奈特, ...); layers and heads are numbered from 0, written 层 1·头 0. Model text (tokens, the user's
// text) and run names are never translated: they carry translate="no".

(() => {

const RUNGS_EN = { bigram: "bigram", mlp: "MLP", rnn: "RNN", lstm: "LSTM", gru: "GRU", transformer: "Transformer" };
const POSITIONS_EN = { sinusoidal: "sinusoidal", learned: "learned", rope: "rotary (RoPE)", none: "no" };
const ACTIVATIONS = { gelu: "GELU", relu: "ReLU", gelu_tanh: "GELU (tanh)", relu2: "ReLU²" };

const en = {
  htmlLang: "en",
  pageTitle: "the model, live in your browser",
  run: "model",
  runInfo: (rung, params, W) => `${rung} · ${params} parameters · a window of ${W} tokens`,
  rungName: (rung) => RUNGS_EN[rung] || rung,
  textLabel: "text (type: the distribution follows)",
  textPlaceholder: "type a text",
  temperature: "temperature", topK: "top-k", topP: "top-p", minP: "min-p", seed: "seed", off: "off", greedy: "greedy",
  settingsNote: "the order of redthread.generate: temperature (0 = greedy) → top-k → top-p → min-p",
  sampleOne: "sample one token", generate: "generate 20", resetSeed: "restart the seed",
  seedNote: (s) => `draws from seed ${s}: the same text and settings give the same tokens`,
  nextTitle: "next token: P(token | text)",
  legendP: "p: the model", legendPs: "sample: after the settings",
  viewWalk: "one forward pass", viewExplorer: "attention", viewCompare: "side by side", viewAbout: "about this page",
  contextNote: (n, total, W) => (n < total ? `the model reads the last ${n} of ${total} tokens (its window: ${W})`
    : `${n} tokens (the window holds ${W})`),
  unknownChars: (name, chars) => `${name} has never seen ${chars}: its vocabulary lacks them`,
  typeSomething: "type at least one character",
  loading: (n) => `loading ${n} model${n === 1 ? "" : "s"} into ONNX Runtime Web…`,
  badRuns: (names, runs) => `the link asks for runs=${names}, which this page does not hold: its runs are ${runs}`,
  badView: (view, views) => `the link asks for view=${view}: the views are ${views}`,
  fileProtocol: "This page runs its models with WebAssembly, which browsers refuse to load from file://. Serve the "
    + "folder over http: python -m http.server --directory THIS_FOLDER 8000, then open http://127.0.0.1:8000/",
  explorerModel: (name, meta) => `${name} · ${RUNGS_EN[meta.rung]}, ${meta.config.n_layer} layers × ${meta.config.n_head} heads, `
    + `${POSITIONS_EN[meta.config.pos]} positions · computed in this browser`,
  noAttention: (name, rung) => `${name} is a ${rung}: it has no attention to show (the Transformer has).`,
  compareTitle: "P(next token | the same text), model by model",
  compareText: (text) => `the text: ${text}; each model reads the last tokens its window holds`,
  rungInfo: (params, n) => `${params} parameters · reads ${n} tokens`,
  cannotRead: (name, chars) => `${name} cannot read this text: it has never seen ${chars}`,
  notCompared: "not compared:",
  aboutTitle: "how this page works",
  aboutRuns: "Each model was trained by redthread, exported to ONNX (redthread export --format onnx) and runs here, in "
    + "this tab, with ONNX Runtime Web: single-threaded WebAssembly, no server, nothing fetched from outside this folder.",
  aboutColumns: ["model", "rung", "parameters", "ONNX (MB)", "window", "load (ms)"],
  aboutRuntime: (ort, rt) => `ONNX Runtime Web ${ort} · redthread ${rt}`,
  aboutTimings: (ready, update) => `ready ${ready} ms after the page opened · the last next-token update took ${update} ms`,
  nextToken: {},  // next_token.js's own English
  explorer: {},   // explorer.js's own English
  app: {},        // app.js's own English
  walk: {
    position: "position", layer: "layer", head: "head",
    more: (n) => `+${n} more`, entries: (n) => `${n} numbers`,
    equals: (d) => `= the graph's numbers, to ${d}`,
    graphSays: "the graph (ONNX Runtime)", lnByHand: "computed here",
    chipTokens: "tokens", chipEmbedding: "embedding", chipLayer: (l) => `layer ${l}`, chipNorm: "final LayerNorm",
    chipRung: { bigram: "the bigram's table", mlp: "window → hidden layer", rnn: "hidden state", lstm: "hidden state",
                gru: "hidden state" },
    chipLogits: "logits", chipDist: "distribution",
    tokensTitle: "1 · the tokens",
    tokensSay: (T, t, id) => `The text is cut into ${T} tokens, numbered from 0. Position ${t} (token id ${id}) is the `
      + "one followed below: every number on this page is the model's, computed in this browser on this text. "
      + "Click a token to follow another position.",
    embedTitle: "2 · the embedding: token + position",
    embedSay: (C) => `Each token id picks one row of the embedding table: a vector of ${C} numbers. A vector for the `
      + "position is added, so that the same token reads differently at different places (section 3.5 of the paper).",
    tokEmb: (id) => `E[${id}]: the token's row`, posEmb: (pos, t) => `P[${t}]: the ${POSITIONS_EN[pos]} position vector`,
    sum: "E + P, added here",
    ropeSay: "No position vector is added: with rotary positions (RoPE) each query and key is rotated by an angle that "
      + "grows with its position, inside attention, so q·k depends on how far apart two tokens are.",
    noPosSay: "This model has no positions at all: attention sees its tokens as a set, and only the causal mask orders them.",
    stream0: "x: the residual stream entering layer 0",
    attnInTitle: (l) => `layer ${l} · what attention reads`,
    preSay: "Pre-norm: attention reads the LayerNorm of the stream, x̂ = (x − μ)/σ, scaled by γ and shifted by β; "
      + "the stream itself goes around attention (the residual connection).",
    postSay: "Post-norm (the original paper): attention reads the stream x itself; the LayerNorm comes after the "
      + "residual sum.",
    streamIn: "x: the residual stream at this position",
    lnFormula: (mean, sd, eps) => `LayerNorm: μ = ${mean}, σ = √(variance + ${eps}) = ${sd}; y = γ · (x − μ)/σ + β`,
    scoresTitle: (l, h) => `layer ${l} · head ${h} · a query meets every key`,
    scoresSay: (t, D, scale, rope) => `The head projects what attention reads to a query q, a key k and a value v of `
      + `${D} numbers each${rope ? " (q and k then rotated by their positions)" : ""}. The query of position ${t} `
      + `meets the key of every position up to ${t}: the dot product q·k, times ${scale}, is the score; the causal `
      + "mask hides the later positions (score −∞).",
    qOf: (t) => `q at position ${t}`,
    scoresFormula: (D) => `score(t, s) = q_t · k_s / √${D},  weight(t, s) = exp(score(t, s)) / Σ_s' exp(score(t, s'))`,
    keyColumns: ["key", "q·k", "× scale", "graph", "softmax"],
    masked: "masked",
    scoresByHand: "the scores, computed here", softmaxByHand: "the softmax of the scores, computed here",
    valuesTitle: (l, h) => `layer ${l} · head ${h} · the weighted sum of the values`,
    valuesSay: (t) => `The head's output at position ${t} is the average of the values v_s, each weighted by how much `
      + "the query attends to its key: attention as a regression on the context.",
    valuesFormula: "head_t = Σ_s weight(t, s) · v_s",
    sumByHand: "Σ weight · v, computed here",
    attnOutTitle: (l) => `layer ${l} · all heads, and the residual connection`,
    attnOutSay: (H) => `The ${H} heads' outputs are laid side by side and multiplied by W_O: the attention sublayer's `
      + "output, which is added to the stream.",
    attnOut: "attention's output at this position",
    residualPre: "x ← x + sublayer(LayerNorm(x))", residualPost: "x ← LayerNorm(x + sublayer(x))",
    residualByHand: "the stream after it, computed here",
    ffnTitle: (l) => `layer ${l} · the feed-forward network`,
    ffnSay: (C, F, act) => `The same two-layer network at every position: ${C} numbers → ${F} → ${C}, with `
      + `${ACTIVATIONS[act] || act} between: FFN(x) = W₂ · act(W₁x + b₁) + b₂. Attention gathers from the context; `
      + "the FFN processes what was gathered (claim C10).",
    hidden: (active, F) => `act(W₁x + b₁): the hidden layer, ${active} of ${F} above zero`,
    ffnOut: "the FFN's output at this position",
    normFTitle: "the final LayerNorm",
    normFSay: "After the last layer the stream is normalised once more; the output layer reads this vector.",
    logitsTitle: "the logits",
    logitsSay: {
      transformer: "One score per token of the vocabulary: the normalised stream times the output matrix (with tied "
        + "weights, the embedding table itself).",
      bigram: "One score per token of the vocabulary: the row of the table for the current token, learned as it is.",
      mlp: "One score per token of the vocabulary: the hidden layer times the output matrix.",
      rnn: "One score per token of the vocabulary: the last layer's state times the output matrix.",
      lstm: "One score per token of the vocabulary: the last layer's state times the output matrix.",
      gru: "One score per token of the vocabulary: the last layer's state times the output matrix.",
    },
    logitsOf: (t) => `logits at position ${t}`,
    topColumns: ["token", "logit", "probability"],
    distTitle: "the distribution over the next token",
    distSay: "The softmax turns the scores into probabilities that sum to 1: P(next token | the text up to here).",
    softmaxFormula: "p_i = exp(logit_i) / Σ_j exp(logit_j)",
    probs: "p, computed here",
    distLast: "This is the last position: the distribution the panel on the left shows and samples from.",
    distNext: (tok, pct, nll) => `The text goes on with ${tok}: the model gave it ${pct}%, a loss of ${nll} nats here.`,
    mlpTitle: "the window and the hidden layer",
    mlpSay: (c, E, Hd) => `The MLP reads a fixed window of the last ${c} tokens (∅: before the text starts). Their `
      + `embeddings (${E} numbers each) are laid side by side, multiplied by a matrix and squashed by tanh: ${Hd} numbers.`,
    mlpHidden: "the hidden layer, tanh(W · [e₁ … e_c] + b)",
    rnnTitle: "the hidden state",
    rnnSay: {
      rnn: (E, Hd) => `An RNN reads the tokens one after another: h_t = tanh(W x_t + U h_{t−1} + b), ${Hd} numbers `
        + "carrying all that the past leaves for the next step (claim C5).",
      lstm: (E, Hd) => `An LSTM reads the tokens one after another; gates decide what its cell state keeps and what `
        + `it shows: h_t, ${Hd} numbers, is all that the past leaves for the next step (claim C5).`,
      gru: (E, Hd) => `A GRU reads the tokens one after another; an update gate mixes the old state with a new `
        + `candidate: h_t, ${Hd} numbers, is all that the past leaves for the next step (claim C5).`,
    },
    rnnState: (i, t) => `layer ${i}: h at position ${t}`,
    bigramTitle: "the bigram's table",
    bigramSay: "A bigram model keeps one row of logits per token: the next token's scores depend on the current token "
      + "only, whatever came before it.",
  },
};

const RUNGS_ZH = {  // (the key that names the rung in English stands on its own line: the glossary test reads lines)
  bigram:
    "二元语法",
  mlp: "MLP 语言模型", rnn: "循环神经网络（RNN）", lstm: "LSTM", gru: "GRU", transformer: "Transformer",
};
const POSITIONS_ZH = { sinusoidal: "正弦位置编码", learned: "可学习位置编码", rope: "旋转位置编码（RoPE）", none: "无位置编码" };
const ACT_ZH = { gelu: "GELU", relu: "ReLU", gelu_tanh: "GELU（tanh 近似）", relu2: "ReLU²" };

const zh = {
  htmlLang: "zh-CN",
  pageTitle: "在浏览器里实时运行的模型",
  run: "模型",
  runInfo: (rung, params, W) => `${rung} · ${params} 个参数 · 上下文窗口 ${W} 个词元`,
  rungName: (rung) => RUNGS_ZH[rung] || rung,
  textLabel: "文本（一边输入，分布一边更新）",
  textPlaceholder: "输入一段文本",
  temperature: "温度", topK: "top-k", topP: "top-p", minP: "min-p", seed: "随机种子", off: "关", greedy: "贪心",
  settingsNote: "顺序与 redthread.generate 相同：温度（0 即贪心解码）→ top-k → top-p → min-p",
  sampleOne: "采样一个词元", generate: "生成 20 个", resetSeed: "重新从种子开始",
  seedNote: (s) => `从种子 ${s} 开始抽取：同样的文本和设置，抽出同样的词元`,
  nextTitle: "下一个词元：P(词元 | 文本)",
  legendP: "p：模型给出的概率", legendPs: "采样：经过设置之后",
  viewWalk: "一次前向传播", viewExplorer: "注意力", viewCompare: "并排比较", viewAbout: "关于本页",
  contextNote: (n, total, W) => (n < total ? `模型读取 ${total} 个词元中的最后 ${n} 个（窗口为 ${W}）`
    : `${n} 个词元（窗口最多 ${W} 个）`),
  unknownChars: (name, chars) => `${name} 从没见过 ${chars}：它的词表里没有这些字符`,
  typeSomething: "请至少输入一个字符",
  loading: (n) => `正在把 ${n} 个模型载入 ONNX Runtime Web……`,
  badRuns: (names, runs) => `链接要的 runs=${names} 不在本页上：本页的模型是 ${runs}`,
  badView: (view, views) => `链接要的 view=${view} 不存在：可选的视图是 ${views}`,
  fileProtocol: "本页用 WebAssembly 运行模型，而浏览器不允许从 file:// 载入 WebAssembly。请用 http 打开这个文件夹："
    + "python -m http.server --directory 本文件夹 8000，然后打开 http://127.0.0.1:8000/",
  explorerModel: (name, meta) => `${name} · ${RUNGS_ZH[meta.rung]}，${meta.config.n_layer} 层 × ${meta.config.n_head} 个头，`
    + `${POSITIONS_ZH[meta.config.pos]} · 在本浏览器里计算`,
  noAttention: (name, rung) => `${name} 是${rung}：它没有注意力可画（Transformer 才有）。`,
  compareTitle: "P(下一个词元 | 同一段文本)，逐个模型",
  compareText: (text) => `文本：${text}；每个模型读取它的窗口能容纳的最后那些词元`,
  rungInfo: (params, n) => `${params} 个参数 · 读取 ${n} 个词元`,
  cannotRead: (name, chars) => `${name} 读不了这段文本：它从没见过 ${chars}`,
  notCompared: "未参与比较：",
  aboutTitle: "本页如何工作",
  aboutRuns: "每个模型都由 redthread 训练，导出为 ONNX（redthread export --format onnx），并在这个标签页里由 "
    + "ONNX Runtime Web 运行：单线程的 WebAssembly，没有服务器，不从这个文件夹以外载入任何东西。",
  aboutColumns: ["模型", "级", "参数", "ONNX（MB）", "窗口", "载入（毫秒）"],
  aboutRuntime: (ort, rt) => `ONNX Runtime Web ${ort} · redthread ${rt}`,
  aboutTimings: (ready, update) => `页面打开 ${ready} 毫秒后就绪 · 最近一次更新下一个词元的分布用了 ${update} 毫秒`,
  nextToken: {
    stats: (e, ppl, V, es, ppls) => `模型：熵 ${e} 奈特 · 困惑度 ${ppl}（共 ${V} 个词元）；采样所用的分布：`
      + `熵 ${es} 奈特 · 困惑度 ${ppls}`,
    context: (n) => ` · 上下文：${n} 个词元`,
    noCut: (V) => `— 没有截断：${V} 个词元全部保留 —`,
    cutBelow: (kept, V) => `— 截断在列表之下：保留 ${V} 个中的 ${kept} 个 —`,
    cut: (kept, V) => `— 截断：保留 ${V} 个中的 ${kept} 个 —`,
    head: ["词元", "", "p", "采样"],
    rowTitle: (id, json) => `词元 ${id}：${json}`,
    append: " · 点击把它接到文本后面",
    cutCell: "截掉",
  },
  explorer: {
    tabs: { encoder: "编码器自注意力", decoder: "解码器自注意力（因果）", cross: "交叉注意力" },
    layer: "层", head: "头", headsShown: "显示的头", hint: "悬停一个词元来聚焦 · 点击固定 · 按 Esc 取消",
    headView: "头视图", queries: "查询", keys: "键", modelView: "模型视图", neuronView: "神经元视图",
    modelCaption: "每一层 × 每个头 · 点击一个查看它 · 点击层名查看该层各头的平均",
    neuronCaption: "神经元视图 · 一个头的查询 q 和键 k：得分 = q·k × 缩放，再对各个键做 softmax · 先点击一个查询，再悬停各个键",
    query: "查询", key: "键", readoutHint: "悬停在色条上：一个维度的 q、k 和 q⊙k",
    allMean: "全部（平均）", eachColour: "逐个（分色）",
    layerN: (l) => `层 ${l}`, layerMean: (l) => `层 ${l}，各头的平均`, layerHead: (l, h) => `层 ${l}·头 ${h}`,
    headToggle: (h) => `头 ${h}：显示或隐藏它的连线`,
    tokenTitle: (side, i, tok) => `${side === "q" ? "查询" : "键"} ${i}：${tok}`,
    patchTitle: (i, tok, r, c) => `键 ${i}：${tok}（图块行 ${r}，列 ${c}）`,
    oneHead: "神经元视图只显示一个头：选一个头的编号，或点击一个缩略图",
    onlyLayer: (l) => `这里只有层 ${l} 的 q 和 k`,
    recordLayer: (l) => `取出层 ${l} 的 q 和 k`, showLayer: (l) => `显示层 ${l}`,
    columns: ["键", "k", "q ⊙ k", "得分", "softmax"], queryRow: (i, tok) => `查询 ${i}：${tok}`, qNote: "← q",
    masked: "被掩码",
    maskedSum: (s, i) => `键 ${s} 在查询 ${i} 之后：被掩码（得分 −∞），softmax `,
    recorded: " · 头视图里的权重：",
    dot: "q·k = Σ q⊙k = ", scaled: (scale) => ` · × ${scale} → 得分 `,
    softmaxOver: (n, i) => ` · 对查询 ${i} 看得见的 ${n} 个键做 softmax → `,
    readout: (d, q, s, k, qk) => `维度 ${d}：q = ${q} · k（键 ${s}）= ${k} · q⊙k = ${qk}`,
  },
  walk: {
    position: "位置", layer: "层", head: "头",
    more: (n) => `还有 ${n} 个`, entries: (n) => `共 ${n} 个数`,
    equals: (d) => `= 计算图给出的数，差不超过 ${d}`,
    graphSays: "计算图（ONNX Runtime）给出", lnByHand: "在这里算出",
    chipTokens: "词元", chipEmbedding: "嵌入", chipLayer: (l) => `层 ${l}`, chipNorm: "最后的层归一化",
    chipRung: {
      bigram:
        "二元语法的表",
      mlp: "窗口 → 隐藏层", rnn: "隐状态", lstm: "隐状态", gru: "隐状态",
    },
    chipLogits: "logits", chipDist: "分布",
    tokensTitle: "1 · 词元",
    tokensSay: (T, t, id) => `文本被切成 ${T} 个词元，从 0 编号。下面跟踪的是位置 ${t}（词元编号 ${id}）：`
      + "本页的每一个数都是这个模型在这段文本上、在本浏览器里算出来的。点击一个词元，改为跟踪那个位置。",
    embedTitle: "2 · 嵌入：词元 + 位置",
    embedSay: (C) => `每个词元编号取出嵌入表里的一行：${C} 个数组成的向量。再加上一个表示位置的向量，`
      + "同一个词元在不同位置上就读起来不同（论文第 3.5 节）。",
    tokEmb: (id) => `E[${id}]：这个词元的那一行`, posEmb: (pos, t) => `P[${t}]：${POSITIONS_ZH[pos]}的向量`,
    sum: "E + P，在这里相加",
    ropeSay: "这里不加位置向量：用旋转位置编码（RoPE）时，每个查询和键在注意力内部按各自的位置转过一个角度，"
      + "于是 q·k 只取决于两个词元相隔多远。",
    noPosSay: "这个模型完全没有位置编码：注意力把词元看成一个集合，只有因果掩码给它们排了顺序。",
    stream0: "x：进入层 0 的残差流",
    attnInTitle: (l) => `层 ${l} · 注意力读的是什么`,
    preSay: "前置归一化：注意力读的是残差流的层归一化，x̂ = (x − μ)/σ，再乘以 γ、加上 β；"
      + "残差流本身绕过注意力（残差连接）。",
    postSay: "后置归一化（原论文的接法）：注意力直接读残差流 x；层归一化放在残差相加之后。",
    streamIn: "x：这个位置上的残差流",
    lnFormula: (mean, sd, eps) => `层归一化：μ = ${mean}，σ = √(方差 + ${eps}) = ${sd}；y = γ · (x − μ)/σ + β`,
    scoresTitle: (l, h) => `层 ${l}·头 ${h} · 一个查询遇上每一个键`,
    scoresSay: (t, D, scale, rope) => `这个头把注意力读到的向量投影成查询 q、键 k 和值 v，各 ${D} 个数`
      + `${rope ? "（q 和 k 再按各自的位置旋转）" : ""}。位置 ${t} 的查询遇上位置 0 到 ${t} 的每一个键：`
      + `点积 q·k 乘以 ${scale} 就是注意力分数；因果掩码遮住后面的位置（分数为 −∞）。`,
    qOf: (t) => `位置 ${t} 的 q`,
    scoresFormula: (D) => `分数(t, s) = q_t · k_s / √${D}，  权重(t, s) = exp(分数(t, s)) / Σ_s' exp(分数(t, s'))`,
    keyColumns: ["键", "q·k", "× 缩放", "计算图", "softmax"],
    masked: "被掩码",
    scoresByHand: "注意力分数，在这里算出", softmaxByHand: "分数的 softmax，在这里算出",
    valuesTitle: (l, h) => `层 ${l}·头 ${h} · 值的加权和`,
    valuesSay: (t) => `这个头在位置 ${t} 的输出是各个值 v_s 的加权平均，权重就是查询对各个键的注意力权重：`
      + "注意力就是对上下文做回归。",
    valuesFormula: "输出_t = Σ_s 权重(t, s) · v_s",
    sumByHand: "Σ 权重 · v，在这里算出",
    attnOutTitle: (l) => `层 ${l} · 所有的头，以及残差连接`,
    attnOutSay: (H) => `${H} 个头的输出并排拼起来，乘以 W_O：这就是注意力子层的输出，它被加回残差流。`,
    attnOut: "注意力在这个位置的输出",
    residualPre: "x ← x + 子层(层归一化(x))", residualPost: "x ← 层归一化(x + 子层(x))",
    residualByHand: "经过这一步之后的残差流，在这里算出",
    ffnTitle: (l) => `层 ${l} · 前馈网络`,
    ffnSay: (C, F, act) => `每个位置上用的是同一个两层网络：${C} 个数 → ${F} 个 → ${C} 个，中间是 `
      + `${ACT_ZH[act] || act}：前馈网络(x) = W₂ · act(W₁x + b₁) + b₂。注意力负责从上下文汇聚，`
      + "前馈网络负责加工汇聚来的东西（论点 C10）。",
    hidden: (active, F) => `act(W₁x + b₁)：隐藏层，${F} 个里有 ${active} 个大于 0`,
    ffnOut: "前馈网络在这个位置的输出",
    normFTitle: "最后的层归一化",
    normFSay: "最后一层之后，残差流再做一次层归一化；输出层读的就是这个向量。",
    logitsTitle: "logits",
    logitsSay: {
      transformer: "词表里每个词元一个分数：归一化后的残差流乘以输出矩阵（权重共享时就是嵌入表本身）。",
      bigram:
        "词表里每个词元一个分数：当前词元在表里的那一行，直接学出来。",
      mlp: "词表里每个词元一个分数：隐藏层乘以输出矩阵。",
      rnn: "词表里每个词元一个分数：最后一层的隐状态乘以输出矩阵。",
      lstm: "词表里每个词元一个分数：最后一层的隐状态乘以输出矩阵。",
      gru: "词表里每个词元一个分数：最后一层的隐状态乘以输出矩阵。",
    },
    logitsOf: (t) => `位置 ${t} 的 logits`,
    topColumns: ["词元", "logit", "概率"],
    distTitle: "下一个词元的分布",
    distSay: "softmax 把分数变成加起来等于 1 的概率：P(下一个词元 | 到这里为止的文本)。",
    softmaxFormula: "p_i = exp(logit_i) / Σ_j exp(logit_j)",
    probs: "p，在这里算出",
    distLast: "这是最后一个位置：左边面板显示并从中采样的就是这个分布。",
    distNext: (tok, pct, nll) => `文本接下来是 ${tok}：模型给它的概率是 ${pct}%，这一步的损失是 ${nll} 奈特。`,
    mlpTitle: "窗口和隐藏层",
    mlpSay: (c, E, Hd) => `MLP 语言模型读取最后 ${c} 个词元组成的固定窗口（∅：文本开始之前）。它们的嵌入`
      + `（各 ${E} 个数）并排拼起来，乘以一个矩阵，再经过 tanh：得到 ${Hd} 个数。`,
    mlpHidden: "隐藏层，tanh(W · [e₁ … e_c] + b)",
    rnnTitle: "隐状态",
    rnnSay: {
      rnn: (E, Hd) => `循环神经网络一个接一个地读词元：h_t = tanh(W x_t + U h_{t−1} + b)，这 ${Hd} 个数`
        + "就是过去留给下一步的全部信息（论点 C5）。",
      lstm: (E, Hd) => `LSTM 一个接一个地读词元；门决定细胞状态保留什么、输出什么：h_t 这 ${Hd} 个数`
        + "就是过去留给下一步的全部信息（论点 C5）。",
      gru: (E, Hd) => `GRU 一个接一个地读词元；更新门把旧的状态和新的候选混合起来：h_t 这 ${Hd} 个数`
        + "就是过去留给下一步的全部信息（论点 C5）。",
    },
    rnnState: (i, t) => `层 ${i}：位置 ${t} 的 h`,
    bigramTitle: "二元语法的表",
    bigramSay: "二元语法模型为每个词元存一行 logits：下一个词元的分数只取决于当前这个词元，与更早的内容无关。",
  },
};

// the next-token page's own lines (next_token.js on the page rt.show_next_token saves)
Object.assign(zh.nextToken, {
  title: zh.nextTitle,
  settings: (s, greedy) => `采样设置：温度 ${s.temperature} · top-k ${s.top_k || zh.off} · top-p ${s.top_p || zh.off} · `
    + `min-p ${s.min_p || zh.off}${greedy ? "（贪心解码：取最可能的词元）" : ""}`,
  legendP: zh.legendP,
  legendPs: "采样：经过设置之后、在保留下来的词元上重新归一化的概率",
});

// the web app's (app.js): its own words, and the page's where they are the same
zh.app = {
  title: "redthread · 看看 Transformer 的内部",
  model: zh.run,
  textPlaceholder: "输入一段文本（按 Ctrl+Enter 显示它的注意力）",
  testImage: "测试图像", ownImage: "或者你自己的图像",
  run: "显示注意力",
  compare: "比较模型",
  compareTip: "这里每个语言模型给出的 P(下一个词元 | 这段文本)，并排比较",
  compareLabel: "模型比较",
  compareTitle: zh.compareTitle,
  close: "关闭",
  notCompared: "未参与比较：这些模型是在另一套字符上训练的，从没见过文本中的某些字符。",
  placeholder: ["选一个模型，输入一段文本（图像模型则选它的一张测试图像），再按", "：它的注意力的每一层、每个头都显示在这里；"
    + "语言模型的下一个词元分布显示在右边。"],
  nextLabel: "下一个词元",
  nextTitle: zh.nextTitle,
  nextBefore: ["对语言模型，按下", "之后在这里显示。"],
  temperature: zh.temperature, topK: zh.topK, topP: zh.topP, minP: zh.minP, off: zh.off, greedy: zh.greedy,
  step: zh.sampleOne,
  stepNote: "按这些设置抽取一个词元，接到文本后面；也可以点击一个候选词元，把它接上",
  legendP: zh.legendP, legendPs: zh.legendPs,
  chars: (n, max) => `${n} / ${max} 个字符`,
  pretrained: (name) => `${name}（预训练）`,
  unavailable: (why) => ` — 不可用：${why}`,
  noModels: "`runs` 文件夹下没有 Transformer、ViT 或描述模型的运行：先用 `redthread train` 或 `redthread demo` 训练一个",
  noServer: (path) => `服务器没有回答（${path}）：\`redthread serve\` 还在运行吗？`,
  httpError: (path, status) => `${path}：服务器回答了错误 ${status}`,
  notJson: (path) => `${path}：回答不是 JSON`,
  cannotReadFile: (name) => `读不了文件 ${name}`,
  rungNoAttention: (model) => `${model} 是阶梯上没有注意力的一级：它以文本为条件，却不对文本做注意力，所以没有注意力图可画。`
    + "它的 P(下一个词元 | 文本) 在右边；“比较模型”把它和其他模型并排放在一起。",
  noNext: {
    encoder: (model) => `${model} 是编码器：它一次读完整段文本，两个方向都看，所以不给出下一个词元的分布（也不能逐个生成）。`,
    image: (model) => `${model} 是图像模型：探索器显示它在图像各个图块上的注意力（描述模型还显示它贪心解码出的描述，`
      + "逐词对着图像）；这里没有下一个词元的面板。",
  },
  nextMessage: "最可能的下一个词元；采样只从保留下来的词元中抽取。",
  context: (json) => `上下文：${json}`,
  cannotRead: (error, zh) => ` 读不了这段文本：${zh || error}`,
  stats: (e, ppl) => `熵 ${e} 奈特 · 困惑度 ${ppl}`,
  hasAttention: " · 有注意力", noAttention: " · 没有注意力",
  rowTitle: zh.nextToken.rowTitle,
};

window.RedthreadPageWords = { en, zh };

})();
