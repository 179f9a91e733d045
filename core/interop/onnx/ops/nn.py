"""Convolutions, pooling, Gemm/MatMul, Dropout, Resize/Upsample, Einsum and Attention."""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Sequence
from typing import Any, NamedTuple

from ....creation import arange, full, tensor
from ....creation import seed as reseed
from ....distribution import Uniform
from ....dtype import DType, Kind
from ....errors import OnnxError
from ....nn import functional as F
from ....tensor import Tensor
from ..registry import op
from ._util import axis as norm
from ._util import dtype_of, floats, ints, scalar


def spatial_pads(pads: Sequence[int] | None, n: int) -> list[tuple[int, int]]:
    """ONNX pads [b1, b2, ..., e1, e2, ...] as one (before, after) pair per spatial dim."""
    if not pads:
        return [(0, 0)] * n
    return [(int(pads[i]), int(pads[i + n])) for i in range(n)]


def auto_pads(auto_pad: str, size: Sequence[int], kernel: Sequence[int],
              strides: Sequence[int], dilations: Sequence[int],
              pads: Sequence[int] | None) -> list[tuple[int, int]]:
    """The padding an ONNX `auto_pad` setting asks for, per spatial dim."""
    n = len(kernel)
    if auto_pad in ("NOTSET", ""):
        return spatial_pads(pads, n)
    if auto_pad == "VALID":
        return [(0, 0)] * n
    if auto_pad not in ("SAME_UPPER", "SAME_LOWER"):
        raise OnnxError(f"auto_pad {auto_pad!r} is not one of NOTSET, SAME_UPPER, "
                         f"SAME_LOWER, VALID")
    out = []
    for s, k, st, d in zip(size, kernel, strides, dilations, strict=True):
        want = math.ceil(s / st)
        total = max(0, (want - 1) * st + (k - 1) * d + 1 - s)
        small, big = total // 2, total - total // 2
        out.append((small, big) if auto_pad == "SAME_UPPER" else (big, small))
    return out


def _to_2d(x: Tensor) -> Tensor:
    """(N, C, L) as (N, C, 1, L), so 1-d work can use the 2-d ops."""
    return x.unsqueeze_dim(2)  # (N, C, L) -> (N, C, 1, L)


def _pad_dim(x: Tensor, d: int, before: int, after: int, value: float = 0.0) -> Tensor:
    """x with `before`/`after` entries of `value` added along dim d (negative: cropped)."""
    cut_lo, cut_hi = max(0, -before), max(0, -after)
    if cut_lo or cut_hi:
        x = x.narrow(d, cut_lo, x.shape[d] - cut_lo - cut_hi)
    pads = [0] * (2 * (x.ndim - d))
    pads[-2:] = [max(0, before), max(0, after)]
    return x.pad(pads, value)


def _floated(x: Tensor) -> Tensor:
    """x as floats (f64 where the device has it, so int values stay exact)."""
    if x.kind is Kind.FLOAT:
        return x
    return x.cast(DType.F64) if x.device.supports(DType.F64) else x.float()


def _restore(y: Tensor, like: Tensor) -> Tensor:
    """A float result back in `like`'s dtype (rounded and clamped for integers)."""
    if y.dtype is like.dtype:
        return y
    if like.kind is Kind.FLOAT:
        return y.cast(like.dtype)
    lo, hi = like.dtype.bounds
    return y.round().clamp(lo, hi).cast(like.dtype)


# ---- convolution --------------------------------------------------------------------------------
def _conv(x: Tensor, w: Tensor, st: list[int], dl: list[int], pairs: list[tuple[int, int]],
          group: int) -> Tensor:
    """Convolution without bias over any number of spatial dims (3-d and up as sums of 2-d)."""
    n = w.ndim - 2
    if n == 1:
        y = F.conv2d(_to_2d(x), _to_2d(w), None, stride=(1, st[0]), dilation=(1, dl[0]),
                     padding=((0, 0), pairs[0]), groups=group)
        return y.squeeze_dims([2])
    if n == 2:
        return F.conv2d(x, w, None, stride=st, dilation=dl, padding=tuple(pairs), groups=group)
    x = _pad_dim(x, 2, *pairs[0])
    batch, k = x.shape[0], w.shape[2]
    out = (x.shape[2] - dl[0] * (k - 1) - 1) // st[0] + 1
    total: Tensor | None = None
    for j in range(k):
        start = j * dl[0]
        planes = x.slice([None, None, slice(start, start + (out - 1) * st[0] + 1, st[0])])
        planes = planes.movedim(2, 1).reshape((batch * out,) + x.shape[1:2] + x.shape[3:])
        y = _conv(planes, w.narrow(2, j, 1).squeeze_dims([2]), st[1:], dl[1:], pairs[1:],
                  group)
        total = y if total is None else total + y
    assert total is not None
    return total.reshape((batch, out) + total.shape[1:]).movedim(1, 2)


def _bias(y: Tensor, b: Tensor | None) -> Tensor:
    """y plus a per-channel bias (dim 1)."""
    if b is None:
        return y
    return y + b.cast(y.dtype).reshape([-1] + [1] * (y.ndim - 2))


def _check_kernel(kernel_shape: Sequence[int] | None, w: Tensor) -> None:
    """The attribute, when given, must say what the weight's shape says (ONNX infers it from
    the weight; a file where they disagree is corrupt or hand-edited)."""
    if kernel_shape is not None and list(kernel_shape) != list(w.shape[2:]):
        raise OnnxError(f"kernel_shape {list(kernel_shape)} disagrees with the weight's "
                        f"spatial shape {list(w.shape[2:])} (weight {list(w.shape)}); the "
                        f"file is corrupt")


@op("Conv")
def conv(x: Tensor, w: Tensor, b: Tensor | None = None, *, auto_pad: str = "NOTSET",
         dilations: Sequence[int] | None = None, group: int = 1,
         kernel_shape: Sequence[int] | None = None, pads: Sequence[int] | None = None,
         strides: Sequence[int] | None = None) -> Tensor:
    """N-d convolution, ONNX layout: x (N, C, *), w (M, C/group, *k)."""
    n = w.ndim - 2
    _check_kernel(kernel_shape, w)
    kernel = list(kernel_shape or w.shape[2:])
    st = list(strides or [1] * n)
    dl = list(dilations or [1] * n)
    pairs = auto_pads(auto_pad, x.shape[2:], kernel, st, dl, pads)
    if n == 2:
        return F.conv2d(x, w, b, stride=st, dilation=dl, padding=tuple(pairs), groups=group)
    return _bias(_conv(x, w, st, dl, pairs, group), b)


def _conv_transpose(x: Tensor, w: Tensor, st: list[int], dl: list[int], group: int
                    ) -> Tensor:
    """Unpadded transposed convolution, no bias, any rank: (in-1)*stride + (k-1)*dil + 1."""
    n = w.ndim - 2
    if n == 1:
        y = F.conv_transpose2d(_to_2d(x), _to_2d(w), None, stride=(1, st[0]),
                               dilation=(1, dl[0]), groups=group)
        return y.squeeze_dims([2])
    if n == 2:
        return F.conv_transpose2d(x, w, None, stride=st, dilation=dl, groups=group)
    batch, depth, k = x.shape[0], x.shape[2], w.shape[2]
    planes = x.movedim(2, 1).reshape((batch * depth,) + x.shape[1:2] + x.shape[3:])
    size = (depth - 1) * st[0] + (k - 1) * dl[0] + 1
    total: Tensor | None = None
    for j in range(k):
        y = _conv_transpose(planes, w.narrow(2, j, 1).squeeze_dims([2]), st[1:], dl[1:],
                            group)
        y = y.reshape((batch, depth) + y.shape[1:])
        if st[0] > 1:  # spread the planes stride apart: zeros in between
            y = _pad_dim(y.unsqueeze_dim(2), 2, 0, st[0] - 1)
            y = y.reshape((batch, depth * st[0]) + y.shape[3:]).narrow(1, 0, (depth - 1)
                                                                       * st[0] + 1)
        y = _pad_dim(y, 1, j * dl[0], size - y.shape[1] - j * dl[0])
        total = y if total is None else total + y
    assert total is not None
    return total.movedim(1, 2)


@op("ConvTranspose")
def conv_transpose(x: Tensor, w: Tensor, b: Tensor | None = None, *, auto_pad: str = "NOTSET",
                   dilations: Sequence[int] | None = None, group: int = 1,
                   kernel_shape: Sequence[int] | None = None,
                   output_padding: Sequence[int] | None = None,
                   output_shape: Sequence[int] | None = None, pads: Sequence[int] | None = None,
                   strides: Sequence[int] | None = None) -> Tensor:
    """N-d transposed convolution, ONNX layout: w (C, M/group, *k)."""
    n = w.ndim - 2
    _check_kernel(kernel_shape, w)
    st = list(strides or [1] * n)
    dl = list(dilations or [1] * n)
    extra = list(output_padding or [0] * n)
    y = _conv_transpose(x, w, st, dl, group)
    full_size = list(y.shape[2:])
    if output_shape or (auto_pad in ("SAME_UPPER", "SAME_LOWER") and not pads):
        want = list(output_shape or [s * t for s, t in zip(x.shape[2:], st, strict=True)])
        want = want[-n:]
        pairs = []
        for f, e, o in zip(full_size, extra, want, strict=True):
            total = f + e - o
            small, big = total // 2, total - total // 2
            pairs.append((small, big) if auto_pad == "SAME_UPPER" else (big, small))
    else:
        pairs = [(0, 0)] * n if auto_pad == "VALID" else spatial_pads(pads, n)
    for i, ((lo, hi), e) in enumerate(zip(pairs, extra, strict=True)):
        y = _pad_dim(y, 2 + i, -lo, e - hi)
    return _bias(y, b)


# ---- pooling ------------------------------------------------------------------------------------
class _Axis(NamedTuple):
    """One pooled dim: size, window, stride, dilation, pads, output size, ceil-mode extras."""

    size: int
    k: int
    s: int
    d: int
    lo: int
    hi: int
    out: int
    front: int
    back: int


def _geometry(x: Tensor, kernel: Sequence[int], strides: Sequence[int] | None,
              pads: Sequence[int] | None, auto_pad: str, dilations: Sequence[int] | None,
              ceil_mode: int, split_extra: bool) -> list[_Axis]:
    """The pooling geometry ONNX's reference computes, one _Axis per spatial dim."""
    n = len(kernel)
    st = list(strides or [1] * n)
    dl = list(dilations or [1] * n)
    pairs = spatial_pads(pads, n)
    out: list[_Axis] = []
    for i, (size, k, s, d) in enumerate(zip(x.shape[2:], kernel, st, dl, strict=True)):
        span = d * (k - 1) + 1
        lo, hi = pairs[i]
        if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
            count = -(-size // s)
            total = max(0, (count - 1) * s + span - size)
            lo, hi = total // 2, total - total // 2
            if auto_pad == "SAME_LOWER":
                lo, hi = hi, lo
        elif auto_pad == "VALID":
            lo = hi = 0
            count = (size - span) // s + 1
        elif ceil_mode:
            count = -(-(size + lo + hi - span) // s) + 1
            if (count - 1) * s >= size + lo:
                count -= 1
        else:
            count = (size + lo + hi - span) // s + 1
        extra = max(0, (count - 1) * s + span - size - lo - hi)
        front = extra // 2 if split_extra else 0
        out.append(_Axis(size, k, s, d, lo, hi, count, front, extra - front))
    return out


def _padded(x: Tensor, geo: list[_Axis], value: float) -> Tensor:
    """x padded with `value` as the pooling geometry says."""
    for i, g in enumerate(geo):
        x = _pad_dim(x, 2 + i, g.lo + g.front, g.hi + g.back, value)
    return x


def _windows(xp: Tensor, geo: list[_Axis]) -> Iterator[tuple[tuple[int, ...], Tensor]]:
    """(kernel offset, the strided view of xp each window reads at that offset)."""
    for offs in itertools.product(*(range(g.k) for g in geo)):
        ranges: list[Any] = [None, None]
        ranges += [slice(j * g.d, j * g.d + (g.out - 1) * g.s + 1, g.s)
                   for j, g in zip(offs, geo, strict=True)]
        yield offs, xp.slice(ranges)


def _grid(values: Sequence[Sequence[float]], like: Tensor, dtype: DType,
          product: bool = False) -> Tensor:
    """The outer sum (or product) of per-dim host vectors, shaped (1, 1, *lengths)."""
    n = len(values)
    out: Tensor | None = None
    for i, v in enumerate(values):
        shape = [1, 1] + [len(v) if j == i else 1 for j in range(n)]
        t = tensor(list(v), device=like.device, dtype=dtype).reshape(shape)
        out = t if out is None else (out * t if product else out + t)
    assert out is not None
    return out


def _lowest(x: Tensor) -> float:
    """The padding value max pooling never picks."""
    return -math.inf if x.kind is Kind.FLOAT else x.dtype.bounds[0]


def _max_windows(x: Tensor, geo: list[_Axis], storage_order: int) -> tuple[Tensor, Tensor]:
    """Window maxima and ONNX indices (flat over the whole input, first maximum wins)."""
    xp = _padded(x, geo, _lowest(x))
    best: Tensor | None = None
    index: Tensor | None = None
    order = range(len(geo)) if storage_order else reversed(range(len(geo)))
    step, strides = 1, [0] * len(geo)
    for i in order:
        strides[i], step = step, step * geo[i].size
    for offs, v in _windows(xp, geo):
        pos = [[(o * g.s + j * g.d - g.lo) * strides[i] for o in range(g.out)]
               for i, (j, g) in enumerate(zip(offs, geo, strict=True))]
        at = _grid(pos, x, x.device.int_dtype).expand(v.shape)
        if best is None or index is None:
            best, index = v, at
            continue
        better = v.greater(best)
        best, index = best.mask_where(better, v), index.mask_where(better, at)
    assert best is not None and index is not None
    planes = math.prod(x.shape[:2])
    base = arange(0, planes, device=x.device).cast(index.dtype) * step
    index = index + base.reshape(list(x.shape[:2]) + [1] * len(geo))
    return best, _i64(index)


def _i64(idx: Tensor) -> Tensor:
    """Indices as int64 where the device has it (ONNX's index type)."""
    return idx.cast(DType.I64) if idx.device.supports(DType.I64) else idx


def _counts(geo: list[_Axis], include_pad: int) -> list[list[float]]:
    """Per dim and output position, how many window entries the average divides by."""
    out = []
    for g in geo:
        bound = g.size + g.lo + g.hi
        first, last = g.front + g.lo, g.front + g.lo + g.size
        row = []
        for o in range(g.out):
            taps = [o * g.s + j * g.d for j in range(g.k)]
            taps = [p for p in taps if p < bound]
            if not include_pad:
                taps = [p for p in taps if first <= p < last]
            row.append(float(max(1, len(taps))))
        out.append(row)
    return out


def _sum_windows(xp: Tensor, geo: list[_Axis]) -> Tensor:
    """The sum over every window of the padded input."""
    total: Tensor | None = None
    for _, v in _windows(xp, geo):
        total = v if total is None else total + v
    assert total is not None
    return total


def _fast_2d(x: Tensor, geo: list[_Axis], avg: bool) -> bool:
    """Whether pyrite's own 1-d/2-d pooling computes exactly what ONNX asks."""
    return (x.kind is Kind.FLOAT and len(geo) in (1, 2)
            and all(max(g.lo, g.hi) <= g.k // 2 and g.front == 0 for g in geo)
            and not (avg and any(g.d != 1 for g in geo)))


@op("MaxPool")
def max_pool(x: Tensor, *, kernel_shape: Sequence[int], strides: Sequence[int] | None = None,
             pads: Sequence[int] | None = None, auto_pad: str = "NOTSET", ceil_mode: int = 0,
             dilations: Sequence[int] | None = None, storage_order: int = 0,
             outputs: int = 2) -> tuple[Tensor, ...]:
    """Max pooling over any number of spatial dims; also the flat int64 Indices when the
    node asks for them."""
    geo = _geometry(x, kernel_shape, strides, pads, auto_pad, dilations, ceil_mode, False)
    if not _fast_2d(x, geo, avg=False) or storage_order:
        return _max_windows(x, geo, storage_order)
    ceil = bool(ceil_mode) and auto_pad in ("NOTSET", "")
    k = [g.k for g in geo]
    st = [g.s for g in geo]
    dl = [g.d for g in geo]
    pairs = [(g.lo, g.hi) for g in geo]
    if outputs < 2:
        if len(k) == 1:
            return (F.max_pool2d(_to_2d(x), (1, k[0]), stride=(1, st[0]),
                                 padding=((0, 0), pairs[0]), dilation=(1, dl[0]),
                                 ceil_mode=ceil).squeeze_dims([2]),)
        return (F.max_pool2d(x, k, stride=st, padding=tuple(pairs), dilation=dl,
                             ceil_mode=ceil),)
    if len(k) == 1:
        y, idx = F.max_pool2d_with_indices(_to_2d(x), (1, k[0]), stride=(1, st[0]),
                                           padding=((0, 0), pairs[0]), dilation=(1, dl[0]),
                                           ceil_mode=ceil)
        y, idx = y.squeeze_dims([2]), idx.squeeze_dims([2])
    else:
        y, idx = F.max_pool2d_with_indices(x, k, stride=st, padding=tuple(pairs), dilation=dl,
                                           ceil_mode=ceil)
    planes = math.prod(x.shape[:2])
    base = arange(0, planes, device=x.device).cast(idx.dtype) * math.prod(x.shape[2:])
    return y, _i64(idx + base.reshape(list(x.shape[:2]) + [1] * len(k)))


@op("AveragePool")
def average_pool(x: Tensor, *, kernel_shape: Sequence[int],
                 strides: Sequence[int] | None = None, pads: Sequence[int] | None = None,
                 auto_pad: str = "NOTSET", ceil_mode: int = 0, count_include_pad: int = 0,
                 dilations: Sequence[int] | None = None) -> Tensor:
    """Average pooling over any number of spatial dims."""
    geo = _geometry(x, kernel_shape, strides, pads, auto_pad, dilations, ceil_mode, True)
    if _fast_2d(x, geo, avg=True):
        ceil = bool(ceil_mode) and auto_pad in ("NOTSET", "")
        k = [g.k for g in geo]
        st = [g.s for g in geo]
        pairs = [(g.lo, g.hi) for g in geo]
        if len(k) == 1:
            y = F.avg_pool2d(_to_2d(x), (1, k[0]), stride=(1, st[0]),
                             padding=((0, 0), pairs[0]), ceil_mode=ceil,
                             count_include_pad=bool(count_include_pad))
            return y.squeeze_dims([2])
        return F.avg_pool2d(x, k, stride=st, padding=tuple(pairs), ceil_mode=ceil,
                            count_include_pad=bool(count_include_pad))
    xf = _floated(x)
    total = _sum_windows(_padded(xf, geo, 0.0), geo)
    counts = _grid(_counts(geo, count_include_pad), xf, xf.dtype, product=True)
    return _restore(total / counts, x)


@op("LpPool")
def lp_pool(x: Tensor, *, kernel_shape: Sequence[int], strides: Sequence[int] | None = None,
            pads: Sequence[int] | None = None, auto_pad: str = "NOTSET", ceil_mode: int = 0,
            dilations: Sequence[int] | None = None, p: int = 2) -> Tensor:
    """(sum over each window of |x|^p)^(1/p); padding counts as zeros."""
    geo = _geometry(x, kernel_shape, strides, pads, auto_pad, dilations, ceil_mode, True)
    xf = _floated(x)
    powered = xf * xf if p == 2 else xf.abs().powf(float(p))
    total = _sum_windows(_padded(powered, geo, 0.0), geo)
    return _restore(total.sqrt() if p == 2 else total.powf(1.0 / p), x)


@op("GlobalAveragePool")
def global_average_pool(x: Tensor) -> Tensor:
    """Mean over every spatial dim, kept as size 1."""
    if x.ndim == 4 and x.dtype.kind is Kind.FLOAT:
        # one pass, one invocation per (n, c): a mean per dim runs two reductions, each a
        # workgroup (and its barriers) per output row, which SwiftShader takes 1.5 s over for
        # SqueezeNet's 1000 x 14 x 14 (the /classify page)
        return F.adaptive_avg_pool2d(x, 1)
    for d in range(2, x.ndim):
        x = x.mean_dim(d)
    return x


@op("GlobalMaxPool")
def global_max_pool(x: Tensor) -> Tensor:
    """Max over every spatial dim, kept as size 1."""
    for d in range(2, x.ndim):
        x = x.max_dim(d)
    return x


@op("GlobalLpPool")
def global_lp_pool(x: Tensor, *, p: int = 2) -> Tensor:
    """(sum of |x|^p over every spatial dim)^(1/p), kept as size 1."""
    y = x * x if p == 2 else x.abs().powf(float(p))
    for d in range(2, x.ndim):
        y = y.sum_dim(d)
    return y.sqrt() if p == 2 else y.powf(1.0 / p)


# ---- matrix products ----------------------------------------------------------------------------
def _mm(a: Tensor, b: Tensor) -> Tensor:
    """a @ b (numpy's matmul rules); integer operands are multiplied as floats."""
    if a.kind is Kind.FLOAT and b.kind is Kind.FLOAT:
        return a.matmul(b)
    return _restore(_floated(a).matmul(_floated(b)), a)


@op("MatMul")
def matmul(a: Tensor, b: Tensor) -> Tensor:
    """Matrix product with numpy's rules: batch dims broadcast, 1-d operands."""
    return _mm(a, b)


@op("Gemm")
def gemm(a: Tensor, b: Tensor, c: Tensor | None = None, *, alpha: float = 1.0,
         beta: float = 1.0, transA: int = 0, transB: int = 0) -> Tensor:  # noqa: N803
    """alpha * A' @ B' + beta * C, C broadcast to the result."""
    y = _mm(a.transpose() if transA else a, b.transpose() if transB else b)
    if alpha != 1.0:
        y = y * alpha
    if c is None:
        return y
    c = c.cast(y.dtype)
    return y + (c * beta if beta != 1.0 else c)


# ---- dropout ------------------------------------------------------------------------------------
@op("Dropout", host=(1, 2), attr_inputs=(12, ("ratio",)))
def dropout(data: Tensor, ratio: Any = None, training_mode: Any = None, *,
            seed: int | None = None, is_test: int = 0, opset: int = 13
            ) -> tuple[Tensor, Tensor]:
    """Identity and an all-true mask; in training mode, random drop and 1/(1-ratio) scaling."""
    rate = 0.5 if ratio is None else float(scalar(floats(ratio)) or 0.0)
    training = opset >= 12 and bool(scalar(ints(training_mode)) or 0)
    keep = full(data.shape, True, device=data.device)
    if training and rate > 0:
        if seed is not None:
            reseed(int(seed), device=data.device)
        keep = _floated(data).random_like(Uniform(0.0, 1.0)).greater_equal(rate)
        data = data * keep.cast(data.dtype) * (1.0 / (1.0 - rate))
    return data, keep if opset >= 10 else keep.cast(data.dtype)


# ---- resize -------------------------------------------------------------------------------------
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
    y = x if mode == "nearest" else _floated(x)
    for i, d in enumerate(dims):
        crop = (box[i], box[i + len(dims)]) if len(box) == 2 * len(dims) else (0.0, 1.0)
        if math.isclose(sc[i], 1.0) and out[i] == x.shape[d] and crop == (0.0, 1.0):
            continue
        plan = _taps(x.shape[d], out[i], sc[i], crop, how)
        y = _resample(y, d, plan, mode == "nearest", how["fill"])
    return _restore(y, x)


@op("Upsample", host=(1,), attr_inputs=(9, ("scales",)))
def upsample(x: Tensor, scales: Any, *, mode: str = "nearest") -> Tensor:
    """Resize by scales with asymmetric coordinates (nearest rounds down)."""
    how = {"ctm": "asymmetric", "mode": "linear" if mode == "bilinear" else mode,
           "nearest": "floor", "a": -0.75, "antialias": 0, "exclude": 0, "fill": 0.0,
           "policy": "stretch"}
    return _resize(x, None, scales, None, None, how)


# ---- einsum -------------------------------------------------------------------------------------
_ELLIPSIS = [chr(0x3b1 + i) for i in range(24)]  # stand-ins for the dims "..." covers


def _terms(equation: str, ranks: list[int]) -> tuple[list[str], str]:
    """The operands' and the output's subscripts, "..." spelled out as one letter per dim."""
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(ranks):
        raise ValueError(f"Einsum equation {equation!r} names {len(terms)} operands, "
                         f"got {len(ranks)}")
    widths = [r - len(t.replace("...", "")) for t, r in zip(terms, ranks, strict=True)]
    most = max([w for t, w in zip(terms, widths, strict=True) if "..." in t] or [0])
    ell = _ELLIPSIS[:most]
    terms = [t.replace("...", "".join(ell[most - w:])) for t, w in zip(terms, widths,
                                                                        strict=True)]
    if arrow:
        return terms, rhs.replace("...", "".join(ell))
    letters = "".join(terms)
    once = sorted(c for c in set(letters) if letters.count(c) == 1 and c not in ell)
    return terms, "".join(ell) + "".join(once)


def _diagonal(x: Tensor, term: str) -> tuple[Tensor, str]:
    """x with every repeated subscript reduced to its diagonal (the letter moves last)."""
    while True:
        twice = next((c for c in term if term.count(c) > 1), None)
        if twice is None:
            return x, term
        p = term.index(twice)
        q = term.index(twice, p + 1)
        n = x.shape[p]
        x = x.movedim([p, q], [-2, -1])
        x = x.reshape(x.shape[:-2] + (n * n,)).select(-1, [i * (n + 1) for i in range(n)])
        term = "".join(c for i, c in enumerate(term) if i not in (p, q)) + twice


def _sum_out(x: Tensor, term: str, keep: set[str]) -> tuple[Tensor, str]:
    """Sum over the subscripts not in `keep`."""
    drop = [i for i, c in enumerate(term) if c not in keep]
    for i in drop:
        x = x.sum_dim(i)
    if drop:
        x = x.squeeze_dims(drop)
    return x, "".join(c for c in term if c in keep)


def _contract(a: Tensor, la: str, b: Tensor, lb: str, keep: set[str]) -> tuple[Tensor, str]:
    """The product of two operands summed over their shared subscripts not in `keep`."""
    a, la = _sum_out(a, la, keep | set(lb))
    b, lb = _sum_out(b, lb, keep | set(la))
    batch = [c for c in la if c in lb and c in keep]
    summed = [c for c in la if c in lb and c not in keep]
    mine = [c for c in la if c not in lb]
    theirs = [c for c in lb if c not in la]
    for c in summed:  # a size-1 dim broadcast against the other's: sum the other first
        i, j = la.index(c), lb.index(c)
        if a.shape[i] != b.shape[j]:
            a, b = (a, b.sum_dim(j)) if a.shape[i] == 1 else (a.sum_dim(i), b)
    a = a.permute([la.index(c) for c in batch + mine + summed])
    b = b.permute([lb.index(c) for c in batch + summed + theirs])
    nb, nm, ns = len(batch), len(mine), len(summed)
    a2 = a.reshape(a.shape[:nb] + (math.prod(a.shape[nb:nb + nm]), math.prod(a.shape[nb + nm:])))
    b2 = b.reshape(b.shape[:nb] + (math.prod(b.shape[nb:nb + ns]), math.prod(b.shape[nb + ns:])))
    c2 = _mm(a2, b2)
    out = c2.reshape(c2.shape[:nb] + a.shape[nb:nb + nm] + b.shape[nb + ns:])
    return out, "".join(batch + mine + theirs)


@op("Einsum")
def einsum(*xs: Tensor, equation: str) -> Tensor:
    """Einstein summation: diagonals, sums, transposes and products of the operands."""
    terms, out = _terms(equation, [x.ndim for x in xs])
    parts = [_diagonal(x, t) for x, t in zip(xs, terms, strict=True)]
    y, ly = parts[0]
    rest = [t for _, t in parts[1:]]
    y, ly = _sum_out(y, ly, set(out).union(*rest))
    for k, (x, lx) in enumerate(parts[1:], 1):
        keep = set(out).union(*(t for _, t in parts[k + 1:]))
        y, ly = _contract(y, ly, x, lx, keep)
    return y.permute([ly.index(c) for c in out]) if ly != out else y


# ---- attention ----------------------------------------------------------------------------------
def _heads(x: Tensor, n: int | None) -> Tensor:
    """(B, S, n * D) as (B, n, S, D); 4-d input as given."""
    if x.ndim == 4:
        return x
    if not n:
        raise ValueError("Attention with 3-d inputs needs q_num_heads and kv_num_heads")
    b, s, h = x.shape
    return x.reshape((b, s, n, h // n)).swap_dims(1, 2)


def _neg_inf_where_not(allowed: Tensor, dtype: DType) -> Tensor:
    """0 where allowed, -inf elsewhere, as a `dtype` bias."""
    return full(allowed.shape, 0.0, device=allowed.device, dtype=dtype).mask_fill(
        allowed.bool_not(), -math.inf)


def _positions(q_len: int, past: int, nonpad: Tensor | None, like: Tensor) -> Tensor:
    """Each query's absolute position: (Sq, 1), or (B, 1, Sq, 1) given per-batch lengths."""
    i = arange(0, q_len, device=like.device)
    if nonpad is None:
        return (i + past).reshape((q_len, 1))
    start = nonpad.cast(i.dtype).reshape((-1, 1, 1, 1)) - q_len
    return start + i.reshape((1, 1, q_len, 1))


def _bias_of(q: Tensor, kv_len: int, mask: Tensor | None, past: int, nonpad: Tensor | None,
             causal: int, left: int, right: int) -> Tensor:
    """The additive attention bias: mask, causal frontier, window and key padding."""
    dtype, q_len = q.dtype, q.shape[2]
    bias = full((q_len, kv_len), 0.0, device=q.device, dtype=dtype)
    if mask is not None:
        if mask.shape[-1] < kv_len:
            fill = False if mask.kind is Kind.BOOL else -math.inf
            mask = _pad_dim(mask, mask.ndim - 1, 0, kv_len - mask.shape[-1], fill)
        bias = bias + (_neg_inf_where_not(mask, dtype) if mask.kind is Kind.BOOL
                       else mask.cast(dtype))
    if causal or left >= 0 or right >= 0:
        pos = _positions(q_len, past, nonpad if past == 0 else None, q)
        diff = pos - arange(0, kv_len, device=q.device).cast(pos.dtype).reshape((1, kv_len))
        allowed = diff.greater_equal(0) if causal else full(diff.shape, True, device=q.device)
        if left >= 0:
            allowed = allowed.bool_and(diff.lower_equal(left))
        if right >= 0:
            allowed = allowed.bool_and(diff.greater_equal(-right))
        bias = bias + _neg_inf_where_not(allowed, dtype)
    if nonpad is not None:
        j = arange(0, kv_len, device=q.device).cast(nonpad.dtype).reshape((1, kv_len))
        keep = j.lower(nonpad.reshape((-1, 1))).reshape((-1, 1, 1, kv_len))
        bias = bias + _neg_inf_where_not(keep, dtype)
    return bias


def _repeat_heads(x: Tensor, times: int) -> Tensor:
    """Each head repeated `times` times in place (grouped-query attention)."""
    if times == 1:
        return x
    b, h, s, d = x.shape
    return x.unsqueeze_dim(2).expand((b, h, times, s, d)).reshape((b, h * times, s, d))


def _attend(logits: Tensor, bias: Tensor, precision: int | None) -> Tensor:
    """Softmax over keys (in `precision` if given); rows with every key masked give 0."""
    if precision is not None:
        logits = logits.cast(dtype_of(precision))
    dead = bias.max_dim(-1).equal_elem(-math.inf)
    return logits.softmax(-1).mask_fill(dead, 0.0)


@op("Attention")
def attention(q: Tensor, k: Tensor, v: Tensor, attn_mask: Tensor | None = None,
              past_key: Tensor | None = None, past_value: Tensor | None = None,
              nonpad_kv_seqlen: Tensor | None = None, *, is_causal: int = 0,
              kv_num_heads: int | None = None, q_num_heads: int | None = None,
              qk_matmul_output_mode: int = 0, scale: float | None = None,
              softcap: float = 0.0, softmax_precision: int | None = None,
              left_window_size: int = -1, right_window_size: int = -1,
              outputs: int = 4) -> tuple[Tensor, ...]:
    """Scaled dot-product attention (MHA/GQA/MQA): Y, present K and V, the QK output.

    Without softcap, f16, a softmax precision other than the inputs' or the QK output, this is
    pyrite's `attention` op (flash attention's kernels on webgpu: the scores never reach
    memory); otherwise the scores are computed here."""
    three_d = q.ndim == 3
    q, k, v = _heads(q, q_num_heads), _heads(k, kv_num_heads), _heads(v, kv_num_heads)
    past = 0 if past_key is None else past_key.shape[2]
    if past_key is not None and past_value is not None:
        k, v = Tensor.cat([past_key, k], 2), Tensor.cat([past_value, v], 2)
    present_k, present_v = k, v
    k, v = _repeat_heads(k, q.shape[1] // k.shape[1]), _repeat_heads(v, q.shape[1] // v.shape[1])
    # f16 keeps the composite below: ONNX's reference rounds its scaled q and k to f16
    if outputs < 4 and softcap <= 0 and q.dtype is not DType.F16 and (
            softmax_precision is None or dtype_of(softmax_precision) is q.dtype):
        # causal alone, with ONNX's frontier the op's (query i at position past + i, as many
        # new keys as queries): the op's causal flag, no bias tensor, the hidden tiles skipped
        if is_causal and k.shape[2] == past + q.shape[2] and attn_mask is None and (
                nonpad_kv_seqlen is None and left_window_size < 0 and right_window_size < 0):
            y = F.attention(q, k, v, scale=scale, causal=True)
            return (_merge_heads(y, three_d), present_k, present_v)[:max(outputs, 1)]
        bias = _bias_of(q, k.shape[2], attn_mask, past, nonpad_kv_seqlen, is_causal,
                        left_window_size, right_window_size)
        bias4 = bias.reshape((1,) * (4 - bias.ndim) + bias.shape)
        y = F.attention(q, k, v, bias4, scale=scale)
        y = y.mask_fill(bias4.max_dim(-1).equal_elem(-math.inf), 0.0)  # every key masked
        return (_merge_heads(y, three_d), present_k, present_v)[:max(outputs, 1)]
    bias = _bias_of(q, k.shape[2], attn_mask, past, nonpad_kv_seqlen, is_causal,
                    left_window_size, right_window_size)
    root = math.sqrt(scale if scale is not None else 1 / math.sqrt(q.shape[3]))
    scores = (q * root).matmul((k * root).swap_dims(-1, -2))
    if softcap > 0:
        scores = (scores / softcap).tanh() * softcap
    biased = scores + bias
    probs = _attend(biased, bias, softmax_precision).cast(q.dtype)
    debug = {0: scores, 1: scores, 2: biased, 3: probs}[qk_matmul_output_mode]
    y = probs.matmul(v)
    return _merge_heads(y, three_d), present_k, present_v, debug.cast(q.dtype)


def _merge_heads(y: Tensor, three_d: bool) -> Tensor:
    """(B, n, S, D) back as (B, S, n * D) for 3-d inputs; 4-d as is."""
    if not three_d:
        return y
    y = y.swap_dims(1, 2)
    return y.reshape(y.shape[:2] + (-1,))
