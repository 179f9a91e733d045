"""The operator functions, one module per family; importing this package registers them all."""

from . import elementwise, image, index, misc, nn, norm, quantize, recurrent, reduce, shape, signal

__all__ = ["elementwise", "image", "index", "misc", "nn", "norm", "quantize", "recurrent",
           "reduce", "shape", "signal"]
