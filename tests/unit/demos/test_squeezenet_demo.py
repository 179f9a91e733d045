"""The image classification demo natively: `pyrite infer squeezenet` gives onnxruntime's top-5
for each sample photo (Pillow's pixels fed to both) on numpy and webgpu, the record is built
once into the cache by the ONNX file's hash, the committed module is what the importer writes,
and a missing model says where to put it. Needs $PYRITE_MODELS (CI sets it) for the model and
the sample photos of $PYRITE_DATA/samples (else ../shared/data/samples beside the checkout)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from pyrite import config
from pyrite.cli import main as pyrite_main
from pyrite.demos import models, registry
from pyrite.demos.image_classification import files, predict
from pyrite.demos.image_classification.image import photo_pixels

np = pytest.importorskip("numpy")

SAMPLE_SUFFIXES = (".jpg", ".jpeg", ".png", ".webp")
PROB_TOLERANCE = 1e-3


def _models_root() -> Path:
    root = config.models_dir()
    if not root or not (Path(root) / files.FOLDER / files.ONNX).is_file():
        pytest.skip(f"SqueezeNet is not installed: set PYRITE_MODELS to a folder holding "
                    f"{files.FOLDER}/{files.ONNX} and {files.LABELS}")
    return Path(root)


def _samples() -> list[Path]:
    given = config.data_dir()
    root = Path(given) if given else Path(__file__).resolve().parents[4] / "shared" / "data"
    found = sorted(p for p in (root / "samples").glob("*") if p.suffix in SAMPLE_SUFFIXES)
    if not found:
        pytest.skip(f"no sample photos in {root / 'samples'} (set PYRITE_DATA)")
    return found


@pytest.fixture(scope="module")
def onnxruntime_top5() -> Any:
    """`top5(rgb bytes) -> [(index, probability)] * 5` by onnxruntime, from the same pixels."""
    ort = pytest.importorskip("onnxruntime")
    session = ort.InferenceSession(str(_models_root() / files.FOLDER / files.ONNX),
                                   providers=["CPUExecutionProvider"])

    def top5(rgb: bytes) -> list[tuple[int, float]]:
        hwc = np.frombuffer(rgb, np.uint8).reshape(predict.SIDE, predict.SIDE, 3)
        bgr = hwc[:, :, ::-1].astype(np.float32) - np.array(predict.MEAN_BGR, np.float32)
        probs = session.run(None, {"data": bgr.transpose(2, 0, 1)[None].copy()})[0][0]
        order = np.argsort(-probs)[:5]
        return [(int(i), float(probs[i])) for i in order]

    return top5


@pytest.mark.parametrize("device", ["numpy", "webgpu"])
def test_infer_gives_onnxruntimes_top5_for_each_sample(
        device: str, onnxruntime_top5: Any, capsys: pytest.CaptureFixture[str],
        device_named: Any) -> None:
    device_named(device)
    photos = _samples()
    _models_root()
    assert pyrite_main(["infer", "squeezenet", *map(str, photos), "--device", device,
                        "--json"]) == 0
    results = json.loads(capsys.readouterr().out)["results"]
    assert [r["photo"] for r in results] == [str(p) for p in photos]
    lines = []
    for photo, got in zip(photos, results, strict=True):
        expected = onnxruntime_top5(photo_pixels(photo))
        assert got["index"] == expected[0][0], (photo.name, got["top"], expected)
        assert [c["index"] for c in got["top"]] == [i for i, _ in expected], photo.name
        for c, (_, p) in zip(got["top"], expected, strict=True):
            assert abs(c["probability"] - p) < PROB_TOLERANCE, (photo.name, c, p)
        assert got["label"] == got["top"][0]["label"] and got["device"] == device
        lines.append(f"{photo.name}: {got['label']} {got['probability']:.3f} "
                     f"({got['ms']:.0f} ms)")
    print(f"\npyrite infer squeezenet --device {device}: " + "; ".join(lines))


def test_infer_prints_the_top5_readably(capsys: pytest.CaptureFixture[str]) -> None:
    photo = _samples()[0]
    _models_root()
    assert pyrite_main(["infer", "squeezenet", str(photo), "--top", "3"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(f"{photo} (numpy, ") and out[0].endswith(" ms):")
    assert len(out) == 4
    for line in out[1:]:
        assert line.split()[1] == "%" and "(n0" in line  # "  96.46 %  bald eagle  (n01...: ...)"


def test_missing_model_says_where_to_put_it(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    photo = tmp_path / "photo.jpg"
    photo.write_bytes(b"a photo")  # there (a missing photo is reported before the model)
    assert pyrite_main(["infer", "squeezenet", str(photo), "--models", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert f"{tmp_path / files.FOLDER / files.ONNX} is missing" in err
    assert f"put SqueezeNet 1.1 ({files.ONNX}) and its ImageNet labels ({files.LABELS}) in " \
           f"{tmp_path / files.FOLDER}/" in err
    assert "set PYRITE_MODELS or pass --models DIR" in err


def test_missing_model_is_reported_by_the_registry(monkeypatch: pytest.MonkeyPatch,
                                                   tmp_path: Path) -> None:
    monkeypatch.setenv("PYRITE_MODELS", str(tmp_path))
    demo = registry.get("squeezenet")
    reason = demo.missing()
    assert reason is not None and reason.startswith("squeezenet: ")
    assert f"{tmp_path / files.FOLDER}/" in reason and "(PYRITE_MODELS)" in reason
    with pytest.raises(models.ModelMissing):
        demo.load("numpy")
    assert registry.get("mnist").missing() is None


def test_a_bad_photo_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _models_root()
    text = tmp_path / "notes.txt"
    text.write_text("not a photo")
    assert pyrite_main(["infer", "squeezenet", str(text)]) == 2
    assert "is not an image Pillow can read" in capsys.readouterr().err


def test_the_record_is_built_once_into_the_cache(monkeypatch: pytest.MonkeyPatch,
                                                 tmp_path: Path) -> None:
    root = _models_root()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    mine = tmp_path / "models" / files.FOLDER
    mine.mkdir(parents=True)
    for name in (files.ONNX, files.LABELS):
        shutil.copyfile(root / files.FOLDER / name, mine / name)
    record = files.record_path(tmp_path / "models")
    digest = models.sha256_file(mine / files.ONNX)
    module = models.sha256_file(files.MODULE)
    assert record == tmp_path / "cache" / "pyrite" / "records" / \
        f"squeezenet.{digest[:16]}.{module[:8]}.{files.PRECISION}.bin"
    assert [p.name for p in record.parent.iterdir()] == [record.name]  # no stage left behind
    built = record.stat().st_mtime_ns
    assert files.record_path(tmp_path / "models") == record
    assert record.stat().st_mtime_ns == built  # found, not rebuilt
    model = predict.load("numpy", record, mine / files.LABELS)
    assert model.num_params() == 1_235_496 and repr(model.labels) == "Labels(1000 classes)"
    assert model.labels[22].name == "bald eagle"


def test_the_committed_module_is_what_the_importer_writes(tmp_path: Path) -> None:
    from pyrite.interop.onnx.codegen import import_onnx

    pytest.importorskip("onnx")
    result = import_onnx(_models_root() / files.FOLDER / files.ONNX, tmp_path,
                         name=files.NAME, class_name=files.CLASS_NAME, precision=files.PRECISION)
    committed = files.MODULE
    assert committed.read_text() == result.module_path.read_text(), (
        "demos/image_classification/squeezenet.py is stale: regenerate it with "
        "`pyrite import-onnx $PYRITE_MODELS/squeezenet1.1/squeezenet1.1.onnx --out "
        "demos/image_classification --name squeezenet --class-name SqueezeNet`, then delete "
        "the .bin it writes")


def test_pixels_are_checked() -> None:
    good = bytes(predict.PIXELS)
    assert predict.check_pixels(good) == good
    assert predict.check_pixels(list(good)) == good
    assert predict.check_pixels([0.0] * predict.PIXELS) == good
    with pytest.raises(ValueError, match=r"must hold 154587 numbers \(227x227 RGB\), got 3"):
        predict.check_pixels([1, 2, 3])
    with pytest.raises(ValueError, match="pixel value 5 is 300; every value must be"):
        predict.check_pixels([0] * 5 + [300] + [0] * (predict.PIXELS - 6))
    with pytest.raises(ValueError, match="must be a list of"):
        predict.check_pixels("abc")


def test_labels_are_checked() -> None:
    text = "".join(f"n{i:08} class {i}, other\n" for i in range(1000))
    labels = predict.Labels.parse(text)
    assert labels[7].name == "class 7" and labels[7].text == "class 7, other"
    with pytest.raises(ValueError, match="holds 999 labels; the model has 1000 classes"):
        predict.Labels.parse(text.split("\n", 1)[1])
    with pytest.raises(ValueError, match="line 1 is 'n00000000'"):
        predict.Labels.parse("n00000000\n" + text)


def test_the_crop_is_the_centre_of_the_shorter_side_256(tmp_path: Path) -> None:
    pytest.importorskip("PIL")
    from PIL import Image, ImageDraw

    image = Image.new("RGB", (512, 300), (255, 0, 0))
    ImageDraw.Draw(image).rectangle((254, 0, 257, 299), fill=(0, 255, 0))  # the centre column
    image.save(tmp_path / "wide.png")
    rgb = photo_pixels(tmp_path / "wide.png")
    assert len(rgb) == predict.PIXELS
    greens = [rgb[3 * x + 1] for x in range(predict.SIDE)]  # the first row's green levels
    assert abs(greens.index(max(greens)) - predict.SIDE // 2) <= 1
