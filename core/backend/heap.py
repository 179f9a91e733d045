"""Keep freed array memory in the process: the `PYRITE_NUMPY_HEAP` setting applied.

glibc's malloc serves every array above a threshold (128 KB, raised as it sees larger frees, up
to 32 MB) with its own `mmap` and unmaps it when the array dies. A forward pass allocates and
frees the same large activations every call, so every call pays fresh pages: a page fault and a
zeroing per 4 KB, which on a busy machine dominates (SqueezeNet 1.1 at batch 16 on the numpy
backend: 3.8-5.6 s per pass with the default malloc, 1.1-2.0 s with freed memory kept; 1 thread,
a machine at load 10-14). With `keep` (the default) the numpy backend, when first built, tells
malloc to take large blocks from its heap too and not to give the heap's top back
(`mallopt(M_MMAP_MAX, 0)`, `M_TRIM_THRESHOLD` 1 GB, `M_TOP_PAD` 64 MB): freed activations are
reused by the next call. The price: the process keeps its peak memory until it exits, as
PyTorch's caching allocators do.

Only glibc has `mallopt`; elsewhere (macOS, Windows, musl, Pyodide) nothing changes.
"""

from __future__ import annotations

import platform
import sys

from .. import config

_M_TRIM_THRESHOLD, _M_TOP_PAD, _M_MMAP_MAX = -1, -2, -4
_APPLIED: list[bool] = []


def keep_freed_memory() -> bool:
    """Ask glibc's malloc to reuse freed memory (see the module docstring); False where it
    cannot (not glibc)."""
    if sys.platform != "linux" or platform.libc_ver()[0] != "glibc":
        return False
    import ctypes  # here, not at import: the page's Python never gets this far

    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    ok = mallopt(_M_MMAP_MAX, 0)
    ok &= mallopt(_M_TRIM_THRESHOLD, 1 << 30)
    ok &= mallopt(_M_TOP_PAD, 64 << 20)
    return bool(ok)


def apply_setting() -> None:
    """Apply `PYRITE_NUMPY_HEAP` once per process (the numpy backend calls it when built)."""
    if _APPLIED:
        return
    _APPLIED.append(True)
    if config.numpy_heap() == "keep":
        keep_freed_memory()
