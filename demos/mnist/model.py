"""The model of Burn's guide: two 3x3 convolutions, adaptive average pooling to 8x8, dropout,
and two linear layers (1024 -> 512 -> 10), with its config and the Learner's step methods.

    Model {
      conv1: Conv2d 1 -> 8, 3x3              params: 80
      conv2: Conv2d 8 -> 16, 3x3             params: 1168
      pool: AdaptiveAvgPool2d (8, 8)
      dropout: Dropout 0.5
      linear1: Linear 1024 -> 512            params: 524800
      linear2: Linear 512 -> 10              params: 5130
      activation: Relu
    }                                        params: 531178

As in the book, the forward pass applies dropout after each convolution and after linear1, and
the ReLU after conv2 and after linear1 (there is none after conv1).
"""

from __future__ import annotations

from dataclasses import KW_ONLY
from typing import TYPE_CHECKING

from pyrite import Backend, Tensor
from pyrite.module import Config, Module
from pyrite.nn.activation import Relu
from pyrite.nn.conv import Conv2dConfig
from pyrite.nn.dropout import DropoutConfig
from pyrite.nn.linear import LinearConfig
from pyrite.nn.pool import AdaptiveAvgPool2dConfig

if TYPE_CHECKING:  # the Learner's types: imported where used, so inference (and a page)
    from pyrite.train import ClassificationOutput, TrainOutput  # does not load pyrite.train

    from .data import MnistBatch


class ModelConfig(Config):
    """`ModelConfig(num_classes=10, hidden_size=512).init(device)`."""

    num_classes: int
    hidden_size: int
    _: KW_ONLY
    dropout: float = 0.5

    def init(self, device: str | Backend | None = None) -> Model:
        return Model(self, device)


class Classifier:
    """The Learner's step methods of an MNIST classifier, a Module whose `forward` maps images
    (batch, 28, 28) to logits (batch, classes): the guide's CNN here, the training page's MLP
    (demos/train/models.py)."""

    if TYPE_CHECKING:
        def forward(self, images: Tensor) -> Tensor: ...

    def forward_classification(self, images: Tensor, targets: Tensor) -> ClassificationOutput:
        from pyrite.nn.loss import CrossEntropyLossConfig
        from pyrite.train import ClassificationOutput

        output = self.forward(images)
        loss = CrossEntropyLossConfig().init(output.device)(output, targets)
        return ClassificationOutput(loss, output, targets)

    def train_step(self, batch: MnistBatch) -> TrainOutput[ClassificationOutput]:
        from pyrite.train import TrainOutput

        item = self.forward_classification(batch.images, batch.targets)
        return TrainOutput(self, item.loss.backward(), item)

    def valid_step(self, batch: MnistBatch) -> ClassificationOutput:
        return self.forward_classification(batch.images, batch.targets)


class Model(Classifier, Module):
    """Shapes: images (batch, 28, 28) -> logits (batch, num_classes)."""

    def __init__(self, config: ModelConfig, device: str | Backend | None = None) -> None:
        self.conv1 = Conv2dConfig(1, 8, (3, 3)).init(device)
        self.conv2 = Conv2dConfig(8, 16, (3, 3)).init(device)
        self.pool = AdaptiveAvgPool2dConfig((8, 8)).init()
        self.dropout = DropoutConfig(config.dropout).init()
        self.linear1 = LinearConfig(16 * 8 * 8, config.hidden_size).init(device)
        self.linear2 = LinearConfig(config.hidden_size, config.num_classes).init(device)
        self.activation = Relu()

    def forward(self, images: Tensor) -> Tensor:
        batch, height, width = images.shape
        x = images.reshape((batch, 1, height, width))
        x = self.conv1(x)  # (batch, 8, 26, 26)
        x = self.dropout(x)
        x = self.conv2(x)  # (batch, 16, 24, 24)
        x = self.dropout(x)
        x = self.activation(x)
        x = self.pool(x)  # (batch, 16, 8, 8)
        x = x.reshape((batch, 16 * 8 * 8))
        x = self.linear1(x)
        x = self.dropout(x)
        x = self.activation(x)
        logits: Tensor = self.linear2(x)  # (batch, num_classes)
        return logits
