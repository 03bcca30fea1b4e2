"""An experiment report in Chinese, rendered from its report.json alone: `report.zh.md` beside `report.md`.

    from redthread.experiments.report_zh import render_zh
    text = render_zh(json.loads(Path("docs/experiments/scaling/report.json").read_text()))

    python -m redthread.experiments.report_zh docs/experiments results/run-1    # a report folder, or a folder of them

The page gives the experiment's Chinese name, the claim(s) it tests in the wording of docs/claims.md's Chinese column
(tied to the essay's sections), the verdict and each part's, and one paragraph, 结论, generated from the numbers:
for each check a short Chinese description (`CHECKS`), each seed set's mean and 95% interval, the floor and the side
the claim needs, and the verdict; then how the two seed sets are combined, and how many times a criterion was changed
after a result had been seen (the report's `history`). A --quick report opens by saying it is a smoke test that
carries no verdict. A report whose figures were drawn in both languages (report.json's `figures`) shows them, in
Chinese with their Chinese captions. Everything else — the set-up, the pre-registration, the tables, and older reports'
figures — is in the English report.md, which the page points to. A module that writes its own Chinese conclusion into the report
(`Report.conclusion["zh"]`) has it placed first in the paragraph.

Every word is the glossary's (docs/glossary.md): the verdicts are those of `compare.verdict_text`, the other terms
those of `redthread.lang`. Numbers are written as report.md writes them (4 significant figures; a floor as `:g`).
The command writes report.zh.md only, never report.md or report.json; bad input is a one-line error and exit 2.
`Report.write` writes report.zh.md for every new run; tests/experiments/test_report_zh.py holds the committed
report.zh.md files to what this renders from their report.json, and every check and part of every experiment's
CRITERIA to a Chinese name here.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from pathlib import Path

from redthread.errors import RedthreadError
from redthread.experiments.compare import verdict_text
from redthread.experiments.history import commit_of
from redthread.files import atomic_write_text
from redthread.lang import speaking, term

__all__ = ["render_zh", "read_zh", "write_zh", "NAMES", "PARTS", "CHECKS", "claims_zh", "main"]

CLAIMS_MD = Path(__file__).resolve().parents[3] / "docs" / "claims.md"  # the claims' Chinese wording, tied to the essay

# each experiment's Chinese name (the page's title)
NAMES = {
    "regression": "线性回归估计条件期望",
    "attention-as-regression": "注意力即核回归",
    "scaling": "点积的缩放 1/√d_k",
    "rnn-gradients": "RNN 的梯度随距离的变化",
    "long-range": "远距离回忆",
    "sequential": "RNN 的串行计算",
    "permutation": "置换等变性与位置编码",
    "heads": "多头注意力的分工",
    "ffn": "注意力负责汇聚，前馈网络负责加工",
    "depth": "残差连接与层归一化",
    "sampling": "最大似然训练与采样生成",
    "calibration": "语言模型的校准",
    "coreference": "预训练编码器里的指代",
    "classification": "softmax 输出估计类别的后验",
    "memory": "RNN 的固定大小记忆",
    "locality": "位置编码带来的局部性",
    "ensemble": "多头注意力像不像集成",
    "vision": "图块序列与交叉注意力",
    "referent": "学会了指代对象的模型（正对照）",
    "real-models": "真实模型上的检验（莎士比亚模型、MiniLM）",
    "poetry-heads": "格律诗上的头：对仗与押韵",
}

# experiment -> the English part (a criterion's `part`) -> its Chinese name
_REAL_TIERS = {"Shakespeare model": "莎士比亚模型", "larger Shakespeare model": "更大的莎士比亚模型", "MiniLM": "MiniLM"}
_REAL_ROLES = {"C8 locality": "C8 局部性", "C9 head roles": "C9 头的分工", "C11 token identity": "C11 词元身份",
               "C12 calibration": "C12 校准"}
PARTS = {
    "regression": {"E[y|x]": "E[y|x]", "MSE = Gaussian likelihood": "均方误差即高斯似然"},
    "attention-as-regression": {"recovers E[y|x]": "恢复出 E[y|x]", "learned weighting": "学到的加权"},
    "scaling": {"variance": "方差", "saturation": "饱和", "trainability": "可训练性"},
    "rnn-gradients": {},
    "long-range": {"attention reaches any distance (C6)": "注意力能达到任意距离（C6）",
                   "recurrent models lose long-range recall (C3, C5)": "循环模型丢失远距离回忆（C3、C5）"},
    "sequential": {"sequential steps": "串行步数", "speed": "速度", "equal view": "平等审视"},
    "permutation": {"order-blind": "看不见顺序", "positions inject order": "位置编码注入顺序"},
    "heads": {"specialisation": "专长", "ablation": "消融", "several heads": "多个头"},
    "ffn": {"attention aggregates": "注意力负责汇聚", "FFN processes": "前馈网络负责加工"},
    "depth": {"residuals": "残差连接", "gradient flow": "梯度的流动", "LayerNorm": "层归一化"},
    "sampling": {"generation samples P(next | context)": "生成就是从 P(下一个词元 | 上下文) 中采样",
                 "training = maximum likelihood": "训练就是最大似然", "top-p": "top-p 采样"},
    "calibration": {"along the path": "沿着训练路径", "well trained": "训练充分时", "temperature": "温度"},
    "coreference": {"mean over heads": "全部头的平均", "best head (held out)": "最好的头（在另一半句对上选出）"},
    "classification": {"known posterior, softmax regression": "已知后验，softmax 回归", "known posterior, MLP": "已知后验，MLP",
                       "calibration, softmax regression": "校准，softmax 回归", "calibration, MLP": "校准，MLP"},
    "memory": {"state size": "状态大小", "load": "记忆负荷"},
    "locality": {"sinusoidal (the paper)": "正弦位置编码（原论文）", "learned": "可学习位置编码", "rotary": "旋转位置编码"},
    "ensemble": {"disagreement": "头之间的分歧", "graceful loss": "去掉头时损失平缓"},
    "vision": {"patches (ViT on digits)": "图块（数字图像上的 ViT）", "patch order": "图块顺序",
               "cross-attention grounding": "交叉注意力的定位", "calibration (C2, ViT)": "校准（C2，ViT）"},
    "referent": {"competence": "模型的能力", "attention points at the referent": "注意力指向指代对象",
                 "attention agrees with attribution and ablation": "注意力与归因、消融一致"},
    "real-models": {f"{role} ({tier})": f"{role_zh}（{tier_zh}）" for role, role_zh in _REAL_ROLES.items()
                    for tier, tier_zh in _REAL_TIERS.items()},
    # poetry_heads.PARTS_ZH's words (tests/experiments/test_report_zh.py holds them equal)
    "poetry-heads": {"对仗 (parallelism)": "对仗", "rhyme": "押韵", "different heads": "不同的头"},
}

_STATE = {"rnn": "RNN", "lstm": "LSTM", "gru": "GRU"}
_POSITIONS = {"sinusoidal": "正弦位置编码", "learned": "可学习位置编码", "rope": "旋转位置编码"}
_FLOW = {"residual_layernorm": "残差连接加层归一化", "residual_only": "只有残差连接", "layernorm_only": "只有层归一化",
         "neither": "两者都没有"}
_FLOW_RATIO = "最靠近输入的块与最靠近输出的块的参数梯度范数之比"
_REAL = {"plays": "莎士比亚模型", "large": "更大的莎士比亚模型"}

# experiment -> check name -> a short Chinese description of what it measures (its unit where it has one)
CHECKS = {
    "regression": {
        "slope_above": "估计值与真实 E[y|x] 之差随样本量 n 变化的对数-对数斜率",
        "slope_below": "估计值与真实 E[y|x] 之差随样本量 n 变化的对数-对数斜率",
        "coef_gap": "n = 1000 时最小二乘与高斯似然（梯度下降拟合）所得系数之差的最大绝对值",
    },
    "attention-as-regression": {
        "rmse_vs_knn": "注意力（宽度由学习得到）与 k 近邻（k 在验证集上选出）相对 E[y|x] 的 RMSE 之比",
        "width_vs_best": "学到的宽度下的 RMSE 与按真值扫描出的最佳宽度下的 RMSE 之比",
    },
    "scaling": {
        "variance": "d_k 从 4 到 1024 时 |Var(q·k)/d_k − 1| 的最大值（q、k 取自 N(0, I)）",
        "one_hot": "不缩放、d_k = 1024 时，32 个键上 softmax 最大权重的均值",
        "jacobian_unscaled": "不缩放、d_k = 1024 时 softmax 雅可比矩阵的范数 ‖∂softmax/∂分数‖_F 的均值",
        "jacobian_scaled": "乘以 1/√d_k 缩放后、d_k = 1024 时同一范数的均值",
        "scaled_trains": "缩放后的模型在测试集上缩小的差距比例（差距从 log 16，即没有注意力，到贝叶斯极限）",
        "gap": "不缩放与缩放的测试集 NLL 之差（各自用验证集选出的学习率），奈特/词元",
    },
    "rnn-gradients": {
        "rnn_vanishes": "谱半径 0.5 的 tanh RNN 经过 100 步后梯度保留量的 log10",
        "rnn_explodes": "谱半径 2 的 tanh RNN 经过 100 步后梯度保留量的 log10",
        "lstm_keeps_above": "遗忘门偏置用 chrono 初始化的 LSTM 经过 100 步后梯度保留量的 log10",
        "lstm_keeps_below": "遗忘门偏置用 chrono 初始化的 LSTM 经过 100 步后梯度保留量的 log10",
        "transformer_flat": "Transformer 在 k = 1..100 上 ‖J(k)‖ 的最大值与最小值之比的 log10",
    },
    "long-range": {
        "transformer_longest": "Transformer 在最远距离上的测试集回忆准确率",
        "rnn_drop": "RNN 在最近距离与最远距离上的测试集回忆准确率之差",
        "lstm_drop": "LSTM 在最近距离与最远距离上的测试集回忆准确率之差",
        "rnn_gap": "最远距离上 Transformer 与 RNN 的测试集回忆准确率之差（同一种子）",
        "lstm_gap": "最远距离上 Transformer 与 LSTM 的测试集回忆准确率之差（同一种子）",
    },
    "sequential": {
        "rnn_depth_slope": "RNN 最长的相互依赖的计算链对序列长度 T 的对数-对数斜率",
        "fused_rnn_depth_slope": "torch 的 nn.RNN（它的 CPU 内核）的同一斜率",
        "transformer_depth_slope": "Transformer 的同一斜率",
        "serial_penalty": "nn.RNN 处理一条长 N 的序列与处理 N/16 条长 16 的序列的时间之比，再除以 Transformer 的同一比值",
        "long_sequence_time_ratio": "一条长 N 的序列上 nn.RNN 与 Transformer 的前向加反向传播时间之比",
        "grid_share_rnn_slower": "批大小 × 序列长度的网格里，nn.RNN 的前向加反向传播比 Transformer 慢的格子所占的比例",
        "transformer_flat": "Transformer 在近距离（d ≤ T/4）与远距离（d ≥ 3T/4）上的测试集回忆准确率之差",
        "transformer_far_recall": "Transformer 在远距离（d ≥ 3T/4）上的测试集回忆准确率",
        "rnn_decay": "tanh RNN 在近距离（d ≤ T/4）与远距离（d ≥ 3T/4）上的测试集回忆准确率之差",
    },
    "permutation": {
        "equivariance_error": "没有位置编码时 |f(x[perm]) − f(x)[perm]| 的最大值（MultiHeadAttention 和 Encoder，float32）",
        "positions_break_symmetry": "加上正弦位置编码后 |f(x[perm]) − f(x)[perm]| 的最小值（Encoder，float32）",
        "blind_excess": "没有位置编码时的验证集准确率减去多重集给出的上界",
        "positions_excess": "加上正弦位置编码时的验证集准确率减去多重集给出的上界",
    },
    "heads": {
        "specialisation": "对每个头最不擅长的那个间隔，最好的头在这个间隔的键上与在另一个间隔的键上的权重之差，训练后减去训练前",
        "dissociation_near": "均值消融最专注间隔 2 的头：只有间隔 2 能解释的位置上损失的 NLL，减去只有间隔 6 能解释的位置上的，奈特",
        "dissociation_far": "均值消融最专注间隔 6 的头：只有间隔 6 能解释的位置上损失的 NLL，减去只有间隔 2 能解释的位置上的，奈特",
        "several_heads": "一个全宽度的头与四个头的验证集 NLL 之差（各自用自己的学习率），奈特",
    },
    "ffn": {
        "attention_lost": "均值消融全部注意力子层时，规则所在位置上损失的验证集 NLL，奈特",
        "ffn_lost": "均值消融全部前馈网络时，规则所在位置上损失的验证集 NLL，奈特",
        "context_by_attention": "上下文词元的探针准确率跨过一个注意力子层的最大升幅，减去跨过一个前馈网络的",
        "rule_by_ffn": "规则输出的探针准确率跨过一个前馈网络的最大升幅，减去跨过一个注意力子层的",
    },
    "depth": {
        "residual_trains": "深层的残差连接加层归一化的堆叠在测试集上缩小的差距比例（差距从一元语法到贝叶斯极限）",
        "residual_gap": "同样深度下，去掉残差连接（只有层归一化）与有残差连接加层归一化的测试集 NLL 之差，奈特/词元",
        "identity_residual": "初始化时最后一块输出向量的方差中由当前词元解释的比例，残差连接加层归一化",
        "identity_no_residual": "初始化时同一比例，去掉残差连接（只有层归一化）",
        "layernorm_gap": "压力条件下（更深、更宽、不做梯度裁剪、更大的学习率）去掉层归一化（只有残差连接）与有残差连接加层归一化的"
                         "测试集 NLL 之差，奈特/词元",
        **{f"flow_init_{k}": f"初始化时{_FLOW_RATIO}的 log10" + ("" if "residual" in k else " 的绝对值") + f"，{v}"
           for k, v in _FLOW.items()},
        **{f"flow_trained_{k}": f"训练中（25%、50%、100% 的步数处）{_FLOW_RATIO}的 log10"
           + (" 离 0 最远的一处" if "residual" in k else " 的绝对值在各处的最小值") + f"，{v}" for k, v in _FLOW.items()},
    },
    "sampling": {
        "sampler_chi2": "5 种采样策略上 z² 的均值，z =（抽样结果在 q 下的平均 NLL − q 的平均熵）/ 标准误",
        "temperature_one_closest": "在模型之下，其他策略的续写与真实文本的 NLL 之差的最小绝对值，减去温度 1 的，奈特",
        "top_p_mass": "top-p 0.9 在任何种子、任何一步保留下来的最小模型概率",
    },
    "calibration": {
        "gap_falls": "Transformer 的 ECE 差距（top-1 ECE 减去完全校准的对照的）在训练最少处（100 步）减去在训练最多处（1000 步）",
        "gap_small": "训练最多处（1000 步）Transformer 的 ECE 差距（top-1 ECE 减去完全校准的对照的）",
        "temperature": "在验证集上按 NLL 为训练最多的 Transformer（1000 步）拟合的温度的对数",
    },
    "coreference": {
        "pick_mean": "一对句子的两段文本里，代词在全部头上的平均权重落在指代对象上多于另一个候选的比例（对句对取平均）",
        "flip_mean": "两段文本里全部头的平均权重都偏向指代对象（偏好随指代对象切换）的句对所占的比例",
        "pick_head": "在另一半句对上选出的头，权重落在指代对象上多于另一个候选的文本所占的比例",
        "flip_head": "在另一半句对上选出的头在两段文本里都偏向指代对象的句对所占的比例",
    },
    "classification": {
        "kl_slope_softmax": "softmax 回归：log KL(真实后验 ‖ 学到的) 对 log n 的斜率",
        "kl_slope_mlp": "MLP：log KL(真实后验 ‖ 学到的) 对 log n 的斜率",
        "ece_excess_softmax": "softmax 回归在数字图像上的测试集 ECE，减去完全校准的对照的 ECE 的 95% 分位数",
        "ece_excess_mlp": "MLP 在数字图像上的测试集 ECE，减去完全校准的对照的 ECE 的 95% 分位数",
    },
    "memory": {
        **{f"{k}_state": f"{v} 在最小状态与最大状态下（最高负荷）测试集 NLL 超出贝叶斯极限的部分之差，奈特" for k, v in _STATE.items()},
        **{f"{k}_state_vs_transformer": f"{v} 的这一升幅减去参数量匹配的 Transformer 的同一升幅，奈特" for k, v in _STATE.items()},
        **{f"{k}_load": f"{v} 在最高负荷与最低负荷下（最小状态）测试集 NLL 超出贝叶斯极限的部分之差，奈特" for k, v in _STATE.items()},
        **{f"{k}_load_vs_transformer": f"{v} 的这一升幅减去匹配的 Transformer 的同一升幅，奈特" for k, v in _STATE.items()},
    },
    "locality": {
        **{f"near_plays_{k}": f"莎士比亚的字符上，最近 3 个键（字符本身和它前面两个）得到的平均注意力，{v}减去无位置编码"
           for k, v in _POSITIONS.items()},
        **{f"near_markov_{k}": f"二阶马尔可夫信源上，最近 2 个键得到的平均注意力，{v}减去无位置编码" for k, v in _POSITIONS.items()},
    },
    "ensemble": {
        "disagreement": "同一模型两个头的注意力行之间的平均 JSD，减去分开训练的两个模型的头之间的，奈特",
        "removal_1": "均值消融 1 个头损失的验证集 NLL，减去均值消融注意力输出中同样多个随机维度损失的，奈特",
        "removal_2": "均值消融 2 个头损失的验证集 NLL，减去均值消融注意力输出中同样多个随机维度损失的，奈特",
    },
    "vision": {
        "vit_nll_below_linear": "softmax 回归与 ViT 的测试集 NLL 之差，奈特/图像",
        # an exact check (Report.decide): its name is the property it states
        "a ViT without positions is invariant to patch order (max |logit change| <= 1e-09, float64)":
            "没有位置编码的 ViT 对图块顺序不变（logit 的最大变化 ≤ 1e-09，float64）",
        "order_drop_fixed": "ViT 的测试集准确率，不置换减去一个固定的图块置换",
        "order_drop_random": "ViT 的测试集准确率，不置换减去每张图随机的图块置换",
        "grounding_gain": "定位得分减去均匀注意力落在物体上的份额",
        "vit_ece_excess": "ViT 在数字图像上的测试集 ECE，减去完全校准的对照的 ECE 的 95% 分位数",
    },
    "referent": {
        "competence": "留出的打分条目上，代词处预测目标的准确率",
        "attention_share": "在选择条目上选出的头从代词到指代对象的权重大于到另一个候选的打分条目所占的比例",
        "attribution_kappa": "选出的头所选的候选与梯度×输入归因所选的候选之间的科恩 κ 系数（打分条目）",
        "ablation_excess": "均值消融选出的头损失的准确率，减去逐个均值消融其他头的平均损失（打分条目）",
    },
    "real-models": {
        **{f"near_{k}": f"{v}：最近 3 个键（字符本身和它前面两个）上的平均注意力，"
           + ("旋转位置编码减去无位置编码" if k == "plays" else "减去均匀的因果水平") for k, v in _REAL.items()},
        **{f"previous_{k}": f"{v}：为前一个字符选出的头在前一个字符的键上的权重，减去中位数头的" for k, v in _REAL.items()},
        **{f"word_start_{k}": f"{v}：为词首选出的头在当前词之前最后一个空格或换行上的权重，减去中位数头的" for k, v in _REAL.items()},
        **{f"dissociation_{k}": f"{v}：前一字符头与词首头在各自角色上领先对方的幅度中较小的一个" for k, v in _REAL.items()},
        **{f"identity_{k}": f"{v}：离开最后一块的残差流的方差中由当前字符解释的比例" for k, v in _REAL.items()},
        **{f"calibration_{k}": f"{v}：ECE 差距（top-1 ECE 减去完全校准的对照的）" for k, v in _REAL.items()},
        "near_minilm": "MiniLM：每个词片前后 2 个位置之内的键上的平均注意力，减去均匀水平",
        "previous_minilm": "MiniLM：在另一半句对上选出的头在前一个词片上的权重，减去中位数头的",
        "next_minilm": "MiniLM：在另一半句对上选出的头在后一个词片上的权重，减去中位数头的",
        "dissociation_minilm": "MiniLM：前一词片头与后一词片头在各自角色上领先对方的幅度中较小的一个",
    },
    "poetry-heads": {
        "parallel_chance": "对仗头在对仗位置的键上的注意力（律诗的中间两联，评估用的诗）与同一位置对上均匀水平之比",
        "parallel_control": "对仗头在对仗位置的键上的注意力，减去打乱诗句的对照模型的",
        "rhyme_chance": "押韵头在上一联末字上的注意力（首联之后的每一联，评估用的诗）与同一位置对上均匀水平之比",
        "rhyme_control": "押韵头在上一联末字上的注意力，减去打乱诗句的对照模型的",
        "dissociation": "对仗头与押韵头在各自读法上领先对方的幅度中较小的一个",
    },
}

SMOKE_LINE_ZH = ("**冒烟测试（--quick）：种子和训练步数都太少，什么也判定不了。这份报告不给结论；"
                 "去掉 --quick 再运行才有结论。**")
# where the English report is: beside this file in the repository; on the docs site a link to report.md from the Chinese
# page would be the Chinese page itself (mkdocs-static-i18n serves report.zh.md under that name), so it is named, and
# the site's language switch leads to it
ENGLISH = "英文报告，即同一文件夹里的 `report.md`（在文档网站上，用页首的语言切换选 English）"
NOTE_TARGETS = re.compile(r"下文原文辨析|下面的原文辨析")  # claims.md's pointers to its own section, read from a report


def _cells(line: str) -> list[str]:
    return [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]


def claims_zh(path: Path = CLAIMS_MD) -> dict[str, tuple[str, str]]:
    """C1..C14 -> (the essay's section, the Chinese wording) from docs/claims.md's table of claims; {} without it."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return {}
    out, header = {}, None
    for line in text.splitlines():
        if not line.startswith("|"):
            header = None
            continue
        cells = _cells(line)
        if header is None:
            header = cells
            continue
        if "原文" in header and "中文" in header and cells and re.fullmatch(r"C\d+", cells[0]):
            row = dict(zip(header, cells))
            wording = NOTE_TARGETS.sub("论点页的“原文辨析”一节", row["中文"].replace("\\|", "|"))
            out[cells[0]] = (row["原文"].replace("\\|", "|"), wording)
    return out


def _verdict(v: str | None) -> str:
    if v is None:
        return "—"
    if v == "smoke":  # a check of a --quick run: measured, not decided
        return f"不作判定（{term('smoke test')}）"
    if v == "not run":
        return "未运行"
    return verdict_text(v)


def _num(v) -> str:
    """As report.md writes an estimate: 4 significant figures."""
    if v is None:
        return "—"
    v = float(v)
    if math.isnan(v):
        return "—"
    if math.isinf(v):
        return "∞" if v > 0 else "−∞"
    return f"{v:.4g}"


def _measure(m: dict) -> str:
    if m.get("value") is None:
        return "—"
    if m.get("interval") is None:
        return f"{_num(m['value'])}（精确值）"
    lo, hi = m["interval"]
    return f"{_num(m['value'])} [{_num(lo)}, {_num(hi)}]"


def _needs(check: dict) -> str:
    floor, direction = check.get("floor"), check.get("direction")
    if floor is None:
        return "这是一个精确的性质，没有随机性"
    return {"above": f"须高于 {floor:g}", "below": f"须低于 {floor:g}",
            "within": f"绝对值须小于 {floor:g}"}.get(direction, f"下限 {floor:g}")


def part_zh(experiment: str, part: str) -> str:
    return PARTS.get(experiment, {}).get(part) or f"`{part}`"


def check_zh(experiment: str, name: str) -> str:
    return CHECKS.get(experiment, {}).get(name) or f"检查 `{name}`"


def _check_sentence(experiment: str, check: dict, quick: bool) -> str:
    sets = check.get("sets") or []
    if check.get("floor") is None:  # an exact yes/no property: 1 is yes
        seen = "、".join(("满足" if m.get("value") == 1 else "不满足") for m in sets[:1]) or "—"
        if len(sets) > 1:
            seen = "，".join(f"种子组 {'AB'[i]} {'满足' if m.get('value') == 1 else '不满足'}" for i, m in enumerate(sets[:2]))
        return f"{check_zh(experiment, check['name'])}：{seen}；{_needs(check)}；{_verdict(check.get('verdict'))}。"
    if len(sets) > 1:
        seen = "，".join(f"种子组 {'AB'[i]} {_measure(m)}" for i, m in enumerate(sets[:2]))
        per_set = [m.get("verdict") for m in sets[:2]]
        if not quick and len(set(per_set)) > 1:
            seen += "（" + "，".join(f"{'AB'[i]} 组{_verdict(v)}" for i, v in enumerate(per_set)) + "）"
    else:
        seen = f"测得 {_measure(sets[0])}" if sets else "—"
    budgets = check.get("budgets") or {}
    if budgets and not quick:
        verdicts = {b: v.get("verdict") for b, v in budgets.items()}
        if len(set(verdicts.values())) > 1:
            seen += "；各训练预算：" + "，".join(f"×{b} {_verdict(v)}" for b, v in verdicts.items())
    return f"{check_zh(experiment, check['name'])}：{seen}；{_needs(check)}；{_verdict(check.get('verdict'))}。"


def _seed_range(seeds) -> str:
    seeds = list(seeds or [])
    if not seeds:
        return ""
    if seeds == list(range(seeds[0], seeds[0] + len(seeds))) and len(seeds) > 2:
        return f"种子 {seeds[0]}–{seeds[-1]}"
    return "种子 " + "、".join(str(s) for s in seeds)


def _set_seeds(report: dict) -> list[list[int] | None]:
    """Each seed set's seeds: from the pre-registration ("set A [0, 1, ...], set B [100, ...]"), else the checks'."""
    said = str((report.get("preregistration") or {}).get("seeds", ""))
    found = re.findall(r"set ([AB]) \[([\d, ]+)\]", said)
    if len(found) == 2:
        return [[int(x) for x in seeds.split(",")] for _, seeds in found]
    checks = report.get("checks") or []
    return [next((c["sets"][i].get("seeds") for c in checks if len(c.get("sets") or []) > i
                  and c["sets"][i].get("seeds")), None) for i in range(2)]


def _replication(report: dict) -> str:
    checks = report.get("checks") or []
    n_sets = max((len(c.get("sets") or []) for c in checks), default=0)
    if report.get("quick") or n_sets < 2:
        return "这只是一个种子组的一次运行，两个种子组之间的复现没有检验。"
    named = "、".join(f"种子组 {'AB'[i]}（{_seed_range(s)}）" if s else f"种子组 {'AB'[i]}"
                     for i, s in enumerate(_set_seeds(report)))
    rule = (f"一项检查只有在两个种子组都得到同一结论时才算{term('holds')}或{term('does not hold')}，"
            f"否则记为{_verdict('inconclusive (does not replicate)')}。")
    same = all(len({(m.get("value"), tuple(m.get("interval") or ())) for m in c.get("sets") or []}) == 1 for c in checks)
    if same:
        text = (f"{named}测得的值完全相同：这个实验的结果不依赖种子（预训练模型、固定的条目或精确量），"
                f"所以两组一致并不构成复现，区间是对条目而不是对种子的。{rule}")
    else:
        text = f"{named}相互独立（初始化和数据都重新抽取）；{rule}"
    if any(c.get("budgets") for c in checks):
        budgets = next(c["budgets"] for c in checks if c.get("budgets"))
        text += ("比较性的检查在 " + "、".join(f"×{b}" for b in budgets) + " 的训练预算下各测一次，"
                 "只有在每个预算下都得到同一结论才算数；上面的数值是 ×1 预算下的。")
    return text


def _history(report: dict) -> str:
    n = len(report.get("history") or [])
    if not n:
        return "没有任何判据是在看到结果之后修改的。"
    return f"看到结果之后，判据修改过 {n} 次（每一次修改、修改前的结果和理由见英文报告的判据修改历史）。"


def render_zh(report: dict) -> str:
    """The Chinese page of a report, from its report.json (as a dict)."""
    with speaking("zh"):
        return _render(report)


def _render(report: dict) -> str:
    for key in ("name", "claims", "verdict", "checks"):
        if key not in report:
            raise RedthreadError(f"not an experiment report: it has no {key!r}")
    name, quick = str(report["name"]), bool(report.get("quick"))
    title = NAMES.get(name, "实验")
    lines = [SMOKE_LINE_ZH, ""] if quick else []
    lines += [f"# {title} · `{name}`" + ("（冒烟测试）" if quick else ""), ""]
    wording = claims_zh()
    for claim in [c.strip() for c in str(report["claims"]).split(",") if c.strip()]:
        if claim in wording:
            section, text = wording[claim]
            lines.append(f"> **{claim}** · {section} · {text}")
        else:
            lines.append(f"> **{claim}**：中文表述见 docs/claims.md。")
        lines.append(">")
    if lines[-1] == ">":
        lines[-1] = ""
    if report.get("skipped"):
        return "\n".join([*lines, f"**未运行。** 这个实验在这里没能运行，原因见{ENGLISH}。", ""])
    verdict = "**结论：无（冒烟测试）。**" if quick else f"**结论：{_verdict(report['verdict'])}。**"
    parts = {p: v for p, v in (report.get("parts") or {}).items() if p}
    if parts and not quick:
        verdict += " 各部分：" + "；".join(f"{part_zh(name, p)}：{_verdict(v)}" for p, v in parts.items()) + "。"
    lines += [verdict, "", "## 结论", ""]
    said = []
    if quick:
        said.append("这是冒烟测试（--quick），不给结论：下面的数只说明实验能跑通。")
    own = (report.get("conclusion") or {}).get("zh")
    if own:
        said.append(own.strip())
    said += [_check_sentence(name, c, quick) for c in report["checks"]]
    said += [_replication(report), _history(report)]
    figures = [f for f in report.get("figures") or [] if f.get("zh")]
    shown = "" if figures else "图和"
    lines += ["".join(said), "", f"实验的设置、预先登记、判据的全文、检查表、调参、{shown}各表见{ENGLISH}；每个数都在 `report.json` 里。", ""]
    if figures:
        lines += ["## 图", ""]
    for f in figures:  # STEM.zh.png, the Chinese drawing (on the site mkdocs-static-i18n serves it as zh/…/STEM.png)
        caption = str(f.get("caption_zh") or "")
        lines += [f"![{caption or f['stem']}]({f['stem']}.zh.png)", ""] + ([f"*{caption}*", ""] if caption else [])
    return "\n".join(lines)


def index_zh(root: Path, names: list[str] | None = None) -> str:
    """The Chinese index.md of a folder of reports (root/NAME/report.json): each experiment's claims, verdict by
    part, its criterion changes after a result and its time; then every check with both seed sets."""
    with speaking("zh"):
        return _index(root, names)


def _index(root: Path, names: list[str] | None) -> str:
    english = root / "index.md"
    if names is None and english.is_file():  # the English index's order
        names = list(dict.fromkeys(re.findall(r"^\| \[([\w-]+)\]\(\1/report\.md\)", english.read_text(encoding="utf-8"), re.M)))
    names = names or [f.name for f in folders(root)]
    reports = {n: json.loads((root / n / "report.json").read_text(encoding="utf-8")) for n in names}
    quick = any(r.get("quick") for r in reports.values())
    lines = ["# 实验：逐条检验原文的论点" + ("（冒烟测试）" if quick else ""), ""]
    if quick:
        lines += [SMOKE_LINE_ZH, ""]
    lines += ["每个实验一行：它检验的论点、结论和各部分的结论、看到结果之后判据修改过几次、用时（秒）、代码所在的提交。点实验名看它的中文报告。", "",
              "| 实验 | 论点 | 结论 | 各部分 | 看到结果后修改判据 | 秒 | 提交 |", "|---|---|---|---|---|---|---|"]
    total = 0.0
    for n, report in reports.items():
        seconds = float(report.get("numbers", {}).get("seconds", 0.0))
        total += seconds
        parts = "；".join(f"{part_zh(n, p)}：{_verdict(v)}" for p, v in (report.get("parts") or {}).items() if p) or "—"
        parts = parts.replace("|", "\\|")
        lines.append(f"| [{NAMES.get(n, n)}]({n}/report.md) | {report['claims']} | {_verdict(report['verdict'])} | "
                     f"{parts} | {len(report.get('history') or [])} | {seconds:.1f} | {commit_of(report)} |")
    lines += ["", f"合计：实验共用 {total / 60:.1f} 分钟。", "", "## 每一项检查", "",
              "每项检查在两组种子中各自的均值和 95% 区间、判定它所用的下限、它的结论；一个部分只有一项检查时，"
              "这项检查的结论就是这个部分的结论。", "",
              "| 实验 | 部分 | 检查 | 要求 | 种子组 A | 种子组 B | 结论 |", "|---|---|---|---|---|---|---|"]
    for n, report in reports.items():
        for check in report.get("checks", []):
            sets = [_measure(m) for m in check.get("sets") or []] + ["—", "—"]
            part = part_zh(n, check["part"]) if check.get("part") else "—"
            cells = [NAMES.get(n, n), part, check_zh(n, check["name"]), _needs(check), sets[0], sets[1], _verdict(check["verdict"])]
            lines.append("| " + " | ".join(str(c).replace("|", "\\|").replace("\n", " ") for c in cells) + " |")
    return "\n".join(lines) + "\n"


def write_index_zh(root: Path, names: list[str] | None = None) -> Path:
    """Write root/index.zh.md beside the English index."""
    target = root / "index.zh.md"
    atomic_write_text(target, index_zh(root, names))
    return target


def read_zh(folder: Path) -> str:
    """The Chinese page of folder/report.json; a file that is no report is a RedthreadError naming it."""
    source = folder / "report.json"
    try:
        report = json.loads(source.read_text(encoding="utf-8"))
    except OSError as e:
        raise RedthreadError(f"cannot read {source}: {e.strerror or e}") from None
    except ValueError as e:
        raise RedthreadError(f"{source} is not JSON: {e}") from None
    if not isinstance(report, dict):
        raise RedthreadError(f"{source} is not an experiment report (not a JSON object)")
    try:
        return render_zh(report)
    except RedthreadError as e:
        raise RedthreadError(f"{source}: {e}") from None
    except (TypeError, KeyError, ValueError, AttributeError, IndexError) as e:
        raise RedthreadError(f"{source} is not an experiment report ({type(e).__name__}: {e})") from None


def write_zh(folder: Path, text: str | None = None) -> Path:
    """Write folder/report.zh.md (from folder/report.json unless `text` is given); nothing else is written."""
    target = folder / "report.zh.md"
    if target.is_dir():
        raise RedthreadError(f"{target} is not a file that can be written")
    try:
        atomic_write_text(target, read_zh(folder) if text is None else text)
    except OSError as e:
        raise RedthreadError(f"cannot write {target}: {e.strerror or e}") from None
    return target


def folders(path: Path) -> list[Path]:
    """A report folder (it holds report.json), or a folder of them."""
    if not path.is_dir():
        raise RedthreadError(f"{path} is not a folder")
    if (path / "report.json").exists():
        return [path]
    found = sorted(p.parent for p in path.glob("*/report.json"))
    if not found:
        raise RedthreadError(f"{path} holds no report.json and no NAME/report.json")
    return found


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m redthread.experiments.report_zh",
                                description="Write report.zh.md, the report in Chinese, beside each report.json.")
    p.add_argument("folders", nargs="+", metavar="DIR", help="a report folder, or a folder of report folders")
    args = p.parse_args(argv)
    try:
        pages = [(f, read_zh(f)) for d in args.folders for f in folders(Path(d))]  # all read before any is written
        for folder, text in pages:
            print(write_zh(folder, text))
        for d in args.folders:  # a folder of reports with an English index gets its Chinese one
            if (Path(d) / "index.md").is_file() and not (Path(d) / "report.json").exists():
                print(write_index_zh(Path(d)))
    except RedthreadError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
