import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import torch

from redthread.data.corpus import text_path
from redthread.data.tokenizers import CharTokenizer
from redthread.errors import MissingFile, RedthreadError
from redthread.experiments import poetry_heads as ph
from redthread.experiments.poetry_heads import (
    CRITERIA,
    MEASURES,
    READINGS,
    Couplet,
    Windows,
    check_values,
    head_scores,
    pairs,
    parse_couplets,
    parse_poem,
    regulated_poems,
    role_values,
    shuffle_second_halves,
    split_poems,
)
from redthread.experiments.report import Report
from redthread.experiments.stats import FAILS, HOLDS

# three poems of tang300 as the corpus writes them
TWO_COUPLETS_A_LINE = "凉思\n李商隐\n客去波平槛，蝉休露满枝。永怀当此节，倚立自移时。\n北斗兼春远，南陵寓使迟。天涯占梦数，疑误有新知。"
QUATRAIN = "登鹳雀楼\n王之涣\n白日依山尽，黄河入海流。\n欲穷千里目，更上一层楼。"


def anthology_poem(title: str) -> str:
    """A poem of tang300 as the file holds it: title, poet, verse lines."""
    text = text_path("tang300").read_text(encoding="utf-8")
    return next(b for b in text.split("\n\n") if b.startswith(title + "\n"))


def test_poems_are_in_the_shipped_anthology():
    assert anthology_poem("凉思") == TWO_COUPLETS_A_LINE and anthology_poem("登鹳雀楼") == QUATRAIN


def test_a_line_holding_two_couplets_is_split_into_them():
    poem = parse_poem(TWO_COUPLETS_A_LINE)
    assert poem is not None and poem.form == "五言律诗" and poem.n == 5 and poem.poet == "李商隐"
    assert [c.first for c in poem.couplets] == ["客去波平槛", "永怀当此节", "北斗兼春远", "天涯占梦数"]
    assert poem.couplets[1] == Couplet("永怀当此节", "倚立自移时", "。")
    assert poem.text.split("\n")[1] == "永怀当此节，倚立自移时。"  # the model reads one couplet a line
    assert all(poem.text[poem.line_start(k):].startswith(c.first) for k, c in enumerate(poem.couplets))


def test_forms_and_what_is_not_regulated_verse():
    assert parse_poem(QUATRAIN).form == "五言绝句"
    long_song = anthology_poem("长恨歌")  # 七言古诗: whole couplets of 7 on every line, but sixty of them
    assert all(parse_couplets(line) for line in long_song.split("\n")[2:]) and parse_poem(long_song) is None
    mixed = anthology_poem("古意")  # whole couplets on every line, of 5 and of 7
    assert all(parse_couplets(line) for line in mixed.split("\n")[2:]) and parse_poem(mixed) is None
    assert parse_couplets(anthology_poem("古柏行").split("\n")[-1]) is None  # "志士幽人莫怨嗟：古来材大难为用。"
    assert parse_poem("题\n某\n白日依山尽，黄河入海流。\n欲穷千里目，") is None  # a line ending inside a couplet
    assert parse_poem("题\n某\n白日依山尽，黄河入海流。\n欲穷千里目，更上一层楼高。") is None  # halves of 5 and 6
    assert parse_poem("题\n某\n白日依山，黄河入海。\n欲穷千里，更上一层。") is None  # halves of 4
    assert parse_poem("题\n某\n白日依山尽，黄河入海流。\n故人西辞黄鹤楼，烟花三月下扬州。") is None  # 5 and 7 mixed
    assert parse_couplets("白日依山尽，黄河入海流？") == [Couplet("白日依山尽", "黄河入海流", "？")]
    assert parse_couplets("白日依山尽，黄河入海流。x") is None


def test_the_anthology_s_regulated_verse_by_form():
    poems = regulated_poems(text_path("tang300").read_text(encoding="utf-8"))
    forms = Counter(p.form for p in poems)
    # the database counts 五言绝句 29, 七言绝句 51, 五言律诗 80, 七言律诗 53 by its own labels (data/texts/README.md);
    # by shape a few of its 古诗 and 乐府 join them, and none of the four forms is missing
    assert set(forms) == {"五言绝句", "七言绝句", "五言律诗", "七言律诗"}
    assert forms["五言律诗"] >= 80 and forms["七言律诗"] >= 53 and len(poems) < 320
    assert all(len(p.couplets) in (2, 4) and {len(c.first) for c in p.couplets} == {len(c.second) for c in p.couplets}
               == {p.n} for p in poems)


def test_the_split_is_seeded_and_disjoint():
    poems = regulated_poems(text_path("tang300").read_text(encoding="utf-8"))
    train, select, evaluate = split_poems(poems, 3, 20)
    assert len(select) == len(evaluate) == 20 and len(train) + 40 == len(poems)
    titles = [set(map(id, s)) for s in (train, select, evaluate)]
    assert not (titles[0] & titles[1]) and not (titles[0] & titles[2]) and not (titles[1] & titles[2])
    assert split_poems(poems, 3, 20)[1] == select and split_poems(poems, 4, 20)[1] != select


def test_the_shuffle_keeps_the_layout_and_breaks_the_couplets():
    poems = regulated_poems(text_path("tang300").read_text(encoding="utf-8"))
    shuffled = shuffle_second_halves(poems, np.random.default_rng(0))
    assert [len(p.text) for p in shuffled] == [len(p.text) for p in poems]  # every position where it was
    assert [[c.first for c in p.couplets] for p in shuffled] == [[c.first for c in p.couplets] for p in poems]
    for n in (5, 7):
        before = Counter(c.second + c.end for p in poems if p.n == n for c in p.couplets)
        after = Counter(c.second + c.end for p in shuffled if p.n == n for c in p.couplets)
        assert before == after  # drawn without replacement among half-lines of the same length
    kept = sum(a == b for p, q in zip(poems, shuffled) for a, b in zip(p.couplets, q.couplets))
    assert kept < 0.02 * sum(len(p.couplets) for p in poems)


def windows_of(poem_block: str, T: int = 64) -> tuple[Windows, CharTokenizer]:
    poem = parse_poem(poem_block)
    tokenizer = CharTokenizer("".join(sorted(set(poem.text) | {"\n"})))
    x = torch.from_numpy(tokenizer.encode_array("\n" * (T - len(poem.text)) + poem.text).astype(np.int64))[None]
    return Windows(x, [poem]), tokenizer


def test_pairs_of_a_couplet():
    poem = parse_poem(TWO_COUPLETS_A_LINE)
    line = 2 * 5 + 3  # "客去波平槛，蝉休露满枝。\n"
    assert pairs(poem, "parallel", "aligned", 0)[:5] == [(line + 6 + i, line + i) for i in range(5)]  # 颔联 only
    assert pairs(poem, "parallel", "predictive", 0)[0] == (line + 5, line)  # from the comma, which predicts 倚
    assert len(pairs(poem, "parallel", "aligned", 0)) == 10 and len(pairs(poem, "parallel_all", "aligned", 0)) == 20
    text = poem.text
    assert [(text[q], text[k]) for q, k in pairs(poem, "parallel", "aligned", 0)[:2]] == [("倚", "永"), ("立", "怀")]
    assert [(text[q], text[k]) for q, k in pairs(poem, "rhyme", "aligned", 0)] == [("时", "枝"), ("迟", "时"), ("知", "迟")]
    assert [text[q] for q, _ in pairs(poem, "rhyme", "predictive", 0)] == ["移", "使", "新"]
    assert pairs(parse_poem(QUATRAIN), "parallel", "aligned", 0) == []  # a 绝句 has no middle couplets
    assert pairs(poem, "rhyme", "aligned", 7)[0] == (7 + line + 10, 7 + 10)  # shifted with the poem in its window


def known_maps(T: int, poem_block: str, parallel_head: int | None, rhyme_head: int | None):
    """Attention (1, 1, H, T, T), uniform over the causal keys, except for a head that attends exactly to the parallel
    key (aligned reading) and one that attends exactly to the previous couplet's end (aligned reading)."""
    windows, _ = windows_of(poem_block, T)
    poem, H = windows.poems[0], 4
    att = torch.tril(torch.ones(T, T))
    att = (att / att.sum(-1, keepdim=True)).expand(1, 1, H, T, T).clone()  # (L, B, H, T, T)
    for head, measure in ((parallel_head, "parallel_all"), (rhyme_head, "rhyme")):
        if head is not None:
            for q, k in pairs(poem, measure, "aligned", T - len(poem.text)):
                att[0, 0, head, q] = 0
                att[0, 0, head, q, k] = 1
    return windows, att


def test_a_head_on_the_parallel_key_scores_one_and_a_uniform_head_the_uniform_level():
    T = 64
    windows, att = known_maps(T, TWO_COUPLETS_A_LINE, parallel_head=2, rhyme_head=None)
    scores = head_scores(lambda x: att[:, : len(x)], windows)
    s = scores["parallel", "aligned"]
    offset = T - len(windows.poems[0].text)
    uniform = float(np.mean([1 / (q + 1) for q, _ in pairs(windows.poems[0], "parallel", "aligned", offset)]))
    assert s["pairs"] == 10 and s["uniform"] == pytest.approx(uniform)
    assert s["scores"][0, 2] == pytest.approx(1.0)
    assert s["scores"][0, 0] == pytest.approx(uniform)  # the uniform head sits exactly at the uniform level
    values = role_values(scores, scores)
    assert values["parallel"]["head"] == (0, 2) and values["parallel"]["reading"] == "aligned"
    assert values["parallel"]["ratio"] == pytest.approx(1 / uniform)


def measured(parallel_head, rhyme_head, noise: float, seed: int) -> dict:
    windows, att = known_maps(64, TWO_COUPLETS_A_LINE, parallel_head, rhyme_head)
    g = torch.Generator().manual_seed(seed)
    att = att * (1 + noise * torch.rand(att.shape, generator=g))
    att = att / att.sum(-1, keepdim=True)
    scores = head_scores(lambda x: att[:, : len(x)], windows)
    return role_values(scores, scores)


def verdict_of(real_heads, control_heads) -> str:
    seeds = list(range(5))
    values = [check_values(measured(*real_heads, 0.2, s), measured(*control_heads, 0.2, 100 + s)) for s in seeds]
    report = Report(ph.NAME, ph.CLAIMS)
    ph.decide(report, values, seeds)
    return report.verdict


def test_uniform_attention_does_not_hold():
    """The machinery can fail: a model whose every head spreads its weight evenly, against a control that does the
    same, gives ratios of 1, no margin over the control and no dissociation."""
    assert verdict_of((None, None), (None, None)) == FAILS


def test_heads_on_the_known_keys_hold_and_a_positional_control_catches_them():
    assert verdict_of((1, 3), (None, None)) == HOLDS
    report = Report(ph.NAME, ph.CLAIMS)  # a control with the same heads: the layout alone would explain them
    ph.decide(report, [check_values(measured(1, 3, 0.2, s), measured(1, 3, 0.2, 100 + s)) for s in range(5)],
              list(range(5)))
    assert report.parts["对仗 (parallelism)"] == FAILS and report.parts["rhyme"] == FAILS


def test_one_head_for_both_roles_has_no_dissociation():
    windows, att = known_maps(64, TWO_COUPLETS_A_LINE, parallel_head=1, rhyme_head=None)
    for q, k in pairs(windows.poems[0], "rhyme", "aligned", 64 - len(windows.poems[0].text)):
        att[0, 0, 1, q] = 0
        att[0, 0, 1, q, k] = 1
    scores = head_scores(lambda x: att[:, : len(x)], windows)
    values = role_values(scores, scores)
    assert values["parallel"]["head"] == values["rhyme"]["head"] == (0, 1) and values["dissociation"] == 0


def test_a_full_run_needs_the_tang_corpus(monkeypatch):
    def missing(name):
        if name == "tang":
            raise MissingFile("the Tang corpus (--data tang) is not built at /x/tang.txt: run bash setup.sh")
        return text_path(name)

    monkeypatch.setattr(ph, "text_path", missing)
    with pytest.raises(RedthreadError) as e:
        ph.run(quick=False)
    assert "tang" in str(e.value) and "bash setup.sh" in str(e.value) and "\n" not in str(e.value)
    path, note = ph.corpus_file(quick=True)  # --quick reads the shipped anthology instead, and says so
    assert path == text_path("tang300") and "tang300" in note


def test_poetry_heads_quick_report(quick_report):
    report, md, data, folder = quick_report("poetry-heads")
    checks = {c["name"]: c for c in data["checks"]}
    assert set(checks) == set(CRITERIA)
    assert {c["part"] for c in data["checks"]} == {"对仗 (parallelism)", "rhyme", "different heads"}
    assert all(len(c["seeds"]) == 2 and c["floor"] > 0 and c["direction"] == "above" for c in data["checks"])
    n = data["numbers"]
    assert n["budget"] == ph.BUDGET and data["tuning"] == []
    for r in n["runs"]:
        assert set(r) >= {"real", "shuffled", "none", "real_on_shuffled", "split"}
        assert all(r[arm]["train"]["steps"] == ph.BUDGET["quick_steps"] for arm in ph.ARMS)
        assert set(r["real"]["scores"]) == {f"{m}/{x}" for m in MEASURES for x in READINGS}
        assert r["real"]["roles"]["parallel"]["reading"] in READINGS
    assert "**Conclusion.**" in md and "**结论。**" in md
    for name in ("head_masses", "maps"):
        assert (folder / f"{name}.png").exists()


def test_the_chinese_example_map_is_drawn_only_for_a_full_run(tmp_path):
    from redthread.errors import RedthreadError
    from redthread.experiments.poetry_heads import maps_zh

    (tmp_path / "report.json").write_text(json.dumps({"quick": True, "numbers": {}}))
    with pytest.raises(RedthreadError, match="holds a --quick run"):
        maps_zh(tmp_path)


def test_the_committed_run_has_its_example_map_in_chinese():
    """docs/experiments/poetry-heads/maps.zh.png: maps.png drawn again in Chinese (`maps_zh`, which checks that the model
    trained again is the run's); the site serves it as the Chinese page's maps.png (mkdocs-static-i18n's suffix)."""
    folder = Path(__file__).resolve().parents[2] / "docs" / "experiments" / "poetry-heads"
    assert (folder / "maps.zh.png").stat().st_size > 10_000 and (folder / "maps.png").is_file()
