"""The CPU backend over numpy. numpy is imported when the backend is first built, not at import.

Primitives are plain `numpy.ndarray`s. Views (reshape, permute, expand, slice) stay numpy views;
every op that writes returns a new array, so a tensor's values never change under its feet.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..data import TensorData
from ..distribution import Bernoulli, Distribution, Normal, Uniform
from ..dtype import DType, Kind
from ..errors import BackendUnavailable
from . import blas_threads, heap, numpy_blas
from .base import Backend, Prim, Range
from .numpy_module import NumpyModuleOps
from .numpy_norm import NumpyNormOps
from .numpy_softmax import NumpySoftmaxOps
from .reduce import REDUCTIONS, Reduction
from .registry import Op
from .unary import RELU


def _import_numpy() -> Any:
    blas_threads.apply_setting()
    try:
        import numpy
    except ImportError as exc:
        raise BackendUnavailable(
            "numpy: the numpy backend needs numpy, which is not installed. "
            "Install it with `pip install numpy` (or `pip install pyrite[numpy]`), "
            "or use another device such as 'webgpu'.") from exc
    if int(numpy.__version__.split(".")[0]) < 2:
        raise BackendUnavailable(f"numpy: the numpy backend needs numpy >= 2 (its scalar "
                                 f"promotion rules), found {numpy.__version__}; "
                                 f"pip install -U 'numpy>=2'")
    blas_threads.apply_setting()
    heap.apply_setting()
    return numpy


class NumpyBackend(NumpySoftmaxOps, NumpyNormOps, NumpyModuleOps, Backend):
    """CPU tensors as numpy arrays; every dtype of `pyrite.DType`."""

    name = "numpy"

    def __init__(self, seed: int | None = None, *, name: str | None = None) -> None:
        if name is not None:  # "numpy:1": one of several numpy devices (pyrite.device)
            self.name = name
        np = self.np = _import_numpy()
        self._rng = np.random.default_rng(seed)
        self._dtypes = {np.dtype(d.np_name): d for d in DType}
        self._np_dtypes = {d: np.dtype(d.np_name) for d in DType}
        # op -> its numpy function, resolved once; ops with an integer variant get a dispatcher
        self._fns = _Functions(np)
        self._reducers = {r: _bind_reduce(np, r.numpy) for r in REDUCTIONS.values()}

    # ---- device-level ----------------------------------------------------------------------
    def seed(self, seed: int) -> None:
        self._rng = self.np.random.default_rng(seed)

    # ---- creation and data -----------------------------------------------------------------
    def from_data(self, data: TensorData) -> Prim:
        return data.to_numpy()

    def to_data(self, x: Prim) -> TensorData:
        # tobytes() writes C order from any layout; ascontiguousarray would make 0-d arrays 1-d
        return TensorData.raw(x.tobytes(), tuple(x.shape), self._dtypes[x.dtype])

    def full(self, shape: tuple[int, ...], value: float | int | bool, dtype: DType) -> Prim:
        return self.np.full(shape, value, dtype=self._np_dtypes[dtype])

    def uninitialized(self, shape: tuple[int, ...], dtype: DType) -> Prim:
        return self.np.empty(shape, dtype=self._np_dtypes[dtype])

    def arange(self, start: int, stop: int, step: int, dtype: DType) -> Prim:
        return self.np.arange(start, stop, step, dtype=self._np_dtypes[dtype])

    def random(self, shape: tuple[int, ...], distribution: Distribution, dtype: DType) -> Prim:
        rng, nd = self._rng, self._np_dtypes[dtype]
        # draw in float32 unless f64 is asked for: half the bits to generate (dropout masks
        # are drawn every step)
        draw = self.np.float64 if dtype is DType.F64 else self.np.float32
        if isinstance(distribution, Normal):
            out = rng.standard_normal(shape, dtype=draw) * distribution.std + distribution.mean
        elif isinstance(distribution, Bernoulli):
            out = self._bernoulli(shape, distribution.prob)
        elif isinstance(distribution, Uniform):
            if dtype.kind is Kind.INT:
                return rng.integers(int(distribution.low), int(distribution.high), shape, dtype=nd)
            span = distribution.high - distribution.low
            out = rng.random(shape, dtype=draw) * span + distribution.low
        else:  # pragma: no cover - the front end checks the type
            raise TypeError(distribution)
        return out.astype(nd)

    def _bernoulli(self, shape: tuple[int, ...], prob: float) -> Prim:
        """A bool mask, True with probability `prob` rounded to a multiple of 2^-16: 16 random
        bits per value, four values per 64-bit draw (dropout masks are drawn every step; four
        times faster than comparing float32 draws)."""
        np = self.np
        n = 1
        for s in shape:
            n *= s
        if prob <= 0.0 or prob >= 1.0:
            return np.full(shape, prob >= 1.0, dtype=bool)
        bits = self._rng.bit_generator.random_raw((n + 3) // 4).view(np.uint16)[:n]
        return (bits < np.uint16(min(65535, round(prob * 65536)))).reshape(shape)

    # ---- metadata --------------------------------------------------------------------------
    def shape(self, x: Prim) -> tuple[int, ...]:
        return x.shape  # type: ignore[no-any-return]

    def dtype(self, x: Prim) -> DType:
        return self._dtypes[x.dtype]

    def same_shape_and_dtype(self, a: Prim, b: Prim) -> bool:
        # numpy's builtin dtypes are singletons, so `is` answers the common case cheaply; a
        # False here only sends the op through the front end's full check
        return a.shape == b.shape and a.dtype is b.dtype

    # ---- elementwise -----------------------------------------------------------------------
    def unary(self, op: Op, x: Prim) -> Prim:
        return self._fns[op](x)

    def binary(self, op: Op, a: Prim, b: Prim | float | int | bool) -> Prim:
        # No dtype fix-up needed: operands share a dtype, and a Python scalar is weak under
        # numpy 2's promotion rules (NEP 50) and range-checked by the front end.
        return self._fns[op](a, b)

    def unary_consuming(self, op: Op, x: Prim) -> Prim:
        fn = self._into(op)
        if fn is None or x.dtype.kind != "f" or not x.flags.writeable:
            return self._fns[op](x)
        # x is given up: its memory takes the result (float in, same float out)
        return fn(x, 0, out=x) if op is RELU else fn(x, out=x)

    def binary_consuming(self, op: Op, a: Prim, b: Prim | float | int | bool) -> Prim:
        fn = self._into(op)
        if fn is None or a.dtype.kind != "f" or not a.flags.writeable or (
                isinstance(b, self.np.ndarray) and (
                    b.dtype is not a.dtype
                    or self.np.broadcast_shapes(a.shape, b.shape) != a.shape)):
            return self._fns[op](a, b)
        return fn(a, b, out=a)

    def _into(self, op: Op) -> Any:
        """The ufunc that computes `op` into an `out=` array, or None: ops whose numpy entry
        is a ufunc's name and whose result keeps the kind, and relu (`maximum(x, 0)`); the
        callers take float arrays only, so `numpy_int` variants never apply."""
        if op is RELU:
            return self.np.maximum
        if op.out_kind is not None or not isinstance(op.numpy, str):
            return None
        fn = getattr(self.np, op.numpy, None)
        return fn if isinstance(fn, self.np.ufunc) else None

    def where(self, mask: Prim, a: Prim, b: Prim) -> Prim:
        return self.np.where(mask, a, b)

    def cast(self, x: Prim, dtype: DType) -> Prim:
        return x.astype(self._np_dtypes[dtype])

    # ---- reductions and linear algebra -----------------------------------------------------
    def reduce(self, op: Reduction, x: Prim, dim: int) -> Prim:
        out = self._reducers[op](x, dim)
        if op.returns_index:
            return out.astype(self._np_dtypes[self.int_dtype])
        if out.dtype != x.dtype:  # numpy sums small ints into int64
            out = out.astype(x.dtype)
        return out

    def matmul(self, a: Prim, b: Prim) -> Prim:
        # BLAS's spurious "invalid" flag is not reported (numpy_blas.py says why)
        with numpy_blas.quiet(self.np):
            sb = b.shape
            if len(sb) > 2 and a.shape[:-2] != sb[:-2] and all(s == 1 for s in sb[:-2]):
                # one matrix broadcast over a's batch (a linear layer on (batch, seq, d)
                # input): the batch folds into the rows of one GEMM; numpy's broadcast loop
                # would make one small BLAS call per batch entry
                k, n = sb[-2:]
                out = self.np.matmul(a.reshape(-1, k), b.reshape(k, n))
                return out.reshape(*a.shape[:-1], n)
            return self.np.matmul(a, b)

    def sort(self, x: Prim, dim: int, descending: bool) -> tuple[Prim, Prim]:
        np = self.np
        if descending:
            # stable descending: sort the reversed axis ascending by negated rank
            flipped = np.flip(x, axis=dim)
            idx = np.argsort(flipped, axis=dim, kind="stable")
            idx = np.flip(idx, axis=dim)
            idx = x.shape[dim] - 1 - idx
        else:
            idx = np.argsort(x, axis=dim, kind="stable")
        return np.take_along_axis(x, idx, axis=dim), idx.astype(self._np_dtypes[self.int_dtype])

    # ---- movement --------------------------------------------------------------------------
    def reshape(self, x: Prim, shape: tuple[int, ...]) -> Prim:
        return x.reshape(shape)

    def permute(self, x: Prim, axes: tuple[int, ...]) -> Prim:
        return x.transpose(axes)

    def expand(self, x: Prim, shape: tuple[int, ...]) -> Prim:
        return self.np.broadcast_to(x, shape)

    def slice(self, x: Prim, ranges: Sequence[Range]) -> Prim:
        return x[tuple(slice(a, b, s) for a, b, s in ranges)]

    def slice_assign(self, x: Prim, ranges: Sequence[Range], value: Prim) -> Prim:
        out = x.copy()
        out[tuple(slice(a, b, s) for a, b, s in ranges)] = value
        return out

    def cat(self, xs: Sequence[Prim], dim: int) -> Prim:
        return self.np.concatenate(xs, axis=dim)

    def flip(self, x: Prim, axes: tuple[int, ...]) -> Prim:
        return self.np.flip(x, axis=axes)

    def gather(self, x: Prim, dim: int, index: Prim) -> Prim:
        # index may be smaller than x in the other dims (torch's rule): read only that corner
        corner = tuple(slice(None) if d == dim else slice(0, s) for d, s in enumerate(index.shape))
        return self.np.take_along_axis(x[corner], index, axis=dim)

    def scatter_add(self, x: Prim, dim: int, index: Prim, value: Prim) -> Prim:
        np = self.np
        out = x.copy()
        grids = np.indices(index.shape, sparse=True)
        where = tuple(index if d == dim else grids[d] for d in range(x.ndim))
        np.add.at(out, where, value[tuple(slice(0, s) for s in index.shape)])
        return out

    def select(self, x: Prim, dim: int, index: Prim) -> Prim:
        return self.np.take(x, index, axis=dim)

    def select_add(self, x: Prim, dim: int, index: Prim, value: Prim) -> Prim:
        np = self.np
        out = x.copy()
        moved = np.moveaxis(out, dim, 0)  # a view: adds land in `out`
        np.add.at(moved, index, np.moveaxis(value, dim, 0))
        return out

    # ---- composites overridden for speed ---------------------------------------------------
    def pad(self, x: Prim, pads: Sequence[tuple[int, int]], value: float | int | bool) -> Prim:
        # a filled array and one slice assignment: three times faster than np.pad, which
        # pads each side of each dim in its own pass (convolutions pad every call)
        shape = tuple(s + lo + hi for s, (lo, hi) in zip(x.shape, pads, strict=True))
        out = self.np.full(shape, value, dtype=x.dtype)
        out[tuple(slice(lo, lo + s) for s, (lo, _) in zip(x.shape, pads, strict=True))] = x
        return out


def _by_kind(f: Any, f_int: Any) -> Any:
    """One function per op: the integer variant for integer arrays."""
    return lambda a, *rest: (f_int if a.dtype.kind in "iu" else f)(a, *rest)


def _bind_reduce(np: Any, fn: Any) -> Any:
    return lambda x, dim: fn(np, x, dim)


class _Functions(dict[Op, Any]):
    """op -> its numpy function, bound on first use (ops declared after the backend was built,
    through pyrite.extend, included)."""

    def __init__(self, np: Any) -> None:
        super().__init__()
        self.np = np

    def __missing__(self, op: Op) -> Any:
        f = _bind(self.np, op.numpy)
        found = self[op] = _by_kind(f, _bind(self.np, op.numpy_int)) if op.numpy_int else f
        return found


def _bind(np: Any, fn: Any) -> Any:
    """A registry entry's numpy function with numpy bound: a ufunc name, or `f(np, *args)`."""
    if isinstance(fn, str):
        return getattr(np, fn)
    return lambda *args: fn(np, *args)
