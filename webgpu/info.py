"""`adapters()`: what `pyrite info` shows about WebGPU: every adapter and its key limits."""

from __future__ import annotations

from dataclasses import asdict

_LIMITS = ("max-buffer-size", "max-storage-buffer-binding-size",
           "max-storage-buffers-per-shader-stage", "max-compute-workgroup-storage-size",
           "max-compute-invocations-per-workgroup", "max-compute-workgroups-per-dimension")


def adapters() -> list[dict[str, object]]:
    """Each adapter wgpu-py sees: index, name, vendor, backend, type, f16 support, key limits.

    The index is what PYRITE_WEBGPU_ADAPTER and `WebGpu(adapter="1")` take.
    """
    from .native import list_adapters

    rows: list[dict[str, object]] = []
    for info, raw in list_adapters():
        row: dict[str, object] = asdict(info)
        row["shader_f16"] = "shader-f16" in raw.features
        row["limits"] = {name: int(raw.limits[name]) for name in _LIMITS}
        rows.append(row)
    return rows
