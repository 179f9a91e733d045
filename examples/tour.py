"""A tour of pyrite's tensor API and autodiff: fit a small linear model with plain gradient
descent on the numpy backend, then print what it learned.

Run: python examples/tour.py
"""

from __future__ import annotations

import time

import pyrite
from pyrite import Normal, activation, tensor


def main() -> None:
    pyrite.seed(0)
    ad = pyrite.device("autodiff<numpy>")

    # Data: y = 3 x0 - 2 x1 + 0.5 plus a little noise.
    x = pyrite.random((256, 2), Normal(0.0, 1.0), device=ad)
    true_w = tensor([[3.0], [-2.0]], device=ad)
    y = x @ true_w + 0.5 + pyrite.random((256, 1), Normal(0.0, 0.01), device=ad)

    w = pyrite.zeros((2, 1), device=ad).require_grad()
    b = pyrite.zeros((1,), device=ad).require_grad()
    start = time.perf_counter()
    for step in range(200):
        loss = ((x @ w + b - y) ** 2).mean()
        grads = loss.backward()
        # plain SGD: new leaves from the inner (gradient-free) values
        w = (w.inner() - w.grad(grads) * 0.1).to_device(ad).require_grad()
        b = (b.inner() - b.grad(grads) * 0.1).to_device(ad).require_grad()
        if step % 50 == 0:
            print(f"step {step:3d}  loss {loss.into_scalar():.5f}")
    took = time.perf_counter() - start
    print(f"learned w = {w.inner().reshape([-1]).to_list()}, b = {b.inner().to_list()}")
    print(f"200 steps in {took * 1000:.0f} ms on {ad.name}")

    logits = tensor([[2.0, 1.0, 0.1]])
    print("softmax:", activation.softmax(logits, 1))


if __name__ == "__main__":
    main()
