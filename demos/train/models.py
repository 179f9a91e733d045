"""The models the training page offers: Burn's guide CNN and a small MLP, by name.

Both take images (batch, 28, 28) and give logits (batch, 10), with the Learner's
`train_step`/`valid_step`. Their configs are fixed per name, so a record says which model it is
by its parameter names alone (`detect`): a record exported by the page loads natively with
`pyrite infer mnist --record FILE` and nothing else.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import KW_ONLY
from typing import TYPE_CHECKING

from pyrite import Backend, Tensor
from pyrite.module import Config, Module
from pyrite.nn.activation import Relu
from pyrite.nn.linear import LinearConfig

from ..mnist.model import Classifier, ModelConfig

if TYPE_CHECKING:
    from pyrite.record import Record


Device = str | Backend | None


class MlpConfig(Config):
    """`MlpConfig(hidden_size=128).init(device)`: 784 -> hidden -> ReLU -> 10."""

    _: KW_ONLY
    hidden_size: int = 128
    num_classes: int = 10

    def init(self, device: Device = None) -> Mlp:
        return Mlp(self, device)


class Mlp(Classifier, Module):
    """Shapes: images (batch, 28, 28) -> logits (batch, num_classes)."""

    def __init__(self, config: MlpConfig, device: Device = None) -> None:
        self.hidden = LinearConfig(28 * 28, config.hidden_size).init(device)
        self.output = LinearConfig(config.hidden_size, config.num_classes).init(device)
        self.activation = Relu()

    def forward(self, images: Tensor) -> Tensor:
        x = images.reshape((images.shape[0], 28 * 28))
        out: Tensor = self.output(self.activation(self.hidden(x)))
        return out


#: name -> (what it is, how to build it, its record's parameter entries); the guide's config
#: is the book's (hidden 512)
MODELS: dict[str, tuple[str, Callable[[Device], Module], frozenset[str]]] = {
    "cnn": ("Burn's guide CNN (2 convolutions, 531,178 parameters)",
            lambda device: ModelConfig(10, 512).init(device),
            frozenset({"conv1", "conv2", "linear1", "linear2"})),
    "mlp": ("a small MLP (784-128-10, 101,770 parameters)",
            lambda device: MlpConfig().init(device), frozenset({"hidden", "output"})),
}


def build(name: str, device: Device = None) -> Module:
    """A fresh model `name` ("cnn" or "mlp") on `device`."""
    if name not in MODELS:
        raise ValueError(f"unknown model {name!r}; the training page offers "
                         f"{', '.join(sorted(MODELS))}")
    return MODELS[name][1](device)


def detect(record: Mapping[str, object]) -> str:
    """Which model a record is, from its top-level parameter names."""
    keys = {k for k in record if not k.startswith("_")}
    for name, (_, _, entries) in MODELS.items():
        if keys == entries:
            return name
    raise ValueError(f"this record is none of the trainable MNIST models: it holds "
                     f"{', '.join(sorted(keys)) or 'nothing'}; "
                     + "; ".join(f"{n} holds {', '.join(sorted(e))}"
                                 for n, (_, _, e) in sorted(MODELS.items())))


def load(record: Record, device: Device = None) -> Module:
    """The model a record holds (detected from its keys), on `device`."""
    from pyrite.module import init_from_record
    from pyrite.quantization.module import static_inputs_for

    # built without initialising the params the record overwrites; a statically quantized
    # record (pyrite quantize --calibrate) adds input params to Linears
    name = detect(record)
    return init_from_record(lambda: static_inputs_for(build(name, device), record), record)


__all__ = ["MODELS", "Mlp", "MlpConfig", "build", "detect", "load"]
