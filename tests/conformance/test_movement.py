"""Movement ops against numpy: reshape, permute, expand, slice, slice_assign, cat, stack, flip,
narrow, chunk, split, repeat, squeeze/unsqueeze, movedim, swap_dims, flatten, pad and Python
indexing (`t[...]`, `t[...] = v`). They move values without computing, so results are exact,
for every dtype and from every memory layout."""

from __future__ import annotations

import numpy as np
import pytest

from pyrite import Tensor, arange, cat, stack, tensor

from .helpers import ALL_DTYPES, BOOL, F32, I64, LAYOUTS, U8, assert_equal, make, random_array

SHAPE = (2, 3, 4)


def _x(backend, dtype=F32, layout="contiguous", shape=SHAPE, seed=0):
    a = random_array(shape, dtype, seed=seed, low=0, high=100)
    return a, make(backend, a, dtype, layout)


# ---- examples ----------------------------------------------------------------------------------

def test_slice_example(backend):
    x = arange(0, 12, device=backend).reshape([3, 4])
    assert x.slice([(1, 3), slice(None, None, 2)]).to_list() == [[4, 6], [8, 10]]
    assert x[1:3, ::2].to_list() == [[4, 6], [8, 10]]
    assert x[-1].to_list() == [8, 9, 10, 11]
    assert x[:, 1].to_list() == [1, 5, 9]


def test_cat_and_stack_example(backend):
    a = tensor([[1, 2]], device=backend)
    b = tensor([[3, 4]], device=backend)
    assert cat([a, b], 0).to_list() == [[1, 2], [3, 4]]
    assert cat([a, b], 1).to_list() == [[1, 2, 3, 4]]
    assert stack([a, b], 0).shape == (2, 1, 2)
    assert Tensor.stack([a, b], 2).to_list() == [[[1, 3], [2, 4]]]


# ---- reshaping ---------------------------------------------------------------------------------

@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_reshape(backend, dtype, layout):
    a, x = _x(backend, dtype, layout)
    assert_equal(x.reshape([4, 6]), a.reshape(4, 6), dtype=dtype)
    assert_equal(x.reshape([-1]), a.reshape(-1), dtype=dtype)
    assert_equal(x.reshape([0, -1]), a.reshape(2, 12), dtype=dtype)  # 0 keeps the size
    assert_equal(x.reshape([1, 24, 1]), a.reshape(1, 24, 1), dtype=dtype)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_permute_and_friends(backend, dtype, layout):
    a, x = _x(backend, dtype, layout)
    assert_equal(x.permute([2, 0, 1]), a.transpose(2, 0, 1), dtype=dtype)
    assert_equal(x.permute([-1, 1, 0]), a.transpose(2, 1, 0), dtype=dtype)
    assert_equal(x.swap_dims(0, 2), np.swapaxes(a, 0, 2), dtype=dtype)
    assert_equal(x.transpose(), np.swapaxes(a, -1, -2), dtype=dtype)
    assert_equal(x.T, np.swapaxes(a, -1, -2), dtype=dtype)
    assert_equal(x.movedim(0, -1), np.moveaxis(a, 0, -1), dtype=dtype)
    assert_equal(x.movedim([0, 1], [2, 0]), np.moveaxis(a, [0, 1], [2, 0]), dtype=dtype)


def test_permute_then_reshape_reads_in_logical_order(backend):
    # a reshape of a permuted view must follow the permuted (not the stored) order
    a = np.arange(24).reshape(2, 3, 4)
    x = tensor(a, device=backend).permute([2, 0, 1])
    assert_equal(x.reshape([4, 6]), a.transpose(2, 0, 1).reshape(4, 6))
    assert_equal(x.flatten(), a.transpose(2, 0, 1).reshape(-1))


@pytest.mark.parametrize("layout", LAYOUTS)
def test_flatten(backend, layout):
    a, x = _x(backend, F32, layout, shape=(2, 3, 4, 5))
    assert_equal(x.flatten(), a.reshape(-1))
    assert_equal(x.flatten(1, 2), a.reshape(2, 12, 5))
    assert_equal(x.flatten(-2, -1), a.reshape(2, 3, 20))
    assert_equal(x.flatten(0, 0), a)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_squeeze_unsqueeze(backend, dtype):
    a, x = _x(backend, dtype, "sliced", shape=(2, 1, 3, 1))
    assert_equal(x.squeeze(), a.squeeze(), dtype=dtype)
    assert_equal(x.squeeze(1), a.squeeze(1), dtype=dtype)
    assert_equal(x.squeeze(-1), a.squeeze(-1), dtype=dtype)
    assert_equal(x.squeeze_dims([1, 3]), a.reshape(2, 3), dtype=dtype)
    assert_equal(x.unsqueeze(), a[None], dtype=dtype)
    assert_equal(x.unsqueeze(6), a[None, None], dtype=dtype)  # up to rank 6
    assert_equal(x.unsqueeze_dim(0), np.expand_dims(a, 0), dtype=dtype)
    assert_equal(x.unsqueeze_dim(2), np.expand_dims(a, 2), dtype=dtype)
    assert_equal(x.unsqueeze_dim(-1), np.expand_dims(a, -1), dtype=dtype)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_expand(backend, dtype, layout):
    a, x = _x(backend, dtype, layout, shape=(3, 1, 4))
    assert_equal(x.expand([3, 5, 4]), np.broadcast_to(a, (3, 5, 4)), dtype=dtype)
    assert_equal(x.expand([2, 3, 5, 4]), np.broadcast_to(a, (2, 3, 5, 4)), dtype=dtype)
    assert_equal(x.expand([-1, 2, -1]), np.broadcast_to(a, (3, 2, 4)), dtype=dtype)


def test_expand_then_compute(backend):
    # an expanded (stride-0) view is a valid input to arithmetic and to a copy
    x = tensor([[1.0], [2.0]], device=backend).expand([2, 3])
    assert_equal(x + 1.0, [[2.0, 2.0, 2.0], [3.0, 3.0, 3.0]])
    assert_equal(x.reshape([-1]), [1.0, 1.0, 1.0, 2.0, 2.0, 2.0])


# ---- slicing -----------------------------------------------------------------------------------

@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_slice(backend, dtype, layout):
    a, x = _x(backend, dtype, layout, shape=(4, 5, 6))
    assert_equal(x.slice([(1, 3)]), a[1:3], dtype=dtype)
    assert_equal(x.slice([(1, 3), (0, 5), (2, 6)]), a[1:3, 0:5, 2:6], dtype=dtype)
    assert_equal(x.slice([None, range(1, 4)]), a[:, 1:4], dtype=dtype)
    assert_equal(x.slice([slice(None, None, 2), slice(1, None, 3)]), a[::2, 1::3], dtype=dtype)
    assert_equal(x.slice([slice(-2, None), None, (-3, -1)]), a[-2:, :, -3:-1], dtype=dtype)
    assert_equal(x.slice([2]), a[2:3], dtype=dtype)  # an int keeps its dim with size 1
    assert_equal(x.slice([(1, 2, 1), 0]), a[1:2, 0:1], dtype=dtype)
    assert_equal(x.slice([slice(1, 100)]), a[1:100], dtype=dtype)  # clamped like Python


def test_slice_of_a_slice(backend):
    a = np.arange(60).reshape(6, 10)
    x = tensor(a, device=backend)
    assert_equal(x[1:, ::2][1:4, 1::2], a[1:, ::2][1:4, 1::2])


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_slice_assign(backend, dtype, layout):
    a, x = _x(backend, dtype, layout, shape=(4, 5, 6))
    v = random_array((2, 5, 3), dtype, seed=9, low=0, high=100)
    out = x.slice_assign([(1, 3), None, slice(0, None, 2)], make(backend, v, dtype, "permuted"))
    want = a.copy()
    want[1:3, :, ::2] = v
    assert_equal(out, want, dtype=dtype)
    assert_equal(x, a)  # the input is unchanged


def test_slice_assign_broadcasts_values(backend):
    x = tensor(np.zeros((3, 4), np.float32), device=backend)
    out = x.slice_assign([(0, 2), (1, 3)], tensor([[5.0, 6.0]], device=backend))
    assert_equal(out, [[0, 5, 6, 0], [0, 5, 6, 0], [0, 0, 0, 0]])
    out = x.slice_assign([(2, 3)], tensor([7.0], device=backend))
    assert_equal(out, [[0, 0, 0, 0], [0, 0, 0, 0], [7, 7, 7, 7]])


@pytest.mark.parametrize("layout", LAYOUTS)
def test_narrow(backend, layout):
    a, x = _x(backend, F32, layout, shape=(4, 5, 6))
    assert_equal(x.narrow(0, 1, 2), a[1:3])
    assert_equal(x.narrow(2, 3, 3), a[:, :, 3:6])
    assert_equal(x.narrow(-1, 0, 1), a[..., 0:1])
    assert_equal(x.narrow(1, -2, 2), a[:, 3:5])  # a negative start counts from the end


@pytest.mark.parametrize("size, chunks, sizes", [(6, 3, [2, 2, 2]), (5, 3, [2, 2, 1]),
                                                  (6, 4, [2, 2, 2]), (2, 3, [1, 1]),
                                                  (7, 1, [7])])
def test_chunk(backend, size, chunks, sizes):
    # torch.chunk's rule: pieces of ceil(size / chunks), the last one smaller, maybe fewer pieces
    a = np.arange(size * 2).reshape(2, size)
    pieces = tensor(a, device=backend).chunk(chunks, 1)
    assert [p.shape[1] for p in pieces] == sizes
    assert_equal(cat(pieces, 1), a)
    assert_equal(pieces[0], a[:, :sizes[0]])


def test_split(backend):
    a = np.arange(10)
    pieces = tensor(a, device=backend).split(4)
    assert [p.to_list() for p in pieces] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]


# ---- joining -----------------------------------------------------------------------------------

@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_cat(backend, dtype, layout):
    a, x = _x(backend, dtype, layout, shape=(2, 3, 4), seed=1)
    b, y = _x(backend, dtype, "permuted", shape=(2, 3, 4), seed=2)
    for dim in (0, 1, 2, -1):
        assert_equal(cat([x, y, x], dim), np.concatenate([a, b, a], axis=dim), dtype=dtype)
    c, z = _x(backend, dtype, "sliced", shape=(2, 1, 4), seed=3)
    assert_equal(cat([x, z], 1), np.concatenate([a, c], axis=1), dtype=dtype)
    assert_equal(cat([x], 0), a, dtype=dtype)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_stack(backend, dtype, layout):
    a, x = _x(backend, dtype, layout, shape=(3, 4), seed=1)
    b, y = _x(backend, dtype, "sliced", shape=(3, 4), seed=2)
    for dim in (0, 1, 2, -1, -3):
        assert_equal(stack([x, y], dim), np.stack([a, b], axis=dim), dtype=dtype)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_flip(backend, dtype, layout):
    a, x = _x(backend, dtype, layout)
    assert_equal(x.flip([0]), np.flip(a, 0), dtype=dtype)
    assert_equal(x.flip([2, 0]), np.flip(a, (0, 2)), dtype=dtype)
    assert_equal(x.flip([-1]), np.flip(a, -1), dtype=dtype)
    assert_equal(x.flip([]), a, dtype=dtype)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", [F32, I64, BOOL], ids=str)
def test_repeat(backend, dtype, layout):
    a, x = _x(backend, dtype, layout, shape=(2, 3))
    assert_equal(x.repeat_dim(0, 3), np.tile(a, (3, 1)), dtype=dtype)
    assert_equal(x.repeat_dim(-1, 2), np.tile(a, (1, 2)), dtype=dtype)
    assert_equal(x.repeat([2, 2]), np.tile(a, (2, 2)), dtype=dtype)
    assert_equal(x.repeat([2, 1, 3]), np.tile(a, (2, 1, 3)), dtype=dtype)  # torch's rule
    assert_equal(x.repeat_dim(1, 1), a, dtype=dtype)


def test_repeat_example(backend):
    x = tensor([[1, 2]], device=backend)
    assert x.repeat_dim(0, 2).to_list() == [[1, 2], [1, 2]]
    assert x.repeat([1, 2]).to_list() == [[1, 2, 1, 2]]


@pytest.mark.parametrize("dtype", [F32, I64, U8, BOOL], ids=str)
def test_pad(backend, dtype):
    a, x = _x(backend, dtype, "permuted", shape=(2, 3))
    fill = 1 if dtype is not BOOL else True
    assert_equal(x.pad([1, 2], fill), np.pad(a, [(0, 0), (1, 2)], constant_values=fill),
                 dtype=dtype)
    assert_equal(x.pad([1, 0, 0, 2]), np.pad(a, [(0, 2), (1, 0)]), dtype=dtype)
    assert_equal(x.pad([0, 0]), a, dtype=dtype)


def test_pad_example(backend):
    x = tensor([[1.0, 2.0]], device=backend)
    assert x.pad([1, 1, 1, 0], -1.0).to_list() == [[-1.0, -1.0, -1.0, -1.0],
                                                   [-1.0, 1.0, 2.0, -1.0]]


# ---- Python indexing ---------------------------------------------------------------------------

@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", [F32, I64, BOOL], ids=str)
def test_getitem(backend, dtype, layout):
    a, x = _x(backend, dtype, layout, shape=(4, 5, 6))
    for key in [0, -1, (1, 2), (1, 2, 3), slice(1, 3), (slice(None), 2),
                (Ellipsis, 1), (1, Ellipsis), (slice(None, None, 2), slice(1, 4), -2),
                (None, 0), (slice(None), None, 1), (Ellipsis, None), (2, slice(None, None, 3))]:
        assert_equal(x[key], a[key], dtype=dtype)


def test_getitem_with_index_list_selects_rows(backend):
    a = np.arange(12).reshape(4, 3)
    x = tensor(a, device=backend)
    assert_equal(x[[3, 0, 3]], a[[3, 0, 3]])
    assert_equal(x[tensor([1, 2], device=backend)], a[[1, 2]])


@pytest.mark.parametrize("key", [0, -1, (1, 2), (slice(None), 1), (Ellipsis, 0),
                                 (slice(1, 3), slice(None, None, 2)), (1, slice(0, 2), 0)],
                         ids=str)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_setitem_scalar_and_tensor(backend, key, layout):
    a, x = _x(backend, F32, layout, shape=(3, 4, 5))
    kept = x.clone()
    want = a.copy()
    want[key] = -1.0
    x[key] = -1.0
    assert_equal(x, want)
    values = random_array(want[key].shape, F32, seed=4)
    want[key] = values
    x[key] = make(backend, values, F32, "permuted")
    assert_equal(x, want)
    assert_equal(kept, a)  # a tensor sharing the old values is unchanged


def test_setitem_broadcasts_like_numpy(backend):
    a = np.zeros((2, 3), np.int64)
    x = tensor(a, device=backend)
    x[:, 1] = tensor([100, 200], device=backend)
    a[:, 1] = [100, 200]
    assert_equal(x, a)
    x[...] = tensor([[1], [2]], device=backend)
    a[...] = [[1], [2]]
    assert_equal(x, a)
    x[0] = tensor([[7, 8, 9]], device=backend)  # leading 1-sized dims are dropped
    a[0] = np.array([[7, 8, 9]])
    assert_equal(x, a)


def test_len_and_iteration(backend):
    a = np.arange(6).reshape(3, 2)
    x = tensor(a, device=backend)
    assert len(x) == 3
    rows = list(x)
    assert len(rows) == 3
    for row, want in zip(rows, a, strict=True):
        assert_equal(row, want)


def test_dims_shape_numel(backend):
    x = tensor(np.zeros((2, 3, 4), np.float32), device=backend)
    assert x.shape == (2, 3, 4)
    assert x.dims() == [2, 3, 4]
    assert x.ndim == 3
    assert x.numel() == 24
    assert x[0].numel() == 12


def test_single_element_movement(backend):
    x = tensor([5.0], device=backend)
    assert x.reshape([1, 1]).shape == (1, 1)
    assert x.expand([3]).to_list() == [5.0, 5.0, 5.0]
    assert x.flip([0]).to_list() == [5.0]
    assert cat([x, x], 0).to_list() == [5.0, 5.0]
    assert x[0].shape == ()
    assert x[0].into_scalar() == 5.0
    assert x.into_scalar() == 5.0
    assert float(x) == 5.0


def test_u8_survives_movement(backend):
    a = np.array([[0, 255], [128, 7]], np.uint8)
    x = make(backend, a, U8, "permuted")
    assert_equal(cat([x, x.flip([0])], 0), np.concatenate([a, a[::-1]]), dtype=U8)
