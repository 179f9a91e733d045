"""matmul with one matrix broadcast over the other operand's batch, the shape of a linear layer
on (batch, seq, d) input: the numpy backend folds the batch into the rows of one product and
Autodiff folds it into the weight gradient. Odd sizes, views of every layout, both orders."""

from __future__ import annotations

import numpy as np
import pytest

from .gradcheck import check_grad
from .helpers import F32, F64, FLOATS, LAYOUTS, assert_close, make, random_array, reference

CASES = [
    ((3, 7, 5), (5, 3)),  # rank-2 matrix against a batch
    ((2, 3, 1, 5), (1, 1, 5, 4)),  # explicit size-1 batch dims, a one-row matrix per entry
    ((1, 5, 3), (1, 3, 2)),  # batches equal (both 1): nothing to fold
    ((4, 2, 9), (1, 9, 1)),  # one output column
    ((2, 1, 3, 5), (1, 1, 5, 4)),  # a size-1 dim inside a's batch
]


@pytest.mark.parametrize("shapes", CASES, ids=str)
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_broadcast_matrix(backend, dtype, shapes):
    a = random_array(shapes[0], dtype, seed=1, low=-1.0, high=1.0)
    b = random_array(shapes[1], dtype, seed=2, low=-1.0, high=1.0)
    out = make(backend, a, dtype) @ make(backend, b, dtype)
    tol = {"atol": 1e-2} if dtype.name == "f16" else {}
    assert_close(out, np.matmul(reference(a), reference(b)), dtype=dtype, **tol)


@pytest.mark.parametrize("layout_b", LAYOUTS)
@pytest.mark.parametrize("layout_a", LAYOUTS)
def test_broadcast_matrix_of_views(backend, layout_a, layout_b):
    a = random_array((3, 5, 6), F32, seed=3, low=-1.0, high=1.0)
    b = random_array((6, 7), F32, seed=4, low=-1.0, high=1.0)
    out = make(backend, a, F32, layout_a) @ make(backend, b, F32, layout_b)
    assert_close(out, np.matmul(reference(a), reference(b)))


@pytest.mark.parametrize("shapes", [((2, 3, 4), (4, 5)), ((2, 1, 3, 4), (1, 1, 4, 2)),
                                    ((3, 4), (2, 4, 5))], ids=str)
def test_gradients_by_finite_differences(ad_backend, shapes):
    rng = np.random.default_rng(7)
    arrays = [rng.normal(size=s) for s in shapes]
    check_grad(lambda a, b: a @ b, arrays, ad_backend)


def test_weight_gradient_of_a_permuted_input(ad_backend):
    """The folded weight gradient reads a's rows through a permuted view."""
    x = random_array((4, 3, 5), F64, seed=5)
    w = random_array((3, 2), F64, seed=6)
    xt = make(ad_backend, x, F64).permute([0, 2, 1])  # (4, 5, 3), not contiguous
    wt = make(ad_backend, w, F64).reshape([1, 3, 2]).require_grad()
    loss = (xt @ wt).sum()
    grads = loss.backward()
    want = np.einsum("bmk,bmn->kn", np.transpose(x, (0, 2, 1)), np.ones((4, 5, 2)))
    assert_close(wt.grad(grads), want.reshape(1, 3, 2))
