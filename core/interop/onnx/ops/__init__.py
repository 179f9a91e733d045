"""The operator functions, one module per family; importing this package registers them all."""

from . import elementwise, nn, reduce, shape

__all__ = ["elementwise", "nn", "reduce", "shape"]
