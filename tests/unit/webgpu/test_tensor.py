"""The tensor primitive: movement ops are views over one buffer until a copy is needed."""

from __future__ import annotations

import struct

import numpy as np

from pyrite.data import TensorData
from pyrite.dtype import DType
from pyrite.webgpu.tensor import contiguous_strides


def test_contiguous_strides():
    assert contiguous_strides((2, 3, 4)) == (12, 4, 1)
    assert contiguous_strides(()) == ()


def test_views_share_the_buffer(gpu, up, down):
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    x = up(a)
    t = gpu.permute(x, (2, 0, 1))
    s = gpu.slice(x, [(1, 2, 1), (0, 3, 2), (1, 4, 1)])
    f = gpu.flip(x, (0, 2))
    e = gpu.expand(gpu.slice(x, [(0, 1, 1), (0, 3, 1), (0, 4, 1)]), (5, 3, 4))
    for view in (t, s, f, e, gpu.reshape(x, (6, 4))):
        assert view.block is x.block
    assert t.strides == (1, 12, 4) and not t.is_contiguous
    np.testing.assert_array_equal(down(t), a.transpose(2, 0, 1))
    np.testing.assert_array_equal(down(s), a[1:2, 0:3:2, 1:4])
    np.testing.assert_array_equal(down(f), a[::-1, :, ::-1])
    np.testing.assert_array_equal(down(e), np.broadcast_to(a[:1], (5, 3, 4)))


def test_reshape_of_a_non_contiguous_view_copies(gpu, up, down):
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    x = gpu.permute(up(a), (1, 0))
    r = gpu.reshape(x, (6,))
    assert r.block is not x.block
    np.testing.assert_array_equal(down(r), a.T.reshape(6))


def test_scalars_and_empty(gpu, up, down):
    # TensorData.raw: TensorData(0-d ndarray) goes through np.ascontiguousarray, which gives 1-d
    s = gpu.from_data(TensorData.raw(struct.pack("<f", 2.5), (), DType.F32))
    assert gpu.shape(s) == () and down(s) == np.float32(2.5)
    e = up(np.zeros((0, 3), np.float32))
    assert down(e).shape == (0, 3)
    from pyrite.backend import get
    assert down(gpu.unary(get("exp"), e)).shape == (0, 3)
