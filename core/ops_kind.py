# mypy: disable-error-code="misc"
# (mixin methods annotate `self: Tensor`, the class they are mixed into; mypy calls that
# 'misc' because Tensor is not a base of the mixin)
"""Kind-specific ops: Burn's float, int and bool tables, and the autodiff methods."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import checks
from .backend import binary as B
from .backend import unary as U
from .backend.registry import BOOL, FLOAT
from .distribution import Distribution
from .dtype import DType, Kind
from .errors import DimError, GradError, ShapeError
from .shape import broadcast_shapes, norm_dim

if TYPE_CHECKING:
    from .quantization import QuantizationParameters, QuantizationScheme, QuantizedTensor
    from .tensor import Tensor


class FloatOps:
    """Mixin of `Tensor`: Burn's float table (math, matmul, variance, precision)."""

    __slots__ = ()

    def exp(self: Tensor) -> Tensor:
        return self._unary(U.EXP)

    def log(self: Tensor) -> Tensor:
        """Natural logarithm (NaN below 0, -inf at 0)."""
        return self._unary(U.LOG)

    def log1p(self: Tensor) -> Tensor:
        return self._unary(U.LOG1P)

    def sqrt(self: Tensor) -> Tensor:
        return self._unary(U.SQRT)

    def sin(self: Tensor) -> Tensor:
        return self._unary(U.SIN)

    def cos(self: Tensor) -> Tensor:
        return self._unary(U.COS)

    def tanh(self: Tensor) -> Tensor:
        return self._unary(U.TANH)

    def erf(self: Tensor) -> Tensor:
        return self._unary(U.ERF)

    def sigmoid(self: Tensor) -> Tensor:
        return self._unary(U.SIGMOID)

    def recip(self: Tensor) -> Tensor:
        return self._unary(U.RECIP)

    def floor(self: Tensor) -> Tensor:
        return self._unary(U.FLOOR)

    def ceil(self: Tensor) -> Tensor:
        return self._unary(U.CEIL)

    def round(self: Tensor) -> Tensor:
        """Round half to even (numpy's and WGSL's rule)."""
        return self._unary(U.ROUND)

    def matmul(self: Tensor, other: Tensor) -> Tensor:
        """Matrix product over the last two dims; leading (batch) dims broadcast.

        Shapes: (..., m, k) @ (..., k, n) -> (..., m, n); rank-1 operands are treated as
        (1, k) / (k, 1) and that dim is dropped from the result.

        >>> from pyrite import zeros, ones
        >>> (zeros((4, 3)) @ ones((3, 2))).shape
        (4, 2)
        """
        backend = self._backend
        pa, pb = self._prim, other._prim
        if (self._kind is Kind.FLOAT and other._kind is Kind.FLOAT and other._backend is backend
                and backend.dtype(pa) is backend.dtype(pb)):
            sa, sb = backend.shape(pa), backend.shape(pb)
            if len(sa) == len(sb) >= 2 and sa[:-2] == sb[:-2] and sa[-1] == sb[-2]:
                return self._new(backend.matmul(pa, pb))  # the common case, checked
        self._need("matmul", FLOAT)
        other._need("matmul", FLOAT)
        self._same_device("matmul", other)
        a, b = self, other
        squeeze: list[int] = []
        if a.ndim == 1:
            a, squeeze = a.unsqueeze_dim(0), squeeze + [-2]
        if b.ndim == 1:
            b, squeeze = b.unsqueeze_dim(1), squeeze + [-1]
        sa, sb = a.shape, b.shape
        if sa[-1] != sb[-2]:
            raise ShapeError(f"matmul: inner sizes differ: lhs {self.shape} @ rhs {other.shape}; "
                             f"lhs.shape[-1] must equal rhs.shape[-2]")
        try:
            batch = broadcast_shapes("matmul", sa[:-2], sb[:-2])
        except ShapeError:
            raise ShapeError(f"matmul: batch dims differ: lhs {self.shape} @ rhs {other.shape}; "
                             f"the dims before the last two must broadcast") from None
        a = a.unsqueeze(len(batch) + 2)
        b = b.unsqueeze(len(batch) + 2)
        pa, pb = a._align("matmul", b) if a.dtype is not b.dtype else (a._prim, b._prim)
        out = self._new(self._backend.matmul(pa, pb))
        if squeeze:
            out = out.squeeze_dims([out.ndim + d for d in squeeze])
        return out

    def softmax(self: Tensor, dim: int) -> Tensor:
        self._need("softmax", FLOAT)
        return self._new(self._backend.softmax(self._prim, norm_dim("softmax", dim, self.ndim)))

    def log_softmax(self: Tensor, dim: int) -> Tensor:
        self._need("log_softmax", FLOAT)
        d = norm_dim("log_softmax", dim, self.ndim)
        return self._new(self._backend.log_softmax(self._prim, d))

    def var_mean_bias(self: Tensor, dim: int) -> tuple[Tensor, Tensor]:
        """(biased variance, mean) along dim, both keeping it (divides by n)."""
        self._need("var", FLOAT)
        mean = self.mean_dim(dim)
        centered = self - mean
        return (centered * centered).mean_dim(dim), mean

    def var_mean(self: Tensor, dim: int) -> tuple[Tensor, Tensor]:
        """(unbiased variance, mean) along dim, both keeping it (divides by n - 1)."""
        self._need("var", FLOAT)
        d = norm_dim("var", dim, self.ndim)
        n = self.shape[d]
        mean = self.mean_dim(d)
        centered = self - mean
        return (centered * centered).sum_dim(d) / max(n - 1, 1) if n > 1 else \
            (centered * centered).sum_dim(d) / 0.0, mean

    def var(self: Tensor, dim: int) -> Tensor:
        """Unbiased variance along dim, keeping it."""
        return self.var_mean(dim)[0]

    def var_bias(self: Tensor, dim: int) -> Tensor:
        """Biased variance (divides by n) along dim, keeping it."""
        return self.var_mean_bias(dim)[0]

    def int(self: Tensor) -> Tensor:
        """An Int tensor of the device's int dtype (floats truncate toward zero)."""
        return self.cast(self._backend.int_dtype)

    def float(self: Tensor) -> Tensor:
        """A Float tensor of the device's float dtype."""
        if self._kind is Kind.FLOAT:
            return self
        return self.cast(self._backend.float_dtype)

    def to_full_precision(self: Tensor) -> Tensor:
        """The values as f32 (a no-op for f32 and wider)."""
        self._need("to_full_precision", FLOAT)
        return self if self.dtype in (DType.F32, DType.F64) else self.cast(DType.F32)

    @staticmethod
    def from_full_precision(tensor: Tensor, dtype: DType | str | None = None) -> Tensor:
        """Back from full precision to `dtype` (default: the device's float dtype)."""
        tensor._need("from_full_precision", FLOAT)
        return tensor.cast(dtype or tensor._backend.float_dtype)

    def random_like(self: Tensor, distribution: Distribution) -> Tensor:
        """A random tensor of this shape, dtype and device."""
        from .creation import random
        return random(self.shape, distribution, device=self._backend, dtype=self.dtype)

    # ---- quantization (Burn's quantization ops; the kind lives in pyrite.quantization) --------
    def quantize(self: Tensor, scheme: QuantizationScheme,
                 qparams: QuantizationParameters) -> QuantizedTensor:
        """The tensor quantized with `scheme` and `qparams` (docs/quantization.md)."""
        from .quantization import quantize
        return quantize(self, scheme, qparams)

    def quantize_dynamic(self: Tensor, scheme: QuantizationScheme) -> QuantizedTensor:
        """The tensor quantized with params computed from its own min and max."""
        from .quantization import quantize_dynamic
        return quantize_dynamic(self, scheme)

    def dequantize(self: Tensor) -> Tensor:
        """The float values of a quantized tensor; a float tensor comes back as it is."""
        from .quantization import dequantize
        return dequantize(self)

    def is_quantized(self: Tensor) -> bool:
        return False


class IntOps:
    """Mixin of `Tensor`: Burn's int table."""

    __slots__ = ()

    def one_hot(self: Tensor, num_classes: int) -> Tensor:
        """Int one-hot encoding with a new last dim of size num_classes."""
        self._need("one_hot", frozenset({Kind.INT}))
        checks.in_range(self, num_classes, lambda _: DimError(
            f"one_hot: values must be in 0..{num_classes - 1}"))
        from .creation import arange
        classes = arange(0, num_classes, device=self._backend).cast(self.dtype)
        return (self.unsqueeze_dim(-1) == classes).int()


class BoolOps:
    """Mixin of `Tensor`: Burn's bool table and the logical operators."""

    __slots__ = ()

    def bool_not(self: Tensor) -> Tensor:
        """Logical not (Burn's `not`; also `~t`)."""
        return self._unary(U.NOT)

    def bool_and(self: Tensor, other: Tensor) -> Tensor:
        return self._binary(B.AND, other)

    def bool_or(self: Tensor, other: Tensor) -> Tensor:
        return self._binary(B.OR, other)

    def bool_xor(self: Tensor, other: Tensor) -> Tensor:
        return self._binary(B.XOR, other)

    def argwhere(self: Tensor) -> Tensor:
        """Indices of true elements: an Int tensor of shape (count, rank), row-major order."""
        self._need("argwhere", BOOL)
        flags = self.to_data().values()
        shape = self.shape
        rows = []
        for flat, on in enumerate(flags):
            if on:
                idx = []
                for size in reversed(shape):
                    idx.append(flat % size)
                    flat //= size
                rows.append(idx[::-1])
        from .tensor import from_data
        if not rows:
            return from_data([0] * 0, device=self._backend, kind=Kind.INT).reshape([0, len(shape)])
        return from_data(rows, device=self._backend, dtype=self._backend.int_dtype)

    def nonzero(self: Tensor) -> list[Tensor]:
        """One 1-D Int tensor of indices per dim (torch's nonzero(as_tuple=True))."""
        found = self.argwhere()
        return [found.slice([None, (d, d + 1)]).reshape([-1]) for d in range(self.ndim)]


class GradOps:
    """Mixin of `Tensor`: autodiff methods. On a backend without autodiff they do nothing."""

    __slots__ = ()

    def _autodiff(self: Tensor) -> Any:
        return self._backend if self._backend.is_autodiff else None

    def require_grad(self: Tensor) -> Tensor:
        """Mark this (leaf) tensor as tracked: gradients flow to it."""
        return self.set_require_grad(True)

    def set_require_grad(self: Tensor, require_grad: bool) -> Tensor:
        ad = self._autodiff()
        if ad is None or self._kind is not Kind.FLOAT:
            return self
        return self._new(ad.set_require_grad(self._prim, require_grad))

    def is_require_grad(self: Tensor) -> bool:
        ad = self._autodiff()
        return bool(ad is not None and self._kind is Kind.FLOAT and ad.is_tracked(self._prim))

    def detach(self: Tensor) -> Tensor:
        """The same values, cut from the graph."""
        ad = self._autodiff()
        if ad is None or self._kind is not Kind.FLOAT:
            return self
        return self._new(ad.detach(self._prim))

    def backward(self: Tensor) -> Any:
        """Gradients of this tensor (summed if it has several elements) w.r.t. tracked leaves."""
        ad = self._autodiff()
        if ad is None:
            raise GradError(f"backward: the tensor is on {self._backend.name}, which does not "
                            f"track gradients; use device 'autodiff<{self._backend.name}>' or "
                            f"Autodiff({self._backend.name})")
        if self._kind is not Kind.FLOAT:
            raise GradError("backward: only Float tensors have gradients")
        return ad.backward(self._prim)

    def grad(self: Tensor, grads: Any) -> Tensor | None:
        """This tensor's gradient in `grads` (a tensor on the inner backend), or None."""
        ad = self._autodiff()
        if ad is None:
            return None
        found = grads.get(self._prim)
        return None if found is None else _wrap_tensor(found, ad.inner, Kind.FLOAT)

    def grad_remove(self: Tensor, grads: Any) -> Tensor | None:
        """Like `grad`, and removes the entry from `grads`."""
        ad = self._autodiff()
        if ad is None:
            return None
        found = grads.remove(self._prim)
        return None if found is None else _wrap_tensor(found, ad.inner, Kind.FLOAT)

    def inner(self: Tensor) -> Tensor:
        """The tensor on the inner backend, without graph (Burn's `inner`)."""
        ad = self._autodiff()
        if ad is None:
            return self
        return _wrap_tensor(ad.unwrap(self._prim), ad.inner, self._kind)

    @staticmethod
    def from_inner(tensor: Tensor, device: Any) -> Tensor:
        """A tensor on an autodiff device from its inner-backend tensor (untracked)."""
        from .backend.autodiff import Autodiff
        from .device import device as resolve
        ad = resolve(device)
        if not isinstance(ad, Autodiff):
            raise GradError(f"from_inner: {ad.name} is not an autodiff device")
        return _wrap_tensor(ad.wrap(tensor._prim, tensor._kind), ad, tensor._kind)


def _wrap_tensor(prim: Any, backend: Any, kind: Kind) -> Tensor:
    from .tensor import Tensor
    return Tensor._wrap(prim, backend, kind)

