"""`kill -9` at every file operation of checkpointing: the next run resumes from a complete epoch,
says which, and leaves no temporary file behind.

A forked child trains with checkpoints and SIGKILLs itself just before its k-th file operation
(creating, syncing, renaming or deleting a file), so nothing of Python's cleanup runs, exactly
as with `kill -9`. The parent then resumes in the same folder. By default a spread of points is
tried; the slow test (PYRITE_SLOW=1) tries every one: 116 of them.
"""

from __future__ import annotations

import logging
import os
import signal
from pathlib import Path
from typing import Any

import pytest

from pyrite.errors import RecordError
from pyrite.optim import AdamConfig
from pyrite.record import NamedMpkFileRecorder
from pyrite.train import KeepLastNCheckpoints, LearnerBuilder
from pyrite.train.checkpoint_index import CheckpointIndex
from pyrite.train.renderer import NoRenderer

_OPS = ("open", "fsync", "replace", "rename", "unlink")


def _builder(folder: Path) -> LearnerBuilder:
    return (LearnerBuilder(folder).with_file_checkpointer(NamedMpkFileRecorder())
            .with_checkpointing_strategy(KeepLastNCheckpoints(1))
            .checkpoint_every(3).renderer(NoRenderer()).num_epochs(2))


def _train_and_die(folder: Path, kill_at: int | None, count_file: Path, tiny: Any,
                   loaders: tuple) -> None:
    """In a forked child: train, SIGKILL before file operation `kill_at`; never returns."""
    try:
        count = [0]
        for name in _OPS:
            real = getattr(os, name)

            def op(*args: Any, _real: Any = real, **kwargs: Any) -> Any:
                if count[0] == kill_at:
                    os.kill(os.getpid(), signal.SIGKILL)
                count[0] += 1
                return _real(*args, **kwargs)
            setattr(os, name, op)
        _builder(folder).build(tiny(), AdamConfig().init(), 0.05).fit(*loaders)
        count_file.write_text(str(count[0]))
        os._exit(0)
    except BaseException:  # noqa: BLE001 - a child must never return into pytest
        os._exit(3)


def _run_child(folder: Path, kill_at: int | None, tiny: Any, loaders: tuple) -> int:
    count_file = folder.parent / f"{folder.name}.count"
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        _train_and_die(folder, kill_at, count_file, tiny, loaders)
    _, status = os.waitpid(pid, 0)
    if kill_at is None:
        assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
        return int(count_file.read_text())
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL, status
    return kill_at


def _spread(total: int) -> list[int]:
    return sorted({0, total - 1, *range(5, total, max(1, total // 6))})


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_kill_at_a_spread_of_file_operations_resumes_from_a_complete_epoch(
        tmp_path: Path, tiny: Any, loaders: tuple, caplog: pytest.LogCaptureFixture) -> None:
    _kill_and_resume(tmp_path, tiny, loaders, caplog, _spread)


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_kill_at_every_file_operation_resumes_from_a_complete_epoch(
        tmp_path: Path, tiny: Any, loaders: tuple, caplog: pytest.LogCaptureFixture) -> None:
    _kill_and_resume(tmp_path, tiny, loaders, caplog, lambda total: list(range(total)))


def _kill_and_resume(tmp_path: Path, tiny: Any, loaders: tuple,
                     caplog: pytest.LogCaptureFixture, points: Any) -> None:
    total = _run_child(tmp_path / "reference", None, tiny, loaders)
    assert total > 40  # 4 checkpoints of 5 files each, their syncs, renames and deletions
    for point in points(total):
        folder = tmp_path / f"kill-{point}"
        _run_child(folder, point, tiny, loaders)
        index = CheckpointIndex(folder / "checkpoint", ".mpk")
        newest = index.newest() if (folder / "checkpoint").exists() else None
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="pyrite.train"):
            _builder(folder).checkpoint().build(tiny(), AdamConfig().init(), 0.05).fit(*loaders)
        said = [r.getMessage() for r in caplog.records if "resum" in r.getMessage()
                or "no complete checkpoint" in r.getMessage()]
        if newest is None:
            assert any("no complete checkpoint" in m for m in said), (point, said)
        else:
            assert f"checkpoint: resuming from epoch {newest}, the newest complete checkpoint" \
                in said, (point, said)
        left = [str(p.relative_to(folder)) for p in folder.rglob("*.tmp")]
        assert left == [], (point, left)
        assert CheckpointIndex(folder / "checkpoint", ".mpk").complete() == [2], point


def test_a_damaged_index_is_one_clear_error(tmp_path: Path) -> None:
    index = CheckpointIndex(tmp_path, ".mpk")
    for text in ["{not json", "[" * 100_000, '{"format": 1, "epochs": {"1": ["../x"]}}',
                 '{"format": 7, "epochs": {}}', "1" * 5000]:
        index.path.write_text(text)
        with pytest.raises(RecordError, match=r"checkpoints\.json: (not a checkpoint index|the "
                                              r"index names a file outside)"):
            index.complete()


def test_an_old_folder_without_index_counts_epochs_with_all_files(tmp_path: Path) -> None:
    for name in ("model-1", "optim-1", "scheduler-1", "model-2", "optim-2"):
        (tmp_path / f"{name}.mpk").write_bytes(b"x")
    index = CheckpointIndex(tmp_path, ".mpk")
    assert index.complete() == [1]  # epoch 2 lacks its scheduler
    index.publish(3, ["model-3.mpk"])  # the first publish seeds the index with epoch 1
    (tmp_path / "model-3.mpk").write_bytes(b"x")
    assert index.complete() == [1, 3]
    index.withdraw(1)
    assert index.complete() == [3] and index.newest() == 3
