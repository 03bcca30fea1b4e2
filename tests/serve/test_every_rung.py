"""Every rung of a ladder in the web app: `/api/next` and `/api/compare` answer for the counting rungs (unigram and
n-gram, which have buffers but no parameters) as for the others; Compare reads each run with its own tokenizer,
puts its columns in the ladder's order and names the runs that cannot read the text, with the characters they lack."""

import pytest
from fastapi.testclient import TestClient

from redthread.commands.ladder import Budget, load_lines_data, run_ladder
from redthread.models.registry import RUNGS
from redthread.serve.app import create_app
from tests.tiny import save_tiny_run

NAMES = ["emma", "olivia", "ava", "isabella", "sophia", "mia", "charlotte", "amelia", "harper", "evelyn"] * 4
EVERY = ["unigram", "ngram", "bigram", "mlp", "rnn", "lstm", "gru", "transformer"]  # the ladder's order


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    names = root.parent / "names.txt"
    names.write_text("\n".join(NAMES) + "\n", encoding="utf-8")
    run_ladder(load_lines_data(str(names)), EVERY, Budget(steps=2, batch_size=4), out=root / "ladder", progress=False,
               say=lambda line: None)
    save_tiny_run(root / "poems", "床前明月光，疑是地上霜。\n")  # another alphabet: it reads none of the names
    save_tiny_run(root / "abc", "abc em\n")  # an alphabet that reads some texts and not others
    with TestClient(create_app(root, max_chars=100, time_limit=20)) as c:
        yield c


def rung_names():
    return [f"ladder/rungs/{rung}" for rung in EVERY]


def test_the_ladder_is_the_registrys_order():
    assert list(RUNGS)[: len(EVERY)] == EVERY


@pytest.mark.parametrize("rung", EVERY)
def test_next_token_answers_for_every_rung(client, rung):
    r = client.post("/api/next", json={"model": f"ladder/rungs/{rung}", "text": "emm", "candidates": 5})
    assert r.status_code == 200, r.text
    body = r.json()
    assert len(body["candidates"]) == 5 and body["kept"] == body["vocab_size"] and body["entropy"] > 0
    assert sum(c["p"] for c in body["candidates"]) <= 1 + 1e-6
    greedy = client.post("/api/next", json={"model": f"ladder/rungs/{rung}", "text": "emm", "temperature": 0}).json()
    assert greedy["kept"] == 1 and greedy["entropy_sample"] == 0 and greedy["entropy"] == pytest.approx(body["entropy"])
    step = client.post("/api/step", json={"model": f"ladder/rungs/{rung}", "text": "emm", "seed": 0})
    assert step.status_code == 200 and step.json()["text"].startswith("emm")


def test_compare_answers_for_every_rung_in_the_ladders_order(client):
    """Asked in reverse (and alphabetical) order, the columns come back unigram first and the Transformer last."""
    for asked in (rung_names()[::-1], sorted(rung_names())):
        r = client.post("/api/compare", json={"models": asked, "text": "emma", "candidates": 3})
        assert r.status_code == 200, r.text
        body = r.json()
        assert [a["model"] for a in body["models"]] == rung_names() and body["unreadable"] == []
        assert [a["rung"] for a in body["models"]] == EVERY
        for a in body["models"]:
            assert len(a["candidates"]) == 3 and a["entropy"] > 0 and a["attention"] == (a["rung"] == "transformer")


def test_compare_reads_each_run_with_its_own_alphabet(client):
    """A run trained on Chinese poems cannot read "emma": it is listed with the characters it lacks, and the
    runs that can read it are compared; a run whose alphabet has e and m but not a is listed too."""
    models = ["poems", "ladder/rungs/transformer", "abc", "ladder/rungs/unigram"]
    r = client.post("/api/compare", json={"models": models, "text": "emma", "candidates": 3})
    assert r.status_code == 200, r.text
    body = r.json()
    assert [a["model"] for a in body["models"]] == ["ladder/rungs/unigram", "ladder/rungs/transformer", "abc"]
    unreadable = {u["model"]: u for u in body["unreadable"]}
    assert list(unreadable) == ["poems"] and unreadable["poems"]["missing"] == ["e", "m", "a"]
    assert "never seen 3 characters of the text: 'e', 'm', 'a'" in unreadable["poems"]["error"]
    r = client.post("/api/compare", json={"models": models, "text": "mia", "candidates": 3})
    body = r.json()
    assert [a["model"] for a in body["models"]] == ["ladder/rungs/unigram", "ladder/rungs/transformer"]
    assert {u["model"]: u["missing"] for u in body["unreadable"]} == {"poems": ["m", "i", "a"], "abc": ["i"]}
    # the poems alone, on a text of their own: compared; every other run lacks its characters
    r = client.post("/api/compare", json={"models": models, "text": "明月", "candidates": 2})
    body = r.json()
    assert [a["model"] for a in body["models"]] == ["poems"] and len(body["unreadable"]) == 3
