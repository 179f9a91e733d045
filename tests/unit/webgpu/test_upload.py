"""Half-precision data into f32 tensors is unpacked on the device (records load this way)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import pyrite
from pyrite import TensorData
from pyrite.webgpu import WebGpu


@pytest.mark.parametrize("count", [1, 2, 7, 1000])
def test_f16_data_becomes_f32_on_the_device(gpu: WebGpu, count: int) -> None:
    values = np.linspace(-3.0, 3.0, count).astype(np.float16)
    t = pyrite.from_data(TensorData(values.tobytes(), shape=(count,), dtype="f16"),
                         device=gpu, dtype="f32")
    assert t.dtype is pyrite.DType.F32
    np.testing.assert_array_equal(np.array(t.to_list(), np.float32), values.astype(np.float32))


def test_f16_special_values_and_shape(gpu: WebGpu) -> None:
    data = TensorData([[0.0, -0.0, math.inf], [-math.inf, 65504.0, 6e-8]], dtype="f16")
    t = pyrite.from_data(data, device=gpu, dtype="f32")
    assert t.shape == (2, 3)
    got = t.to_list()
    assert got[0][:2] == [0.0, -0.0] and math.copysign(1, got[0][1]) == -1
    assert got[0][2] == math.inf and got[1][0] == -math.inf and got[1][1] == 65504.0
    assert got[1][2] == pytest.approx(5.96e-8, rel=1e-2)  # a subnormal half


def test_a_half_precision_record_loads_like_on_numpy(gpu: WebGpu) -> None:
    from pyrite.demos import registry

    demo = registry.get("mnist")
    pixels = [float((i * 37) % 256) for i in range(784)]
    on_gpu = demo.predict(demo.load(gpu, demo.record), {"pixels": pixels})
    on_cpu = demo.predict(demo.load("numpy", demo.record), {"pixels": pixels})
    assert on_gpu["probabilities"] == pytest.approx(on_cpu["probabilities"], abs=1e-6)
