"""`redthread train --resume` reads its checkpoint once: the command rebuilds the model and data from
it and hands the same object to the loop (issue 16, item 4)."""

from __future__ import annotations

from redthread.train import checkpoint
from tests.cli_helpers import TINY_MODEL, TINY_TRAIN, cli, train_tiny_run


def test_a_resumed_run_reads_its_checkpoint_once(tmp_path_factory, corpus, monkeypatch):
    import redthread.train.language_model as command
    import redthread.train.loop as loop

    out, _ = train_tiny_run(tmp_path_factory, corpus)
    reads = []

    def counting(path, *args, **kwargs):
        reads.append(path)
        return checkpoint.read_checkpoint(path, *args, **kwargs)

    monkeypatch.setattr(command, "read_checkpoint", counting)
    monkeypatch.setattr(loop, "read_checkpoint", counting)
    code, _, err = cli("train", "--data", corpus, "--out", out, "--resume", *TINY_MODEL,
                       *[a if a != "12" else "18" for a in TINY_TRAIN])
    assert code == 0, err
    assert len(reads) == 1
    assert checkpoint.read_checkpoint(out).step == 18
