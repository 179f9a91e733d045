"""Artifact folders (pyrite.train.artifacts): pyrite deletes only the files its runs wrote.

A folder holding files pyrite did not write is refused with one line and left as it is; in a
folder pyrite made, a new run deletes an earlier run's files and keeps the rest; a new or
empty folder just works. Checked on the module, and on `pyrite train mnist` / `charlm` and the
training page's run as a user runs them (the smallest settings: CI has two cores)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pyrite import config
from pyrite.cli import main
from pyrite.errors import ConfigError
from pyrite.train import NoRenderer
from pyrite.train.artifacts import MARKER, check_artifact_dir, prepare_artifact_dir

FILES = ("config.json", "model.bin")  # what the demos write beside the Learner's files
#: an earlier run's files, as the Learner and the demos write them
RUN = ["experiment.log", "config.json", "model.bin", "checkpoint/model-2.bin",
       "checkpoint/optim-2.bin", "checkpoint/scheduler-2.bin", "checkpoint/position-2.json",
       "train/epoch-1/Loss.log", "train/epoch-2/LearningRate.log", "valid/epoch-1/Loss.log",
       "checkpoint/.model-3.bin.0123abcd.tmp"]  # what an interrupted atomic write leaves
#: files of the user's, some inside the run's folders
MINE = ["thesis.tex", "notes/todo.txt", "train/mine.txt", "checkpoint/model-best.bin",
        "valid/epoch-1/plot.png"]

CHARLM = ["train", "charlm", "--small", "--epochs", "1", "--steps-per-epoch", "2",
          "--batch-size", "2"]


def _write(folder: Path, names: list[str]) -> None:
    for name in names:
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(name)


def _tree(folder: Path) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): p.read_text() for p in sorted(folder.rglob("*"))
            if p.is_file()}


def _mnist_root() -> Path | None:
    given = config.data_dir()
    repo = Path(__file__).resolve().parents[3]
    for path in ([Path(given)] if given else []) + [repo / "shared/data",
                                                    repo.parent / "shared/data"]:
        if (path / "mnist" / "train-images-idx3-ubyte.gz").is_file():
            return path
    return None


needs_mnist = pytest.mark.skipif(_mnist_root() is None, reason="no MNIST files (PYRITE_DATA)")


# ---- the module ----------------------------------------------------------------------------------

def test_a_new_folder_is_made_and_marked(tmp_path: Path) -> None:
    folder = prepare_artifact_dir(tmp_path / "a" / "run", FILES)
    assert sorted(p.name for p in folder.iterdir()) == [MARKER]
    assert json.loads((folder / MARKER).read_text())["files"] == sorted(FILES)


def test_an_empty_folder_is_taken(tmp_path: Path) -> None:
    prepare_artifact_dir(tmp_path, FILES)
    assert (tmp_path / MARKER).is_file()


def test_a_users_folder_is_refused_and_left_as_it_is(tmp_path: Path) -> None:
    _write(tmp_path, MINE + RUN)
    before = _tree(tmp_path)
    for clear in (True, False):
        with pytest.raises(ConfigError) as error:
            prepare_artifact_dir(tmp_path, FILES, clear=clear)
        assert str(error.value) == (
            f"artifact folder {tmp_path} holds files pyrite did not write (checkpoint/, notes/, "
            "thesis.tex, ...); choose an empty or new folder, or one pyrite made")
    assert _tree(tmp_path) == before
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "thesis.tex").write_text("mine")
    with pytest.raises(ConfigError, match=r"^--artifacts .* \(thesis.tex\); choose"):
        check_artifact_dir(tmp_path / "x", FILES, what="--artifacts")


def test_a_folder_pyrite_made_loses_the_runs_files_only(tmp_path: Path) -> None:
    prepare_artifact_dir(tmp_path, FILES)
    _write(tmp_path, RUN + MINE)
    (tmp_path / "link.log").symlink_to(tmp_path / "thesis.tex")  # pyrite writes no links
    prepare_artifact_dir(tmp_path, FILES)
    assert _tree(tmp_path) == {**{name: name for name in MINE}, "link.log": "thesis.tex",
                               MARKER: (tmp_path / MARKER).read_text()}
    assert not (tmp_path / "train" / "epoch-2").exists()  # emptied folders go
    assert not (tmp_path / "experiment.log").exists()


def test_files_an_earlier_run_listed_are_cleared_too(tmp_path: Path) -> None:
    prepare_artifact_dir(tmp_path, ["settings.json"])  # the training page's run
    _write(tmp_path, ["settings.json", "experiment.log", "config.json"])
    prepare_artifact_dir(tmp_path, FILES)  # then `pyrite train mnist` in the same folder
    assert sorted(_tree(tmp_path)) == [MARKER]


def test_a_marker_names_no_path_outside_the_folder(tmp_path: Path) -> None:
    folder = tmp_path / "run"
    prepare_artifact_dir(folder)
    (tmp_path / "precious.txt").write_text("mine")
    (folder / MARKER).write_text(json.dumps({"files": ["../precious.txt", "/etc/passwd"]}))
    prepare_artifact_dir(folder)
    assert (tmp_path / "precious.txt").read_text() == "mine"


def test_resuming_keeps_everything(tmp_path: Path) -> None:
    prepare_artifact_dir(tmp_path, FILES)
    _write(tmp_path, RUN + MINE)
    before = _tree(tmp_path)
    prepare_artifact_dir(tmp_path, FILES, clear=False)
    assert _tree(tmp_path) == before


def test_a_run_folder_made_before_the_marker_is_recognised(tmp_path: Path) -> None:
    _write(tmp_path, RUN)  # no marker, only a run's files, experiment.log among them
    prepare_artifact_dir(tmp_path, FILES)
    assert sorted(_tree(tmp_path)) == [MARKER]
    mine = tmp_path / "mine"
    _write(mine, ["config.json", "model.bin"])  # a run's names, but no run's log: not pyrite's
    with pytest.raises(ConfigError, match=r"\(config.json, model.bin\)"):
        prepare_artifact_dir(mine, FILES)


def test_a_file_is_no_folder(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("mine")
    with pytest.raises(ConfigError, match="is not a folder"):
        prepare_artifact_dir(tmp_path / "f")
    assert (tmp_path / "f").read_text() == "mine"


# ---- the commands ----------------------------------------------------------------------------

def test_train_charlm_refuses_a_users_folder(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "thesis.tex").write_text("my thesis")
    assert main([*CHARLM, "--artifacts", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err == (f"pyrite train charlm: error: --artifacts {tmp_path} holds files pyrite did not "
                   "write (thesis.tex); choose an empty or new folder, or one pyrite made\n")
    assert _tree(tmp_path) == {"thesis.tex": "my thesis"}


def test_train_charlm_clears_its_own_files_only(tmp_path: Path) -> None:
    run = tmp_path / "run"
    assert main([*CHARLM, "--artifacts", str(run)]) == 0  # a new folder
    assert (run / "model.bin").is_file() and (run / MARKER).is_file()
    _write(run, ["notes.txt", "train/epoch-7/Loss.log"])  # the user's, and an old run's log
    assert main([*CHARLM, "--artifacts", str(run)]) == 0
    assert (run / "notes.txt").read_text() == "notes.txt"
    assert not (run / "train" / "epoch-7").exists()
    assert (run / "model.bin").is_file() and (run / "train" / "epoch-1" / "Loss.log").is_file()


def test_the_command_prints_one_line_and_no_traceback(tmp_path: Path) -> None:
    (tmp_path / "thesis.tex").write_text("my thesis")
    done = subprocess.run([sys.executable, "-m", "pyrite.cli", *CHARLM, "--artifacts",
                           str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert "holds files pyrite did not write (thesis.tex)" in done.stderr
    assert (tmp_path / "thesis.tex").read_text() == "my thesis"


@needs_mnist
def test_train_mnist_refuses_then_clears_its_own(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("PYRITE_DATA", str(_mnist_root()))
    quick = ["train", "mnist", "--epochs", "1", "--limit", "16"]
    (tmp_path / "thesis.tex").write_text("my thesis")
    assert main([*quick, "--artifacts", str(tmp_path)]) == 2
    assert capsys.readouterr().err.startswith(
        f"pyrite train mnist: error: --artifacts {tmp_path} holds files pyrite did not write "
        "(thesis.tex); choose")
    assert main([*quick, "--artifacts", str(tmp_path), "--resume", "1"]) == 2
    assert _tree(tmp_path) == {"thesis.tex": "my thesis"}

    run = tmp_path / "run"
    assert main([*quick, "--artifacts", str(run)]) == 0
    _write(run, ["notes.txt", "valid/epoch-3/Accuracy.log"])
    assert main([*quick, "--artifacts", str(run)]) == 0
    assert (run / "notes.txt").read_text() == "notes.txt"
    assert not (run / "valid" / "epoch-3").exists()
    assert {"config.json", "experiment.log", "model.bin", "checkpoint/model-1.bin",
            "valid/epoch-1/Accuracy.log"} <= set(_tree_names(run))


def _tree_names(folder: Path) -> list[str]:
    return [p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()]


@needs_mnist
def test_the_training_pages_run_keeps_a_users_files(tmp_path: Path) -> None:
    from pyrite.demos.train import run

    root = _mnist_root()
    settings = run.TrainSettings(epochs=1, batch_size=8, train_items=8, valid_items=8)
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "train").mkdir()
    (tmp_path / "mine" / "train" / "digits.csv").write_text("my data")
    with pytest.raises(ConfigError, match=r"holds files pyrite did not write \(train/\)"):
        run.train(settings, "numpy", tmp_path / "mine", root=root, renderer=NoRenderer())
    assert _tree(tmp_path / "mine") == {"train/digits.csv": "my data"}

    folder = tmp_path / "run"
    run.train(settings, "numpy", folder, root=root, renderer=NoRenderer())
    (folder / "notes.txt").write_text("mine")
    run.train(settings, "numpy", folder, root=root, renderer=NoRenderer())
    assert (folder / "notes.txt").read_text() == "mine"
    assert run.saved_run(folder) is not None
