"""numpy's max pooling (interior taps as strided views, the padded ends per tap) against a
window-by-window reference: padding on either end, ceil-mode ends, strides past the kernel,
dilation, windows wholly in the padding, integers."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import pyrite


def _reference(x, kernel, stride, pads, dil):
    n, c, h, w = x.shape
    (top, bottom), (left, right) = pads
    oh = (h + top + bottom - dil[0] * (kernel[0] - 1) - 1) // stride[0] + 1
    ow = (w + left + right - dil[1] * (kernel[1] - 1) - 1) // stride[1] + 1
    fill = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
    out = np.full((n, c, oh, ow), fill, dtype=x.dtype)
    for i, j in itertools.product(range(oh), range(ow)):
        for a, b in itertools.product(range(kernel[0]), range(kernel[1])):
            r, q = i * stride[0] - top + a * dil[0], j * stride[1] - left + b * dil[1]
            if 0 <= r < h and 0 <= q < w:
                out[:, :, i, j] = np.maximum(out[:, :, i, j], x[:, :, r, q])
    return out


CASES = [  # kernel, stride, pads, dilation
    ((3, 3), (2, 2), ((0, 1), (0, 1)), (1, 1)),  # SqueezeNet's ceil-mode pools
    ((3, 2), (2, 3), ((1, 2), (2, 0)), (1, 1)),
    ((2, 2), (3, 3), ((0, 0), (1, 1)), (1, 1)),  # stride past the kernel
    ((3, 3), (1, 2), ((2, 2), (0, 3)), (2, 1)),  # dilation, a window wholly in the padding
    ((1, 1), (2, 2), ((0, 1), (1, 0)), (1, 1)),
]


@pytest.mark.parametrize("dtype", ["float32", "int32"])
@pytest.mark.parametrize("case", CASES, ids=[str(c) for c in CASES])
def test_max_pool_matches_the_window_reference(case, dtype) -> None:
    kernel, stride, pads, dil = case
    backend = pyrite.device("numpy")
    x = np.random.default_rng(7).integers(-50, 50, size=(2, 3, 9, 7)).astype(dtype)
    got = backend.max_pool2d(x, kernel, stride, pads, dil)
    np.testing.assert_array_equal(got, _reference(x, kernel, stride, pads, dil))
