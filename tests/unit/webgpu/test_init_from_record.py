"""init_from_record on webgpu (fused, as the "webgpu" device is): building a model for a record
dispatches no kernel and compiles no pipeline; the only device work is the record's upload,
one write for all of it (upload.upload_many); and it predicts what building, initialising and
loading predicts."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

import pyrite
from pyrite import nn
from pyrite.module import Module, init_from_record
from pyrite.webgpu import WebGpu, registration


class Net(Module):
    def __init__(self, device: pyrite.Backend) -> None:
        self.conv = nn.Conv2dConfig(2, 3, (3, 3)).init(device)
        self.norm = nn.BatchNormConfig(3).init(device)
        self.head = nn.LinearConfig(12, 2).init(device)

    def forward(self, x: pyrite.Tensor) -> pyrite.Tensor:
        return self.head(self.norm(self.conv(x)).flatten(1, 3))


@pytest.fixture()
def counted(gpu: WebGpu, monkeypatch: pytest.MonkeyPatch) -> Iterator[Counter[str]]:
    """Counts of the runtime's calls that do device work: dispatch, pipeline, uploads."""
    calls: Counter[str] = Counter()
    runtime = gpu.kernels.runtime

    def counting(name: str) -> Callable[..., Any]:
        real = getattr(runtime, name)

        def call(*args: Any, **kwargs: Any) -> Any:
            calls[name] += 1
            return real(*args, **kwargs)
        return call

    for name in ("dispatch", "pipeline", "create_buffer_with_data", "write_buffer", "replay"):
        monkeypatch.setattr(runtime, name, counting(name))
    yield calls


def test_building_for_a_record_dispatches_nothing(gpu: WebGpu, counted: Counter[str]) -> None:
    device = registration.default(gpu)
    record = Net(device).into_record()
    params = len(Net(device).params())
    counted.clear()
    Net(device).load_record(record)
    device.sync()  # type: ignore[attr-defined]
    initialised = dict(counted)
    assert initialised.get("dispatch", 0) + initialised.get("replay", 0) > 0  # random init
    counted.clear()
    model = init_from_record(lambda: Net(device), record)
    device.sync()  # type: ignore[attr-defined]
    assert counted["dispatch"] == counted["replay"] == counted["pipeline"] == 0, dict(counted)
    assert counted["create_buffer_with_data"] + counted["write_buffer"] == 1  # the record
    assert params > 1
    x = pyrite.tensor(np.random.default_rng(0).standard_normal((2, 2, 4, 4)).astype(np.float32),
                      device=device)
    want = Net(device).load_record(record).valid()(x).to_data().to_numpy()
    np.testing.assert_array_equal(model.valid()(x).to_data().to_numpy(), want)
