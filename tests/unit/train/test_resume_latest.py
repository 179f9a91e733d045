"""`pyrite train mnist --resume latest`: resumes from the newest *complete* checkpoint and says
which; with no complete checkpoint it is one clear error. A checkpoint a crash left incomplete
(withdrawn from checkpoint/checkpoints.json, as the Learner does before rewriting an epoch) is
skipped. The smallest settings: CI has two cores."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pyrite.cli import main
from pyrite.record import BinFileRecorder
from pyrite.train.checkpoint_index import CheckpointIndex

from .test_artifact_folder import _mnist_root, needs_mnist

QUICK = ["train", "mnist", "--limit", "16"]


def test_latest_with_no_checkpoint_is_one_clear_error(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*QUICK, "--artifacts", str(tmp_path / "new"), "--resume", "latest"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(f"pyrite train mnist: error: --resume latest: {tmp_path / 'new'}"
                          "/checkpoint holds no complete checkpoint; train without --resume")


def test_resume_spellings(capsys: pytest.CaptureFixture[str]) -> None:
    for bad in ("newest-ish", "0", "-2"):
        with pytest.raises(SystemExit) as exited:
            main([*QUICK, "--resume", bad])
        assert exited.value.code == 2
        assert "or 'latest'" in capsys.readouterr().err


@needs_mnist
def test_latest_resumes_from_the_newest_complete_epoch(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("PYRITE_DATA", str(_mnist_root()))
    run = tmp_path / "run"
    assert main([*QUICK, "--epochs", "2", "--artifacts", str(run)]) == 0
    index = CheckpointIndex(run / "checkpoint", BinFileRecorder.extension)
    assert index.complete() == [1, 2]
    index.withdraw(2)  # a kill -9 while epoch 2's files were being rewritten
    capsys.readouterr()

    assert main([*QUICK, "--epochs", "3", "--artifacts", str(run), "--resume", "LATEST"]) == 0
    out = capsys.readouterr().out
    assert (f"Resuming from epoch 1, the newest complete checkpoint in {run / 'checkpoint'}"
            in out)
    assert index.complete()[-1] == 3
    # epochs 2 and 3 ran again after the resume: their validation logs are there
    assert all((run / "valid" / f"epoch-{e}").is_dir() for e in (1, 2, 3))
    events = json.loads((run / "checkpoint" / "checkpoints.json").read_text())
    assert "3" in events["epochs"]
