"""numpy overrides of module ops (convolution, pooling) for speed."""

from __future__ import annotations


class NumpyModuleOps:
    """Mixin of `NumpyBackend`."""
