"""The book's guide model: its printout, a training step and inference after `valid()`."""

from __future__ import annotations

from dataclasses import KW_ONLY
from pathlib import Path

import numpy as np

import pyrite
from pyrite.module import Config, Module
from pyrite.nn import (
    AdaptiveAvgPool2dConfig,
    Conv2dConfig,
    CrossEntropyLossConfig,
    DropoutConfig,
    LinearConfig,
    Relu,
)

AD = "autodiff<numpy>"


class Model(Module):
    def __init__(self, config: ModelConfig, device: str | None) -> None:
        self.conv1 = Conv2dConfig(1, 8, 3).init(device)
        self.conv2 = Conv2dConfig(8, 16, 3).init(device)
        self.pool = AdaptiveAvgPool2dConfig((8, 8)).init()
        self.dropout = DropoutConfig(config.dropout).init()
        self.linear1 = LinearConfig(16 * 8 * 8, config.hidden_size).init(device)
        self.linear2 = LinearConfig(config.hidden_size, config.num_classes).init(device)
        self.activation = Relu()

    def forward(self, images: pyrite.Tensor) -> pyrite.Tensor:
        batch, height, width = images.shape
        x = images.reshape([batch, 1, height, width])
        x = self.dropout(self.conv1(x))
        x = self.activation(self.dropout(self.conv2(x)))
        x = self.pool(x).reshape([batch, 16 * 8 * 8])
        x = self.activation(self.dropout(self.linear1(x)))
        return self.linear2(x)


class ModelConfig(Config):
    num_classes: int
    hidden_size: int
    _: KW_ONLY
    dropout: float = 0.5

    def init(self, device: str | None = None) -> Model:
        return Model(self, device)


BOOK = """Model {
  conv1: Conv2d {stride: [1, 1], kernel_size: [3, 3], dilation: [1, 1], groups: 1, padding: Valid, params: 80}
  conv2: Conv2d {stride: [1, 1], kernel_size: [3, 3], dilation: [1, 1], groups: 1, padding: Valid, params: 1168}
  pool: AdaptiveAvgPool2d {output_size: [8, 8]}
  dropout: Dropout {prob: 0.5}
  linear1: Linear {d_input: 1024, d_output: 512, bias: true, params: 524800}
  linear2: Linear {d_input: 512, d_output: 10, bias: true, params: 5130}
  activation: Relu
  params: 531178
}"""  # noqa: E501 - the book's output, verbatim


def test_printout_matches_the_book() -> None:
    assert repr(ModelConfig(10, 512).init()) == BOOK


def test_a_training_step_reaches_every_param_and_valid_is_deterministic(
        tmp_path: Path) -> None:
    model = ModelConfig(10, 32).init(AD)
    rng = np.random.default_rng(0)
    images = pyrite.tensor(rng.random((4, 28, 28)).astype(np.float32), device=AD)
    targets = pyrite.tensor(rng.integers(0, 10, 4), device=AD)
    loss = CrossEntropyLossConfig().init()(model(images), targets)
    grads = loss.backward()
    for path, p in model.named_params():
        g = p.grad(grads)
        assert g is not None and g.shape == p.shape, path
    valid = model.valid()
    plain = images.inner()
    first, second = valid(plain), valid(plain)
    assert first.device.name == "numpy"
    np.testing.assert_array_equal(first.numpy(), second.numpy())  # dropout is off
    saved = model.save_file(tmp_path / "model")
    restored = ModelConfig(10, 32).init().load_file(saved)
    np.testing.assert_allclose(restored(plain).numpy(), first.numpy(), rtol=1e-6)
    config_path = tmp_path / "config.json"
    ModelConfig(10, 32).save(config_path)
    assert ModelConfig.load(config_path) == ModelConfig(10, 32)
