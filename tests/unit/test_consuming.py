"""pyrite.consuming: on numpy the result lands in the given-up operand's memory when it can;
otherwise (read-only broadcasts, other dtypes, Autodiff) it is the plain op's new tensor."""

from __future__ import annotations

import numpy as np
import pytest

import pyrite
from pyrite import activation, consuming


def _temp(values, device="numpy"):
    return pyrite.tensor(np.asarray(values, dtype=np.float32), device=device) * 1.0


@pytest.mark.parametrize("fn, plain", [
    (consuming.relu, activation.relu), (consuming.tanh, activation.tanh),
    (lambda t: consuming.add(t, _temp([1.0, 2.0, 3.0])), lambda t: t + _temp([1.0, 2.0, 3.0])),
    (lambda t: consuming.sub(t, 0.5), lambda t: t - 0.5),
    (lambda t: consuming.mul(t, _temp([2.0])), lambda t: t * _temp([2.0])),
    (lambda t: consuming.div(t, 4.0), lambda t: t / 4.0),
], ids=["relu", "tanh", "add", "sub scalar", "mul broadcast", "div scalar"])
def test_numpy_writes_into_the_operand(fn, plain) -> None:
    x = _temp([-1.5, 0.0, 2.5])
    want = plain(_temp([-1.5, 0.0, 2.5])).numpy()
    memory = x.into_primitive()
    out = fn(x)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-6)
    assert np.shares_memory(out.into_primitive(), memory)


def test_a_read_only_or_smaller_operand_gets_a_new_array() -> None:
    row = _temp([1.0, 2.0])
    wide = row.reshape([1, 2]).expand([3, 2])  # a read-only broadcast view
    out = consuming.relu(wide)
    np.testing.assert_array_equal(out.numpy(), np.tile([1.0, 2.0], (3, 1)))
    np.testing.assert_array_equal(row.numpy(), [1.0, 2.0])
    small = _temp([1.0])
    big = _temp([[1.0, 2.0], [3.0, 4.0]])
    assert consuming.add(small, big).shape == (2, 2)  # a can't hold the result: plain op
    np.testing.assert_array_equal(small.numpy(), [1.0])


def test_autodiff_keeps_the_operand_and_its_gradient() -> None:
    dev = "autodiff<numpy>"
    w = pyrite.tensor(np.array([-1.0, 2.0], np.float32), device=dev).require_grad()
    h = w * 3.0
    before = h.numpy().copy()
    y = consuming.relu(h)
    np.testing.assert_array_equal(h.numpy(), before)  # the graph still needs h
    grads = (y * y).sum().backward()
    np.testing.assert_allclose(w.grad(grads).numpy(), [0.0, 36.0])


def test_an_int_tensor_is_refused_with_the_fix() -> None:
    with pytest.raises(TypeError, match="relu: not defined for Int tensors.*Convert with .float()"):
        consuming.relu(pyrite.tensor([1, 2], device="numpy"))


def test_linear_adds_its_bias_into_the_product_and_leaves_its_inputs() -> None:
    from pyrite.nn import functional as F

    rng = np.random.default_rng(4)
    x = pyrite.tensor(rng.normal(size=(2, 3, 4)).astype(np.float32), device="numpy")
    w = pyrite.tensor(rng.normal(size=(4, 5)).astype(np.float32), device="numpy")
    b = pyrite.tensor(rng.normal(size=(5,)).astype(np.float32), device="numpy")
    saved = [t.numpy().copy() for t in (x, w, b)]
    got = F.linear(x, w, b).numpy()
    np.testing.assert_allclose(got, saved[0] @ saved[1] + saved[2], rtol=1e-5, atol=1e-5)
    for t, before in zip((x, w, b), saved, strict=True):
        np.testing.assert_array_equal(t.numpy(), before)
