"""Shader modules without (some of) naga's run-time checks, for kernels whose every index is in
bounds by construction (natively, through wgpu-native; a page's WebGPU has no such call).

wgpu translates WGSL to SPIR-V with naga, which by default guards every run-time index: into a
workgroup or private array it clamps (`min(i, len - 1)`), into a storage array it clamps against
the buffer's length, and it gives every loop a hidden iteration counter (so that a loop the
driver could prove infinite stays defined). In the tiled matmul (`shaders/matmul_tiled.wgsl`,
128x256x16 tile) the clamps are 360 of the module's 874 extended instructions (the rest are
its 512 FMAs and one `min` of its own; `benchmarks/spirv_ops.py` counts them): each read of a
workgroup tile clamps its k-row and the thread's row or column. wgpu-native exports
`wgpuDeviceCreateShaderModuleTrusted(device, descriptor, runtime_checks)`, which wgpu-py
0.32's ffi declares but does not wrap: `runtime_checks` says which checks naga keeps.

That is only sound for a kernel whose indices cannot leave their arrays for any input the host
may pass: a caller states that by asking for fewer checks (`Runtime.pipeline(..., checks=)`;
the tiled matmul's `_nc` / `_nb` / `_nl` options in `matmul_options.py`, and the native
ladder's WIDE rung, which drops the clamps and keeps the loop counters: 2-6% faster on the
H100, where dropping the counters cost 12-22%, benchmarks/README.md). Standard library plus
wgpu-py, loadable by path like `matmul_config.py` (the benchmark does so).
"""

from __future__ import annotations

from typing import Any

# WGPUShaderRuntimeChecks bits (wgpu.h): which of naga's run-time checks a module keeps
BOUNDS_CHECKS = 1  # index clamps into arrays and storage buffers
LOOP_BOUNDING = 2  # a hidden iteration counter in every loop
ALL_CHECKS = BOUNDS_CHECKS | LOOP_BOUNDING  # what wgpu-py's create_shader_module compiles


def create(device: Any, code: str, label: str = "", checks: int = 0) -> Any:
    """A GPUShaderModule of the WGSL `code` on the wgpu-py `device`, compiled with only the
    run-time `checks` (bits above; 0: none); None where the call is absent (another wgpu-py,
    or not wgpu-native), so that the caller compiles the checked module instead. Errors in the
    WGSL raise wgpu-py's GPUError, as its own `create_shader_module` does."""
    try:
        from wgpu.backends.wgpu_native import _api  # type: ignore[import-untyped]
        # libf: wgpu-py's copy of the C functions that raises wgpu-native's errors
        trusted = _api.libf.wgpuDeviceCreateShaderModuleTrusted
        internal = device._internal
    except (ImportError, AttributeError):
        return None
    ffi = _api.ffi
    source = _api.new_struct_p("WGPUShaderSourceWGSL *", code=_api.to_c_string_view(code))
    source[0].chain.next = ffi.NULL
    source[0].chain.sType = _api.lib.WGPUSType_ShaderSourceWGSL
    descriptor = _api.new_struct_p(
        "WGPUShaderModuleDescriptor *",
        nextInChain=ffi.cast("WGPUChainedStruct *", source),
        label=_api.to_c_string_view(label),
    )
    handle = trusted(internal, descriptor, checks)
    if handle == ffi.NULL:
        raise RuntimeError("Shader module creation failed (unchecked module)")
    return _api.GPUShaderModule(label, handle, device)

