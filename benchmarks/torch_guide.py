"""The Burn guide's MNIST model in PyTorch, layer for layer as `pyrite.demos.mnist.Model`: the
peer of the MNIST benchmarks (torch is imported by the caller, never by pyrite)."""

from __future__ import annotations

from typing import Any


def guide_model(torch: Any) -> Any:
    """A fresh guide model (seeded with 0), on the CPU."""
    nn = torch.nn

    class Model(nn.Module):  # type: ignore[misc, name-defined]  # torch is the caller's
        def __init__(self) -> None:
            super().__init__()
            self.conv1 = nn.Conv2d(1, 8, 3)
            self.conv2 = nn.Conv2d(8, 16, 3)
            self.pool = nn.AdaptiveAvgPool2d((8, 8))
            self.dropout = nn.Dropout(0.5)
            self.linear1 = nn.Linear(1024, 512)
            self.linear2 = nn.Linear(512, 10)
            self.activation = nn.ReLU()

        def forward(self, images: Any) -> Any:
            b, h, w = images.shape
            x = images.reshape(b, 1, h, w)
            x = self.dropout(self.conv1(x))
            x = self.activation(self.dropout(self.conv2(x)))
            x = self.pool(x).reshape(b, 16 * 8 * 8)
            x = self.activation(self.dropout(self.linear1(x)))
            return self.linear2(x)

    torch.manual_seed(0)
    return Model()
