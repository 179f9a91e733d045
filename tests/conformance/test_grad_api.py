"""Autodiff semantics: what is tracked, what is recorded, how Gradients behave."""

from __future__ import annotations

import numpy as np
import pytest

import pyrite


def test_backward_returns_gradients_for_tracked_leaves(ad_backend: pyrite.Backend) -> None:
    x = pyrite.tensor([[1.0, 2.0], [3.0, 4.0]], device=ad_backend).require_grad()
    y = pyrite.tensor([[0.5, 0.5], [1.0, 1.0]], device=ad_backend)
    grads = (x * y + x).sum().backward()
    np.testing.assert_allclose(x.grad(grads).numpy(), [[1.5, 1.5], [2.0, 2.0]])
    assert y.grad(grads) is None  # never required grad
    assert x.grad(grads).device == ad_backend.inner  # gradients live on the inner backend


def test_untracked_ops_record_nothing(ad_backend: pyrite.Backend) -> None:
    a = pyrite.tensor([1.0, 2.0], device=ad_backend)
    b = (a * 3.0).exp()
    assert not b.is_require_grad()
    assert b.into_primitive().node is None
    with pytest.raises(pyrite.GradError, match="does not depend on any tensor"):
        b.sum().backward()


def test_detach_and_set_require_grad(ad_backend: pyrite.Backend) -> None:
    x = pyrite.tensor([2.0, 3.0], device=ad_backend).require_grad()
    assert x.is_require_grad()
    grads = (x * x.detach()).sum().backward()
    np.testing.assert_allclose(x.grad(grads).numpy(), [2.0, 3.0])  # only one factor flows
    off = x.set_require_grad(False)
    assert not off.is_require_grad()


def test_grad_remove(ad_backend: pyrite.Backend) -> None:
    x = pyrite.tensor([1.0, -1.0], device=ad_backend).require_grad()
    grads = (x * 4.0).sum().backward()
    assert len(grads) == 1
    np.testing.assert_allclose(x.grad_remove(grads).numpy(), [4.0, 4.0])
    assert x.grad(grads) is None
    assert len(grads) == 0


def test_int_and_bool_pass_through(ad_backend: pyrite.Backend) -> None:
    i = pyrite.arange(0, 4, device=ad_backend)
    assert i.kind is pyrite.Int
    assert (i * 2).to_list() == [0, 2, 4, 6]
    x = pyrite.tensor([1.0, 5.0, 3.0, 2.0], device=ad_backend).require_grad()
    picked = x.select(0, x.argsort(0))  # an index computed from x carries no gradient itself
    grads = (picked * pyrite.tensor([1.0, 2.0, 3.0, 4.0], device=ad_backend)).sum().backward()
    np.testing.assert_allclose(x.grad(grads).numpy(), [1.0, 4.0, 3.0, 2.0])


def test_inner_and_from_inner(ad_backend: pyrite.Backend) -> None:
    x = pyrite.tensor([1.0, 2.0], device=ad_backend).require_grad()
    inner = x.inner()
    assert inner.device == ad_backend.inner
    back = pyrite.Tensor.from_inner(inner, ad_backend)
    assert back.device == ad_backend and not back.is_require_grad()


def test_gradient_accumulates_over_paths(ad_backend: pyrite.Backend) -> None:
    x = pyrite.tensor([[1.0, 2.0, 3.0]], device=ad_backend).require_grad()
    y = x.expand([4, 3]) * x + x.sum_dim(1)
    grads = y.sum().backward()
    # d/dx_j [sum_i sum_k (x_k^2) + 4 * 3 * sum x] = 4 * 2 x_j + 12
    np.testing.assert_allclose(x.grad(grads).numpy(), [[20.0, 28.0, 36.0]])


def test_non_autodiff_backend_has_no_backward(backend: pyrite.Backend) -> None:
    x = pyrite.tensor([1.0], device=backend)
    assert x.require_grad() is x and not x.is_require_grad()
    with pytest.raises(pyrite.GradError, match="autodiff<"):
        x.backward()
