"""Settings read from the environment, in one place (listed in the README's settings table)."""

from __future__ import annotations

import os


def backend_name() -> str:
    """PYRITE_BACKEND: the device tensors go to when none is named (default 'numpy')."""
    return os.environ.get("PYRITE_BACKEND", "numpy").strip() or "numpy"


def debug_flags() -> set[str]:
    """PYRITE_DEBUG: comma-separated debug switches ('wgsl' prints generated kernels)."""
    return {f.strip() for f in os.environ.get("PYRITE_DEBUG", "").split(",") if f.strip()}


def data_dir() -> str:
    """PYRITE_DATA: the folder holding datasets (`$PYRITE_DATA/mnist/*.gz`); empty: unset."""
    return os.environ.get("PYRITE_DATA", "").strip()


def webgpu_adapter() -> str:
    """PYRITE_WEBGPU_ADAPTER: which adapter the webgpu backend takes ("gl", "vulkan,1", ...)."""
    return os.environ.get("PYRITE_WEBGPU_ADAPTER", "").strip()


def required_backends() -> set[str]:
    """PYRITE_REQUIRE: backends whose absence fails the tests instead of skipping them."""
    return {f.strip() for f in os.environ.get("PYRITE_REQUIRE", "").split(",") if f.strip()}


def web_dir() -> str:
    """PYRITE_WEB_DIR: where `pyrite serve` builds the web bundle; empty: unset."""
    return os.environ.get("PYRITE_WEB_DIR", "").strip()
