"""Image operators: sampling grids, unpooling, column folding, ROI pooling, NMS, Det."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

from ....creation import arange, cat, full, stack, zeros
from ....dtype import DType
from ....tensor import Tensor
from ..registry import op
from ._util import ints, pad_dim, scalar
from .shape import int64

_CUBIC_A = -0.75


def coord_dtype(x: Tensor) -> DType:
    """The float dtype coordinates are computed in: x's if f64, else f32."""
    return DType.F64 if x.dtype is DType.F64 else DType.F32


def where(mask: Tensor, yes: Tensor | float, no: Tensor) -> Tensor:
    """`yes` where mask is true, else `no`."""
    if isinstance(yes, Tensor):
        return no.mask_where(mask, yes)
    return no.mask_fill(mask, yes)


# ---- GridSample ---------------------------------------------------------------------------------
def _denormalize(g: Tensor, size: int, align_corners: int) -> Tensor:
    """A grid coordinate in [-1, 1] as a pixel coordinate along a dim of `size`."""
    if align_corners:
        return (g + 1.0) * ((size - 1) / 2.0)
    return ((g + 1.0) * size - 1.0) / 2.0


def _reflect(x: Tensor, lo: float, hi: float) -> Tensor:
    """Coordinates outside [lo, hi] mirrored back inside, bouncing between the borders."""
    span = hi - lo
    if span <= 0:
        return x * 0.0 + lo
    below, above = x.lower(lo), x.greater(hi)
    dx = where(above, x - hi, x.neg() + lo)
    n = (dx / span).floor()
    r = dx - n * span
    odd = n.rem(2.0).equal_elem(1.0)
    from_low = where(odd, r.neg() + hi, r + lo)
    from_high = where(odd, r + lo, r.neg() + hi)
    return where(above, from_high, where(below, from_low, x))


def _borders(size: int, align_corners: int) -> tuple[float, float]:
    """The coordinate range a dim of `size` covers."""
    return (0.0, size - 1.0) if align_corners else (-0.5, size - 0.5)


def _fold_in(x: Tensor, size: int, align_corners: int, padding_mode: str) -> Tensor:
    """Out-of-range coordinates clamped (border) or reflected (reflection) as ONNX does."""
    lo, hi = _borders(size, align_corners)
    outside = x.lower(lo).bool_or(x.greater(hi))
    if padding_mode == "border":
        return where(outside, x.clamp(0.0, size - 1.0), x)
    if padding_mode == "reflection":
        return _reflect(x, lo, hi)
    return x


def _pixel(i: Tensor, size: int, align_corners: int, padding_mode: str
           ) -> tuple[Tensor, Tensor | None]:
    """An integral coordinate as an in-range index, plus a 0/1 weight for zero padding."""
    if padding_mode == "reflection":
        lo, hi = _borders(size, align_corners)
        i = _reflect(i, lo, hi)
    inside = None
    if padding_mode == "zeros":
        ok = i.greater_equal(0.0).bool_and(i.lower_equal(size - 1.0))
        inside = ok.cast(i.dtype)
    idx = i.clamp(0.0, size - 1.0).int()
    return idx, inside


def _cubic_weights(t: Tensor) -> list[Tensor]:
    """Keys' cubic convolution weights of the four taps around a fraction t in [0, 1)."""
    a = _CUBIC_A
    u, v, w = t + 1.0, t.neg() + 1.0, t.neg() + 2.0
    return [((u * a - 5 * a) * u + 8 * a) * u - 4 * a,
            ((t * (a + 2)) - (a + 3)) * t * t + 1.0,
            ((v * (a + 2)) - (a + 3)) * v * v + 1.0,
            ((w * a - 5 * a) * w + 8 * a) * w - 4 * a]


def _taps(x: Tensor, mode: str) -> list[tuple[Tensor, Tensor | None]]:
    """(integral coordinate, weight) of each tap one dim's interpolation reads."""
    if mode == "nearest":
        return [(x.round(), None)]
    base = x.floor()
    t = x - base
    if mode == "linear":
        return [(base, t.neg() + 1.0), (base + 1.0, t)]
    if mode in ("cubic", "bicubic"):
        return [(base + float(k - 1), w) for k, w in enumerate(_cubic_weights(t))]
    raise ValueError(f"GridSample mode {mode!r} is not one of nearest, linear, cubic")


@op("GridSample")
def grid_sample(x: Tensor, grid: Tensor, *, align_corners: int = 0, mode: str = "linear",
                padding_mode: str = "zeros", opset: int = 22) -> Tensor:
    """Sample x (N, C, *D) at the normalized grid points (N, *out, len(D))."""
    if opset < 20:
        mode = {"bilinear": "linear", "bicubic": "cubic"}.get(mode, mode)
    dims = list(x.shape[2:])
    nd = len(dims)
    g = grid.cast(coord_dtype(grid))
    per_dim = []
    for i, size in enumerate(dims):
        c = g.narrow(g.ndim - 1, nd - 1 - i, 1).squeeze_dims([g.ndim - 1])
        c = _denormalize(c, size, align_corners)
        if mode == "nearest":
            c = c.round()
        per_dim.append(_taps(_fold_in(c, size, align_corners, padding_mode), mode))
    n, ch = x.shape[:2]
    out_shape = list(grid.shape[1:-1])
    q = math.prod(out_shape)
    flat = x.cast(g.dtype).reshape([n, ch, math.prod(dims)])
    total: Tensor | None = None
    for combo in itertools.product(*per_dim):
        index: Tensor | None = None
        weight: Tensor | None = None
        stride = 1
        for i in reversed(range(nd)):
            coord, w = combo[i]
            idx, inside = _pixel(coord, dims[i], align_corners, padding_mode)
            part = idx * stride
            index = part if index is None else index + part
            for f in (w, inside):
                if f is not None:
                    weight = f if weight is None else weight * f
            stride *= dims[i]
        assert index is not None
        picked = flat.gather(2, index.reshape([n, 1, q]).expand([n, ch, q]))
        if weight is not None:
            picked = picked * weight.reshape([n, 1, q])
        total = picked if total is None else total + picked
    assert total is not None
    return total.reshape([n, ch] + out_shape).cast(x.dtype)


@op("AffineGrid", host=(1,))
def affine_grid(theta: Tensor, size: Any, *, align_corners: int = 0) -> Tensor:
    """The sampling grid (N, *dims, k) an affine map theta (N, k, k+1) sends the output to."""
    dims = (ints(size) or [])[2:]
    ftype = coord_dtype(theta) if not theta.device.supports(DType.F64) else DType.F64
    axes = []
    for i, s in enumerate(dims):
        j = arange(0, s, device=theta.device).cast(ftype)
        if align_corners:
            line = j * (2.0 / (s - 1)) - 1.0 if s > 1 else j - 1.0
        else:
            line = (j * 2.0 + 1.0) / float(s) - 1.0
        shape = [s if k == i else 1 for k in range(len(dims))]
        axes.append(line.reshape(shape).expand(dims))
    ones = full(dims, 1.0, device=theta.device, dtype=ftype)
    base = stack(axes[::-1] + [ones], -1).reshape([math.prod(dims), len(dims) + 1])
    out = base.matmul(theta.cast(ftype).swap_dims(1, 2))
    return out.reshape([theta.shape[0]] + list(dims) + [len(dims)]).cast(theta.dtype)


# ---- MaxUnpool, Col2Im ---------------------------------------------------------------------
@op("MaxUnpool", host=(2,))
def max_unpool(x: Tensor, indices: Tensor, output_shape: Any = None, *,
               kernel_shape: Sequence[int], pads: Sequence[int] | None = None,
               strides: Sequence[int] | None = None) -> Tensor:
    """Put each value back where MaxPool's flat indices say; zeros elsewhere."""
    n = len(kernel_shape)
    st = list(strides or [1] * n)
    pd = list(pads or [0] * (2 * n))
    inferred = list(x.shape[:2]) + [(s - 1) * t - pd[i] - pd[i + n] + k for i, (s, t, k) in
                                    enumerate(zip(x.shape[2:], st, kernel_shape, strict=True))]
    total = math.prod(inferred)
    idx = indices.reshape([-1])
    values = x.reshape([-1])
    y = zeros([total], device=x.device, dtype=x.dtype).scatter(0, idx, values)
    hits = zeros([total], device=x.device, dtype=x.dtype).scatter(0, idx, values.ones_like())
    y = (y / hits.clamp_min(1.0)).reshape(inferred)
    want = ints(output_shape)
    if want:
        for d in range(2, len(inferred)):
            y = pad_dim(y, d, 0, want[d] - inferred[d])
    return y


def _spread(y: Tensor, d: int, stride: int) -> Tensor:
    """y with stride-1 zeros between neighbours along dim d."""
    if stride == 1 or y.shape[d] <= 1:
        return y
    size = y.shape[d]
    y = pad_dim(y.unsqueeze_dim(d + 1), d + 1, 0, stride - 1)
    y = y.reshape(list(y.shape[:d]) + [size * stride] + list(y.shape[d + 2:]))
    return y.narrow(d, 0, (size - 1) * stride + 1)


@op("Col2Im", host=(1, 2))
def col2im(x: Tensor, image_shape: Any, block_shape: Any, *,
           dilations: Sequence[int] | None = None, pads: Sequence[int] | None = None,
           strides: Sequence[int] | None = None) -> Tensor:
    """Fold columns (N, C * prod(block), L) into images (N, C, *image), summing overlaps."""
    image = ints(image_shape) or []
    block = ints(block_shape) or []
    nd = len(image)
    dl = list(dilations or [1] * nd)
    pd = list(pads or [0] * (2 * nd))
    st = list(strides or [1] * nd)
    padded = [s + pd[i] + pd[i + nd] for i, s in enumerate(image)]
    counts = [(p - d * (k - 1) - 1) // t + 1 for p, d, k, t in zip(padded, dl, block, st,
                                                                    strict=True)]
    n, k = x.shape[0], math.prod(block)
    cols = x.reshape([n, x.shape[1] // k, k] + counts)
    total: Tensor | None = None
    for j, offs in enumerate(itertools.product(*(range(b) for b in block))):
        y = cols.narrow(2, j, 1).squeeze_dims([2])
        for i in range(nd):
            y = _spread(y, 2 + i, st[i])
            lo = offs[i] * dl[i]
            y = pad_dim(y, 2 + i, lo, padded[i] - lo - y.shape[2 + i])
        total = y if total is None else total + y
    assert total is not None
    for i in range(nd):
        total = pad_dim(total, 2 + i, -pd[i], -pd[i + nd])
    return total


# ---- RoiAlign -----------------------------------------------------------------------------------
def _roi_axis(start: Tensor, extent: Tensor, pooled: int, grid: int, counts: Tensor,
              size: int) -> tuple[list[tuple[Tensor, Tensor]], Tensor, Tensor]:
    """One axis's bilinear taps (R, pooled, grid), in-image samples, adaptive-grid samples."""
    bins = extent / float(pooled)
    p = arange(0, pooled, device=start.device).cast(start.dtype).reshape([1, pooled, 1])
    g = arange(0, grid, device=start.device).cast(start.dtype).reshape([1, 1, grid])
    c = counts.reshape([-1, 1, 1])
    pos = start.reshape([-1, 1, 1]) + p * bins.reshape([-1, 1, 1]) + (
        (g + 0.5) * bins.reshape([-1, 1, 1]) / c)
    valid = pos.greater_equal(-1.0).bool_and(pos.lower_equal(float(size)))
    used = g.lower(c)
    pos = pos.clamp_min(0.0)
    low = pos.floor()
    top = low.greater_equal(size - 1.0)
    low = where(top, float(size - 1), low)
    high = where(top, float(size - 1), low + 1.0)
    frac = where(top, 0.0, pos - low)
    return [(low, frac.neg() + 1.0), (high, frac)], valid, used


@op("RoiAlign")
def roi_align(x: Tensor, rois: Tensor, batch_indices: Tensor, *,
              coordinate_transformation_mode: str = "half_pixel", mode: str = "avg",
              output_height: int = 1, output_width: int = 1, sampling_ratio: int = 0,
              spatial_scale: float = 1.0, opset: int = 16) -> Tensor:
    """Pool each region of interest to (output_height, output_width) by bilinear samples."""
    half = opset >= 16 and coordinate_transformation_mode == "half_pixel"
    n_rois, ch, height, width = rois.shape[0], x.shape[1], x.shape[2], x.shape[3]
    ftype = coord_dtype(x)
    r = rois.cast(ftype) * spatial_scale - (0.5 if half else 0.0)
    x1, y1, x2, y2 = (r.narrow(1, i, 1).reshape([-1]) for i in range(4))
    h, w = y2 - y1, x2 - x1
    if not half:
        h, w = h.clamp_min(1.0), w.clamp_min(1.0)
    if sampling_ratio > 0:
        gh = gw = full([n_rois], float(sampling_ratio), device=x.device, dtype=ftype)
    else:
        gh, gw = (h / float(output_height)).ceil(), (w / float(output_width)).ceil()
    grid_h = max(1, int(scalar(gh.max()) or 0)) if n_rois else 1
    grid_w = max(1, int(scalar(gw.max()) or 0)) if n_rois else 1
    ys, vy, uy = _roi_axis(y1, h, output_height, grid_h, gh, height)
    xs, vx, ux = _roi_axis(x1, w, output_width, grid_w, gw, width)
    shape = [n_rois, output_height, grid_h, output_width, grid_w]
    q = math.prod(shape[1:])
    inside = (vy.reshape([n_rois, output_height, grid_h, 1, 1])
              .bool_and(vx.reshape([n_rois, 1, 1, output_width, grid_w])))
    planes = x.cast(ftype).select(0, batch_indices.reshape([-1]).int())
    flat = planes.reshape([n_rois, ch, height * width])
    parts = []
    for (iy, wy), (ix, wx) in itertools.product(ys, xs):
        index = (iy.reshape([n_rois, output_height, grid_h, 1, 1]) * float(width)
                 + ix.reshape([n_rois, 1, 1, output_width, grid_w]))
        weight = where(inside.bool_not(), 0.0,
                       wy.reshape([n_rois, output_height, grid_h, 1, 1])
                       * wx.reshape([n_rois, 1, 1, output_width, grid_w]))
        index = where(inside.bool_not(), 0.0, index).int()
        picked = flat.gather(2, index.reshape([n_rois, 1, q]).expand([n_rois, ch, q]))
        parts.append(picked * weight.reshape([n_rois, 1, q]))
    used = (uy.reshape([n_rois, 1, grid_h, 1, 1]).bool_and(ux.reshape([n_rois, 1, 1, 1, grid_w]))
            if sampling_ratio <= 0 else None)
    samples = [n_rois, ch, output_height, grid_h, output_width, grid_w]
    if mode == "max":
        best = stack(parts, 0).max_dim(0).squeeze_dims([0]).reshape(samples)
        if used is not None:
            best = where(used.unsqueeze_dim(1).bool_not(), -math.inf, best)
        y = best.max_dim(5).max_dim(3).squeeze_dims([3, 5])
    else:
        summed = parts[0]
        for p in parts[1:]:
            summed = summed + p
        summed = summed.reshape(samples)
        if used is not None:
            summed = where(used.unsqueeze_dim(1).bool_not(), 0.0, summed)
        count = (gh * gw).clamp_min(1.0).reshape([-1, 1, 1, 1])
        y = summed.sum_dim(5).sum_dim(3).squeeze_dims([3, 5]) / count
    return y.cast(x.dtype)


# ---- NonMaxSuppression --------------------------------------------------------------------------
def _corners(boxes: Tensor, center_point_box: int) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """(y_min, x_min, y_max, x_max) of each box, each (B, S)."""
    c = [boxes.narrow(2, i, 1).squeeze_dims([2]) for i in range(4)]
    if center_point_box:
        xc, yc, bw, bh = c
        return yc - bh / 2.0, xc - bw / 2.0, yc + bh / 2.0, xc + bw / 2.0
    return c[0].min_pair(c[2]), c[1].min_pair(c[3]), c[0].max_pair(c[2]), c[1].max_pair(c[3])


def _overlaps(boxes: Tensor, center_point_box: int, threshold: float) -> Tensor:
    """(B, S, S) bools: whether each pair of boxes overlaps by more than the IoU threshold."""
    y0, x0, y1, x1 = _corners(boxes.cast(coord_dtype(boxes)), center_point_box)
    iy0 = y0.unsqueeze_dim(2).max_pair(y0.unsqueeze_dim(1))
    ix0 = x0.unsqueeze_dim(2).max_pair(x0.unsqueeze_dim(1))
    iy1 = y1.unsqueeze_dim(2).min_pair(y1.unsqueeze_dim(1))
    ix1 = x1.unsqueeze_dim(2).min_pair(x1.unsqueeze_dim(1))
    ih, iw = (iy1 - iy0), (ix1 - ix0)
    inter = ih.clamp_min(0.0) * iw.clamp_min(0.0)
    area = (y1 - y0) * (x1 - x0)
    union = area.unsqueeze_dim(2) + area.unsqueeze_dim(1) - inter
    ok = (ih.greater(0.0).bool_and(iw.greater(0.0)).bool_and(inter.greater(0.0))
          .bool_and(area.unsqueeze_dim(2).greater(0.0)).bool_and(area.unsqueeze_dim(1)
                                                                 .greater(0.0))
          .bool_and(union.greater(0.0)))
    iou = inter / where(ok, union, union.ones_like())
    return ok.bool_and(iou.greater(threshold))


def _greedy(scores: list[float], overlap: list[bool], limit: int,
            threshold: float | None) -> list[int]:
    """The boxes one class keeps: best score first, each not overlapping a kept one."""
    s = len(scores)
    order = sorted((i for i in range(s) if threshold is None or scores[i] > threshold),
                   key=lambda i: (-scores[i], i))
    kept: list[int] = []
    for i in order:
        if len(kept) >= limit:
            break
        if not any(overlap[i * s + j] for j in kept):
            kept.append(i)
    return kept


@op("NonMaxSuppression", host=(2, 3, 4))
def non_max_suppression(boxes: Tensor, scores: Tensor, max_output_boxes_per_class: Any = None,
                        iou_threshold: Any = None, score_threshold: Any = None, *,
                        center_point_box: int = 0) -> Tensor:
    """Greedy per-class box selection: rows (batch, class, box) of the kept boxes."""
    limit = max(0, int(scalar(max_output_boxes_per_class) or 0))
    iou = float(scalar(iou_threshold) or 0.0)
    floor = scalar(score_threshold)
    batches, classes, s = scores.shape
    rows: list[int] = []
    if limit and s:
        overlap = _overlaps(boxes, center_point_box, iou).to_data().values()
        values = scores.cast(coord_dtype(scores)).to_data().values()
        for b, c in itertools.product(range(batches), range(classes)):
            at = (b * classes + c) * s
            kept = _greedy(values[at:at + s], overlap[b * s * s:(b + 1) * s * s], limit,
                           None if floor is None else float(floor))
            rows += [v for i in kept for v in (b, c, i)]
    return int64(rows, [len(rows) // 3, 3], boxes.device)


# ---- Det ----------------------------------------------------------------------------------------
def _swap_rows(a: Tensor, k: int, p: Tensor) -> Tensor:
    """Each matrix of a with row k and row p (per matrix, shape (..., 1)) exchanged."""
    n = a.shape[-1]
    rows = arange(0, n, device=a.device).cast(p.dtype).reshape([1] * (a.ndim - 2) + [n])
    rows = rows.expand(list(a.shape[:-2]) + [n])
    pivot = p.expand(rows.shape)
    idx = where(rows.equal_elem(k), pivot, rows.mask_fill(rows.equal(pivot), k))
    return a.gather(a.ndim - 2, idx.unsqueeze_dim(-1).expand(a.shape))


@op("Det")
def det(x: Tensor) -> Tensor:
    """Determinant of each square matrix of the last two dims, by LU with partial pivoting."""
    n = x.shape[-1]
    lead = list(x.shape[:-2])
    a = x.cast(DType.F64 if x.device.supports(DType.F64) else x.dtype)
    result = full(lead + [1], 1.0, device=x.device, dtype=a.dtype)
    for k in range(n):
        col = a.narrow(a.ndim - 1, k, 1).narrow(a.ndim - 2, k, n - k).squeeze_dims([a.ndim - 1])
        p = col.abs().argmax(a.ndim - 2) + k
        swapped = p.not_equal_elem(k)
        a = _swap_rows(a, k, p)
        result = where(swapped, result.neg(), result)
        pivot = a.narrow(a.ndim - 2, k, 1).narrow(a.ndim - 1, k, 1)
        result = result * pivot.reshape(lead + [1])
        if k + 1 < n:
            safe = where(pivot.equal_elem(0.0), 1.0, pivot)
            below = a.narrow(a.ndim - 2, k + 1, n - k - 1)
            factors = below.narrow(a.ndim - 1, k, 1) / safe
            below = below - factors * a.narrow(a.ndim - 2, k, 1)
            a = cat([a.narrow(a.ndim - 2, 0, k + 1), below], a.ndim - 2)
    return result.reshape(lead).cast(x.dtype)

