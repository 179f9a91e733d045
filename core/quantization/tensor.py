"""QuantizedTensor: the quantized tensor kind, carrying its integer values, scheme and params.

`tensor.quantize(scheme, qparams)` and `tensor.quantize_dynamic(scheme)` make one and
`qtensor.dequantize()` gives the float tensor back. A QuantizedTensor is a `Tensor` of kind
Float (so a `Param` holds one and modules run with it), whose ops follow one rule:

- **runs quantized**: metadata (`shape`, `dims`, `numel`, `device`, `kind`), `dequantize`,
  `to_device`, `inner`, `detach`, and the product `x @ q` (and `q1 @ q2`) with a 2-D quantized
  right operand: integer kernels (int8 x int8 -> int32, the scales after) or, for QInt4 and
  per-block weights, a weight-only kernel that dequantizes in registers.
  Per-tensor schemes also keep `reshape`, `transpose`, `permute` and `swap_dims` quantized.
- **every other op computes on the dequantized values** and returns a float tensor, as Burn
  does ("tensors are dequantized to perform the operations in floating point precision"): the
  op reads the primitive, and a QuantizedTensor's primitive *is* its dequantized values.
  `to_data()` therefore gives float values; `q.values` and `q.qparams` give the stored ones.

A quantized tensor is never trained: `require_grad()` on one is refused (quantization-aware
training trains float weights through `fake_quantize`).

>>> from pyrite import tensor
>>> from pyrite.quantization import QuantizationScheme, QuantizationType
>>> q = tensor([[-1.0, 0.0], [0.5, 2.54]]).quantize_dynamic(
...     QuantizationScheme.PerTensorSymmetric(QuantizationType.QInt8))
>>> q.values.to_list(), [round(s, 6) for s in q.qparams.scale.to_list()]
([[-50, 0], [25, 127]], [0.02])
>>> [[round(v, 4) for v in row] for row in q.dequantize().to_list()]
[[-1.0, 0.0], [0.5, 2.54]]
"""

from __future__ import annotations

from typing import Any

from ..backend.base import Backend, Prim
from ..dtype import DType, Kind
from ..errors import DeviceError, KindError, QuantizationError
from ..tensor import Tensor
from .calibration import MinMaxCalibration, blocked, params_view, unblocked
from .scheme import Granularity, QuantizationParameters, QuantizationScheme

_MOVES_KEEPING_PARAMS = ("reshape", "transpose", "permute", "swap_dims")


def storage_dtype(backend: Backend) -> DType:
    """The dtype integer values are kept in: i8 where the device has it, else its int dtype
    (webgpu keeps i32 and packs four values per u32 word for its kernels)."""
    return DType.I8 if backend.supports(DType.I8) else backend.int_dtype


class QuantizedTensor(Tensor):
    """A quantized tensor: integer `values`, its `scheme` and `qparams` (see module docs)."""

    __slots__ = ("_values", "_qparams", "_scheme", "_cache")

    _values: Tensor
    _qparams: QuantizationParameters
    _scheme: QuantizationScheme
    _cache: dict[str, Any]

    def __init__(self, values: Tensor, scheme: QuantizationScheme,
                 qparams: QuantizationParameters) -> None:
        check_params(values.shape, scheme, qparams, "QuantizedTensor")
        if values.kind is not Kind.INT:
            raise KindError(f"QuantizedTensor: values must be an Int tensor, got "
                            f"{values.kind.value}; build one with tensor.quantize(...)")
        self._values = values
        self._scheme = scheme
        self._qparams = qparams
        self._backend = values.device
        self._kind = Kind.FLOAT
        self._cache = {}

    # ---- the primitive is the dequantized values (the rule for every float op) -----------------
    @property  # Tensor's slot, read here as the float values
    def _prim(self) -> Prim:
        return self.dequantize()._prim

    @_prim.setter
    def _prim(self, value: Prim) -> None:
        raise KindError("a QuantizedTensor cannot be assigned to in place; dequantize() it, "
                        "assign, and quantize again")

    # ---- what it carries --------------------------------------------------------------------
    @property
    def values(self) -> Tensor:
        """The stored integers (an Int tensor of the same shape)."""
        return self._values

    @property
    def scheme(self) -> QuantizationScheme:
        return self._scheme

    @property
    def qparams(self) -> QuantizationParameters:
        return self._qparams

    def is_quantized(self) -> bool:
        return True

    @property
    def shape(self) -> tuple[int, ...]:
        return self._values.shape

    def dims(self) -> list[int]:
        return list(self._values.shape)

    @property
    def ndim(self) -> int:
        return self._values.ndim

    rank = ndim

    def numel(self) -> int:
        return self._values.numel()

    @property
    def dtype(self) -> DType:
        """The float dtype the values dequantize to (the scale's)."""
        return self._qparams.scale.dtype

    def cached(self, key: str, make: Any) -> Any:
        """A value derived from this tensor (a kernel's packed layout), made once."""
        found = self._cache.get(key)
        if found is None:
            found = self._cache[key] = make()
        return found

    # ---- quantized ops ----------------------------------------------------------------------
    def dequantize(self) -> Tensor:
        """The float values: (values - offset) * scale."""
        scheme, (scale, offset) = self._scheme, (self._qparams.scale, self._qparams.offset)
        shape = self.shape
        view = params_view(shape, scheme)
        q = self._values.float() if self._values.dtype.is_float else self._values.cast(
            scale.dtype)
        if scheme.granularity is Granularity.Block:
            q = blocked(q, scheme)
        if offset is not None:
            q = q - offset.reshape(view).cast(scale.dtype)
        out = q * scale.reshape(view)
        if scheme.granularity is Granularity.Block:
            out = unblocked(out, shape, scheme)
        return out.reshape(shape) if out.shape != shape else out

    def to_device(self, device: Backend | str) -> QuantizedTensor:
        values = self._values.to_device(device)
        target = values.device
        values = values.cast(storage_dtype(target))
        offset = self._qparams.offset
        return QuantizedTensor(values, self._scheme, QuantizationParameters(
            self._qparams.scale.to_device(target),
            None if offset is None else offset.to_device(target)))

    def inner(self) -> QuantizedTensor:
        return self._with(self._values.inner(), self._qparams.scale.inner(),
                          None if self._qparams.offset is None else self._qparams.offset.inner())

    def detach(self) -> QuantizedTensor:
        return self

    def set_require_grad(self, require_grad: bool) -> QuantizedTensor:
        if require_grad:
            raise KindError("require_grad: a QuantizedTensor is not trained; train the float "
                            "tensor (quantization-aware training uses fake_quantize) or "
                            "dequantize() it first")
        return self

    def require_grad(self) -> QuantizedTensor:
        return self.set_require_grad(True)

    def _with(self, values: Tensor, scale: Tensor, offset: Tensor | None) -> QuantizedTensor:
        return QuantizedTensor(values, self._scheme, QuantizationParameters(scale, offset))

    def _moved(self, name: str, *args: Any) -> Tensor:
        if self._scheme.granularity is not Granularity.Tensor:
            return getattr(self.dequantize(), name)(*args)  # type: ignore[no-any-return]
        moved = getattr(self._values, name)(*args)
        return self._with(moved, self._qparams.scale, self._qparams.offset)

    def reshape(self, shape: Any) -> Tensor:
        return self._moved("reshape", shape)

    def transpose(self) -> Tensor:
        return self._moved("transpose")

    def permute(self, axes: Any) -> Tensor:
        return self._moved("permute", axes)

    def swap_dims(self, dim1: int, dim2: int) -> Tensor:
        return self._moved("swap_dims", dim1, dim2)

    def __matmul__(self, other: Tensor) -> Tensor:
        from .matmul import quantized_matmul
        if isinstance(other, QuantizedTensor):
            return quantized_matmul(self, other)
        return self.dequantize() @ other

    def __rmatmul__(self, other: Tensor) -> Tensor:
        from .matmul import quantized_matmul
        return quantized_matmul(other, self)

    def __repr__(self) -> str:
        return (f"QuantizedTensor(shape={list(self.shape)}, scheme={self._scheme!r}, "
                f"device={self._backend.name})")

    __str__ = __repr__


def check_params(shape: tuple[int, ...], scheme: QuantizationScheme,
                 qparams: QuantizationParameters, op: str) -> None:
    """Raise QuantizationError unless `qparams` fit `scheme` for a tensor of `shape`."""
    want = scheme.params_shape(shape)
    scale, offset = qparams.scale, qparams.offset
    if not isinstance(scale, Tensor) or scale.kind is not Kind.FLOAT:
        raise QuantizationError(f"{op}: the scale must be a Float tensor of shape {want} for "
                                f"{scheme!r}")
    if scale.shape != want:
        raise QuantizationError(f"{op}: {scheme!r} on a tensor of shape {shape} needs a scale "
                                f"of shape {want}, got {scale.shape}")
    if scheme.is_symmetric and offset is not None:
        raise QuantizationError(f"{op}: {scheme!r} has no zero point, but an offset was given; "
                                f"use an affine scheme or drop the offset")
    if not scheme.is_symmetric:
        if offset is None or offset.kind is not Kind.INT or offset.shape != want:
            raise QuantizationError(f"{op}: {scheme!r} needs an Int offset (zero point) of "
                                    f"shape {want}, got "
                                    f"{None if offset is None else (offset.kind, offset.shape)}")


def quantize(x: Tensor, scheme: QuantizationScheme,
             qparams: QuantizationParameters) -> QuantizedTensor:
    """x as integers: clamp(round(x / scale) + offset) in the scheme's range.

    Shapes: x (...) with params of `scheme.params_shape(x.shape)`.
    """
    if isinstance(x, QuantizedTensor):
        raise QuantizationError(f"quantize: the tensor is already quantized ({x.scheme!r}); "
                                f"dequantize() it first")
    if x.kind is not Kind.FLOAT:
        raise KindError(f"quantize: needs a Float tensor, got {x.kind.value} (dtype "
                        f"{x.dtype}); convert with .float()")
    check_params(x.shape, scheme, qparams, "quantize")
    for part in (qparams.scale, qparams.offset):
        if part is not None and part.device != x.device:
            raise DeviceError(f"quantize: the tensor is on {x.device.name}, its params on "
                              f"{part.device.name}; move them with .to_device(...)")
    shape = x.shape
    view = params_view(shape, scheme)
    lo, hi = scheme.q_bounds
    values = x.inner().detach()
    if scheme.granularity is Granularity.Block:
        values = blocked(values, scheme)
    scale = qparams.scale.inner().reshape(view)
    q = (values / scale).round()
    if qparams.offset is not None:
        q = q + qparams.offset.inner().reshape(view).cast(q.dtype)
    q = q.clamp(lo, hi)
    if scheme.granularity is Granularity.Block:
        q = unblocked(q, shape, scheme)
    if q.shape != shape:
        q = q.reshape(shape)
    ints = q.cast(storage_dtype(q.device))
    if x.device != ints.device:  # x was on an autodiff device: keep the values there
        ints = Tensor.from_inner(ints, x.device)
        qparams = QuantizationParameters(
            Tensor.from_inner(qparams.scale.inner(), x.device),
            None if qparams.offset is None else Tensor.from_inner(qparams.offset.inner(),
                                                                  x.device))
    return QuantizedTensor(ints, scheme, qparams)


def quantize_dynamic(x: Tensor, scheme: QuantizationScheme) -> QuantizedTensor:
    """x quantized with params computed from its own range (min-max)."""
    if x.kind is not Kind.FLOAT:
        raise KindError(f"quantize_dynamic: needs a Float tensor, got {x.kind.value} (dtype "
                        f"{x.dtype}); convert with .float()")
    plain = x.inner().detach()
    qparams = scheme.compute_q_params(MinMaxCalibration().compute_range(plain, scheme))
    if plain.device != x.device:
        qparams = QuantizationParameters(
            Tensor.from_inner(qparams.scale, x.device),
            None if qparams.offset is None else Tensor.from_inner(qparams.offset, x.device))
    return quantize(x, scheme, qparams)


def dequantize(x: Tensor) -> Tensor:
    """The float values of a quantized tensor; a float tensor comes back unchanged."""
    if isinstance(x, QuantizedTensor):
        return x.dequantize()
    if x.kind is not Kind.FLOAT:
        raise KindError(f"dequantize: needs a Float or quantized tensor, got {x.kind.value}; "
                        f"an Int tensor is not quantized (use .float())")
    return x
