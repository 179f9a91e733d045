"""Deformable convolution: `deform_conv2d` (torchvision's layout, Burn's options)."""

from __future__ import annotations

from ...backend.module_ops import conv_out_size
from ...errors import ShapeError
from ...tensor import Tensor
from ._check import (
    IntOrSeq,
    Padding,
    _check_out,
    _match_dtype,
    _rank,
    _same_device,
    _tensor,
    resolve_padding,
    tuple_of,
)


def _groups(op: str, name: str, value: int, c_in: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ShapeError(f"{op}: {name} must be an int >= 1, got {value!r}")
    if c_in % value:
        raise ShapeError(f"{op}: {name}={value} must divide the input channels ({c_in})")


def deform_conv2d(x: Tensor, offset: Tensor, weight: Tensor, bias: Tensor | None = None, *,
                  mask: Tensor | None = None, stride: IntOrSeq = 1, padding: Padding = 0,
                  dilation: IntOrSeq = 1, weight_groups: int = 1,
                  offset_groups: int = 1) -> Tensor:
    """2-D deformable convolution: each kernel tap samples the input (bilinearly) at its
    place on the regular grid moved by a learned offset, scaled by an optional mask (DCN v2).

    Shapes: input (N, C_in, H, W), offset (N, 2*offset_groups*kh*kw, OH, OW) as (dy, dx)
    pairs per tap (torchvision's layout), weight (C_out, C_in/weight_groups, kh, kw),
    mask (N, offset_groups*kh*kw, OH, OW), bias (C_out,) -> (N, C_out, OH, OW), with OH, OW
    those of `conv2d`. Input channel c follows the offsets of group c // (C_in/offset_groups).
    Samples outside the input read zero, as in torchvision. Padding as `conv2d`'s.

    >>> from pyrite import ones, zeros
    >>> deform_conv2d(ones((1, 2, 5, 5)), zeros((1, 18, 3, 3)), ones((4, 2, 3, 3))).shape
    (1, 4, 3, 3)
    """
    op = "deform_conv2d"
    _tensor(op, "input", x)
    _tensor(op, "offset", offset)
    _tensor(op, "weight", weight)
    for name, t in (("mask", mask), ("bias", bias)):
        if t is not None:
            _tensor(op, name, t)
    _rank(op, "input", x, 4, "NCHW")
    _rank(op, "weight", weight, 4, "out, in/weight_groups, kh, kw")
    _rank(op, "offset", offset, 4, "N, 2*offset_groups*kh*kw, H_out, W_out")
    if mask is not None:
        _rank(op, "mask", mask, 4, "N, offset_groups*kh*kw, H_out, W_out")
    _same_device(op, x, offset, weight, mask, bias)
    n, c_in = x.shape[:2]
    c_out, cwg, kh, kw = weight.shape
    _groups(op, "weight_groups", weight_groups, c_in)
    if cwg * weight_groups != c_in:
        raise ShapeError(f"{op}: input has {c_in} channels, the weight {weight.shape} with "
                         f"weight_groups={weight_groups} expects {cwg * weight_groups}")
    _groups(op, "offset_groups", offset_groups, c_in)
    if c_out % weight_groups:
        raise ShapeError(f"{op}: weight_groups={weight_groups} must divide the output "
                         f"channels ({c_out})")
    if bias is not None and bias.shape != (c_out,):
        raise ShapeError(f"{op}: bias must have shape ({c_out},), got {bias.shape}")
    s = tuple_of(op, "stride", stride, 2)
    d = tuple_of(op, "dilation", dilation, 2)
    pads = resolve_padding(op, padding, (kh, kw), d, s)
    _check_out(op, x, x.shape[2:], pads, (kh, kw), s, d)
    padded = tuple(size + lo + hi for size, (lo, hi) in zip(x.shape[2:], pads, strict=True))
    oh, ow = conv_out_size(padded, (kh, kw), s, d)
    taps = offset_groups * kh * kw
    want = (n, 2 * taps, oh, ow)
    if offset.shape != want:
        raise ShapeError(f"{op}: offset must have shape {want} (N, 2*offset_groups*kh*kw, "
                         f"H_out, W_out) for input {x.shape}, kernel ({kh}, {kw}) and "
                         f"offset_groups={offset_groups}, got {offset.shape}")
    if mask is not None and mask.shape != (n, taps, oh, ow):
        raise ShapeError(f"{op}: mask must have shape {(n, taps, oh, ow)} (N, "
                         f"offset_groups*kh*kw, H_out, W_out), got {mask.shape}")
    xm, om, wm, mask, bias = _match_dtype(x, offset, weight, mask, bias)
    assert xm is not None and om is not None and wm is not None  # given, so cast, never None
    prim = x.device.deform_conv2d(
        xm.into_primitive(), om.into_primitive(), wm.into_primitive(),
        None if mask is None else mask.into_primitive(),
        None if bias is None else bias.into_primitive(), s, pads, d, weight_groups,
        offset_groups)
    return xm._new(prim)
