"""A record's tensors uploaded together (upload.upload_many, Backend.from_data_many): one
write and no submit of its own for a whole half-precision record; a model built for it
(init_from_record) keeps the buffers its build allocated; the values are those of the
one-tensor-at-a-time path, for every dtype a record holds; a record still fails with one clear
line and a non-finite value is still warned about."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

import pyrite
from pyrite import nn
from pyrite.data import TensorData
from pyrite.dtype import DType
from pyrite.errors import RecordError, RecordWarning
from pyrite.module import Module, init_from_record
from pyrite.record import BinBytesRecorder, HalfPrecision
from pyrite.webgpu import WebGpu, registration, upload


class Net(Module):
    def __init__(self, device: pyrite.Backend) -> None:
        self.conv = nn.Conv2dConfig(2, 3, (3, 3)).init(device)
        self.head = nn.LinearConfig(12, 5).init(device)

    def forward(self, x: pyrite.Tensor) -> pyrite.Tensor:
        return self.head(self.conv(x).flatten(1, 3))


@pytest.fixture()
def counted(gpu: WebGpu, monkeypatch: pytest.MonkeyPatch) -> Iterator[Counter[str]]:
    """Counts of the runtime's writes and submits (flushes that had work)."""
    calls: Counter[str] = Counter()
    runtime = gpu.kernels.runtime

    def counting(name: str) -> Callable[..., Any]:
        real = getattr(runtime, name)

        def call(*args: Any, **kwargs: Any) -> Any:
            calls[name] += 1
            return real(*args, **kwargs)
        return call

    for name in ("write_buffer", "create_buffer_with_data", "replay"):
        monkeypatch.setattr(runtime, name, counting(name))
    yield calls


def _half(model: Module) -> bytes:
    return BinBytesRecorder(HalfPrecision()).to_bytes(model.into_record())


def _params(model: Module) -> dict[str, np.ndarray]:
    return {path: p.val.to_data().to_numpy() for path, p in model.named_params()}


def test_half_record_is_one_write_into_the_buffers_the_build_made(
        gpu: WebGpu, counted: Counter[str]) -> None:
    device = registration.default(gpu)
    blob = _half(Net(device))
    record = BinBytesRecorder().from_bytes(blob)
    built: list[Net] = []

    def build() -> Net:
        built.append(Net(device))
        return built[0]

    gpu.sync()
    allocations = gpu.kernels.pool.stats.allocations + gpu.kernels.pool.stats.reuses
    counted.clear()
    model = init_from_record(build, record)
    assert counted["write_buffer"] == 1 and counted["replay"] == 0, dict(counted)
    params = len(model.params())
    # the build's buffers and one staging buffer: nothing allocated to be thrown away
    stats = gpu.kernels.pool.stats
    assert stats.allocations + stats.reuses - allocations == params + 1
    for (_, old), (_, new) in zip(built[0].named_params(), model.named_params(), strict=True):
        inner = new.val.into_primitive().value  # a FusedTensor's GpuTensor
        assert inner.block is old.val.into_primitive().value.block
    # the same values as the reference path: the record decoded on the host, one by one
    want = {path: p.val.to_data().to_numpy()
            for path, p in Net(pyrite.device("numpy")).load_record(record).named_params()}
    got = _params(model)
    assert got.keys() == want.keys()
    for path in want:
        np.testing.assert_array_equal(got[path], want[path])
    x = pyrite.tensor(np.random.default_rng(0).standard_normal((2, 2, 4, 4)).astype(np.float32),
                      device=device)
    ref = Net(pyrite.device("numpy")).load_record(record)
    np.testing.assert_allclose(model(x).to_data().to_numpy(),
                               ref(pyrite.tensor(x.to_data(), device="numpy")).to_data()
                               .to_numpy(), rtol=1e-5, atol=1e-6)


def _items() -> list[tuple[TensorData, DType]]:
    rng = np.random.default_rng(3)
    return [
        (TensorData(rng.standard_normal((3, 5)).astype(np.float16)), DType.F32),  # unpacked
        (TensorData(rng.standard_normal(7).astype(np.float16)), DType.F32),  # odd: padded
        (TensorData(rng.standard_normal((2, 2)).astype(np.float32)), DType.F32),  # copied
        (TensorData(rng.standard_normal(3)), DType.F32),  # f64 converted on the host
        (TensorData(np.array([1, -2, 3], dtype=np.int64)), DType.I32),
        (TensorData(np.array([True, False, True])), DType.BOOL),
        (TensorData(np.zeros((0, 4), dtype=np.float16)), DType.F32),  # empty
        (TensorData(np.arange(9, dtype=np.float16)), DType.F32),
    ]


@pytest.mark.parametrize("staged", [64 << 20, 16])
def test_every_dtype_as_one_at_a_time(gpu: WebGpu, staged: int,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    # 16 bytes a staging buffer: most tensors take one of their own (several writes)
    monkeypatch.setattr(upload, "_STAGED", staged)
    items = _items()
    got = gpu.from_data_many([(d, dt, None) for d, dt in items])
    for (data, dtype), out in zip(items, got, strict=True):
        one = gpu.from_data(data) if data.dtype is dtype else gpu.from_data_as(data, dtype)
        assert out.shape == one.shape and out.dtype is one.dtype
        np.testing.assert_array_equal(gpu.to_data(out).to_numpy(), gpu.to_data(one).to_numpy())


def test_only_an_uninitialized_buffer_is_written_in_place(gpu: WebGpu) -> None:
    kept = gpu.from_data(TensorData(np.ones(4, dtype=np.float32)))  # holds values: kept
    blank = gpu.uninitialized((4,), DType.F32)
    other = gpu.uninitialized((5,), DType.F32)  # another shape: not used
    value = TensorData(np.arange(4, dtype=np.float16))
    a, b, c, d = gpu.from_data_many([(value, DType.F32, kept), (value, DType.F32, blank),
                                     (value, DType.F32, blank), (value, DType.F32, other)])
    assert a.block is not kept.block and b.block is blank.block
    assert c.block is not blank.block  # a buffer is written in place once (tied params)
    assert d.block is not other.block
    np.testing.assert_array_equal(gpu.to_data(kept).to_numpy(), np.ones(4))
    for out in (a, b, c, d):
        np.testing.assert_array_equal(gpu.to_data(out).to_numpy(), np.arange(4))


def test_a_bad_record_is_one_line_and_a_nan_is_warned(gpu: WebGpu) -> None:
    device = registration.default(gpu)
    record = BinBytesRecorder().from_bytes(_half(Net(device)))
    bad = dict(record)
    bad["head"] = dict(record["head"])  # type: ignore[call-overload]
    bad["head"]["weight"] = TensorData(np.zeros((5, 12), dtype=np.float16))
    with pytest.raises(RecordError, match=r"^record: .*'head.weight' has shape \(5, 12\)"):
        init_from_record(lambda: Net(device), bad)
    nan = dict(record)
    nan["head"] = dict(record["head"])  # type: ignore[call-overload]
    nan["head"]["bias"] = TensorData(np.array([np.nan, 0, 0, 0, 0], dtype=np.float16))
    with pytest.warns(RecordWarning, match="head.bias"):
        model = init_from_record(lambda: Net(device), nan)
    assert np.isnan(model.head.bias.val.to_data().to_numpy()[0])
