"""Autodiff rules for module ops that backends accelerate."""

from __future__ import annotations


class AutodiffModuleOps:
    """Mixin of `Autodiff`."""
