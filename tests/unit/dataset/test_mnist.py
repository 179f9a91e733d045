"""MnistDataset on the real files (shared data folder), and its failure modes without network."""

from __future__ import annotations

import gzip
import hashlib
import io
import shutil
import urllib.error
import urllib.request
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from pyrite.dataset import DataLoader, DatasetError, DownloadError, MnistDataset
from pyrite.dataset import mnist as mnist_module

TEST_FILES = ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz")


@pytest.fixture(scope="module")
def train_set(shared_data: Path) -> MnistDataset:
    return MnistDataset("train", root=shared_data)


@pytest.fixture(scope="module")
def test_set(shared_data: Path) -> MnistDataset:
    return MnistDataset("test", root=shared_data)


def test_sizes_and_known_labels(train_set: MnistDataset, test_set: MnistDataset) -> None:
    assert train_set.len() == 60000
    assert test_set.len() == 10000
    assert [train_set[i]["label"] for i in range(10)] == [5, 0, 4, 1, 9, 2, 1, 3, 1, 4]
    assert [test_set[i]["label"] for i in range(10)] == [7, 2, 1, 0, 4, 1, 4, 9, 5, 9]
    assert train_set.get(60000) is None
    assert test_set.get(-1) is None


def test_label_histograms_are_the_published_ones(
    train_set: MnistDataset, test_set: MnistDataset
) -> None:
    _, train_labels = train_set.arrays()
    _, test_labels = test_set.arrays()
    assert np.bincount(train_labels).tolist() == [
        5923,
        6742,
        5958,
        6131,
        5842,
        5421,
        5918,
        6265,
        5851,
        5949,
    ]
    assert np.bincount(test_labels).tolist() == [
        980,
        1135,
        1032,
        1010,
        982,
        892,
        958,
        1028,
        974,
        1009,
    ]


def test_items_are_784_uint8_pixels(train_set: MnistDataset) -> None:
    item = train_set.get(0)
    assert item is not None
    image = item["image"]
    assert isinstance(image, bytes)
    assert len(image) == 784
    assert min(image) == 0
    assert max(image) == 255
    assert sum(image) == 27525  # the first training digit, a 5
    pixels = np.frombuffer(image, np.uint8).reshape(28, 28)
    assert pixels[0].sum() == 0  # the top row of every MNIST digit is background
    assert pixels[5:23, 5:23].sum() > 0


def test_arrays_agree_with_items(train_set: MnistDataset) -> None:
    images, labels = train_set.arrays()
    assert images.shape == (60000, 28, 28)
    assert images.dtype == np.uint8
    assert labels.shape == (60000,)
    for i in (0, 1234, 59999):
        assert images[i].tobytes() == train_set[i]["image"]
        assert labels[i] == train_set[i]["label"]
    assert 33.0 < images.mean() < 33.5


def test_works_with_a_threaded_dataloader(test_set: MnistDataset) -> None:
    def batcher(items: list[dict[str, bytes | int]]) -> tuple[np.ndarray, list[int]]:
        x = np.stack([np.frombuffer(it["image"], np.uint8) for it in items])  # type: ignore[arg-type]
        return x.reshape(-1, 1, 28, 28), [int(it["label"]) for it in items]

    loader = DataLoader(test_set, batcher, batch_size=1000, shuffle=True, seed=0, num_workers=2)
    assert len(loader) == 10
    counts: Counter[int] = Counter()
    for x, y in loader:
        assert x.shape == (1000, 1, 28, 28)
        counts.update(y)
    assert counts[1] == 1135


def test_pyrite_data_env_var_and_root_argument(
    monkeypatch: pytest.MonkeyPatch, shared_data: Path, tmp_path: Path
) -> None:
    monkeypatch.setenv("PYRITE_DATA", str(shared_data))
    ds = MnistDataset.test()
    assert ds.len() == 10000
    assert ds.folder == shared_data / "mnist"
    # root= wins over the environment
    with pytest.raises(DownloadError, match=str(tmp_path)):
        MnistDataset("test", root=tmp_path)


def copy_test_split(shared_data: Path, root: Path) -> Path:
    folder = root / "mnist"
    folder.mkdir(parents=True)
    for name in TEST_FILES:
        shutil.copyfile(shared_data / "mnist" / name, folder / name)
    return folder


def test_checksum_mismatch_names_the_file_and_keeps_it(
    monkeypatch: pytest.MonkeyPatch, shared_data: Path, tmp_path: Path
) -> None:
    folder = copy_test_split(shared_data, tmp_path)
    bad = folder / "t10k-labels-idx1-ubyte.gz"
    data = bytearray(bad.read_bytes())
    data[100] ^= 0xFF
    bad.write_bytes(bytes(data))
    asked: list[str] = []
    monkeypatch.setattr(urllib.request, "urlopen", lambda url, **kw: asked.append(url))
    with pytest.raises(
        DatasetError, match=f"checksum mismatch: {bad} has sha256 [0-9a-f]{{64}}, expected f7ae60f9"
    ):
        MnistDataset("test", root=tmp_path)
    assert bad.read_bytes() == bytes(data)  # the user's file is reported, not replaced
    assert asked == []


def test_missing_file_without_network_says_how_to_fix_it(tmp_path: Path) -> None:
    with pytest.raises(DownloadError) as info:
        MnistDataset("train", root=tmp_path)
    message = str(info.value)
    assert str(tmp_path / "mnist" / "train-images-idx3-ubyte.gz") in message
    assert "https://ossci-datasets.s3.amazonaws.com/mnist/train-images-idx3-ubyte.gz" in message
    assert (
        "https://storage.googleapis.com/cvdf-datasets/mnist/train-images-idx3-ubyte.gz" in message
    )
    assert "network disabled in tests" in message
    assert "Set PYRITE_DATA to a folder holding mnist/" in message
    assert "root=" in message
    assert list((tmp_path / "mnist").iterdir()) == []  # no partial files left behind


def test_missing_file_with_download_disabled(tmp_path: Path) -> None:
    with pytest.raises(
        DatasetError, match="t10k-images-idx3-ubyte.gz is missing and download=False"
    ):
        MnistDataset("test", root=tmp_path, download=False)


def test_downloads_missing_files_from_the_next_mirror(
    monkeypatch: pytest.MonkeyPatch, shared_data: Path, tmp_path: Path
) -> None:
    asked: list[str] = []

    def urlopen(url: str, timeout: float | None = None) -> io.BytesIO:
        asked.append(url)
        if url.startswith(mnist_module.MIRRORS[0]):
            raise urllib.error.URLError("first mirror down")
        return io.BytesIO((shared_data / "mnist" / url.rsplit("/", 1)[1]).read_bytes())

    monkeypatch.setattr(urllib.request, "urlopen", urlopen)
    ds = MnistDataset("test", root=tmp_path)
    assert ds.len() == 10000
    assert ds[0]["label"] == 7
    assert sorted(p.name for p in (tmp_path / "mnist").iterdir()) == sorted(TEST_FILES)
    assert len(asked) == 4
    # a second load finds the files and downloads nothing
    asked.clear()
    assert MnistDataset("test", root=tmp_path).len() == 10000
    assert asked == []


def test_corrupt_contents_name_the_file(
    monkeypatch: pytest.MonkeyPatch, shared_data: Path, tmp_path: Path
) -> None:
    folder = copy_test_split(shared_data, tmp_path)
    labels = folder / "t10k-labels-idx1-ubyte.gz"
    # a well-formed gzip holding a truncated IDX file, accepted by a patched checksum table
    raw = gzip.decompress(labels.read_bytes())[:-10]
    labels.write_bytes(gzip.compress(raw))
    monkeypatch.setitem(
        mnist_module.SHA256, labels.name, hashlib.sha256(labels.read_bytes()).hexdigest()
    )
    with pytest.raises(DatasetError, match=f"idx: {labels} has 9998 bytes"):
        MnistDataset("test", root=tmp_path)
    labels.write_bytes(b"not gzip at all")
    monkeypatch.setitem(
        mnist_module.SHA256, labels.name, hashlib.sha256(b"not gzip at all").hexdigest()
    )
    with pytest.raises(DatasetError, match=f"{labels} is not a valid gzip file"):
        MnistDataset("test", root=tmp_path)


def test_unknown_split() -> None:
    with pytest.raises(DatasetError, match="unknown split 'valid'"):
        MnistDataset("valid")  # type: ignore[arg-type]
