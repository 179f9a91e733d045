"""Optimizer and scheduler state round-trips through records and recorders, so training
resumes exactly where it stopped."""

from __future__ import annotations

import numpy as np
import pytest

import pyrite
from pyrite.errors import ConfigError, RecordError
from pyrite.module import Module, Param
from pyrite.optim import (
    AdaGradConfig,
    AdamConfig,
    AdamWConfig,
    CosineAnnealingLrSchedulerConfig,
    ExponentialLrSchedulerConfig,
    GradientClippingConfig,
    LinearLrSchedulerConfig,
    MomentumConfig,
    NoamLrSchedulerConfig,
    RmsPropConfig,
    SgdConfig,
    WeightDecayConfig,
)
from pyrite.record import BinBytesRecorder, HalfPrecision, NamedMpkFileRecorder

DEVICE = "autodiff<numpy>"


class Quad(Module):
    def __init__(self) -> None:
        self.w = Param(pyrite.tensor([[0.5, -1.0], [2.0, 0.25]], device=DEVICE))
        self.b = Param(pyrite.tensor([0.1, -0.2], device=DEVICE))

    def loss(self, step: int) -> pyrite.Tensor:
        x = pyrite.tensor([[1.0, float(step)], [-0.5, 1.0]], device=DEVICE)
        return ((x @ self.w.val + self.b.val) ** 2).mean()


def train(model: Quad, optim: object, steps: range) -> Quad:
    for k in steps:
        model = optim.step(0.05, model, model.loss(k).backward())  # type: ignore[attr-defined]
    return model


OPTIMIZERS = [
    SgdConfig(momentum=MomentumConfig(), weight_decay=WeightDecayConfig(0.01)),
    AdamConfig(),
    AdamWConfig(grad_clipping=GradientClippingConfig.norm(1.0)),
    AdaGradConfig(lr_decay=0.1),
    RmsPropConfig(centered=True, momentum=0.9),
]


@pytest.mark.parametrize("config", OPTIMIZERS, ids=lambda c: type(c).__name__)
def test_resume_from_record_is_exact(config: object, tmp_path: object) -> None:
    straight = train(Quad(), config.init(), range(6))  # type: ignore[attr-defined]

    optim = config.init()  # type: ignore[attr-defined]
    half = train(Quad(), optim, range(3))
    recorder = NamedMpkFileRecorder()
    model_path = half.save_file(tmp_path / "model", recorder)  # type: ignore[operator]
    optim_path = recorder.save(optim.to_record(), tmp_path / "optim")  # type: ignore[operator]

    model = Quad().load_file(model_path, recorder)
    resumed_optim = config.init().load_record(recorder.load(optim_path))  # type: ignore
    resumed = train(model, resumed_optim, range(3, 6))
    for a, b in zip(straight.params(), resumed.params(), strict=True):
        np.testing.assert_array_equal(a.val.numpy(), b.val.numpy())


def test_record_holds_tensor_data_by_param_id() -> None:
    model, optim = Quad(), AdamConfig().init()
    train(model, optim, range(2))
    record = optim.to_record()
    assert record["optimizer"] == "Adam"
    state = record["params"][model.w.id]
    assert state["time"] == 2
    assert isinstance(state["moment_1"], pyrite.TensorData)
    assert state["moment_1"].shape == (2, 2)
    # any recorder can hold it, at any precision
    back = BinBytesRecorder(HalfPrecision()).from_bytes(
        BinBytesRecorder(HalfPrecision()).to_bytes(record))
    resumed = AdamConfig().init().load_record(back)
    train(Quad(), resumed, range(1))  # half-precision state is converted to the params' dtype


def test_loading_another_optimizers_record_fails() -> None:
    with pytest.raises(RecordError, match="holds Adam state, this optimizer is Sgd"):
        SgdConfig().init().load_record(AdamConfig().init().to_record())
    with pytest.raises(RecordError, match="not an optimizer record"):
        SgdConfig().init().load_record({"weight": 1})


SCHEDULERS = [
    LinearLrSchedulerConfig(0.5, 0.01, 7),
    CosineAnnealingLrSchedulerConfig(0.5, 5, min_lr=0.01),
    ExponentialLrSchedulerConfig(0.5, 0.9),
    NoamLrSchedulerConfig(0.5, warmup_steps=3, model_size=64),
]


@pytest.mark.parametrize("config", SCHEDULERS, ids=lambda c: type(c).__name__)
def test_scheduler_resumes_exactly(config: object) -> None:
    straight = config.init()  # type: ignore[attr-defined]
    want = [straight.step() for _ in range(10)]
    first = config.init()  # type: ignore[attr-defined]
    got = [first.step() for _ in range(4)]
    blob = BinBytesRecorder().to_bytes(first.to_record())
    second = config.init().load_record(BinBytesRecorder().from_bytes(blob))  # type: ignore
    got += [second.step() for _ in range(6)]
    assert got == want


def test_scheduler_record_of_another_kind_fails() -> None:
    record = ExponentialLrSchedulerConfig(0.5, 0.9).init().to_record()
    with pytest.raises(RecordError, match="ExponentialLrScheduler"):
        NoamLrSchedulerConfig(0.1).init().load_record(record)


CONFIGS = OPTIMIZERS + SCHEDULERS + [GradientClippingConfig.value(0.5)]


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: type(c).__name__)
def test_configs_round_trip_through_json(config: object) -> None:
    text = config.to_json()  # type: ignore[attr-defined]
    assert type(config).from_json(text) == config  # type: ignore[attr-defined]


def test_bad_configs_are_refused() -> None:
    with pytest.raises(ConfigError, match="beta_1"):
        AdamConfig(beta_1=1.0)
    with pytest.raises(ConfigError, match="threshold"):
        GradientClippingConfig.norm(0.0)
    with pytest.raises(ConfigError, match="num_iters"):
        LinearLrSchedulerConfig(0.1, 0.01, 0)
    with pytest.raises(TypeError):
        AdamConfig(0.8)  # type: ignore[misc]  # options are keyword-only
