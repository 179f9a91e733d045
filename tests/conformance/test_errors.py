"""Errors: every misuse raises a pyrite exception (also the matching builtin, so `except
ValueError` works) whose message starts with the op and shows the shapes, dims, kinds, devices
or dtypes involved. Validation lives in the front end, so every backend raises the same."""

from __future__ import annotations

import re

import numpy as np
import pytest

import pyrite
from pyrite import (
    BackendUnavailable,
    ConversionOverflow,
    DeviceError,
    DimError,
    DTypeError,
    KindError,
    PyriteError,
    ShapeError,
    Tensor,
    activation,
    arange_step,
    cat,
    checks,
    full,
    stack,
    tensor,
    zeros,
)

from .helpers import I8, U8, need


def _f(backend, *shape, dtype="f32"):
    return tensor(np.zeros(shape), device=backend, dtype=dtype)


def _i(backend, values):
    return tensor(values, device=backend)


def _as(backend, values, dtype):
    """A tensor of `dtype` (the case is skipped where the backend lacks it)."""
    need(backend, dtype)
    return tensor(values, device=backend, dtype=dtype)


def _other(backend):
    """The same backend under Autodiff: a different device."""
    return pyrite.device(f"autodiff<{backend.name}>")


# (id, call(backend), error class, text the message contains; `=text`: the message starts with it)
CASES = [
    # ---- shapes
    ("broadcast", lambda b: _f(b, 2, 3) + _f(b, 4), ShapeError,
     "=add: shapes (2, 3) and (4,) cannot broadcast"),
    ("compare-broadcast", lambda b: _f(b, 2, 3) < _f(b, 2), ShapeError,
     "=lower: shapes (2, 3) and (2,) cannot broadcast"),
    ("matmul-inner", lambda b: _f(b, 2, 3) @ _f(b, 4, 5), ShapeError,
     "=matmul: inner sizes differ: lhs (2, 3) @ rhs (4, 5)"),
    ("matmul-batch", lambda b: _f(b, 2, 3, 4) @ _f(b, 3, 4, 5), ShapeError,
     "=matmul: batch dims differ: lhs (2, 3, 4) @ rhs (3, 4, 5)"),
    ("reshape", lambda b: _f(b, 2, 3).reshape([4, 2]), ShapeError,
     "=reshape: cannot reshape (2, 3) (6 elements) to (4, 2)"),
    ("reshape-two-minus-one", lambda b: _f(b, 2, 3).reshape([-1, -1]), ShapeError,
     "=reshape: only one dim can be -1"),
    ("cat", lambda b: cat([_f(b, 2, 3), _f(b, 2, 4)], 0), ShapeError,
     "=cat: tensor 1 has shape (2, 4), tensor 0 has (2, 3)"),
    ("stack", lambda b: stack([_f(b, 2, 3), _f(b, 3, 2)]), ShapeError,
     "=stack: tensor 1 has shape (3, 2), tensor 0 has (2, 3)"),
    ("expand", lambda b: _f(b, 2, 3).expand([4, 3]), ShapeError,
     "=expand: cannot expand shape (2, 3) to (4, 3)"),
    ("slice-assign", lambda b: _f(b, 4, 4).slice_assign([(0, 2), (0, 2)], _f(b, 3, 3)),
     ShapeError, "=slice_assign: values of shape (3, 3) do not fit the region (2, 2)"),
    ("setitem", lambda b: _f(b, 4, 4).index_assign((0, slice(0, 2)), _f(b, 3)), ShapeError,
     "=index assignment: values of shape (3,) do not broadcast to t[key] of shape (2,)"),
    ("gather-rank", lambda b: _f(b, 2, 3).gather(1, _i(b, [0, 1])), ShapeError,
     "=gather: indices of shape (2,) do not fit a tensor of shape (2, 3)"),
    ("scatter", lambda b: _f(b, 2, 3).scatter(1, _i(b, [[0, 1]]), _f(b, 2, 2)), ShapeError,
     "=scatter: indices (1, 2) and values (2, 2) must have the same shape"),
    ("select-2d", lambda b: _f(b, 2, 3).select(0, _i(b, [[0]])), ShapeError,
     "=select: indices must be 1-D, got shape (1, 1)"),
    ("select-assign", lambda b: _f(b, 2, 3).select_assign(0, _i(b, [0]), _f(b, 2, 3)),
     ShapeError, "=select_assign: indices (1,) (1-D) and values (2, 3) must give values of "
     "shape (1, 3)"),
    ("mask", lambda b: _f(b, 2, 3).mask_fill(_i(b, [True, False]), 0.0), ShapeError,
     "=mask_fill: mask of shape (2,) does not broadcast to the tensor's shape (2, 3)"),
    ("squeeze", lambda b: _f(b, 2, 3).squeeze(0), ShapeError,
     "=squeeze: dim 0 has size 2, not 1 (shape (2, 3))"),
    ("into-scalar", lambda b: _f(b, 2).into_scalar(), ShapeError,
     "=into_scalar: needs exactly one element, the tensor has shape (2,)"),
    ("bool", lambda b: bool(_f(b, 2)), ShapeError, "=bool(tensor): the truth value of a tensor"),
    ("max-empty", lambda b: _f(b, 0, 3).max(), ShapeError, "=max: the tensor is empty"),
    ("prelu", lambda b: activation.prelu(_f(b, 2, 3), _f(b, 2)), ShapeError,
     "=prelu: alpha has 2 values; need 1 or one per channel (3)"),
    ("zeros-negative", lambda b: zeros((-1, 2), device=b), ShapeError,
     "=zeros: sizes must be non-negative ints, got (-1, 2)"),
    ("arange-step-zero", lambda b: arange_step(0, 5, 0, device=b), ShapeError,
     "=arange_step: step must not be 0"),
    # ---- dims and indices
    ("sum-dim", lambda b: _f(b, 2, 3).sum_dim(2), DimError,
     "=sum_dim: dim 2 is out of range for a tensor of rank 2 (valid: -2..1)"),
    ("argmax-dim", lambda b: _f(b, 2, 3).argmax(-3), DimError,
     "=argmax: dim -3 is out of range for a tensor of rank 2"),
    ("permute", lambda b: _f(b, 2, 3).permute([0, 0]), DimError,
     "=permute: axes (0, 0) are not a permutation of 0..1"),
    ("flatten", lambda b: _f(b, 2, 3, 4).flatten(2, 1), DimError,
     "=flatten: end_dim 1 comes before start_dim 2"),
    ("narrow", lambda b: _f(b, 2, 3).narrow(1, 2, 2), DimError,
     "=narrow: start 2 + length 2 exceeds size 3 of dim 1"),
    ("slice-index", lambda b: _f(b, 2, 3).slice([5]), DimError,
     "=slice: index 5 is out of range for dim 0 of size 2"),
    ("slice-rank", lambda b: _f(b, 2, 3).slice([None, None, None]), DimError,
     "=slice: 3 ranges for a tensor of rank 2"),
    ("getitem", lambda b: _f(b, 2, 3)[0, 5], DimError,
     "index 5 is out of range for dim 1 of size 3"),
    ("getitem-rank", lambda b: _f(b, 2, 3)[0, 0, 0], DimError,
     "=index: 3 indices for a tensor of rank 2"),
    ("gather-bounds", lambda b: _f(b, 2, 3).gather(1, _i(b, [[0, 3], [0, 0]])), DimError,
     "=gather: index 3 is out of range for dim 1 of size 3"),
    ("select-bounds", lambda b: _f(b, 2, 3).select(0, _i(b, [-1])), DimError,
     "=select: index -1 is out of range for dim 0 of size 2"),
    ("topk", lambda b: _f(b, 2, 3).topk(4), DimError,
     "=topk: k=4 is out of range for dim -1 of size 3"),
    ("one-hot", lambda b: _i(b, [0, 3]).one_hot(3), DimError, "=one_hot: values must be in 0..2"),
    ("unsqueeze-dim", lambda b: _f(b, 2, 3).unsqueeze_dim(4), DimError,
     "=unsqueeze_dim: dim 4 is out of range for a tensor of rank 2"),
    # ---- kinds
    ("exp-int", lambda b: _i(b, [1, 2]).exp(), KindError,
     "=exp: not defined for Int tensors (dtype {int}); it takes Float tensors. Convert with "
     ".float()"),
    ("matmul-int", lambda b: _i(b, [[1]]) @ _i(b, [[1]]), KindError,
     "=matmul: not defined for Int tensors"),
    ("and-float", lambda b: _f(b, 2).bool_and(_f(b, 2)), KindError,
     "=and: not defined for Float tensors (dtype f32); it takes Bool tensors"),
    ("add-bool", lambda b: _i(b, [True]) + _i(b, [False]), KindError,
     "=add: not defined for Bool tensors (dtype bool)"),
    ("int-plus-float", lambda b: _i(b, [1]) + _f(b, 1), KindError,
     "=add: Int tensor with a Float tensor"),
    ("float-scalar-on-int", lambda b: _i(b, [1]) + 1.5, KindError,
     "=add: float scalar 1.5 with an Int tensor"),
    ("mask-not-bool", lambda b: _f(b, 2).mask_fill(_f(b, 2), 0.0), KindError,
     "=mask_fill: the mask must be a Bool tensor, got Float"),
    ("float-indices", lambda b: _f(b, 2).gather(0, _f(b, 2)), KindError,
     "=gather: indices must be an Int tensor, got Float"),
    ("argwhere-float", lambda b: _f(b, 2).argwhere(), KindError,
     "=argwhere: not defined for Float tensors"),
    ("sum-bool", lambda b: _i(b, [True]).sum(), KindError, "=sum: not defined for Bool tensors"),
    ("var-int", lambda b: _i(b, [1, 2]).var(0), KindError, "=var: not defined for Int tensors"),
    ("relu-int", lambda b: activation.relu(_i(b, [1])), KindError,
     "=relu: not defined for Int tensors"),
    ("sort-bool", lambda b: _i(b, [True]).sort(), KindError, "=sort: not defined for Bool"),
    ("cat-kinds", lambda b: cat([_f(b, 2), _i(b, [1, 2])]), KindError,
     "=cat: tensor 0 is Float, tensor 1 is Int"),
    # ---- devices
    ("device-add", lambda b: _f(b, 2) + _f(_other(b), 2), DeviceError,
     "add: tensors are on different devices: lhs on {b}, rhs on autodiff<{b}>"),
    ("device-matmul", lambda b: _f(b, 2, 2) @ _f(_other(b), 2, 2), DeviceError,
     "matmul: tensors are on different devices: lhs on {b}, rhs on autodiff<{b}>"),
    ("device-cat", lambda b: cat([_f(b, 2), _f(_other(b), 2)]), DeviceError,
     "cat: tensor 0 is on {b}, tensor 1 on autodiff<{b}>"),
    ("device-mask", lambda b: _f(b, 2).mask_fill(_i(_other(b), [True, False]), 0.0),
     DeviceError, "mask_fill: tensors are on different devices"),
    ("device-gather", lambda b: _f(b, 2).gather(0, _i(_other(b), [1])), DeviceError,
     "gather: tensors are on different devices"),
    # ---- dtypes and overflow
    ("overflow-list", lambda b: tensor([1, 300], device=b, dtype="u8"), ConversionOverflow,
     "=convert: value 300 of i64 does not fit u8 (range 0..255)"),
    ("overflow-scalar", lambda b: _as(b, [1], I8) + 1000, ConversionOverflow,
     "=add: scalar 1000 does not fit the tensor's dtype i8 (range -128..127)"),
    ("overflow-rsub", lambda b: 300 - _as(b, [1], U8), ConversionOverflow,
     "=sub: scalar 300 does not fit the tensor's dtype u8"),
    ("overflow-fill", lambda b: _as(b, [1], U8).mask_fill(_i(b, [True]), -1),
     ConversionOverflow, "=mask_fill: scalar -1 does not fit the tensor's dtype u8"),
    ("overflow-full", lambda b: full((2,), 2**40, device=b, dtype="i32"), ConversionOverflow,
     "=full: value 1099511627776 does not fit i32"),
    ("overflow-to-data", lambda b: (_f(b, 2) + 1e10).to_data().convert("i32"),
     ConversionOverflow, "=convert: value 10000000000.0 of f32 does not fit i32"),
    ("nan-to-int", lambda b: (_f(b, 2) * float("nan")).to_data().convert("i64"),
     ConversionOverflow, "=convert: NaN cannot become i64"),
    ("unknown-dtype", lambda b: _f(b, 2).cast("f128"), DTypeError,
     "=unknown dtype 'f128'; use one of f64, f32, f16"),
    ("unknown-device", lambda b: tensor([1.0], device="tpu"), BackendUnavailable,
     "=device: unknown device 'tpu'"),
]


@pytest.mark.parametrize("call, error, pattern", [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_error(backend, call, error, pattern):
    text = pattern.replace("{b}", backend.name).replace("{int}", str(backend.int_dtype))
    regex = "^" + re.escape(text[1:]) if text.startswith("=") else re.escape(text)
    with pytest.raises(error, match=regex) as err:
        out = call(backend)
        if checks.defers(backend) and isinstance(out, Tensor):
            out.to_data()  # index bounds on the device are reported at the next readback
    assert isinstance(err.value, PyriteError)


def test_errors_are_builtins_too():
    assert issubclass(ShapeError, ValueError)
    assert issubclass(DimError, IndexError)
    assert issubclass(KindError, TypeError)
    assert issubclass(DTypeError, TypeError)
    assert issubclass(ConversionOverflow, OverflowError)
    assert issubclass(DeviceError, ValueError)
    assert issubclass(BackendUnavailable, RuntimeError)


def test_catching_the_builtin(backend):
    with pytest.raises(ValueError):
        _f(backend, 2, 3) + _f(backend, 4)
    with pytest.raises(IndexError):
        _f(backend, 2).sum_dim(1)
    with pytest.raises(TypeError):
        _i(backend, [1]).exp()


def test_a_failed_op_leaves_the_tensor_unchanged(backend):
    x = tensor([[1.0, 2.0]], device=backend)
    with pytest.raises(ShapeError):
        x[0] = tensor([1.0, 2.0, 3.0], device=backend)
    assert x.to_list() == [[1.0, 2.0]]


def test_an_unsupported_dtype_is_refused(backend):
    missing = [d for d in pyrite.DType if not backend.supports(d)]
    if not missing:
        pytest.skip(f"{backend.name} supports every dtype")
    want = f"does not support dtype {missing[0]}"
    with pytest.raises(DTypeError, match=f"create: {backend.name} {want}"):
        pyrite.zeros((2,), device=backend, dtype=missing[0])
    with pytest.raises(DTypeError, match=f"tensor: {backend.name} {want}"):
        tensor([1], device=backend, dtype=missing[0])
