"""The training page's run, natively: settings are checked, a stopped run resumes at its step
and ends where an uninterrupted one does, records say which model they hold, and the
exported record loads through `pyrite infer mnist --record`."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from pyrite import config
from pyrite.errors import ConfigError
from pyrite.train import NoRenderer, Progress

from pyrite.demos.train import models, run  # isort: skip

SMALL = {"epochs": 2, "batch_size": 32, "train_items": 256, "valid_items": 64,
         "checkpoint_every": 3}


@pytest.fixture(scope="module")
def root() -> Path:
    given = config.data_dir()
    path = Path(given) if given else Path(__file__).resolve().parents[4] / "shared" / "data"
    if not (path / "mnist" / "train-images-idx3-ubyte.gz").is_file():
        pytest.skip(f"MNIST is not in {path}/mnist (set PYRITE_DATA)")
    return path


@pytest.mark.parametrize(("field", "value", "message"), [
    ("model", "rnn", "model must be one of cnn, mlp"),
    ("epochs", 0, "epochs must be a whole number from 1 to 100"),
    ("batch_size", 2.5, "batch_size must be a whole number"),
    ("learning_rate", 0.0, r"learning_rate must be in \(0, 1\]"),
    ("lr_schedule", "step", "lr_schedule must be one of constant, cosine"),
])
def test_bad_settings_name_the_field(field: str, value: object, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        run.TrainSettings(**{field: value}).check()  # type: ignore[arg-type]


def test_records_say_which_model_they_hold() -> None:
    for name in models.MODELS:
        record = models.build(name, "numpy").into_record()
        assert models.detect(record) == name
        assert type(models.load(record, "numpy")) is type(models.build(name, "numpy"))
    with pytest.raises(ValueError, match="none of the trainable MNIST models.*mlp holds "
                                         "hidden, output"):
        models.detect({"encoder": {}})


def test_a_stopped_run_resumes_at_its_step(root: Path, tmp_path: Path) -> None:
    settings = run.TrainSettings(**SMALL, lr_schedule="cosine")  # type: ignore[arg-type]
    straight = run.train(settings, "numpy", tmp_path / "a", root=root, renderer=NoRenderer())

    steps: list[int] = []

    class Count(NoRenderer):
        def update(self, progress: Progress, entries: object) -> None:  # type: ignore[override]
            if progress.split == "train":
                steps.append(1)

    run.train(settings, "numpy", tmp_path / "b", root=root, renderer=Count(),
              stop=lambda: len(steps) >= 11)
    saved = run.saved_run(tmp_path / "b")
    assert saved is not None
    assert (saved["epoch"], saved["steps"], saved["step"], saved["done"]) == (2, 3, 11, False)
    with pytest.raises(ConfigError, match="holds no checkpoint"):
        run.train(settings, "numpy", tmp_path / "c", root=root, resume=True)
    resumed = run.train(run.TrainSettings(), "numpy", tmp_path / "b", root=root,
                        renderer=NoRenderer(), resume=True)  # the stored settings win
    for x, y in zip(straight.params(), resumed.params(), strict=True):
        np.testing.assert_array_equal(x.val.numpy(), y.val.numpy())
    assert run.saved_run(tmp_path / "b")["done"]  # type: ignore[index]

    path = tmp_path / "mnist-mlp-trained.bin"
    path.write_bytes(run.export_record(resumed.valid()))
    from pyrite.demos.mnist.inference import load_model

    loaded = load_model(record=path)
    assert run.evaluate(loaded, settings, root) == run.evaluate(resumed.valid(), settings, root)
    again = run.load_checkpoint(tmp_path / "b", "numpy")
    assert run.evaluate(again, settings, root) == run.evaluate(loaded, settings, root)
