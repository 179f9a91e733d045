"""Every nn config round-trips through JSON, builds its module, and refuses positional options."""

from __future__ import annotations

from pathlib import Path

import pytest

import pyrite.nn as nn
from pyrite.module import Config, Module

CONFIGS: list[Config] = [
    nn.LinearConfig(4, 3, bias=False, initializer=nn.XavierUniform(gain=2.0)),
    nn.Conv1dConfig(2, 4, 3, stride=2, padding=(1, 2), groups=2),
    nn.Conv2dConfig(1, 8, 3, stride=2, padding=((1, 0), (0, 1)), dilation=(1, 2)),
    nn.Conv2dConfig(1, 8, (3, 5), padding="same", initializer=nn.KaimingNormal(gain=1.5)),
    nn.ConvTranspose1dConfig(4, 2, 3, stride=2, padding=1, padding_out=1),
    nn.ConvTranspose2dConfig(4, 2, (3, 3), stride=(2, 1), padding=(1, 0), groups=2),
    nn.Conv3dConfig(2, 4, (1, 3, 3), stride=(1, 2, 2), padding=((0, 0), (1, 0), (0, 1))),
    nn.Conv3dConfig(2, 4, 3, padding="same", dilation=(1, 2, 1), groups=2),
    nn.ConvTranspose3dConfig(4, 2, 3, stride=2, padding=1, padding_out=(1, 0, 1), groups=2),
    nn.DeformConv2dConfig(4, 6, (3, 2), stride=(2, 1), dilation=2, weight_groups=2,
                          offset_groups=4, padding=((1, 0), (0, 1)), bias=False),
    nn.MaxPool1dConfig(3, stride=1, padding=1),
    nn.MaxPool2dConfig((2, 3), padding="same", stride=1),
    nn.AvgPool1dConfig(2, count_include_pad=False),
    nn.AvgPool2dConfig(3, stride=2, padding=1),
    nn.AdaptiveAvgPool1dConfig(4),
    nn.AdaptiveAvgPool2dConfig((8, 8)),
    nn.BatchNormConfig(16, momentum=0.05),
    nn.LayerNormConfig(32, epsilon=1e-6),
    nn.GroupNormConfig(2, 8, affine=False),
    nn.InstanceNormConfig(8),
    nn.RmsNormConfig(16),
    nn.DropoutConfig(0.25),
    nn.EmbeddingConfig(100, 8, initializer=nn.Uniform(min=-0.1, max=0.1)),
    nn.LstmConfig(3, 4, bias=False, batch_first=False),
    nn.BiLstmConfig(3, 4, initializer=nn.XavierUniform(gain=0.5)),
    nn.GruConfig(3, 4, reset_after=False),
    nn.GateControllerConfig(3, 2, bias=False),
    nn.LeakyReluConfig(negative_slope=0.2),
    nn.HardSigmoidConfig(alpha=0.1),
    nn.PreluConfig(num_parameters=4, alpha=0.1),
    nn.SwiGluConfig(8, 16, bias=True, initializer=nn.Constant(0.5)),
    nn.Interpolate1dConfig(scale_factor=2.0, mode="linear"),
    nn.Interpolate2dConfig(output_size=(4, 6), mode="bilinear", align_corners=False),
    nn.CrossEntropyLossConfig(pad_tokens=(0,), weights=(1.0, 2.0), smoothing=0.1),
    nn.MseLossConfig(),
    nn.HuberLossConfig(0.5),
    nn.BinaryCrossEntropyLossConfig(logits=True, weights=(1.0, 3.0)),
    nn.KaimingUniform(gain=2.0, fan_out_only=True),
    nn.Normal(mean=1.0, std=0.5),
    nn.Ones(),
    nn.MultiHeadAttentionConfig(16, 4, dropout=0.0, min_float=-1e9, quiet_softmax=True),
    nn.PositionWiseFeedForwardConfig(8, 32, activation="relu"),
    nn.TransformerEncoderConfig(16, 32, 4, 2, norm_first=True, activation="relu"),
    nn.TransformerDecoderConfig(16, 32, 2, 1, dropout=0.2, quiet_softmax=True),
    nn.PositionalEncodingConfig(8, max_sequence_size=64, max_timescale=1000),
    nn.RotaryEncodingConfig(32, 8, theta=500.0),
]


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: type(c).__name__)
def test_round_trips_through_json_and_builds(config: Config, tmp_path: Path) -> None:
    back = type(config).from_json(config.to_json())
    assert back == config
    path = tmp_path / "config.json"
    config.save(path)
    assert type(config).load(path) == config
    if hasattr(config, "init") and not isinstance(config, nn.Initializer):
        assert isinstance(config.init(), Module)


def test_options_are_keyword_only() -> None:
    with pytest.raises(TypeError):
        nn.Conv2dConfig(1, 8, 3, 2)  # type: ignore[misc]
    with pytest.raises(TypeError):
        nn.LinearConfig(1, 2, False)  # type: ignore[misc]
    with pytest.raises(TypeError):
        nn.BatchNormConfig(4, 1e-3)  # type: ignore[misc]


def test_builders_exist_for_every_field() -> None:
    c = nn.Conv2dConfig(1, 8, 3).with_padding("same").with_stride(1)  # type: ignore[attr-defined]
    assert c.padding == "same"
    assert nn.LinearConfig(2, 3).with_bias(False).bias is False  # type: ignore[attr-defined]
