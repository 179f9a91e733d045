"""The smoke set: create, add, matmul, sum, backward, readback — on every backend."""

from __future__ import annotations

import pyrite


def test_tiny_forward(backend: pyrite.Backend) -> None:
    a = pyrite.tensor([[1.0, 2.0], [3.0, 4.0]], device=backend)
    b = pyrite.ones((2, 2), device=backend)
    c = (a + b) @ a
    assert c.to_list() == [[11.0, 16.0], [19.0, 28.0]]
    assert c.sum().into_scalar() == 74.0


def test_tiny_backward(ad_backend: pyrite.Backend) -> None:
    w = pyrite.tensor([[1.0, 2.0], [3.0, 4.0]], device=ad_backend).require_grad()
    x = pyrite.tensor([[1.0, 1.0]], device=ad_backend)
    loss = (x @ w).sum()
    grads = loss.backward()
    assert w.grad(grads).to_list() == [[1.0, 1.0], [1.0, 1.0]]


def test_tiny_async_readback(backend: pyrite.Backend) -> None:
    import asyncio
    x = pyrite.tensor([[1.0, 2.0]], device=backend) * 3.0
    assert asyncio.run(x.to_data_async()).to_list() == [[3.0, 6.0]]
    ad = pyrite.Autodiff(backend)
    y = pyrite.tensor([1.5], device=ad).require_grad() * 2.0
    assert asyncio.run(y.to_data_async()).to_list() == [3.0]
