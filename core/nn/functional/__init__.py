"""Functional module ops: Tensor in, Tensor out, validated once here.

Each function checks kinds, ranks, devices and sizes and raises an error that names the op and
says how to fix the call; then it resolves the options (ints to per-dim tuples, padding modes to
`(before, after)` pairs) and calls the backend's module op, which assumes valid input.

Layouts are NCHW for 2-D ops, NCL for 1-D ops and NCDHW for 3-D ops.

>>> from pyrite import ones
>>> from pyrite.nn.functional import conv2d
>>> conv2d(ones((1, 1, 5, 5)), ones((2, 1, 3, 3)), padding="same").shape
(1, 2, 5, 5)
"""


from ...backend.module_ops import conv_out_size
from ._check import pairs_1d, resolve_padding, tuple_of
from .attention import attention, attention_weights
from .conv import (
    conv1d,
    conv2d,
    conv3d,
    conv_transpose1d,
    conv_transpose2d,
    conv_transpose3d,
)
from .deform import deform_conv2d
from .dense import embedding, linear
from .pool import (
    adaptive_avg_pool1d,
    adaptive_avg_pool2d,
    avg_pool1d,
    avg_pool2d,
    max_pool1d,
    max_pool1d_with_indices,
    max_pool2d,
    max_pool2d_with_indices,
)
from .resize import interpolate1d, interpolate2d

__all__ = [
    "attention",
    "attention_weights",
    "adaptive_avg_pool1d", "adaptive_avg_pool2d", "avg_pool1d", "avg_pool2d", "conv1d",
    "conv2d", "conv3d", "conv_out_size", "conv_transpose1d", "conv_transpose2d",
    "conv_transpose3d", "deform_conv2d", "embedding",
    "interpolate1d", "interpolate2d", "linear", "max_pool1d", "max_pool1d_with_indices",
    "max_pool2d", "max_pool2d_with_indices", "pairs_1d", "resolve_padding", "tuple_of",
]
