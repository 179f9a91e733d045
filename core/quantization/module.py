"""Module quantization: the Quantizer, weights, static activations and dynamic quantization.

- `model.quantize_weights(Quantizer(...))` (Burn's spelling) quantizes every weight (params of
  rank >= 2; biases and norm scales stay float unless `include_vectors=True`) with the
  quantizer's calibration and scheme; the params become frozen QuantizedTensors.
- Dynamic quantization needs nothing more: a Linear whose weight is QInt8 quantizes its input
  per batch (`quantized_matmul`).
- Static quantization (`quantize_static`) calibrates each Linear's input over data first and
  stores the activation params in the module (`StaticLinear`), so inputs are quantized with
  fixed params and nothing is measured at inference.
- `model.dequantize()` maps every quantized param back to float.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ..dtype import Kind
from ..module import Module, Param
from ..nn.linear import Linear
from ..tensor import Tensor, from_data
from .calibration import Calibration, MinMaxCalibration, Observer
from .scheme import QuantizationParameters, QuantizationScheme, QuantizationType
from .tensor import QuantizedTensor, quantize

M = TypeVar("M", bound=Module)


@dataclass
class Quantizer:
    """How to quantize weights: `Quantizer(calibration=MinMaxCalibration(),
    scheme=QuantizationScheme.PerTensorSymmetric(QuantizationType.QInt8))`."""

    calibration: Calibration = field(default_factory=MinMaxCalibration)
    scheme: QuantizationScheme = field(
        default_factory=lambda: QuantizationScheme.PerTensorSymmetric(QuantizationType.QInt8))
    include_vectors: bool = False

    def quantize(self, tensor: Tensor) -> QuantizedTensor:
        """`tensor` quantized with params from this quantizer's calibration."""
        plain = tensor.inner().detach()
        qparams = self.scheme.compute_q_params(self.calibration.compute_range(plain, self.scheme))
        return quantize(plain, self.scheme, qparams)

    def applies(self, param: Param) -> bool:
        """Whether this quantizer quantizes `param` (float weights; vectors when asked)."""
        val = param.val
        return (not val.is_quantized() and val.kind is Kind.FLOAT
                and (val.ndim >= 2 or self.include_vectors) and val.numel() > 0)


def quantize_weights(module: M, quantizer: Quantizer) -> M:
    """The module with the weights `quantizer` applies to quantized (frozen params)."""
    def convert(_: str, p: Param) -> Param:
        if not quantizer.applies(p):
            return p
        return Param(quantizer.quantize(p.val), require_grad=False, id=p.id)
    return module.map(convert)


def dequantize_module(module: M) -> M:
    """The module with every quantized param dequantized (trainable float params again)."""
    def convert(_: str, p: Param) -> Param:
        if not p.val.is_quantized():
            return p
        return Param(p.val.dequantize(), require_grad=True, id=p.id)
    return module.map(convert)


# ---- static quantization of activations ----------------------------------------------------------
class ObservedLinear(Module):
    """A Linear that records the range of its input while calibration data runs through."""

    def __init__(self, linear: Linear, observer: Observer) -> None:
        self.linear = linear
        self._observer = observer

    def forward(self, x: Tensor) -> Tensor:
        self._observer.update(x)
        out: Tensor = self.linear(x)
        return out


class StaticLinear(Module):
    """A Linear whose input is quantized with calibrated params (static quantization); with a
    QInt8 weight the product runs on integers. The input's params are saved with the model.

    Shapes: (..., d_input) -> (..., d_output).
    """

    def __init__(self, linear: Linear, scheme: QuantizationScheme,
                 qparams: QuantizationParameters) -> None:
        self.linear = linear
        self.input_scale = Param(qparams.scale, require_grad=False)
        self.input_offset = None if qparams.offset is None else Param(qparams.offset,
                                                                      require_grad=False)
        self._scheme = scheme

    def settings(self) -> dict[str, Any]:
        return {"input": repr(self._scheme)}

    def forward(self, x: Tensor) -> Tensor:
        offset = None if self.input_offset is None else self.input_offset.val
        xq = x.quantize(self._scheme, QuantizationParameters(self.input_scale.val, offset))
        out: Tensor = self.linear(xq)
        return out


def replace_modules(module: M, fn: Callable[[Module], Module | None]) -> M:
    """A copy of `module` with each submodule for which `fn` returns a module replaced by it
    (searched depth first; a replaced submodule is not searched further)."""
    return _replace_at(module, "", lambda _, m: fn(m))


def static_inputs_for(module: M, record: Mapping[str, Any]) -> M:
    """`module` with each Linear whose input params `record` holds (a statically quantized
    model's record) made a StaticLinear, so `load_record(record)` fits it. The activation
    scheme follows the record: per tensor QInt8, affine when it has a zero point."""
    from ..record import flatten_record
    flat = flatten_record(dict(record))

    def swap(path: str, m: Module) -> Module | None:
        if not isinstance(m, Linear) or f"{path}input_scale" not in flat:
            return None
        affine = f"{path}input_offset" in flat
        scheme = (QuantizationScheme.PerTensorAffine if affine
                  else QuantizationScheme.PerTensorSymmetric)(QuantizationType.QInt8)
        device = m.weight.device
        placeholder = QuantizationParameters(
            from_data([1.0], device=device),
            from_data([0], device=device) if affine else None)
        return StaticLinear(m, scheme, placeholder)
    return _replace_at(module, "", swap)


def _replace_at(module: M, prefix: str, fn: Callable[[str, Module], Module | None]) -> M:
    """`replace_modules` with each submodule's dotted path (as the record names it) given."""
    import copy
    out = copy.copy(module)
    for name, value in list(vars(module).items()):
        if isinstance(value, Module):
            path = f"{prefix}{name}."
            swapped = fn(path, value)
            object.__setattr__(out, name, _replace_at(value, path, fn) if swapped is None
                               else swapped)
        elif isinstance(value, (list, tuple)) and any(isinstance(v, Module) for v in value):
            items = []
            for i, v in enumerate(value):
                path = f"{prefix}{name}.{i}."
                items.append(v if not isinstance(v, Module)
                             else (fn(path, v) or _replace_at(v, path, fn)))
            object.__setattr__(out, name, type(value)(items) if isinstance(value, tuple)
                               else items)
    return out


def quantize_static(module: M, batches: Iterable[Any], quantizer: Quantizer, *,
                    activations: QuantizationScheme | None = None,
                    calibration: Calibration | None = None,
                    forward: Callable[[M, Any], object] | None = None) -> M:
    """Static post-training quantization: weights by `quantizer`, and each Linear's input
    with params calibrated over `batches` (run through `forward(model, batch)`, by default
    `model(batch)`). Activations default to per-tensor affine QInt8 with the quantizer's
    calibration (a `PercentileCalibration` often suits them better)."""
    scheme = activations or QuantizationScheme.PerTensorAffine(QuantizationType.QInt8)
    calib = calibration or quantizer.calibration
    observers: dict[int, Observer] = {}

    def observe(m: Module) -> Module | None:
        if isinstance(m, Linear):
            observer = calib.observer(scheme)
            observers[id(observer)] = observer
            return ObservedLinear(m, observer)
        return None
    observed = replace_modules(module, observe)
    run = forward or (lambda m, b: m(b))
    for batch in batches:
        run(observed, batch)

    def finish(m: Module) -> Module | None:
        if isinstance(m, ObservedLinear):
            qparams = scheme.compute_q_params(m._observer.range())
            return StaticLinear(m.linear, scheme, qparams)
        return None
    return quantize_weights(replace_modules(observed, finish), quantizer)
