"""init_from_record: a model built for a record without initialising the params the record
overwrites gives the same module as `build().load_record(record)`, draws nothing from the
device's generator, refuses a record that lacks a param, and (on webgpu) dispatches no kernel
and compiles no pipeline for the values it skips (tests/unit/webgpu/test_init_from_record.py)."""

from __future__ import annotations

import numpy as np
import pytest

import pyrite
from pyrite import nn
from pyrite.errors import RecordError
from pyrite.module import Module, init_from_record, init_skipped


class Net(Module):
    """A layer of each kind that makes params through an initializer, and a constant."""

    def __init__(self, device: pyrite.Backend | str | None = None) -> None:
        self.conv = nn.Conv2dConfig(2, 3, (3, 3)).init(device)
        self.norm = nn.BatchNormConfig(3).init(device)
        self.embed = nn.EmbeddingConfig(5, 4).init(device)
        self.head = nn.LinearConfig(12, 2).init(device)
        self.layer_norm = nn.LayerNormConfig(2).init(device)
        self.table = pyrite.arange(0, 4, device=device).float()  # not a param: computed

    def forward(self, x: pyrite.Tensor, ids: pyrite.Tensor) -> pyrite.Tensor:
        y = self.norm(self.conv(x)).flatten(1, 3)  # [n, 3 * 2 * 2]
        e = self.embed(ids).mean_dim(1).reshape([ids.shape[0], 4]) + self.table
        return self.layer_norm(self.head(y) + e.sum_dim(1))


def _inputs(device: str) -> tuple[pyrite.Tensor, pyrite.Tensor]:
    rng = np.random.default_rng(1)
    x = pyrite.tensor(rng.standard_normal((2, 2, 4, 4)).astype(np.float32), device=device)
    ids = pyrite.tensor(np.array([[1, 4], [0, 2]]), device=device)
    return x, ids


def test_same_module_and_predictions_as_building_then_loading() -> None:
    pyrite.seed(3, device="numpy")
    trained = Net("numpy")
    record = trained.into_record()
    loaded = init_from_record(lambda: Net("numpy"), record)
    reference = Net("numpy").load_record(record)
    assert [p.id for p in loaded.params()] == [p.id for p in trained.params()]
    for (path, got), (_, want) in zip(loaded.named_params(), trained.named_params(),
                                      strict=True):
        assert got.shape == want.shape and got.dtype == want.dtype, path
        assert got.require_grad == want.require_grad, path
        np.testing.assert_array_equal(got.val.to_data().to_numpy(),
                                      want.val.to_data().to_numpy(), err_msg=path)
    inputs = _inputs("numpy")
    np.testing.assert_array_equal(loaded.valid()(*inputs).to_data().to_numpy(),
                                  reference.valid()(*inputs).to_data().to_numpy())


def test_the_device_generator_is_not_advanced() -> None:
    record = Net("numpy").into_record()
    pyrite.seed(7, device="numpy")
    init_from_record(lambda: Net("numpy"), record)
    after_skipped = pyrite.random((4,), device="numpy").to_list()
    pyrite.seed(7, device="numpy")
    assert pyrite.random((4,), device="numpy").to_list() == after_skipped
    pyrite.seed(7, device="numpy")
    Net("numpy")  # an initialised build draws: the next values differ
    assert pyrite.random((4,), device="numpy").to_list() != after_skipped


def test_a_record_without_every_param_is_refused() -> None:
    record = Net("numpy").into_record()
    del record["head"]["bias"]
    with pytest.raises(RecordError, match=r"model\.bin: missing: head\.bias"):
        init_from_record(lambda: Net("numpy"), record, source="model.bin")


def test_skipping_is_only_inside_the_build() -> None:
    seen: list[bool] = []

    def build() -> Net:
        seen.append(init_skipped())
        return Net("numpy")

    assert not init_skipped()
    init_from_record(build, Net("numpy").into_record())
    assert seen == [True] and not init_skipped()
    with pytest.raises(ZeroDivisionError):
        init_from_record(lambda: 1 // 0, {})  # type: ignore[arg-type, return-value]
    assert not init_skipped()  # reset after a failed build too


def test_autodiff_params_are_trainable_leaves() -> None:
    record = Net("numpy").into_record()
    model = init_from_record(lambda: Net("autodiff<numpy>"), record)
    x, ids = _inputs("autodiff<numpy>")
    grads = model(x, ids).sum().backward()
    assert model.head.weight.grad(grads) is not None
    assert not model.norm.running_mean.require_grad
