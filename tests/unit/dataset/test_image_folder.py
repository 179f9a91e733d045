"""ImageFolderDataset: class folders and multi-label lists, decoded on get."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pyrite.dataset import DatasetError, Image, ImageFolderDataset


@pytest.fixture
def tree(tmp_path: Path, samples: Path) -> Path:
    """root/animal/{cat,coyote}.jpg, root/bird/{pelican.jpeg, sub/bald_eagle.jpeg, chicken.JPG},
    root/vehicle/car.jpg, plus files that must be ignored."""
    root = tmp_path / "root"
    files = {
        "animal/cat.jpg": "cat.jpg",
        "animal/coyote.jpg": "coyote.jpg",
        "bird/pelican.jpeg": "pelican.jpeg",
        "bird/sub/bald_eagle.jpeg": "bald_eagle.jpeg",
        "bird/chicken.JPG": "chicken.jpg",
        "vehicle/car.jpg": "car.jpg",
        ".hidden/cat.jpg": "cat.jpg",
    }
    for dest, src in files.items():
        (root / dest).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(samples / src, root / dest)
    (root / "animal/notes.txt").write_text("not an image")
    (root / "loose.jpg").write_bytes((samples / "car.jpg").read_bytes())
    (root / "empty").mkdir()
    return root


def test_classification_finds_classes_and_labels(tree: Path) -> None:
    ds = ImageFolderDataset.classification(tree)
    assert ds.classes == ["animal", "bird", "vehicle"]
    assert ds.len() == 6
    names = [(Path(p).relative_to(tree).as_posix(), label) for p, label in ds.items]
    assert names == [
        ("animal/cat.jpg", 0),
        ("animal/coyote.jpg", 0),
        ("bird/chicken.JPG", 1),
        ("bird/pelican.jpeg", 1),
        ("bird/sub/bald_eagle.jpeg", 1),
        ("vehicle/car.jpg", 2),
    ]


def test_classification_items_decode_to_rgb(tree: Path) -> None:
    ds = ImageFolderDataset.classification(tree)
    item = ds.get(5)
    assert item is not None
    assert item["label"] == 2
    assert item["path"] == str(tree / "vehicle/car.jpg")
    image = item["image"]
    assert isinstance(image, Image)
    assert image.shape == (256, 256, 3)
    assert ds.get(6) is None


def test_classification_extension_filter(tree: Path) -> None:
    ds = ImageFolderDataset.classification(tree, extensions=[".JPEG"])
    assert ds.classes == ["bird"]
    assert ds.len() == 2


def test_classification_errors(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="is not a folder"):
        ImageFolderDataset.classification(tmp_path / "nowhere")
    (tmp_path / "a").mkdir()
    with pytest.raises(DatasetError, match="no images under"):
        ImageFolderDataset.classification(tmp_path)


def test_multilabel_gives_multi_hot_labels(samples: Path) -> None:
    ds = ImageFolderDataset.multilabel(
        [
            (samples / "cat.jpg", ["animal", "cat"]),
            (samples / "coyote.jpg", ["animal", "dog"]),
            (str(samples / "car.jpg"), []),
        ],
        ["animal", "cat", "dog"],
    )
    assert ds.len() == 3
    assert [label for _, label in ds.items] == [[1, 1, 0], [1, 0, 1], [0, 0, 0]]
    item = ds.get(2)
    assert item is not None
    assert item["label"] == [0, 0, 0]
    assert item["image"].shape == (256, 256, 3)  # type: ignore[union-attr]
    item["label"].append(5)  # type: ignore[union-attr]  # a copy: the dataset is unchanged
    assert ds.get(2)["label"] == [0, 0, 0]  # type: ignore[index]


def test_multilabel_errors(samples: Path, tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="label 'bird', which is not one of the classes"):
        ImageFolderDataset.multilabel([(samples / "cat.jpg", ["bird"])], ["cat"])
    with pytest.raises(DatasetError, match="no image file at"):
        ImageFolderDataset.multilabel([(tmp_path / "x.jpg", ["cat"])], ["cat"])
    with pytest.raises(DatasetError, match="repeated class names"):
        ImageFolderDataset.multilabel([], ["cat", "cat"])
