"""The Complete Tang Poems corpus (`--data tang`, data/tang.py): built from the chinese-poetry package's
files, cleaned as tang300 is, repeats dropped, in an order drawn by a seed (so the split is by poem)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from redthread.data import tang, text_path
from redthread.errors import MissingFile
from tests.cli_helpers import assert_one_line_error, cli

README = Path(tang.__file__).parent / "texts" / "README.md"


def write_package(root: Path, files: dict[int, list[dict]]) -> Path:
    """A chinese-poetry package folder holding only the Tang files the builder reads."""
    folder = root / "dist" / "quantangshi"
    folder.mkdir(parents=True)
    for start, entries in files.items():
        (folder / f"poet.tang.{start}.json").write_text(json.dumps(entries, ensure_ascii=False), encoding="utf-8")
    (folder / "poet.song.0.json").write_text(json.dumps([poem("宋詩", "某", ["不是唐詩。"])]), encoding="utf-8")
    return root


def poem(title: str, author: str, lines: list[str]) -> dict:
    return {"title": title, "author": author, "paragraphs": lines}


def test_notes_marks_repeats_and_song_poems_are_dropped(tmp_path):
    package = write_package(tmp_path, {
        0: [poem("秋日", "太宗皇帝", ["秦川雄帝宅（一作「東風細雨」），函谷壯皇居。"]),
            poem("缺字", "某甲", ["□風長雨秋紛紛，四海八荒同一雲。"]),   # a lost character
            poem("標記", "某乙", ["[山]中無甲子，寒盡不知年。"]),          # the database's markup
            poem("空", "某丙", [])],
        1000: [poem("又見", "某丁", ["秦川雄帝宅，函谷壯皇居。"]),          # the first poem's lines again
               poem("春曉", "孟浩然", ["春眠不覺曉，處處聞啼鳥。"])],
    })
    text, counts = tang.build_text(package)
    blocks = text.rstrip("\n").split("\n\n")
    assert counts == {"readable": 3, "poems": 2, "repeats": 1, "characters": len(text)}
    assert sorted(blocks) == sorted(["秋日\n太宗皇帝\n秦川雄帝宅，函谷壮皇居。", "春晓\n孟浩然\n春眠不觉晓，处处闻啼鸟。"])
    assert "一作" not in text and "宋" not in text  # the note, and the Song file beside the Tang ones


def test_the_order_is_drawn_by_the_seed_not_taken_from_the_files(tmp_path):
    names = "山水風月花鳥雲雨"  # poem i's title: two characters that number it (digits would be markup)
    title = [f"{names[i % 8]}{'一二三四五六七八九十'[i // 8]}" for i in range(80)]
    entries = [poem(t, "某", [f"{t}之詩。"]) for t in title]
    package = write_package(tmp_path, {0: entries[:40], 1000: entries[40:]})
    first, _ = tang.build_text(package)
    again, _ = tang.build_text(package)
    simplified = [tang.opencc_t2s().convert(t) for t in title]
    order = [simplified.index(block.split("\n")[0]) for block in first.rstrip("\n").split("\n\n")]
    assert first == again  # the same seed, the same corpus
    assert sorted(order) == list(range(80)) and order != list(range(80))
    held_out = order[72:]  # the last tenth, the validation split of one file
    assert min(held_out) < 40 <= max(held_out)  # drawn from both files, not the last one's tail


def test_files_are_read_in_their_numbered_order(tmp_path):
    package = write_package(tmp_path, {10000: [poem("乙", "某", ["後來一首詩。"])], 2000: [poem("甲", "某", ["先來一首詩。"])]})
    assert [title for title, _, _ in tang.poems(package)] == ["甲", "乙"]


def test_a_folder_without_the_tang_files_is_a_one_line_error(tmp_path):
    with pytest.raises(MissingFile, match="chinese-poetry"):
        tang.build_text(tmp_path)


def test_data_tang_unbuilt_says_how_to_build_it(tmp_path, monkeypatch):
    monkeypatch.setenv("REDTHREAD_TANG", str(tmp_path / "none.txt"))
    with pytest.raises(MissingFile, match="bash setup.sh"):
        text_path("tang")
    code, _, err = cli("train", "--data", "tang", "--out", tmp_path / "run", "--max-iters", "1", "--no-progress")
    assert_one_line_error(code, err, "not built", "bash setup.sh")


def test_a_file_called_tang_in_the_working_folder_is_that_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tang").write_text("床前明月光\n", encoding="utf-8")
    assert text_path("tang") == Path("tang")


def test_the_built_corpus_is_the_one_recorded():
    """setup.sh builds it (CI runs setup.sh first); its checksum, size and counts are those in data/texts/README.md."""
    path = tang.installed_path()
    if not path.is_file():
        if os.environ.get("CI"):
            pytest.fail(f"setup.sh did not build the Tang corpus at {path}")
        pytest.skip("the Tang corpus is not built here (bash setup.sh builds it)")
    row = next(line for line in README.read_text(encoding="utf-8").splitlines() if line.startswith("| `tang` |"))
    digest = row.rstrip(" |").rsplit("|", 1)[1].strip()
    assert tang.sha256(path) == digest
    text = path.read_text(encoding="utf-8")
    assert f"{len(text):,} characters" in row and f"{len(set(text)):,} distinct" in row
    assert f"{text.count(chr(10) * 2) + 1:,} poems" in row


def test_tang300_is_rebuilt_byte_for_byte_from_the_package_in_its_seeded_order():
    """data/make_tang300.py, run on the npm package that setup.sh installs, writes the shipped tang300.txt exactly: the
    poems in random.Random(0)'s order (a split by poem), not the database's grouping by form."""
    import contextlib
    import importlib.util
    import io
    import sys

    source = Path(sys.prefix) / tang.NPM_INSTALL / "dist" / "mengxue" / "tangshisanbaishou.json"
    if not source.is_file():
        if os.environ.get("CI"):
            pytest.fail(f"setup.sh did not install chinese-poetry at {source}")
        pytest.skip("chinese-poetry is not installed here (bash setup.sh installs it)")
    script = Path(__file__).resolve().parents[2] / "data" / "make_tang300.py"
    spec = importlib.util.spec_from_file_location("make_tang300", script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        module.main(str(source))
    made = out.getvalue()
    assert made == text_path("tang300").read_text(encoding="utf-8")
    titles = [block.split("\n", 1)[0] for block in made.split("\n\n")]
    database = [poem["chapter"] for section in json.loads(source.read_text(encoding="utf-8"))["content"] for poem in section["content"]]
    assert len(titles) == len(database) == 320
    assert titles[0] != "行宫"  # the database's first poem (元稹's 五言绝句) is not the file's first
