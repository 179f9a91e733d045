"""Convolutions (1-, 2-, 3-D) and their transposes."""

from __future__ import annotations

from ...errors import ConfigError, ShapeError
from ...tensor import Tensor
from ._check import (
    IntOrSeq,
    Padding,
    _check_out,
    _match_dtype,
    _rank,
    _same_device,
    _tensor,
    pairs_1d,
    resolve_padding,
    tuple_of,
)


def _conv_args(op: str, x: Tensor, weight: Tensor, bias: Tensor | None, dims: int,
               transposed: bool, groups: int) -> tuple[Tensor, Tensor, Tensor | None]:
    layout = {1: "NCL", 2: "NCHW", 3: "NCDHW"}[dims]
    _tensor(op, "input", x)
    _tensor(op, "weight", weight)
    if bias is not None:
        _tensor(op, "bias", bias)
    _rank(op, "input", x, dims + 2, layout)
    _rank(op, "weight", weight, dims + 2, "out, in/groups, kernel..." if not transposed
          else "in, out/groups, kernel...")
    _same_device(op, x, weight, bias)
    if not isinstance(groups, int) or groups < 1:
        raise ShapeError(f"{op}: groups must be an int >= 1, got {groups!r}")
    c_in = x.shape[1]
    if transposed:
        if weight.shape[0] != c_in:
            raise ShapeError(f"{op}: input has {c_in} channels, the weight {weight.shape} "
                             f"expects {weight.shape[0]}")
        c_out = weight.shape[1] * groups
    else:
        if weight.shape[1] * groups != c_in:
            raise ShapeError(f"{op}: input has {c_in} channels, the weight {weight.shape} "
                             f"with groups={groups} expects {weight.shape[1] * groups}")
        c_out = weight.shape[0]
    if c_in % groups or c_out % groups:
        raise ShapeError(f"{op}: groups={groups} must divide the input channels ({c_in}) and "
                         f"the output channels ({c_out})")
    if bias is not None and bias.shape != (c_out,):
        raise ShapeError(f"{op}: bias must have shape ({c_out},), got {bias.shape}")
    x, weight, bias = _match_dtype(x, weight, bias)  # type: ignore[assignment]  # x is set
    return x, weight, bias


def _conv_nd(op: str, dims: int, x: Tensor, weight: Tensor, bias: Tensor | None,
             stride: IntOrSeq, padding: Padding, dilation: IntOrSeq, groups: int,
             backend_op: str | None = None) -> Tensor:
    """conv2d and conv3d: check the arguments, resolve the padding, call the backend's op
    (`backend_op`, default `op`)."""
    x, weight, bias = _conv_args(op, x, weight, bias, dims, False, groups)
    kernel = weight.shape[2:]
    s = tuple_of(op, "stride", stride, dims)
    d = tuple_of(op, "dilation", dilation, dims)
    pads = resolve_padding(op, padding, kernel, d, s)
    _check_out(op, x, x.shape[2:], pads, kernel, s, d)
    prim = getattr(x.device, backend_op or op)(x.into_primitive(), weight.into_primitive(),
                                 None if bias is None else bias.into_primitive(), s, pads, d,
                                 groups)
    return x._new(prim)


def conv2d(x: Tensor, weight: Tensor, bias: Tensor | None = None, *, stride: IntOrSeq = 1,
           padding: Padding = 0, dilation: IntOrSeq = 1, groups: int = 1,
           activation: str | None = None) -> Tensor:
    """2-D convolution (cross-correlation, as every framework computes it).

    Shapes: input (N, C_in, H, W), weight (C_out, C_in/groups, kh, kw), bias (C_out,)
    -> (N, C_out, OH, OW). Padding: "valid", "same", an int, (ph, pw) or
    ((top, bottom), (left, right)). `activation="relu"` gives relu(conv2d(...)) as one op: the
    numpy backend applies bias and ReLU on each sample's product in place, with no pass of its
    own over the output.
    """
    if activation not in (None, "relu"):
        raise ConfigError(f"conv2d: activation must be None or 'relu', got {activation!r}; "
                         f"apply other activations to the result")
    return _conv_nd("conv2d", 2, x, weight, bias, stride, padding, dilation, groups,
                    "conv2d_relu" if activation == "relu" else None)


def conv1d(x: Tensor, weight: Tensor, bias: Tensor | None = None, *, stride: int = 1,
           padding: Padding = 0, dilation: int = 1, groups: int = 1) -> Tensor:
    """1-D convolution. Shapes: (N, C_in, L), weight (C_out, C_in/groups, k) -> (N, C_out, OL)."""
    op = "conv1d"
    x, weight, bias = _conv_args(op, x, weight, bias, 1, False, groups)
    kernel = weight.shape[2:]
    (s,) = tuple_of(op, "stride", stride, 1)
    (d,) = tuple_of(op, "dilation", dilation, 1)
    pads = resolve_padding(op, pairs_1d(padding, 1), kernel, (d,), (s,))
    _check_out(op, x, x.shape[2:], pads, kernel, (s,), (d,))
    prim = x.device.conv1d(x.into_primitive(), weight.into_primitive(),
                           None if bias is None else bias.into_primitive(), s, pads[0], d, groups)
    return x._new(prim)


def conv3d(x: Tensor, weight: Tensor, bias: Tensor | None = None, *, stride: IntOrSeq = 1,
           padding: Padding = 0, dilation: IntOrSeq = 1, groups: int = 1) -> Tensor:
    """3-D convolution. Shapes: input (N, C_in, D, H, W), weight (C_out, C_in/groups, kd, kh,
    kw) -> (N, C_out, OD, OH, OW). Padding as conv2d's, with three dims.

    >>> from pyrite import ones
    >>> conv3d(ones((1, 2, 4, 5, 6)), ones((3, 2, 3, 3, 3)), padding=(1, 0, 1)).shape
    (1, 3, 4, 3, 6)
    """
    return _conv_nd("conv3d", 3, x, weight, bias, stride, padding, dilation, groups)


def _transpose_opts(op: str, dims: int, kernel: tuple[int, ...], stride: IntOrSeq,
                    padding: IntOrSeq, output_padding: IntOrSeq,
                    dilation: IntOrSeq) -> tuple[tuple[int, ...], ...]:
    s = tuple_of(op, "stride", stride, dims)
    p = tuple_of(op, "padding", padding, dims, minimum=0)
    op_ = tuple_of(op, "output_padding", output_padding, dims, minimum=0)
    d = tuple_of(op, "dilation", dilation, dims)
    if any(o >= max(si, di) for o, si, di in zip(op_, s, d, strict=True)):
        raise ShapeError(f"{op}: output_padding {op_} must be smaller than the stride {s} or "
                         f"the dilation {d}")
    return s, p, op_, d


def _transpose_size(op: str, x: Tensor, kernel: tuple[int, ...], s: tuple[int, ...],
                    p: tuple[int, ...], op_: tuple[int, ...], d: tuple[int, ...]) -> None:
    size = tuple((n - 1) * si - 2 * pi + di * (k - 1) + oi + 1 for n, k, si, pi, oi, di in
                 zip(x.shape[2:], kernel, s, p, op_, d, strict=True))
    if any(v < 1 for v in size):
        raise ShapeError(f"{op}: padding {p} leaves an empty output {size} for input shape "
                         f"{x.shape}")


def _transpose_nd(op: str, dims: int, x: Tensor, weight: Tensor, bias: Tensor | None,
                  stride: IntOrSeq, padding: IntOrSeq, output_padding: IntOrSeq,
                  dilation: IntOrSeq, groups: int) -> Tensor:
    """The transposed convolutions: check the arguments and the output size, call the backend's
    op of the same name (1-D takes its options as ints)."""
    x, weight, bias = _conv_args(op, x, weight, bias, dims, True, groups)
    kernel = weight.shape[2:]
    s, p, o, d = _transpose_opts(op, dims, kernel, stride, padding, output_padding, dilation)
    _transpose_size(op, x, kernel, s, p, o, d)
    opts = (s, p, o, d) if dims > 1 else (s[0], p[0], o[0], d[0])
    prim = getattr(x.device, op)(x.into_primitive(), weight.into_primitive(),
                                 None if bias is None else bias.into_primitive(), *opts, groups)
    return x._new(prim)


def conv_transpose2d(x: Tensor, weight: Tensor, bias: Tensor | None = None, *,
                     stride: IntOrSeq = 1, padding: IntOrSeq = 0, output_padding: IntOrSeq = 0,
                     dilation: IntOrSeq = 1, groups: int = 1) -> Tensor:
    """2-D transposed convolution (the gradient of conv2d with respect to its input).

    Shapes: input (N, C_in, H, W), weight (C_in, C_out/groups, kh, kw) -> (N, C_out, OH, OW),
    OH = (H-1)*stride - 2*padding + dilation*(kh-1) + output_padding + 1.
    """
    return _transpose_nd("conv_transpose2d", 2, x, weight, bias, stride, padding, output_padding,
                         dilation, groups)


def conv_transpose1d(x: Tensor, weight: Tensor, bias: Tensor | None = None, *, stride: int = 1,
                     padding: int = 0, output_padding: int = 0, dilation: int = 1,
                     groups: int = 1) -> Tensor:
    """1-D transposed convolution. Shapes: (N, C_in, L), weight (C_in, C_out/groups, k)."""
    return _transpose_nd("conv_transpose1d", 1, x, weight, bias, stride, padding, output_padding,
                         dilation, groups)


def conv_transpose3d(x: Tensor, weight: Tensor, bias: Tensor | None = None, *,
                     stride: IntOrSeq = 1, padding: IntOrSeq = 0, output_padding: IntOrSeq = 0,
                     dilation: IntOrSeq = 1, groups: int = 1) -> Tensor:
    """3-D transposed convolution. Shapes: input (N, C_in, D, H, W), weight (C_in,
    C_out/groups, kd, kh, kw) -> (N, C_out, OD, OH, OW), sizes as conv_transpose2d's."""
    return _transpose_nd("conv_transpose3d", 3, x, weight, bias, stride, padding, output_padding,
                         dilation, groups)
