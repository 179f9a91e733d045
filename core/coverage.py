"""Which of the ops in Burn's tensor tables each backend implements, checked by running them.

`BURN_OPS` lists every entry of the book's tables except quantization (162), each with a probe
that calls pyrite's version of the op on a device and returns its result. The coverage of a
backend is the set of probes that run there without error. A test keeps this list equal to
the book's (../shared/reference/burn-tensor-ops.json).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from . import activation as A
from . import creation as C
from .backend.base import Backend
from .distribution import Default, Uniform
from .tensor import Tensor


@dataclass(frozen=True)
class OpEntry:
    group: str
    name: str
    burn: str
    probe: Callable[[Backend], Any]


def _f(d: Backend) -> Any:
    return C.tensor([[1.0, -2.0, 0.5], [3.0, 4.0, -0.25]], device=d)


def _i(d: Backend) -> Any:
    return C.tensor([[1, -2, 5], [3, 4, 0]], device=d)


def _b(d: Backend) -> Any:
    return C.tensor([[True, False, True], [False, False, True]], device=d)


_ENTRIES: list[tuple[str, str, str, Callable[[Backend], Any]]] = [
    ("basic", "cat", "Tensor::cat(tensors, dim)", lambda d: C.cat([_f(d), _f(d)], 1)),
    ("basic", "empty", "Tensor::empty(shape, device)", lambda d: C.empty((2, 3), device=d)),
    ("basic", "from_primitive", "Tensor::from_primitive(primitive)",
     lambda d: Tensor.from_primitive(_f(d).into_primitive(), d)),
    ("basic", "stack", "Tensor::stack(tensors, dim)", lambda d: C.stack([_f(d), _f(d)], 0)),
    ("basic", "all", "tensor.all()", lambda d: _b(d).all()),
    ("basic", "all_dim", "tensor.all_dim(dim)", lambda d: _b(d).all_dim(1)),
    ("basic", "any", "tensor.any()", lambda d: _b(d).any()),
    ("basic", "any_dim", "tensor.any_dim(dim)", lambda d: _b(d).any_dim(0)),
    ("basic", "chunk", "tensor.chunk(num_chunks, dim)", lambda d: _f(d).chunk(2, 1)),
    ("basic", "device", "tensor.device()", lambda d: _f(d).device),
    ("basic", "dims", "tensor.dims()", lambda d: _f(d).dims()),
    ("basic", "equal", "tensor.equal(other)", lambda d: _f(d).equal(_f(d))),
    ("basic", "expand", "tensor.expand(shape)", lambda d: _f(d)[0:1].expand([4, 3])),
    ("basic", "flatten", "tensor.flatten(start_dim, end_dim)", lambda d: _f(d).flatten(0, 1)),
    ("basic", "flip", "tensor.flip(axes)", lambda d: _f(d).flip([0, 1])),
    ("basic", "into_data", "tensor.into_data()", lambda d: _f(d).into_data()),
    ("basic", "into_primitive", "tensor.into_primitive()", lambda d: _f(d).into_primitive()),
    ("basic", "into_scalar", "tensor.into_scalar()", lambda d: _f(d).sum().into_scalar()),
    ("basic", "narrow", "tensor.narrow(dim, start, length)", lambda d: _f(d).narrow(1, 1, 2)),
    ("basic", "not_equal", "tensor.not_equal(other)", lambda d: _f(d).not_equal(_f(d))),
    ("basic", "permute", "tensor.permute(axes)", lambda d: _f(d).permute([1, 0])),
    ("basic", "movedim", "tensor.movedim(src, dst)", lambda d: _f(d).movedim(0, 1)),
    ("basic", "repeat_dim", "tensor.repeat_dim(dim, times)", lambda d: _f(d).repeat_dim(0, 3)),
    ("basic", "repeat", "tensor.repeat(sizes)", lambda d: _f(d).repeat([2, 2])),
    ("basic", "reshape", "tensor.reshape(shape)", lambda d: _f(d).reshape([3, -1])),
    ("basic", "shape", "tensor.shape()", lambda d: _f(d).shape),
    ("basic", "slice", "tensor.slice(ranges)", lambda d: _f(d).slice([(0, 1), (1, 3)])),
    ("basic", "slice_assign", "tensor.slice_assign(ranges, values)",
     lambda d: _f(d).slice_assign([(0, 1), (1, 3)], C.zeros((1, 2), device=d))),
    ("basic", "squeeze", "tensor.squeeze(dim)", lambda d: _f(d)[0:1].squeeze(0)),
    ("basic", "to_data", "tensor.to_data()", lambda d: _f(d).to_data()),
    ("basic", "to_device", "tensor.to_device(device)", lambda d: _f(d).to_device(d)),
    ("basic", "unsqueeze", "tensor.unsqueeze()", lambda d: _f(d).unsqueeze()),
    ("basic", "unsqueeze_dim", "tensor.unsqueeze_dim(dim)", lambda d: _f(d).unsqueeze_dim(1)),
    ("numeric", "eye", "Tensor::eye(size, device)", lambda d: C.eye(3, device=d)),
    ("numeric", "full", "Tensor::full(shape, fill_value, device)",
     lambda d: C.full((2, 2), 7.0, device=d)),
    ("numeric", "ones", "Tensor::ones(shape, device)", lambda d: C.ones((2, 2), device=d)),
    ("numeric", "zeros", "Tensor::zeros(shape)", lambda d: C.zeros((2, 2))),
    ("numeric", "zeros", "Tensor::zeros(shape, device)", lambda d: C.zeros((2, 2), device=d)),
    ("numeric", "abs", "tensor.abs()", lambda d: _f(d).abs()),
    ("numeric", "add", "tensor.add(other) or tensor + other", lambda d: _f(d) + _f(d)),
    ("numeric", "add_scalar", "tensor.add_scalar(scalar) or tensor + scalar",
     lambda d: _f(d) + 2.0),
    ("numeric", "all_close", "tensor.all_close(other, atol, rtol)",
     lambda d: _f(d).all_close(_f(d), 1e-5, 1e-5)),
    ("numeric", "argmax", "tensor.argmax(dim)", lambda d: _f(d).argmax(1)),
    ("numeric", "argmin", "tensor.argmin(dim)", lambda d: _f(d).argmin(1)),
    ("numeric", "argsort", "tensor.argsort(dim)", lambda d: _f(d).argsort(1)),
    ("numeric", "argsort_descending", "tensor.argsort_descending(dim)",
     lambda d: _f(d).argsort_descending(1)),
    ("numeric", "bool", "tensor.bool()", lambda d: _f(d).bool()),
    ("numeric", "clamp", "tensor.clamp(min, max)", lambda d: _f(d).clamp(-1.0, 1.0)),
    ("numeric", "clamp_max", "tensor.clamp_max(max)", lambda d: _f(d).clamp_max(1.0)),
    ("numeric", "clamp_min", "tensor.clamp_min(min)", lambda d: _f(d).clamp_min(0.0)),
    ("numeric", "contains_nan", "tensor.contains_nan()", lambda d: _f(d).contains_nan()),
    ("numeric", "div", "tensor.div(other) or tensor / other", lambda d: _f(d) / _f(d)),
    ("numeric", "div_scalar", "tensor.div_scalar(scalar) or tensor / scalar",
     lambda d: _f(d) / 2.0),
    ("numeric", "equal_elem", "tensor.equal_elem(other)", lambda d: _f(d).equal_elem(3.0)),
    ("numeric", "full_like", "tensor.full_like(fill_value)", lambda d: _f(d).full_like(2.0)),
    ("numeric", "gather", "tensor.gather(dim, indices)",
     lambda d: _f(d).gather(1, C.tensor([[0, 0], [2, 1]], device=d))),
    ("numeric", "greater", "tensor.greater(other)", lambda d: _f(d).greater(_f(d))),
    ("numeric", "greater_elem", "tensor.greater_elem(scalar)", lambda d: _f(d).greater_elem(0)),
    ("numeric", "greater_equal", "tensor.greater_equal(other)",
     lambda d: _f(d).greater_equal(_f(d))),
    ("numeric", "greater_equal_elem", "tensor.greater_equal_elem(scalar)",
     lambda d: _f(d).greater_equal_elem(0)),
    ("numeric", "is_close", "tensor.is_close(other, atol, rtol)",
     lambda d: _f(d).is_close(_f(d), 1e-5, 1e-5)),
    ("numeric", "is_nan", "tensor.is_nan()", lambda d: _f(d).is_nan()),
    ("numeric", "lower", "tensor.lower(other)", lambda d: _f(d).lower(_f(d))),
    ("numeric", "lower_elem", "tensor.lower_elem(scalar)", lambda d: _f(d).lower_elem(0)),
    ("numeric", "lower_equal", "tensor.lower_equal(other)", lambda d: _f(d).lower_equal(_f(d))),
    ("numeric", "lower_equal_elem", "tensor.lower_equal_elem(scalar)",
     lambda d: _f(d).lower_equal_elem(0)),
    ("numeric", "mask_fill", "tensor.mask_fill(mask, value)",
     lambda d: _f(d).mask_fill(_b(d), 9.0)),
    ("numeric", "mask_where", "tensor.mask_where(mask, value_tensor)",
     lambda d: _f(d).mask_where(_b(d), _f(d) * 2)),
    ("numeric", "max", "tensor.max()", lambda d: _f(d).max()),
    ("numeric", "max_dim", "tensor.max_dim(dim)", lambda d: _f(d).max_dim(1)),
    ("numeric", "max_dim_with_indices", "tensor.max_dim_with_indices(dim)",
     lambda d: _f(d).max_dim_with_indices(1)),
    ("numeric", "max_pair", "tensor.max_pair(other)", lambda d: _f(d).max_pair(-_f(d))),
    ("numeric", "mean", "tensor.mean()", lambda d: _f(d).mean()),
    ("numeric", "mean_dim", "tensor.mean_dim(dim)", lambda d: _f(d).mean_dim(0)),
    ("numeric", "min", "tensor.min()", lambda d: _f(d).min()),
    ("numeric", "min_dim", "tensor.min_dim(dim)", lambda d: _f(d).min_dim(1)),
    ("numeric", "min_dim_with_indices", "tensor.min_dim_with_indices(dim)",
     lambda d: _f(d).min_dim_with_indices(1)),
    ("numeric", "min_pair", "tensor.min_pair(other)", lambda d: _f(d).min_pair(-_f(d))),
    ("numeric", "mul", "tensor.mul(other) or tensor * other", lambda d: _f(d) * _f(d)),
    ("numeric", "mul_scalar", "tensor.mul_scalar(scalar) or tensor * scalar",
     lambda d: _f(d) * 3.0),
    ("numeric", "neg", "tensor.neg() or -tensor", lambda d: -_f(d)),
    ("numeric", "not_equal_elem", "tensor.not_equal_elem(scalar)",
     lambda d: _f(d).not_equal_elem(3.0)),
    ("numeric", "ones_like", "tensor.ones_like()", lambda d: _f(d).ones_like()),
    ("numeric", "pad", "tensor.pad(pads, value)", lambda d: _f(d).pad((1, 1, 2, 0), 0.0)),
    ("numeric", "powf", "tensor.powf(other) or tensor.powi(intother)",
     lambda d: _f(d).abs().powf(_f(d))),
    ("numeric", "powf_scalar", "tensor.powf_scalar(scalar) or tensor.powi_scalar(intscalar)",
     lambda d: _f(d).powf_scalar(2.0)),
    ("numeric", "prod", "tensor.prod()", lambda d: _f(d).prod()),
    ("numeric", "prod_dim", "tensor.prod_dim(dim)", lambda d: _f(d).prod_dim(1)),
    ("numeric", "rem", "tensor.rem(other) or tensor % other", lambda d: _f(d) % 1.5),
    ("numeric", "scatter", "tensor.scatter(dim, indices, values)",
     lambda d: _f(d).scatter(1, C.tensor([[0, 0], [2, 1]], device=d), C.ones((2, 2), device=d))),
    ("numeric", "select", "tensor.select(dim, indices)",
     lambda d: _f(d).select(1, C.tensor([2, 0], device=d))),
    ("numeric", "select_assign", "tensor.select_assign(dim, indices, values)",
     lambda d: _f(d).select_assign(1, C.tensor([2, 0], device=d), C.ones((2, 2), device=d))),
    ("numeric", "sign", "tensor.sign()", lambda d: _f(d).sign()),
    ("numeric", "sort", "tensor.sort(dim)", lambda d: _f(d).sort(1)),
    ("numeric", "sort_descending", "tensor.sort_descending(dim)",
     lambda d: _f(d).sort_descending(1)),
    ("numeric", "sort_descending_with_indices", "tensor.sort_descending_with_indices(dim)",
     lambda d: _f(d).sort_descending_with_indices(1)),
    ("numeric", "sort_with_indices", "tensor.sort_with_indices(dim)",
     lambda d: _f(d).sort_with_indices(1)),
    ("numeric", "sub", "tensor.sub(other) or tensor - other", lambda d: _f(d) - _f(d)),
    ("numeric", "sub_scalar", "tensor.sub_scalar(scalar) or tensor - scalar",
     lambda d: _f(d) - 1.0),
    ("numeric", "sum", "tensor.sum()", lambda d: _f(d).sum()),
    ("numeric", "sum_dim", "tensor.sum_dim(dim)", lambda d: _f(d).sum_dim(1)),
    ("numeric", "topk", "tensor.topk(k, dim)", lambda d: _f(d).topk(2, 1)),
    ("numeric", "topk_with_indices", "tensor.topk_with_indices(k, dim)",
     lambda d: _f(d).topk_with_indices(2, 1)),
    ("numeric", "tril", "tensor.tril(diagonal)", lambda d: _f(d).tril(0)),
    ("numeric", "triu", "tensor.triu(diagonal)", lambda d: _f(d).triu(0)),
    ("numeric", "zeros_like", "tensor.zeros_like()", lambda d: _f(d).zeros_like()),
    ("float", "one_hot", "Tensor::one_hot(index, num_classes, device)",
     lambda d: C.one_hot(2, 5, device=d)),
    ("float", "ceil", "tensor.ceil()", lambda d: _f(d).ceil()),
    ("float", "cos", "tensor.cos()", lambda d: _f(d).cos()),
    ("float", "erf", "tensor.erf()", lambda d: _f(d).erf()),
    ("float", "exp", "tensor.exp()", lambda d: _f(d).exp()),
    ("float", "floor", "tensor.floor()", lambda d: _f(d).floor()),
    ("float", "from_floats", "tensor.from_floats(floats, device)",
     lambda d: C.from_floats([1.0, 2.0], device=d)),
    ("float", "from_full_precision", "tensor.from_full_precision(tensor)",
     lambda d: Tensor.from_full_precision(_f(d).to_full_precision())),
    ("float", "int", "tensor.int()", lambda d: _f(d).int()),
    ("float", "log", "tensor.log()", lambda d: _f(d).abs().log()),
    ("float", "log1p", "tensor.log1p()", lambda d: _f(d).abs().log1p()),
    ("float", "matmul", "tensor.matmul(other)", lambda d: _f(d).matmul(_f(d).transpose())),
    ("float", "random", "tensor.random(shape, distribution, device)",
     lambda d: C.random((2, 3), Default, device=d)),
    ("float", "random_like", "tensor.random_like(distribution)",
     lambda d: _f(d).random_like(Default)),
    ("float", "recip", "tensor.recip()", lambda d: _f(d).recip()),
    ("float", "round", "tensor.round()", lambda d: _f(d).round()),
    ("float", "sin", "tensor.sin()", lambda d: _f(d).sin()),
    ("float", "sqrt", "tensor.sqrt()", lambda d: _f(d).abs().sqrt()),
    ("float", "swap_dims", "tensor.swap_dims(dim1, dim2)", lambda d: _f(d).swap_dims(0, 1)),
    ("float", "tanh", "tensor.tanh()", lambda d: _f(d).tanh()),
    ("float", "to_full_precision", "tensor.to_full_precision()",
     lambda d: _f(d).to_full_precision()),
    ("float", "transpose", "tensor.transpose()", lambda d: _f(d).transpose()),
    ("float", "var", "tensor.var(dim)", lambda d: _f(d).var(1)),
    ("float", "var_bias", "tensor.var_bias(dim)", lambda d: _f(d).var_bias(1)),
    ("float", "var_mean", "tensor.var_mean(dim)", lambda d: _f(d).var_mean(1)),
    ("float", "var_mean_bias", "tensor.var_mean_bias(dim)", lambda d: _f(d).var_mean_bias(1)),
    ("int", "arange", "tensor.arange(5..10, device)", lambda d: C.arange(5, 10, device=d)),
    ("int", "arange_step", "tensor.arange_step(5..10, 2, device)",
     lambda d: C.arange_step(5, 10, 2, device=d)),
    ("int", "float", "tensor.float()", lambda d: _i(d).float()),
    ("int", "from_ints", "tensor.from_ints(ints)", lambda d: C.from_ints([1, 2], device=d)),
    ("int", "int_random", "tensor.int_random(shape, distribution, device)",
     lambda d: C.int_random((2, 3), Uniform(0, 10), device=d)),
    ("int", "cartesian_grid", "tensor.cartesian_grid(shape, device)",
     lambda d: C.cartesian_grid((2, 3), device=d)),
    ("int", "one_hot", "tensor.one_hot(num_classes)", lambda d: _i(d).abs().one_hot(6)),
    ("bool", "diag_mask", "Tensor::diag_mask(shape, diagonal)",
     lambda d: C.diag_mask((3, 3), 0, device=d)),
    ("bool", "tril_mask", "Tensor::tril_mask(shape, diagonal)",
     lambda d: C.tril_mask((3, 3), 0, device=d)),
    ("bool", "triu_mask", "Tensor::triu_mask(shape, diagonal)",
     lambda d: C.triu_mask((3, 3), 0, device=d)),
    ("bool", "argwhere", "tensor.argwhere()", lambda d: _b(d).argwhere()),
    ("bool", "float", "tensor.float()", lambda d: _b(d).float()),
    ("bool", "int", "tensor.int()", lambda d: _b(d).int()),
    ("bool", "nonzero", "tensor.nonzero()", lambda d: _b(d).nonzero()),
    ("bool", "not", "tensor.not()", lambda d: _b(d).bool_not()),
    ("activation", "gelu", "activation::gelu(tensor)", lambda d: A.gelu(_f(d))),
    ("activation", "hard_sigmoid", "`activation::hard_sigmoid(tensor, alpha, beta)",
     lambda d: A.hard_sigmoid(_f(d), 0.2, 0.5)),
    ("activation", "leaky_relu", "activation::leaky_relu(tensor, negative_slope)",
     lambda d: A.leaky_relu(_f(d), 0.01)),
    ("activation", "log_sigmoid", "activation::log_sigmoid(tensor)",
     lambda d: A.log_sigmoid(_f(d))),
    ("activation", "log_softmax", "activation::log_softmax(tensor, dim)",
     lambda d: A.log_softmax(_f(d), 1)),
    ("activation", "mish", "activation::mish(tensor)", lambda d: A.mish(_f(d))),
    ("activation", "prelu", "activation::prelu(tensor,alpha)",
     lambda d: A.prelu(_f(d), C.tensor([0.25], device=d))),
    ("activation", "quiet_softmax", "activation::quiet_softmax(tensor, dim)",
     lambda d: A.quiet_softmax(_f(d), 1)),
    ("activation", "relu", "activation::relu(tensor)", lambda d: A.relu(_f(d))),
    ("activation", "sigmoid", "activation::sigmoid(tensor)", lambda d: A.sigmoid(_f(d))),
    ("activation", "silu", "activation::silu(tensor)", lambda d: A.silu(_f(d))),
    ("activation", "softmax", "activation::softmax(tensor, dim)", lambda d: A.softmax(_f(d), 1)),
    ("activation", "softmin", "activation::softmin(tensor, dim)", lambda d: A.softmin(_f(d), 1)),
    ("activation", "softplus", "activation::softplus(tensor, beta)",
     lambda d: A.softplus(_f(d), 1.0)),
    ("activation", "tanh", "activation::tanh(tensor)", lambda d: A.tanh(_f(d))),
]

BURN_OPS: list[OpEntry] = [OpEntry(*e) for e in _ENTRIES]


@dataclass(frozen=True)
class Coverage:
    backend: str
    implemented: list[OpEntry]
    missing: list[tuple[OpEntry, str]]


def _read_back(result: Any) -> None:
    """Force lazy backends to compute: read every tensor in the result."""
    from .tensor import Tensor
    if isinstance(result, Tensor):
        result.to_data()
    elif isinstance(result, (list, tuple)):
        for item in result:
            _read_back(item)


def coverage(device: Backend) -> Coverage:
    """Run every probe on a device and sort the ops into implemented and missing."""
    done, missing = [], []
    for entry in BURN_OPS:
        try:
            _read_back(entry.probe(device))
        except Exception as exc:  # noqa: BLE001 - any failure counts as not implemented
            missing.append((entry, f"{type(exc).__name__}: {exc}"))
        else:
            done.append(entry)
    return Coverage(device.name, done, missing)
