"""Resize and Upsample: nearest, (bi)linear and cubic sampling, separably per axis, with every
coordinate transformation mode of ONNX's reference."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, NamedTuple

from ....creation import tensor
from ....tensor import Tensor
from ..registry import op
from ._util import axis as norm
from ._util import floated, floats, ints, restore


def _source(mode: str, o: int, scale: float, size: int, out: int,
            roi: tuple[float, float]) -> float:
    """The input coordinate output position `o` samples (coordinate_transformation_mode)."""
    width = scale * size
    if mode == "align_corners":
        return 0.0 if width == 1 else o * (size - 1) / (width - 1)
    if mode == "asymmetric":
        return o / scale
    if mode == "tf_crop_and_resize":
        lo, hi = roi
        if width == 1:
            return (hi - lo) * (size - 1) / 2 + lo * (size - 1)
        return o * (hi - lo) * (size - 1) / (width - 1) + lo * (size - 1)
    if mode == "pytorch_half_pixel":
        return -0.5 if width == 1 else (o + 0.5) / scale - 0.5
    if mode == "half_pixel":
        return (o + 0.5) / scale - 0.5
    if mode == "half_pixel_symmetric":
        offset = size / 2 * (1 - out / width)
        return offset + (o + 0.5) / scale - 0.5
    raise ValueError(f"coordinate_transformation_mode {mode!r} is not supported")


def _cubic(t: float, a: float) -> float:
    """Keys' cubic convolution kernel with parameter a."""
    t = abs(t)
    if t <= 1:
        return (a + 2) * t ** 3 - (a + 3) * t ** 2 + 1
    if t < 2:
        return a * t ** 3 - 5 * a * t ** 2 + 8 * a * t - 4 * a
    return 0.0


def _coeffs(frac: float, scale: float, mode: str, nearest: str, a: float,
            antialias: int) -> list[float]:
    """Filter weights of the taps left and right of a sample point `frac` past a pixel."""
    if mode == "nearest":
        if frac == 1.0:
            return [0.0, 1.0]
        up = {"round_prefer_floor": frac > 0.5, "round_prefer_ceil": frac >= 0.5,
              "floor": False, "ceil": True}[nearest]
        return [0.0, 1.0] if up else [1.0, 0.0]
    s = min(scale, 1.0) if antialias else 1.0
    if mode == "linear":
        start = math.floor(-1 / s) + 1
        w = [max(0.0, 1 - abs((i - frac) * s)) for i in range(start, 2 - start)]
    elif mode == "cubic":
        start = math.floor(-2 / s) + 1
        w = [_cubic(s * (i - frac), a) for i in range(start, 2 - start)]
    else:
        raise ValueError(f"Resize mode {mode!r} is not one of nearest, linear, cubic")
    total = sum(w)
    return [v / total for v in w]


class _Taps(NamedTuple):
    """One resized axis: per tap, each output's source index and weight; crop outsiders."""

    source: list[list[int]]
    weight: list[list[float]]
    outside: list[bool]


def _taps(size: int, out: int, scale: float, roi: tuple[float, float], how: dict[str, Any]
          ) -> _Taps:
    """The sampling plan of one axis, as ONNX's reference resize computes it."""
    index: list[list[int]] = []
    weight: list[list[float]] = []
    outside: list[bool] = []
    for o in range(out):
        x = _source(how["ctm"], o, scale, size, out, roi)
        outside.append(how["ctm"] == "tf_crop_and_resize" and not 0 <= x <= size - 1)
        frac = 1.0 if x == math.floor(x) else x - math.floor(x)
        w = _coeffs(frac, scale, how["mode"], how["nearest"], how["a"], how["antialias"])
        n, pad = len(w), -(-len(w) // 2)
        xp = x + pad
        p = math.floor(xp)
        rest = xp - p
        if n % 2 == 0:
            shift = -(n // 2) if rest == 0 else -(n // 2) + 1
        else:
            shift = -((n - 1) // 2) + (0 if rest <= 0.5 else 1)
        idx = [p + shift + t - pad for t in range(n)]
        if how["exclude"]:
            w = [0.0 if not 0 <= i < size else v for i, v in zip(idx, w, strict=True)]
            total = sum(w) or 1.0
            w = [v / total for v in w]
        index.append([min(max(i, 0), size - 1) for i in idx])
        weight.append(w)
    return _Taps([list(c) for c in zip(*index, strict=True)],
                 [list(c) for c in zip(*weight, strict=True)], outside)


def _resample(x: Tensor, d: int, plan: _Taps, nearest: bool, fill: float) -> Tensor:
    """x resampled along dim d by the plan's taps."""
    y: Tensor | None = None
    if nearest:
        pick = [next(i for i, w in zip(col, ws, strict=True) if w) for col, ws in
                zip(zip(*plan.source, strict=True), zip(*plan.weight, strict=True),
                    strict=True)]
        y = x.select(d, pick)
    else:
        shape = [len(plan.outside) if i == d else 1 for i in range(x.ndim)]
        for idx, w in zip(plan.source, plan.weight, strict=True):
            if any(w):
                part = x.select(d, idx) * tensor(w, device=x.device, dtype=x.dtype).reshape(
                    shape)
                y = part if y is None else y + part
    if y is None:  # an empty output
        y = x.narrow(d, 0, 0)
    if any(plan.outside):
        shape = [len(plan.outside) if i == d else 1 for i in range(x.ndim)]
        mask = tensor(plan.outside, device=x.device).reshape(shape)
        y = y.mask_fill(mask, fill)
    return y


def _out_sizes(x: Tensor, dims: list[int], scales: list[float] | None,
               sizes: list[int] | None, policy: str) -> tuple[list[float], list[int]]:
    """Per resized dim, the scale and the output size."""
    shape = [x.shape[d] for d in dims]
    if sizes:
        sc = [o / n for o, n in zip(sizes, shape, strict=True)]
        if policy in ("not_larger", "not_smaller"):
            one = min(sc) if policy == "not_larger" else max(sc)
            return [one] * len(dims), [int(one * n + 0.5) for n in shape]
        return sc, list(sizes)
    if not scales:
        raise ValueError("Resize needs scales or sizes")
    return scales, [int(s * n) for s, n in zip(scales, shape, strict=True)]


@op("Resize", host=(1, 2, 3))
def resize(x: Tensor, roi: Any = None, scales: Any = None, sizes: Any = None, *,
           antialias: int = 0, axes: Sequence[int] | None = None,
           coordinate_transformation_mode: str = "half_pixel", cubic_coeff_a: float = -0.75,
           exclude_outside: int = 0, extrapolation_value: float = 0.0,
           keep_aspect_ratio_policy: str = "stretch", mode: str = "nearest",
           nearest_mode: str = "round_prefer_floor", opset: int = 19) -> Tensor:
    """Resize by scales or to sizes: nearest, (bi)linear or cubic, separably per axis."""
    how = {"ctm": coordinate_transformation_mode, "mode": mode, "nearest": nearest_mode,
           "a": cubic_coeff_a, "antialias": antialias, "exclude": exclude_outside,
           "fill": extrapolation_value, "policy": keep_aspect_ratio_policy}
    if opset < 11:  # Resize-10: (X, scales), asymmetric coordinates
        roi, scales = None, roi
        how |= {"ctm": "asymmetric", "nearest": "floor"}
    return _resize(x, roi, scales, sizes, axes, how)


def _resize(x: Tensor, roi: Any, scales: Any, sizes: Any, axes: Sequence[int] | None,
            how: dict[str, Any]) -> Tensor:
    """Resize along `axes` as `how` (the Resize attributes) says."""
    mode = how["mode"]
    dims = [norm(a, x.ndim) for a in axes] if axes else list(range(x.ndim))
    sc, out = _out_sizes(x, dims, floats(scales), ints(sizes), how["policy"])
    box = floats(roi) or []
    y = x if mode == "nearest" else floated(x)
    for i, d in enumerate(dims):
        crop = (box[i], box[i + len(dims)]) if len(box) == 2 * len(dims) else (0.0, 1.0)
        if math.isclose(sc[i], 1.0) and out[i] == x.shape[d] and crop == (0.0, 1.0):
            continue
        plan = _taps(x.shape[d], out[i], sc[i], crop, how)
        y = _resample(y, d, plan, mode == "nearest", how["fill"])
    return restore(y, x)


@op("Upsample", host=(1,), attr_inputs=(9, ("scales",)))
def upsample(x: Tensor, scales: Any, *, mode: str = "nearest") -> Tensor:
    """Resize by scales with asymmetric coordinates (nearest rounds down)."""
    how = {"ctm": "asymmetric", "mode": "linear" if mode == "bilinear" else mode,
           "nearest": "floor", "a": -0.75, "antialias": 0, "exclude": 0, "fill": 0.0,
           "policy": "stretch"}
    return _resize(x, None, scales, None, None, how)


__all__ = ["resize", "upsample"]
