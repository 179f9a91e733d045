"""matmul against numpy: plain, batched, broadcast batch dims, rank-1 operands, transposed and
sliced inputs, each float dtype. Shapes: (..., m, k) @ (..., k, n) -> (..., m, n)."""

from __future__ import annotations

import numpy as np
import pytest

from pyrite import tensor

from .helpers import F16, F32, F64, FLOATS, LAYOUTS, assert_close, make, random_array, reference

CASES = [
    ((3, 5), (5, 4)),  # plain
    ((1, 1), (1, 1)),  # one element
    ((2, 3, 5), (2, 5, 4)),  # batched
    ((2, 1, 3, 5), (3, 5, 4)),  # batch dims broadcast (and ranks differ)
    ((4, 3, 5), (5, 2)),  # a matrix against a batch
    ((5,), (5, 4)),  # a vector on the left: (k) @ (k, n) -> (n)
    ((3, 5), (5,)),  # a vector on the right: (m, k) @ (k) -> (m)
    ((5,), (5,)),  # two vectors: a rank-0 result
    ((2, 3, 5), (5,)),  # a batch against a vector
    ((7, 33), (33, 17)),  # sizes that are not multiples of a tile
    ((2, 515), (515, 259)),  # a dense layer's few rows, ragged (a page's software adapter: GEMV)
]


def _tol(dtype, k):
    """f16: 2e-3 a term; f32: the dtype's tolerance up to 128 terms, then growing with K (a
    product's summation order depends on the kernel: tiles, split K, the GEMV; a sum of 515
    terms that cancels to -0.0203 differed by 2.4e-6 between two orders)."""
    if dtype is F16:
        return {"atol": 2e-3 * k}
    if dtype is F32 and k > 128:
        return {"atol": 2e-6 * k / 128}
    return {}


def test_matmul_example(backend):
    a = tensor([[1.0, 2.0], [3.0, 4.0]], device=backend)
    b = tensor([[5.0, 6.0], [7.0, 8.0]], device=backend)
    assert_close(a @ b, [[19.0, 22.0], [43.0, 50.0]], dtype=F32)
    assert_close(a.matmul(b), [[19.0, 22.0], [43.0, 50.0]])


@pytest.mark.parametrize("shapes", CASES, ids=str)
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_matmul(backend, dtype, shapes):
    a = random_array(shapes[0], dtype, seed=1, low=-1.0, high=1.0)
    b = random_array(shapes[1], dtype, seed=2, low=-1.0, high=1.0)
    out = make(backend, a, dtype) @ make(backend, b, dtype)
    want = np.matmul(reference(a), reference(b))
    assert_close(out, want, dtype=dtype, **_tol(dtype, shapes[0][-1]))


@pytest.mark.parametrize("layout_b", LAYOUTS)
@pytest.mark.parametrize("layout_a", LAYOUTS)
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_matmul_layouts(backend, dtype, layout_a, layout_b):
    a = random_array((2, 4, 6), dtype, seed=3, low=-1.0, high=1.0)
    b = random_array((2, 6, 3), dtype, seed=4, low=-1.0, high=1.0)
    out = make(backend, a, dtype, layout_a) @ make(backend, b, dtype, layout_b)
    assert_close(out, np.matmul(reference(a), reference(b)), dtype=dtype, **_tol(dtype, 6))


def test_matmul_of_transposed_views(backend):
    a = random_array((6, 4), F32, seed=5)
    x = tensor(a, device=backend)
    assert_close(x.T @ x, reference(a).T @ reference(a))
    assert_close(x @ x.transpose(), reference(a) @ reference(a).T)


def test_large_matmul_of_transposed_and_sliced_views(backend):
    # big enough for webgpu's tiled kernel (>= 64^3 multiply-adds), which reads each layout
    # (row-major or transposed, any row length and offset) in place
    a = random_array((100, 75), F32, seed=8)  # a[2:98].T: (75, 96), transposed, offset
    b = random_array((2, 96, 70), F32, seed=9)  # a batch of row-major matrices
    w = random_array((68, 100), F32, seed=10)  # w[:, 3:99].T: (96, 68), transposed, sliced
    x, y, v = (tensor(t, device=backend) for t in (a, b, w))
    ra, rb, rw = reference(a), reference(b), reference(w)
    tol = {"atol": 1e-4, "rtol": 1e-4}  # sums of 96 f32 products, in another order than numpy's
    assert_close(x[2:98].T @ y, np.matmul(ra[2:98].T, rb), **tol)
    assert_close(y.transpose() @ x[2:98], np.matmul(rb.transpose(0, 2, 1), ra[2:98]), **tol)
    assert_close(x[2:98].T @ v[:, 3:99].T, ra[2:98].T @ rw[:, 3:99].T, **tol)


def test_matmul_of_expanded_batch(backend):
    a = random_array((1, 3, 4), F32, seed=6)
    b = random_array((5, 4, 2), F32, seed=7)
    x = tensor(a, device=backend).expand([5, 3, 4])
    assert_close(x @ tensor(b, device=backend), np.matmul(reference(a), reference(b)))


@pytest.mark.parametrize("lhs, rhs", [(F32, F64), (F16, F32)], ids=str)
def test_matmul_mixed_dtypes_promote(backend, lhs, rhs):
    a = make(backend, [[1.0, 2.0]], lhs)
    b = make(backend, [[3.0], [4.0]], rhs)
    assert_close(a @ b, [[11.0]], dtype=rhs)


def test_matmul_identity(backend):
    from pyrite import eye
    a = random_array((4, 4), F32, seed=8)
    x = tensor(a, device=backend)
    assert_close(x @ eye(4, device=backend), a)
    assert_close(eye(4, device=backend) @ x, a)


@pytest.mark.slow
def test_matmul_with_k_split_into_slices(backend):
    # 16 output tiles of 128 x 128 (ragged) and K = 4096: webgpu's heuristic splits K into 16
    # slices (matmul_config.choose_split) and adds the partial products in a second kernel
    a = random_array((2, 250, 4096), F32, seed=11)
    b = random_array((4096, 500), F32, seed=12)
    x, y = tensor(a, device=backend), tensor(b, device=backend)
    assert_close(x @ y, np.matmul(reference(a), reference(b)), atol=1e-3, rtol=1e-4)


def test_matmul_of_a_ragged_batch_on_mid_tiles(backend):
    # webgpu's heuristic runs this on the ladder's medium tile (matmul_config.MEDIUM, 256
    # workgroups of 64 x 64, constant-row workgroup tiles), ragged in M, N and K
    a = random_array((4, 500, 45), F32, seed=13)
    b = random_array((4, 45, 510), F32, seed=14)
    x, y = tensor(a, device=backend), tensor(b, device=backend)
    assert_close(x @ y, np.matmul(reference(a), reference(b)), atol=1e-4, rtol=1e-4)
