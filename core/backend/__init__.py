"""The backend contract, the op registry and the backends that ship with pyrite's core."""

from . import binary, reduce, unary  # noqa: F401  (fill the registry)
from .base import Backend
from .registry import REGISTRY, Op, get

__all__ = ["REGISTRY", "Backend", "Op", "get"]
