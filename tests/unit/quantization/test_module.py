"""Module quantization (the book's Quantizer), static and dynamic quantization, QAT modules,
and quantized records through every recorder with corrupted params refused."""

from __future__ import annotations

import copy

import numpy as np
import pytest

import pyrite
from pyrite import tensor
from pyrite.activation import relu
from pyrite.errors import RecordError
from pyrite.interop.safetensors import SafetensorsFileRecorder
from pyrite.module import Module
from pyrite.nn.linear import Linear, LinearConfig
from pyrite.quantization import (
    MinMaxCalibration,
    PercentileCalibration,
    QuantizationScheme,
    QuantizationType,
    QuantizedTensor,
)
from pyrite.quantization.module import Quantizer, StaticLinear, quantize_static
from pyrite.quantization.qat import QatLinear
from pyrite.record import (
    BinFileRecorder,
    BinGzFileRecorder,
    FullPrecision,
    HalfPrecision,
    JsonGzFileRecorder,
    NamedMpkFileRecorder,
    NamedMpkGzFileRecorder,
    PrettyJsonFileRecorder,
)

S, T = QuantizationScheme, QuantizationType


class Mlp(Module):
    def __init__(self, device: pyrite.Backend | str | None = None) -> None:
        self.fc1 = LinearConfig(12, 16).init(device)
        self.fc2 = LinearConfig(16, 3).init(device)

    def forward(self, x: pyrite.Tensor) -> pyrite.Tensor:
        out: pyrite.Tensor = self.fc2(relu(self.fc1(x)))
        return out


def _inputs(device: pyrite.Backend | str, n: int = 8) -> pyrite.Tensor:
    return tensor(np.random.default_rng(n).standard_normal((n, 12)).astype(np.float32),
                  device=device)


def test_quantize_weights_as_in_the_book(backend: pyrite.Backend) -> None:
    model = Mlp(backend)
    quantizer = Quantizer(calibration=MinMaxCalibration(),
                          scheme=QuantizationScheme.PerTensorSymmetric(QuantizationType.QInt8))
    qmodel = model.quantize_weights(quantizer)
    assert isinstance(qmodel.fc1.weight.val, QuantizedTensor)
    assert not isinstance(qmodel.fc1.bias.val, QuantizedTensor)  # vectors stay float
    assert qmodel.fc1.weight.id == model.fc1.weight.id
    x = _inputs(backend)
    want = model(x).numpy()
    np.testing.assert_allclose(qmodel(x).numpy(), want, atol=0.05 * np.abs(want).max())
    back = qmodel.dequantize()
    assert not back.fc1.weight.val.is_quantized() and back.fc1.weight.require_grad
    np.testing.assert_allclose(back.fc1.weight.val.numpy(),
                               qmodel.fc1.weight.val.dequantize().numpy())


def test_static_quantization_calibrates_each_linear_input(backend: pyrite.Backend) -> None:
    model = Mlp(backend)
    batches = [_inputs(backend, n) for n in (8, 9, 10)]
    qmodel = quantize_static(model, batches, Quantizer())
    assert isinstance(qmodel.fc1, StaticLinear) and isinstance(qmodel.fc2, StaticLinear)
    assert qmodel.fc1.input_offset is not None
    x = batches[2]  # inside the calibrated range: nothing clamps
    want = model(x).numpy()
    # 8-bit activations and weights: errors of a few steps of the output's range
    np.testing.assert_allclose(qmodel(x).numpy(), want, atol=0.05 * np.abs(want).max())
    # the activation params are part of the record
    names = [path for path, _ in qmodel.named_params()]
    assert "fc1.input_scale" in names and "fc2.linear.weight" in names
    # a percentile range is narrower than the min-max one
    clipped = quantize_static(model, batches, Quantizer(),
                              calibration=PercentileCalibration(90.0))
    assert clipped.fc1.input_scale.val.item() < qmodel.fc1.input_scale.val.item()


def test_qat_linear_trains_the_float_weight() -> None:
    ad = pyrite.device("autodiff<numpy>")
    linear = LinearConfig(12, 3).init(ad)
    qat = QatLinear(linear, S.PerChannelSymmetric(T.QInt4))
    x = _inputs(ad)
    grads = qat(x).sum().backward()
    grad = linear.weight.grad(grads)
    assert grad is not None and grad.shape == (12, 3)
    assert isinstance(qat.unwrap(), Linear)


RECORDERS = [NamedMpkFileRecorder(), NamedMpkGzFileRecorder(), BinFileRecorder(),
             BinGzFileRecorder(), PrettyJsonFileRecorder(), JsonGzFileRecorder(),
             NamedMpkFileRecorder(HalfPrecision()), BinFileRecorder(FullPrecision()),
             SafetensorsFileRecorder(), SafetensorsFileRecorder(HalfPrecision())]
SCHEMES = [S.PerTensorAffine(T.QInt8), S.PerChannelSymmetric(T.QInt8), S.PerBlock(T.QInt4, 5)]


@pytest.mark.parametrize("recorder", RECORDERS, ids=lambda r: f"{type(r).__name__}"
                         f"-{r.precision.name}")
@pytest.mark.parametrize("scheme", SCHEMES, ids=repr)
def test_quantized_records_round_trip(tmp_path: object, recorder: object,
                                      scheme: QuantizationScheme) -> None:
    model = Mlp().quantize_weights(Quantizer(scheme=scheme))
    path = model.save_file(tmp_path / "m", recorder)  # type: ignore[operator, arg-type]
    loaded = Mlp().load_file(path, recorder)  # type: ignore[arg-type]
    w, back = model.fc1.weight.val, loaded.fc1.weight.val
    assert isinstance(back, QuantizedTensor) and back.scheme == scheme
    assert back.values.to_list() == w.values.to_list()
    assert loaded.fc1.weight.id == model.fc1.weight.id
    tol = 1e-3 if recorder.precision.name == "half" else 0  # type: ignore[attr-defined]
    np.testing.assert_array_equal(back.qparams.scale.numpy(), w.qparams.scale.numpy())
    x = _inputs("numpy")
    # half precision rounds the biases too, and a hidden value may then round to another step
    np.testing.assert_allclose(loaded(x).numpy(), model(x).numpy(), atol=tol * 10)


def test_int4_records_are_packed_two_values_a_byte() -> None:
    model = Mlp().quantize_weights(Quantizer(scheme=S.PerBlock(T.QInt4, 4)))
    entry = model.into_record()["fc1"]["weight"]  # type: ignore[index]
    assert entry["qvalues"].dtype.short == "u8"  # type: ignore[index]
    assert entry["qvalues"].shape == (12 * 16 // 2,)  # type: ignore[index]


@pytest.mark.parametrize(("key", "value", "message"), [
    ("qscale", np.array([-0.5], np.float32), "scale -0.5 is not a finite positive number"),
    ("qscale", np.array([np.nan], np.float32), "scale nan is not a finite positive number"),
    ("qscale", np.array([0.1, 0.2], np.float32), r"qscale must be float of shape \(1,\)"),
    ("qoffset", np.array([0], np.int8), r"PerTensorSymmetric\(QInt8\) has no zero point"),
    ("qscheme", "{\"type\": \"QInt3\"}", "not a quantization scheme"),
])
def test_corrupted_params_are_refused(key: str, value: object, message: str) -> None:
    model = Mlp().quantize_weights(Quantizer())
    record = copy.deepcopy(model.into_record())
    record["fc1"]["weight"][key] = (  # type: ignore[index]
        pyrite.TensorData(value) if isinstance(value, np.ndarray) else value)
    with pytest.raises(RecordError, match=f"'fc1.weight': corrupted quantized tensor: {message}"):
        Mlp().load_record(record, source="m.mpk")


def test_corrupted_zero_point_is_refused() -> None:
    model = Mlp().quantize_weights(Quantizer(scheme=S.PerTensorAffine(T.QInt4)))
    record = copy.deepcopy(model.into_record())
    record["fc2"]["weight"]["qoffset"] = pyrite.TensorData(  # type: ignore[index]
        np.array([9], np.int8))
    with pytest.raises(RecordError, match="zero point 9 is outside -8..7"):
        Mlp().load_record(record, source="m.mpk")


def test_quantized_record_of_the_wrong_shape_is_refused() -> None:
    record = Mlp().quantize_weights(Quantizer()).into_record()

    class Wider(Mlp):
        def __init__(self) -> None:
            super().__init__()
            self.fc1 = LinearConfig(12, 17).init()
    with pytest.raises(RecordError, match=r"'fc1.weight' has shape \(12, 16\) in the file"):
        Wider().load_record(record, source="m.mpk")
