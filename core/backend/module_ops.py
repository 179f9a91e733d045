"""Module ops (convolution, pooling, interpolation, embedding) as composites of primitives.

`Backend` inherits these; a backend may override one with a faster kernel (and then Autodiff
needs a rule for it in `autodiff_module.py`).
"""

from __future__ import annotations


class ModuleOps:
    """Mixin of `Backend`: default compositions of the module ops."""
