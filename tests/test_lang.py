"""The language switch: rt.set_language / rt.language, its default from REDTHREAD_LANG and the locale, the CLI's
--lang flag, and the Chinese terms, each held to docs/glossary.md's row."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

import redthread as rt
from redthread.errors import InvalidValue
from redthread.lang import TERMS, default_language, layer_head, say, speaking, term

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def english_after():
    yield
    rt.set_language(None)


@pytest.mark.parametrize("environ, expected", [
    ({}, "en"),
    ({"LANG": "zh_CN.UTF-8"}, "zh"),
    ({"LANG": "en_GB.UTF-8"}, "en"),
    ({"LANG": "zh_CN.UTF-8", "LC_ALL": "C"}, "en"),  # LC_ALL wins over LANG
    ({"LANG": "C", "LC_MESSAGES": "zh_TW.UTF-8"}, "zh"),
    ({"LANG": "zh_CN.UTF-8", "REDTHREAD_LANG": "en"}, "en"),  # redthread's own variable wins over the locale
    ({"REDTHREAD_LANG": "zh-CN"}, "zh"),
    ({"REDTHREAD_LANG": " "}, "en"),
])
def test_default_language_comes_from_redthread_lang_then_the_locale(environ, expected):
    assert default_language(environ) == expected


def test_an_unknown_language_is_a_one_line_error():
    with pytest.raises(InvalidValue, match=r"^language: unknown language 'fr'; use en \(English\) or zh") as e:
        rt.set_language("fr")
    assert "\n" not in str(e.value)
    with pytest.raises(InvalidValue, match=r"^REDTHREAD_LANG: unknown language 'klingon'"):
        default_language({"REDTHREAD_LANG": "klingon"})


def test_set_language_switches_every_word_and_none_goes_back_to_the_default(monkeypatch):
    monkeypatch.setenv("REDTHREAD_LANG", "en")
    assert rt.set_language("zh") == "zh" and rt.language() == "zh"
    assert say("head", "头") == "头" and term("attention weights") == "注意力权重"
    assert layer_head(1, 3) == "层 1·头 3" and layer_head(2) == "层 2"
    assert rt.set_language("EN") == "en" and term("attention weights") == "attention weights"
    assert layer_head(1, 3) == "layer 1, head 3"
    rt.set_language("zh")
    assert rt.set_language(None) == "en"
    with speaking("zh"):
        assert rt.language() == "zh"
    assert rt.language() == "en"


def glossary_pairs() -> set[tuple[str, str]]:
    """(English, 中文) of every row of the glossary's tables."""
    pairs = set()
    for line in (REPO / "docs" / "glossary.md").read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
        if len(cells) >= 2 and not set(line) <= set("|-: "):
            pairs.add((cells[1], cells[0]))
    return pairs


def test_every_term_is_a_row_of_the_glossary():
    pairs = glossary_pairs()
    missing = [f"{en} / {zh}" for en, zh in TERMS.items() if (en, zh) not in pairs]
    assert not missing, f"not a row of docs/glossary.md: {missing}"


def test_the_glossary_writes_layers_and_heads_as_layer_head_does():
    row = next(zh for en, zh in glossary_pairs() if en.startswith("layer 1, head 3"))
    with speaking("zh"):
        assert row.startswith(layer_head(1, 3))


def run_cli(*args: str, env_lang: str = "en") -> subprocess.CompletedProcess:
    code = "import sys; from redthread.cli import main; raise SystemExit(main(sys.argv[1:]))"
    env = {"PATH": "/usr/bin:/bin", "REDTHREAD_LANG": env_lang, "PYTHONPATH": str(REPO / "src")}
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, timeout=120)


@pytest.mark.slow  # a child process per call
def test_the_cli_lang_flag_is_read_before_or_after_the_command_and_a_bad_one_is_one_line():
    out = run_cli("--lang", "fr", "eval", "--run", "nowhere")
    assert out.returncode == 1 and out.stderr.strip().splitlines() == [
        "error: language: unknown language 'fr'; use en (English) or zh (中文)"]
    for args in (["--lang", "zh", "eval", "--run", "nowhere"], ["eval", "--run", "nowhere", "--lang", "zh"]):
        out = run_cli(*args)
        assert out.returncode == 1 and len(out.stderr.strip().splitlines()) == 1, out.stderr  # the run is missing
        assert "unknown language" not in out.stderr and "unrecognized" not in out.stderr


def test_the_flag_calls_set_language(monkeypatch):
    from redthread import cli

    seen = []
    monkeypatch.setattr(cli, "run", lambda args: seen.append(rt.language()))
    assert cli.main(["--lang", "zh", "eval", "--run", "x"]) == 0 and seen == ["zh"]
    assert cli.main(["eval", "--run", "x", "--lang", "en"]) == 0 and seen == ["zh", "en"]
    assert cli.main(["--lang", "xx", "eval", "--run", "x"]) == 1 and seen == ["zh", "en"]


def test_both_languages_keeps_each_side_and_resolve_splits_nested_pairs():
    from redthread.lang import both_languages, has_pairs, resolve

    with both_languages():
        line = f"{say('model', '模型'):<8}|{say('NLL', '负对数似然'):>6}|{layer_head(1, 3)}"
        nested = say(f"at {layer_head(0)}", f"在{layer_head(0)}")
    assert say("model", "模型") in ("model", "模型")  # off again after the block
    assert resolve(line, "en") == "model   |   NLL|layer 1, head 3"
    assert resolve(line, "zh") == "模型    |负对数似然|层 1·头 3"  # CJK counts two columns; too wide: unpadded
    assert (resolve(nested, "en"), resolve(nested, "zh")) == ("at layer 0", "在层 0")
    assert has_pairs(line) and not has_pairs(resolve(line, "zh")) and has_pairs(repr(line))
    with pytest.raises(InvalidValue, match="unknown language 'fr'"):
        resolve(line, "fr")
