"""Gradients of reductions, matmul, movement, indexing and sorting, by finite differences."""

from __future__ import annotations

import numpy as np
import pytest

import pyrite

from .gradcheck import check_grad

rng = np.random.default_rng(11)


def distinct(*shape: int) -> np.ndarray:
    """Values with no ties (max/min/sort gradients are defined)."""
    n = int(np.prod(shape))
    return (rng.permutation(n) * 0.37 - n * 0.15).reshape(shape) + rng.uniform(0, 0.1, shape)


def normal(*shape: int) -> np.ndarray:
    return rng.normal(size=shape)


def idx(values: list, backend: pyrite.Backend) -> pyrite.Tensor:
    return pyrite.tensor(values, device=backend.inner if backend.is_autodiff else backend)


CASES = {
    "sum": (lambda x: x.sum(), [(3, 4)]),
    "sum_dim": (lambda x: x.sum_dim(1), [(3, 4)]),
    "mean": (lambda x: x.mean(), [(3, 4)]),
    "mean_dim": (lambda x: x.mean_dim(0), [(3, 4)]),
    "prod": (lambda x: x.prod(), [(2, 3)]),
    "prod_dim": (lambda x: x.prod_dim(1), [(3, 4)]),
    "max": (lambda x: x.max(), [(3, 4)]),
    "min": (lambda x: x.min(), [(3, 4)]),
    "max_dim": (lambda x: x.max_dim(1), [(3, 4)]),
    "min_dim": (lambda x: x.min_dim(0), [(3, 4)]),
    "max_dim_with_indices": (lambda x: x.max_dim_with_indices(1)[0], [(3, 4)]),
    "var": (lambda x: x.var(1), [(3, 5)]),
    "var_bias": (lambda x: x.var_bias(0), [(4, 3)]),
    "var_mean": (lambda x: x.var_mean(1)[0] + x.var_mean(1)[1], [(3, 5)]),
    "matmul": (lambda a, b: a @ b, [(3, 4), (4, 5)]),
    "matmul_batched": (lambda a, b: a @ b, [(2, 3, 4), (2, 4, 5)]),
    "matmul_broadcast": (lambda a, b: a @ b, [(2, 1, 3, 4), (3, 4, 2)]),
    "matmul_vector": (lambda a, b: a @ b, [(4,), (4, 3)]),
    "matmul_matvec": (lambda a, b: a @ b, [(3, 4), (4,)]),
    "reshape": (lambda x: x.reshape([2, 6]) * x.reshape([2, 6]).flip([1]), [(3, 4)]),
    "permute": (lambda x: x.permute([2, 0, 1]), [(2, 3, 4)]),
    "transpose": (lambda x: x.transpose(), [(3, 4)]),
    "swap_dims": (lambda x: x.swap_dims(0, 2), [(2, 3, 4)]),
    "movedim": (lambda x: x.movedim(0, 2), [(2, 3, 4)]),
    "expand": (lambda x: x.expand([2, 3, 4]), [(3, 1)]),
    "repeat": (lambda x: x.repeat([2, 3]), [(2, 2)]),
    "repeat_dim": (lambda x: x.repeat_dim(1, 3), [(2, 2)]),
    "slice": (lambda x: x.slice([(1, 3), slice(0, 4, 2)]), [(3, 4)]),
    "index": (lambda x: x[1, ::2] * x[..., 0].sum(), [(3, 4)]),
    "narrow": (lambda x: x.narrow(1, 1, 2), [(3, 4)]),
    "chunk": (lambda x: x.chunk(2, 1)[1] * x.chunk(2, 1)[0], [(3, 4)]),
    "flip": (lambda x: x.flip([0, 1]), [(3, 4)]),
    "cat": (lambda a, b: pyrite.cat([a, b, a], 1), [(2, 3), (2, 2)]),
    "stack": (lambda a, b: pyrite.stack([a, b], 0), [(2, 3), (2, 3)]),
    "slice_assign": (lambda a, b: a.slice_assign([(0, 2), (1, 3)], b), [(3, 4), (2, 2)]),
    "pad": (lambda x: x.pad((1, 2, 0, 1), 0.5), [(2, 3)]),
    "flatten_squeeze": (lambda x: x.flatten(0, 1).unsqueeze_dim(0).squeeze(0), [(2, 3, 2)]),
    "sort": (lambda x: x.sort(1) * pyrite.arange(0, 4, device=x.device).float(), [(3, 4)]),
    "sort_descending": (lambda x: x.sort_descending(0), [(3, 4)]),
    "topk": (lambda x: x.topk(2, 1), [(3, 4)]),
    "tril": (lambda x: x.tril(0) + x.triu(1) * 2.0, [(3, 3)]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_structure_grad(name: str, ad_backend: pyrite.Backend) -> None:
    fn, shapes = CASES[name]
    check_grad(fn, [distinct(*s) for s in shapes], ad_backend)


def test_prod_with_zeros(ad_backend: pyrite.Backend) -> None:
    x = np.array([[0.0, 2.0, 3.0], [0.0, 0.0, 4.0], [1.5, 2.0, -1.0]])
    check_grad(lambda t: t.prod_dim(1), [x], ad_backend)


def test_gather_scatter_select(ad_backend: pyrite.Backend) -> None:
    g = [[0, 2, 2], [1, 0, 3]]
    s = [2, 0, 2]

    def gather(x: pyrite.Tensor) -> pyrite.Tensor:
        return x.gather(1, pyrite.tensor(g, device=x.device))

    def scatter(x: pyrite.Tensor, v: pyrite.Tensor) -> pyrite.Tensor:
        return x.scatter(1, pyrite.tensor(g, device=x.device), v)

    def select(x: pyrite.Tensor) -> pyrite.Tensor:
        return x.select(0, pyrite.tensor(s, device=x.device))

    def select_assign(x: pyrite.Tensor, v: pyrite.Tensor) -> pyrite.Tensor:
        return x.select_assign(0, pyrite.tensor(s, device=x.device), v)

    check_grad(gather, [normal(2, 4)], ad_backend)
    check_grad(scatter, [normal(2, 4), normal(2, 3)], ad_backend)
    check_grad(select, [normal(3, 2)], ad_backend)
    check_grad(select_assign, [normal(3, 2), normal(3, 2)], ad_backend)
