"""`pyrite quantize`: a demo model's quantized record, loadable into the model."""

from __future__ import annotations

from pathlib import Path

import pytest

from pyrite.cli import main
from pyrite.demos.mnist.predict import load
from pyrite.quantization import QuantizedTensor


def test_quantize_mnist_int4_writes_a_smaller_loadable_record(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "mnist-int4.bin"
    assert main(["quantize", "mnist", "--scheme", "int4", "--out", str(out)]) == 0
    assert "PerBlockSymmetric(QInt4, block_size=32, axis=0)" in capsys.readouterr().out
    shipped = Path(load.__code__.co_filename).with_name("mnist.bin")
    assert out.stat().st_size < 0.35 * shipped.stat().st_size
    model = load("numpy", out)
    assert isinstance(model.linear1.weight.val, QuantizedTensor)


def test_unknown_scheme_is_one_line_naming_the_choices(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["quantize", "mnist", "--scheme", "int5", "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err.strip()
    assert err == ("pyrite quantize: --scheme 'int5': unknown; use one of int8, int8-tensor, "
                   "int8-affine, int4")


def test_static_int8_record_loads_with_its_input_params(tmp_path: Path) -> None:
    out = tmp_path / "mnist-static.bin"
    assert main(["quantize", "mnist", "--scheme", "int8", "--calibrate", "200",
                 "--out", str(out)]) == 0
    model = load("numpy", out)
    from pyrite.quantization.module import StaticLinear
    assert isinstance(model.linear1, StaticLinear)
    assert model.linear1.input_offset is not None
    from pyrite.dataset import MnistDataset
    from pyrite.demos.mnist.predict import predict
    item = MnistDataset.test().get(0)
    assert item is not None
    assert predict(model, list(item["image"]))["label"] == item["label"]
