"""The operator functions, one module per family; importing this package registers them all."""

from . import elementwise, index, nn, norm, reduce, shape

__all__ = ["elementwise", "index", "nn", "norm", "reduce", "shape"]
