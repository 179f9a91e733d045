"""The GPU's SM clock, for benchmarks that must time at the GPU's steady clock: read through
nvidia-smi where there is one (None, and no waiting, elsewhere: lavapipe, SwiftShader, other
vendors), and `settle`, work queued back to back until the clock reads its most.

The H100's SM clock falls from 1980 to 345 MHz within 1.5-4 s without GPU work (a long
pipeline compile is enough) and stays low under light load; work that keeps the GPU busy
raises it in steps (345, 645, 1140, 1980 MHz; onnx_squeezenet_diag_h100_s8s_*.json)."""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Callable
from typing import Any


def sm_clock_mhz(which: str = "clocks.sm") -> int | None:
    """The GPU's SM clock (`which`: or its most, clocks.max.sm) from nvidia-smi, None without
    it."""
    if shutil.which("nvidia-smi") is None:
        return None
    try:
        out = subprocess.run(["nvidia-smi", f"--query-gpu={which}", "--format=csv,noheader,"
                              "nounits"], capture_output=True, text=True, timeout=10).stdout
        return int(out.split()[0])
    except (OSError, ValueError, IndexError, subprocess.SubprocessError):
        return None


def most_sm_clock() -> int | None:
    """The SM clock's most (clocks.max.sm), None without nvidia-smi."""
    return sm_clock_mhz("clocks.max.sm")


def at_working_clock(most: int | None = None) -> Callable[[], bool]:
    """Whether the SM clock reads its most (`most`, else asked of nvidia-smi; always True
    without nvidia-smi)."""
    most = most_sm_clock() if most is None else most
    if most is None:
        return lambda: True
    return lambda: (sm_clock_mhz() or 0) >= most


def settle(fn: Callable[[], Any], read: Callable[[Any], Any], ms: float,
           at_speed: Callable[[], bool] = lambda: True, most_ms: float = 3000) -> int:
    """Passes queued back to back (`fn` submits one, `read` waits for the last of every 16) for
    at least `ms`, then until `at_speed()` or `most_ms`; returns the passes run."""
    begin, passes = time.perf_counter(), 0
    while True:
        out = [fn() for _ in range(16)]
        read(out[-1])
        passes += 16
        took = (time.perf_counter() - begin) * 1000
        if took >= most_ms or (took >= ms and at_speed()):
            return passes
