"""The demo models that pages and the server's `/api/predict/{name}` run, by name.

Each entry names its record (served to pages under `/models/`), builds the model on a device
from that record, and turns a JSON-able input into a JSON-able prediction with the same Python
code natively and in the page.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pyrite
from pyrite.module import Module


@dataclass(frozen=True)
class DemoModel:
    """A servable model: `load(device, record_path)` then `predict(model, inputs)`."""

    name: str
    description: str
    record: Path  # the record file, shipped with the demo
    inputs: str  # what `predict` takes, for error messages and the API's docs
    load: Callable[[str | pyrite.Backend, Path | bytes], Module]
    run: Callable[[Module, dict[str, object]], dict[str, object]]
    example: dict[str, object]  # a valid input (the bundle build runs it to list the kernels)

    def predict(self, model: Module, inputs: object) -> dict[str, object]:
        """Run the model on a JSON object; a ValueError names what a valid input is."""
        if not isinstance(inputs, dict):
            raise ValueError(f"{self.name}: the input must be a JSON object: {self.inputs}")
        return self.run(model, inputs)


def _mnist() -> DemoModel:
    from .mnist import predict  # only what inference needs (a page loads no training code)

    def load(device: str | pyrite.Backend, record: Path | bytes) -> Module:
        return predict.load(device, record)

    def run(model: Module, inputs: dict[str, object]) -> dict[str, object]:
        if "pixels" not in inputs:
            raise ValueError("mnist: the input needs 'pixels': 784 grey levels 0..255 "
                             "(28x28, row-major, white digit on black)")
        return predict.predict(model, inputs["pixels"])  # type: ignore[arg-type]

    return DemoModel("mnist", "Burn's guide CNN trained on MNIST by pyrite (99.13 %)",
                     predict.SHIPPED, '{"pixels": [784 numbers 0..255]}', load, run,
                     {"pixels": [0.0] * predict.PIXELS})


_BUILDERS: dict[str, Callable[[], DemoModel]] = {"mnist": _mnist}


def names() -> list[str]:
    """The demo models' names."""
    return sorted(_BUILDERS)


def get(name: str) -> DemoModel:
    """The demo model called `name`; KeyError naming the known ones."""
    builder = _BUILDERS.get(name)
    if builder is None:
        raise KeyError(f"unknown model {name!r}; known models: {', '.join(names())}")
    return builder()


__all__ = ["DemoModel", "get", "names"]
