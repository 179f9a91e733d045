"""Integer products on the numpy backend.

numpy's integer matmul does not use BLAS: on this machine an int8 (64, 784) @ (784, 128)
product took 10 ms as int32 and 0.1 ms as float32 BLAS (benchmarks/quantization.py measures
it again). So the int8 GEMM runs float32 BLAS on the integer values, which is exact while every
partial sum stays below 2**24: |q| <= 128 gives 128 * 128 * 1024 = 2**24, so the inner dim is
cut into chunks of at most 1024 and the chunks' int32 results are added.
"""

from __future__ import annotations

from typing import Any

from ..dtype import Kind
from ..tensor import Tensor
from .tensor import QuantizedTensor

#: the longest inner dim whose float32 dot products of int8 values are exact
EXACT_CHUNK = 1024


class NumpyIntKernels:
    """The numpy backend's integer products (see the module docstring)."""

    dot_product = "float32 BLAS on exact int8 values"

    def int8_matmul(self, lhs: Tensor, rhs: QuantizedTensor) -> Tensor:
        import numpy as np
        a: Any = lhs.into_primitive()
        b: Any = rhs.cached("numpy_f32", lambda: rhs.values.into_primitive().astype(np.float32))
        inner = a.shape[-1]
        af = a.astype(np.float32)
        if inner <= EXACT_CHUNK:
            acc = (af @ b).astype(np.int32)
        else:
            acc = np.zeros((a.shape[0], b.shape[1]), np.int32)
            for start in range(0, inner, EXACT_CHUNK):
                stop = min(inner, start + EXACT_CHUNK)
                acc += (af[:, start:stop] @ b[start:stop]).astype(np.int32)
        return Tensor.from_primitive(acc, lhs.device, Kind.INT)

    def weight_only_matmul(self, x: Tensor, w: QuantizedTensor) -> Tensor | None:
        return None  # dequantize + BLAS is what numpy can do best
