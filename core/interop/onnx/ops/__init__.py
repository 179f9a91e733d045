"""The operator functions, one module per family; importing this package registers them all."""

from . import (
    activation,
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

__all__ = ["activation", "attention", "conv", "elementwise", "image", "index", "matmul", "misc",
           "norm", "pool", "quantize", "recurrent", "reduce", "resize", "shape", "signal"]
