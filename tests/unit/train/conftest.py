"""A tiny softmax classifier on separable synthetic data, with the Learner's step methods."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import pyrite
from pyrite.dataset import DataLoader, InMemDataset
from pyrite.module import Module, Param
from pyrite.train import ClassificationOutput, TrainOutput

AD = "autodiff<numpy>"


class Tiny(Module):
    """logits = x @ w + b, cross-entropy loss written out (no nn dependency)."""

    def __init__(self) -> None:
        rng = np.random.default_rng(3)
        self.w = Param(pyrite.tensor(rng.normal(size=(4, 3)).astype(np.float32) * 0.1,
                                     device=AD))
        self.b = Param(pyrite.zeros((3,), device=AD))

    def forward(self, x: pyrite.Tensor) -> pyrite.Tensor:
        return x @ self.w.val + self.b.val

    def classify(self, batch: tuple[pyrite.Tensor, pyrite.Tensor]) -> ClassificationOutput:
        x, y = batch
        logits = self.forward(x)
        picked = logits.log_softmax(1).gather(1, y.reshape((y.shape[0], 1)))
        return ClassificationOutput(-picked.mean(), logits, y)

    def train_step(self, batch: Any) -> TrainOutput:
        item = self.classify(batch)
        return TrainOutput(self, item.loss.backward(), item)

    def valid_step(self, batch: Any) -> ClassificationOutput:
        return self.classify(batch)


def make_items(n: int, seed: int) -> list[tuple[list[float], int]]:
    rng = np.random.default_rng(seed)
    centers = np.array([[2, 0, 0, 0], [0, 2, 0, 0], [0, 0, 2, 0]], np.float32)
    labels = rng.integers(0, 3, size=n)
    xs = centers[labels] + rng.normal(scale=0.5, size=(n, 4)).astype(np.float32)
    return [(x.tolist(), int(label)) for x, label in zip(xs, labels, strict=True)]


def batcher(device: str) -> Callable[[list[tuple[list[float], int]]], tuple]:
    def batch(items: list[tuple[list[float], int]]) -> tuple:
        x = pyrite.tensor([i[0] for i in items], device=device, dtype="f32")
        y = pyrite.tensor([i[1] for i in items], device=device, dtype="i64")
        return x, y
    return batch


@pytest.fixture
def loaders() -> tuple[DataLoader, DataLoader]:
    train = DataLoader(InMemDataset(make_items(96, 0)), batcher(AD), batch_size=16,
                       shuffle=True, seed=7)
    valid = DataLoader(InMemDataset(make_items(48, 1)), batcher("numpy"), batch_size=16)
    return train, valid


@pytest.fixture
def tiny() -> type[Tiny]:
    return Tiny
