"""The demo trainings read other sources: `pyrite train mnist --dataset` (Parquet, a Hugging Face
dataset) and `pyrite train charlm --dataset` (a text column), a few steps each, offline."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest

from pyrite.cli import main
from pyrite.dataset import DatasetError, Image
from pyrite.demos.mnist.sources import datasets as mnist_sources
from pyrite.demos.mnist.sources import to_item

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")


def _png(value: int, size: int = 28, mode: str = "L") -> bytes:
    from PIL import Image as PilImage

    buf = io.BytesIO()
    PilImage.new(mode, (size, size), color=value).save(buf, format="PNG")
    return buf.getvalue()


@pytest.fixture
def digits(tmp_path: Path) -> Path:
    path = tmp_path / "digits.parquet"
    rows = [{"image": {"bytes": _png(d * 25), "path": None}, "label": d} for d in range(10)] * 4
    pq.write_table(pa.Table.from_pylist(rows), path, row_group_size=16)
    return path


def test_mnist_items_from_each_image_form() -> None:
    gray = bytes(range(256)) * 3 + bytes(16)
    assert to_item({"image": gray, "label": 4}, "s") == {"image": gray, "label": 4}
    assert to_item({"image": list(gray), "label": 0}, "s")["image"] == gray
    assert to_item({"image": _png(9), "label": 1}, "s")["image"] == bytes([9]) * 784
    assert to_item({"image": {"bytes": _png(7), "path": None}, "label": 2}, "s")["image"] == \
        bytes([7]) * 784
    rgb = Image(28, 28, 3, bytes([255, 0, 0]) * 784)
    assert to_item({"image": rgb, "label": 3}, "s")["image"] == bytes([76]) * 784
    with pytest.raises(DatasetError, match=r"no \['label'\] column"):
        to_item({"image": gray}, "s")
    with pytest.raises(DatasetError, match="is 10x10; the MNIST model takes 28x28"):
        to_item({"image": _png(1, size=10), "label": 1}, "s")
    with pytest.raises(DatasetError, match="labels must be ints 0-9"):
        to_item({"image": gray, "label": 12}, "s")
    with pytest.raises(DatasetError, match="holds float"):
        to_item({"image": 0.5, "label": 1}, "s")


def test_single_split_source_holds_out_a_tenth(digits: Path) -> None:
    train, valid = mnist_sources(str(digits))
    assert (train.len(), valid.len()) == (36, 4)
    assert valid.get(0) == {"image": bytes([150]) * 784, "label": 6}


def test_train_mnist_from_parquet(digits: Path, tmp_path: Path,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "run"
    assert main(["train", "mnist", "--dataset", str(digits), "--epochs", "1",
                 "--artifacts", str(run)]) == 0
    assert (run / "model.bin").is_file()
    assert "Trained model" in capsys.readouterr().out


def test_train_mnist_from_a_hugging_face_dataset(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    datasets = pytest.importorskip("datasets")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    features = datasets.Features({"image": datasets.Image(), "label": datasets.Value("int64")})
    rows: dict[str, list[Any]] = {"image": [{"bytes": _png(d * 25), "path": None}
                                            for d in range(10)], "label": list(range(10))}
    split = datasets.Dataset.from_dict(rows, features=features)
    datasets.DatasetDict({"train": split, "test": split}).save_to_disk(tmp_path / "hf")
    assert main(["train", "mnist", "--dataset", f"hf:{tmp_path / 'hf'}", "--epochs", "1",
                 "--artifacts", str(tmp_path / "run")]) == 0
    assert (tmp_path / "run" / "model.bin").is_file()


def test_train_mnist_bad_dataset_is_one_line(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "wrong.parquet"
    pq.write_table(pa.table({"pixels": [b"x"], "label": [1]}), path)
    assert main(["train", "mnist", "--dataset", str(path), "--epochs", "1",
                 "--artifacts", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "needs 'image' and 'label'" in err
    assert main(["train", "mnist", "--dataset", str(tmp_path / "none.parquet"),
                 "--artifacts", str(tmp_path / "run2")]) == 2
    assert "no file or folder" in capsys.readouterr().err


def test_train_charlm_on_a_text_column(tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "text.parquet"
    lines = [f"Line {i}: the quick brown fox jumps over the lazy dog." for i in range(200)]
    pq.write_table(pa.table({"text": lines, "id": list(range(200))}), path)
    run = tmp_path / "run"
    assert main(["train", "charlm", "--small", "--dataset", str(path), "--epochs", "1",
                 "--steps-per-epoch", "2", "--batch-size", "2", "--artifacts", str(run)]) == 0
    config = (run / "config.json").read_text()
    assert str(path) in config and '"vocab"' in config
    assert "Q" not in config.split('"vocab"')[1].split(",")[0]  # the vocabulary is the text's
    capsys.readouterr()
    pq.write_table(pa.table({"id": [1]}), tmp_path / "notext.parquet")
    assert main(["train", "charlm", "--small", "--dataset", str(tmp_path / "notext.parquet"),
                 "--artifacts", str(tmp_path / "run2")]) == 2
    assert "no 'text' column" in capsys.readouterr().err
