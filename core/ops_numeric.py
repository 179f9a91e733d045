# mypy: disable-error-code="misc"
# (mixin methods annotate `self: Tensor`, the class they are mixed into; mypy calls that
# 'misc' because Tensor is not a base of the mixin)
"""Burn's numeric ops (Float and Int kinds): arithmetic, reductions, sorting, indexing, masks."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from . import checks
from .backend import binary as B
from .backend import reduce as R
from .backend import unary as U
from .backend.registry import NUMERIC
from .dtype import DType, Kind
from .errors import DimError, KindError, ShapeError
from .shape import norm_dim

if TYPE_CHECKING:
    from .tensor import Scalar, Tensor


class NumericOps:
    """Mixin of `Tensor`: ops of Burn's "numeric" table."""

    __slots__ = ()

    # ---- arithmetic (operators live on Tensor; these are Burn's names) -----------------------
    def add(self: Tensor, other: Tensor | Scalar) -> Tensor:
        return self._binary(B.ADD, other)

    def sub(self: Tensor, other: Tensor | Scalar) -> Tensor:
        return self._binary(B.SUB, other)

    def mul(self: Tensor, other: Tensor | Scalar) -> Tensor:
        return self._binary(B.MUL, other)

    def div(self: Tensor, other: Tensor | Scalar) -> Tensor:
        """Elementwise division; Int tensors floor-divide (numpy's `//`)."""
        return self._binary(B.DIV, other)

    def rem(self: Tensor, other: Tensor | Scalar) -> Tensor:
        """Remainder with the divisor's sign (numpy's `%`, Python's `%`)."""
        return self._binary(B.REM, other)

    add_scalar = add
    sub_scalar = sub
    mul_scalar = mul
    div_scalar = div
    rem_scalar = rem

    def neg(self: Tensor) -> Tensor:
        return self._unary(U.NEG)

    def abs(self: Tensor) -> Tensor:
        return self._unary(U.ABS)

    def sign(self: Tensor) -> Tensor:
        """-1, 0 or 1 per element (0 for 0 and -0)."""
        return self._unary(U.SIGN)

    def powf(self: Tensor, other: Tensor | Scalar) -> Tensor:
        """Elementwise power (a negative base needs an integral exponent, else NaN)."""
        return self._binary(B.POW, other)

    powi = powf
    powf_scalar = powf
    powi_scalar = powf

    def max_pair(self: Tensor, other: Tensor) -> Tensor:
        """Elementwise maximum of two tensors."""
        return self._binary(B.MAXIMUM, other)

    def min_pair(self: Tensor, other: Tensor) -> Tensor:
        """Elementwise minimum of two tensors."""
        return self._binary(B.MINIMUM, other)

    def clamp(self: Tensor, min: Scalar | None = None, max: Scalar | None = None) -> Tensor:
        """Limit values to [min, max]; either bound may be None."""
        self._need("clamp", NUMERIC)
        if min is not None and max is not None and min > max:
            raise ValueError(f"clamp: min {min} is greater than max {max}")
        out = self
        if min is not None:
            out = out._binary(B.MAXIMUM, min)
        if max is not None:
            out = out._binary(B.MINIMUM, max)
        return out

    def clamp_min(self: Tensor, min: Scalar) -> Tensor:
        return self.clamp(min=min)

    def clamp_max(self: Tensor, max: Scalar) -> Tensor:
        return self.clamp(max=max)

    # ---- comparisons -------------------------------------------------------------------------
    def greater(self: Tensor, other: Tensor | Scalar) -> Tensor:
        return self._binary(B.GREATER, other)

    def greater_equal(self: Tensor, other: Tensor | Scalar) -> Tensor:
        return self._binary(B.GREATER_EQUAL, other)

    def lower(self: Tensor, other: Tensor | Scalar) -> Tensor:
        return self._binary(B.LOWER, other)

    def lower_equal(self: Tensor, other: Tensor | Scalar) -> Tensor:
        return self._binary(B.LOWER_EQUAL, other)

    def equal_elem(self: Tensor, other: Scalar) -> Tensor:
        return self._binary(B.EQUAL, other)

    def not_equal_elem(self: Tensor, other: Scalar) -> Tensor:
        return self._binary(B.NOT_EQUAL, other)

    greater_elem = greater
    greater_equal_elem = greater_equal
    lower_elem = lower
    lower_equal_elem = lower_equal

    def is_nan(self: Tensor) -> Tensor:
        """A Bool tensor, true where the value is NaN (never for Int tensors)."""
        self._need("is_nan", NUMERIC)
        if self._kind is Kind.INT:
            return self.zeros_like().bool()
        return self._unary(U.IS_NAN)

    def contains_nan(self: Tensor) -> Tensor:
        """Whether any value is NaN: a Bool tensor of shape (1,)."""
        return self.is_nan().any()

    def is_close(self: Tensor, other: Tensor, atol: float = 1e-8, rtol: float = 1e-5) -> Tensor:
        """|a - b| <= atol + rtol * |b| elementwise (numpy's isclose, NaN never close)."""
        self._need("is_close", NUMERIC)
        a, b = self.float() if self._kind is Kind.INT else self, other
        b = b.float() if b._kind is Kind.INT else b
        return (a - b).abs().lower_equal(b.abs() * rtol + atol)

    def all_close(self: Tensor, other: Tensor, atol: float = 1e-8, rtol: float = 1e-5) -> bool:
        """Whether every element is close (see `is_close`); a Python bool."""
        return bool(self.is_close(other, atol, rtol).all().into_scalar())

    # ---- masks -------------------------------------------------------------------------------
    def _mask(self: Tensor, op: str, mask: Tensor) -> Tensor:
        from .tensor import Tensor
        if not isinstance(mask, Tensor) or mask._kind is not Kind.BOOL:
            raise KindError(f"{op}: the mask must be a Bool tensor, got "
                            f"{getattr(mask, 'kind', type(mask).__name__)}; build one with a "
                            f"comparison such as x > 0")
        self._same_device(op, mask)
        if mask.shape != self.shape:
            try:
                mask = mask.expand(self.shape)
            except ShapeError:
                raise ShapeError(f"{op}: mask of shape {mask.shape} does not broadcast to the "
                                 f"tensor's shape {self.shape}") from None
        return mask

    def mask_where(self: Tensor, mask: Tensor, value: Tensor) -> Tensor:
        """`value` where mask is true, else self (torch.where(mask, value, self))."""
        m = self._mask("mask_where", mask)
        v = self._coerce("mask_where", value)
        if v.shape != self.shape:
            v = v.expand(self.shape)
        return self._new(self._backend.where(m._prim, v._prim, self._prim))

    def mask_fill(self: Tensor, mask: Tensor, value: Scalar) -> Tensor:
        """`value` where mask is true, else self."""
        m = self._mask("mask_fill", mask)
        # one element, broadcast by `where`: no full-size fill tensor
        fill = self._backend.full((1,) * self.ndim, self._scalar_for("mask_fill", value),
                                  self.dtype)
        return self._new(self._backend.where(m._prim, fill, self._prim))

    # ---- reductions --------------------------------------------------------------------------
    def _reduce_dim(self: Tensor, op: R.Reduction, dim: int) -> Tensor:
        name = _dim_name(op)
        self._need(name, NUMERIC)
        d = norm_dim(name, dim, self.ndim)
        kind = Kind.INT if op.returns_index else None
        return self._new(self._backend.reduce(op, self._prim, d), kind)

    def _reduce_all(self: Tensor, op: R.Reduction) -> Tensor:
        if self._kind not in NUMERIC:
            self._need(op.name, NUMERIC)
        b, prim = self._backend, self._prim
        shape = b.shape(prim)
        n = math.prod(shape)
        if n == 0 and op in (R.MAX, R.MIN):
            raise ShapeError(f"{op.name}: the tensor is empty (shape {tuple(shape)})")
        if len(shape) != 1:
            prim = b.reshape(prim, (n,))
        return self._new(b.reduce(op, prim, 0))

    def sum(self: Tensor) -> Tensor:
        """Sum of every element: shape (1,)."""
        return self._reduce_all(R.SUM)

    def prod(self: Tensor) -> Tensor:
        return self._reduce_all(R.PROD)

    def max(self: Tensor) -> Tensor:
        return self._reduce_all(R.MAX)

    def min(self: Tensor) -> Tensor:
        return self._reduce_all(R.MIN)

    def _accumulator(self: Tensor) -> Tensor:
        """Self in a dtype whose sum does not overflow where the mean fits (as numpy's mean):
        f16 in f32, small ints in the device's int dtype. The mean then goes back."""
        dt = self.dtype
        if dt is DType.F16:
            return self.cast(DType.F32)
        if dt.kind is Kind.INT and dt.itemsize < self._backend.int_dtype.itemsize:
            return self.cast(self._backend.int_dtype)
        return self

    def mean(self: Tensor) -> Tensor:
        """Mean of every element: shape (1,). Int tensors floor-divide the sum."""
        x = self._accumulator()
        out = x.sum() / self.numel() if self.numel() else x.sum() / 0.0
        return out.cast(self.dtype)

    def sum_dim(self: Tensor, dim: int) -> Tensor:
        """Sum along dim, keeping it with size 1."""
        return self._reduce_dim(R.SUM, dim)

    def prod_dim(self: Tensor, dim: int) -> Tensor:
        return self._reduce_dim(R.PROD, dim)

    def mean_dim(self: Tensor, dim: int) -> Tensor:
        """Mean along dim, keeping it with size 1."""
        d = norm_dim("mean_dim", dim, self.ndim)
        return (self._accumulator().sum_dim(d) / self.shape[d]).cast(self.dtype)

    def _extreme(self: Tensor, op: R.Reduction, dim: int) -> Tensor:
        name = _dim_name(op)
        d = norm_dim(name, dim, self.ndim)
        if self.shape[d] == 0:
            raise ShapeError(f"{name}: dim {dim} is empty (shape {self.shape})")
        return self._reduce_dim(op, d)

    def max_dim(self: Tensor, dim: int) -> Tensor:
        """Max along dim, keeping it with size 1."""
        return self._extreme(R.MAX, dim)

    def min_dim(self: Tensor, dim: int) -> Tensor:
        return self._extreme(R.MIN, dim)

    def argmax(self: Tensor, dim: int) -> Tensor:
        """Index of the max along dim (first on ties), keeping it: an Int tensor."""
        return self._extreme(R.ARGMAX, dim)

    def argmin(self: Tensor, dim: int) -> Tensor:
        return self._extreme(R.ARGMIN, dim)

    def max_dim_with_indices(self: Tensor, dim: int) -> tuple[Tensor, Tensor]:
        """(max_dim, argmax) along dim."""
        index = self.argmax(dim)
        return self.gather(dim, index), index

    def min_dim_with_indices(self: Tensor, dim: int) -> tuple[Tensor, Tensor]:
        index = self.argmin(dim)
        return self.gather(dim, index), index

    # ---- sorting -----------------------------------------------------------------------------
    def sort_with_indices(self: Tensor, dim: int = -1,
                          descending: bool = False) -> tuple[Tensor, Tensor]:
        """Stable sort along dim: (values, Int indices)."""
        self._need("sort", NUMERIC)
        d = norm_dim("sort", dim, self.ndim)
        values, index = self._backend.sort(self._prim, d, descending)
        return self._new(values), self._new(index, Kind.INT)

    def sort(self: Tensor, dim: int = -1) -> Tensor:
        return self.sort_with_indices(dim)[0]

    def sort_descending(self: Tensor, dim: int = -1) -> Tensor:
        return self.sort_with_indices(dim, descending=True)[0]

    def sort_descending_with_indices(self: Tensor, dim: int = -1) -> tuple[Tensor, Tensor]:
        return self.sort_with_indices(dim, descending=True)

    def argsort(self: Tensor, dim: int = -1) -> Tensor:
        return self.sort_with_indices(dim)[1]

    def argsort_descending(self: Tensor, dim: int = -1) -> Tensor:
        return self.sort_with_indices(dim, descending=True)[1]

    def topk_with_indices(self: Tensor, k: int, dim: int = -1) -> tuple[Tensor, Tensor]:
        """The k largest along dim, largest first: (values, indices)."""
        d = norm_dim("topk", dim, self.ndim)
        if not 0 <= k <= self.shape[d]:
            raise DimError(f"topk: k={k} is out of range for dim {dim} of size {self.shape[d]}")
        values, index = self.sort_with_indices(d, descending=True)
        return values.narrow(d, 0, k), index.narrow(d, 0, k)

    def topk(self: Tensor, k: int, dim: int = -1) -> Tensor:
        return self.topk_with_indices(k, dim)[0]

    # ---- indexing ----------------------------------------------------------------------------
    def _index_tensor(self: Tensor, op: str, indices: Any) -> Tensor:
        from .tensor import Tensor
        if not isinstance(indices, Tensor):
            indices = Tensor(indices, device=self._backend, dtype=self._backend.int_dtype)
        if indices._kind is not Kind.INT:
            raise KindError(f"{op}: indices must be an Int tensor, got {indices._kind.value}")
        self._same_device(op, indices)
        if indices.dtype is not self._backend.int_dtype:
            indices = indices.cast(self._backend.int_dtype)
        return indices  # type: ignore[no-any-return]  # Tensor(...) above is typed Any-free

    def _check_bounds(self: Tensor, op: str, indices: Tensor, size: int, dim: int) -> None:
        # on webgpu: at the next readback (core/checks.py), so a step need not read back
        checks.in_range(indices, size, lambda i: DimError(
            f"{op}: index {i} is out of range for dim {dim} of size {size}"))

    def gather(self: Tensor, dim: int, indices: Any) -> Tensor:
        """out[i][j] = self[i][indices[i][j]] (for dim 1); indices has the output's shape."""
        d = norm_dim("gather", dim, self.ndim)
        idx = self._index_tensor("gather", indices)
        pairs = enumerate(zip(idx.shape, self.shape, strict=False))
        if idx.ndim != self.ndim or any(a > b for i, (a, b) in pairs if i != d):
            raise ShapeError(f"gather: indices of shape {idx.shape} do not fit a tensor of "
                             f"shape {self.shape} along dim {dim}; same rank, other dims <=")
        self._check_bounds("gather", idx, self.shape[d], dim)
        return self._new(self._backend.gather(self._prim, d, idx._prim))

    def scatter(self: Tensor, dim: int, indices: Any, values: Tensor) -> Tensor:
        """A copy with `values` *added* at `indices` along dim (torch's scatter_add)."""
        d = norm_dim("scatter", dim, self.ndim)
        idx = self._index_tensor("scatter", indices)
        values = self._coerce("scatter", values)
        if idx.shape != values.shape or idx.ndim != self.ndim:
            raise ShapeError(f"scatter: indices {idx.shape} and values {values.shape} must "
                             f"have the same shape and the tensor's rank {self.ndim}")
        self._check_bounds("scatter", idx, self.shape[d], dim)
        return self._new(self._backend.scatter_add(self._prim, d, idx._prim, values._prim))

    def select(self: Tensor, dim: int, indices: Any) -> Tensor:
        """Entries at the 1-D `indices` along dim (torch's index_select)."""
        d = norm_dim("select", dim, self.ndim)
        idx = self._index_tensor("select", indices)
        if idx.ndim != 1:
            raise ShapeError(f"select: indices must be 1-D, got shape {idx.shape}")
        self._check_bounds("select", idx, self.shape[d], dim)
        return self._new(self._backend.select(self._prim, d, idx._prim))

    def select_assign(self: Tensor, dim: int, indices: Any, values: Tensor) -> Tensor:
        """A copy with slices of `values` *added* at the 1-D `indices` along dim (as Burn)."""
        d = norm_dim("select_assign", dim, self.ndim)
        idx = self._index_tensor("select_assign", indices)
        values = self._coerce("select_assign", values)
        want = self.shape[:d] + (idx.numel(),) + self.shape[d + 1:]
        if idx.ndim != 1 or values.shape != want:
            raise ShapeError(f"select_assign: indices {idx.shape} (1-D) and values "
                             f"{values.shape} must give values of shape {want}")
        self._check_bounds("select_assign", idx, self.shape[d], dim)
        return self._new(self._backend.select_add(self._prim, d, idx._prim, values._prim))

    # ---- padding and triangles ---------------------------------------------------------------
    def pad(self: Tensor, pads: Sequence[int], value: Scalar = 0) -> Tensor:
        """Constant padding, pairs from the last dim backwards: (left, right, top, bottom, ...)."""
        if len(pads) % 2 or len(pads) // 2 > self.ndim:
            raise ShapeError(f"pad: needs pairs (before, after) for at most {self.ndim} dims, "
                             f"got {tuple(pads)}")
        if any(p < 0 for p in pads):
            raise ShapeError(f"pad: negative padding {tuple(pads)}; use slice() to crop")
        pairs = [(0, 0)] * self.ndim
        for i in range(len(pads) // 2):
            pairs[self.ndim - 1 - i] = (int(pads[2 * i]), int(pads[2 * i + 1]))
        if all(p == (0, 0) for p in pairs):
            return self
        scalar = self._scalar_for("pad", value)
        return self._new(self._backend.pad(self._prim, pairs, scalar))

    def _triangle(self: Tensor, op: str, diagonal: int, upper: bool) -> Tensor:
        if self.ndim < 2:
            raise DimError(f"{op}: needs a tensor of rank >= 2, got shape {self.shape}")
        from .creation import tril_mask, triu_mask
        rows, cols = self.shape[-2:]
        # Burn's masks are true where the triangle op fills: outside the kept triangle
        drop = (triu_mask if upper else tril_mask)((rows, cols), diagonal, device=self._backend)
        return self.mask_fill(drop, 0)

    def tril(self: Tensor, diagonal: int = 0) -> Tensor:
        """Keep the lower triangle (on and below `diagonal`), zero the rest."""
        return self._triangle("tril", diagonal, upper=False)

    def triu(self: Tensor, diagonal: int = 0) -> Tensor:
        """Keep the upper triangle (on and above `diagonal`), zero the rest."""
        return self._triangle("triu", diagonal, upper=True)

    # ---- like-constructors -------------------------------------------------------------------
    def full_like(self: Tensor, fill_value: Scalar) -> Tensor:
        value = self._scalar_for("full_like", fill_value)
        return self._new(self._backend.full(self.shape, value, self.dtype))

    def zeros_like(self: Tensor) -> Tensor:
        return self.full_like(0)

    def ones_like(self: Tensor) -> Tensor:
        return self.full_like(1)

    def bool(self: Tensor) -> Tensor:
        """A Bool tensor: true where non-zero."""
        if self._kind is Kind.BOOL:
            return self
        return self._new(self._backend.cast(self._prim, self._backend.default_dtype(Kind.BOOL)),
                         Kind.BOOL)


def _dim_name(op: R.Reduction) -> str:
    """The API name of a reduction along a dim, for errors: sum_dim, max_dim, argmax."""
    return op.name if op.returns_index else f"{op.name}_dim"
