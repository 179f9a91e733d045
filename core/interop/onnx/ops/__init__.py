"""The operator functions, one module per family; importing this package registers them all."""

from . import (
    attention,
    conv,
    elementwise,
    image,
    index,
    matmul,
    misc,
    norm,
    pool,
    quantize,
    recurrent,
    reduce,
    resize,
    shape,
    signal,
)

__all__ = ["attention", "conv", "elementwise", "image", "index", "matmul", "misc", "norm", "pool",
           "quantize", "recurrent", "reduce", "resize", "shape", "signal"]
