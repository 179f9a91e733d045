"""matmul: batched, broadcast batch dims, strided (transposed) operands, int."""

from __future__ import annotations

import numpy as np

RNG = np.random.default_rng(2)


def test_matmul_shapes_not_multiple_of_tile(gpu, up, down):
    a = RNG.normal(size=(17, 33)).astype(np.float32)
    b = RNG.normal(size=(33, 5)).astype(np.float32)
    np.testing.assert_allclose(down(gpu.matmul(up(a), up(b))), a @ b, rtol=1e-4, atol=1e-4)


def test_matmul_broadcast_batch_and_transposed(gpu, up, down):
    a = RNG.normal(size=(2, 1, 4, 6)).astype(np.float32)
    b = RNG.normal(size=(1, 3, 5, 6)).astype(np.float32)  # used as b^T: (1, 3, 6, 5)
    got = down(gpu.matmul(up(a), gpu.permute(up(b), (0, 1, 3, 2))))
    want = a @ b.transpose(0, 1, 3, 2)
    assert got.shape == (2, 3, 4, 5)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_matmul_int_and_empty(gpu, up, down):
    a = RNG.integers(-5, 5, (3, 4)).astype(np.int32)
    b = RNG.integers(-5, 5, (4, 2)).astype(np.int32)
    np.testing.assert_array_equal(down(gpu.matmul(up(a), up(b))), a @ b)
    z = down(gpu.matmul(up(np.zeros((2, 0), np.float32)), up(np.zeros((0, 3), np.float32))))
    np.testing.assert_array_equal(z, np.zeros((2, 3)))


def test_tiled_path_for_large_f32(gpu, up, down):
    from pyrite.webgpu import linalg
    a = RNG.normal(size=(3, 70, 90)).astype(np.float32)  # ragged: the scalar variant
    b = RNG.normal(size=(90, 68)).astype(np.float32)
    assert 70 * 68 * 90 >= linalg.TILED_MIN_WORK
    got = down(gpu.matmul(up(a), gpu.reshape(up(b), (1, 90, 68))))
    np.testing.assert_allclose(got, a @ b, rtol=1e-4, atol=1e-4)
    c = RNG.normal(size=(64, 128)).astype(np.float32)  # aligned (vec4) and a transposed operand
    got = down(gpu.matmul(up(c), gpu.permute(up(c), (1, 0))))
    np.testing.assert_allclose(got, c @ c.T, rtol=1e-4, atol=1e-4)
    keys = {key.kernel for key, _ in gpu.kernels._sources}
    assert "matmul_tiled" in keys
