"""Turning MNIST items into batches: images normalised as in the book (and PyTorch's example).

The batcher needs no numpy: the pixels go to the device as one uint8 tensor and are scaled
there, so it also runs in the browser.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyrite
from pyrite import Tensor, TensorData

# MNIST's pixel mean and standard deviation (of /255 values), from the PyTorch MNIST example
MEAN, STD = 0.1307, 0.3081
SIDE = 28


@dataclass(frozen=True)
class MnistBatch:
    images: Tensor  # (batch, 28, 28) float, normalised
    targets: Tensor  # (batch,) int


class MnistBatcher:
    """`MnistBatcher(device)(items) -> MnistBatch`; items are `{"image": bytes, "label": int}`."""

    def __init__(self, device: str | pyrite.Backend | None = None) -> None:
        self.device = pyrite.device(device)

    def __call__(self, items: list[dict[str, bytes | int]]) -> MnistBatch:
        raw = b"".join(bytes(item["image"]) for item in items)
        pixels = pyrite.from_data(TensorData(raw, shape=(len(items), SIDE, SIDE), dtype="u8"),
                                  device=self.device)
        images = (pixels.float() / 255.0 - MEAN) / STD
        # labels in the device's own int dtype (i64 on numpy, i32 on webgpu)
        targets = pyrite.tensor([int(item["label"]) for item in items],
                                device=self.device)
        return MnistBatch(images, targets)
