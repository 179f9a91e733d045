"""`RecordingRuntime`: a runtime that runs nothing and remembers which kernels were asked for.

A page spends most of its first prediction compiling kernels. The web bundle build runs each
demo model once on this runtime (no GPU needed: buffers are placeholders, readbacks are
zeros), and ships the WGSL of every kernel it compiled; the page's worker compiles them with
`createComputePipelineAsync` while Pyodide is still booting, and `BrowserRuntime` takes the
compiled pipelines instead of compiling again. A kernel whose source differs in the page (other
limits, another dtype) is simply compiled when first used.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

from .runtime import (
    AdapterInfo,
    BindGroup,
    Bindings,
    Buffer,
    Dispatch,
    Limits,
    Pipeline,
    Write,
)
from .unchecked_module import ALL_CHECKS

#: the limits a browser's device is assumed to have: WebGPU's defaults, with the workgroup
#: storage every desktop adapter (and Chrome's SwiftShader) offers
BROWSER_LIMITS = Limits(max_buffer_size=1 << 28, max_storage_buffer_binding_size=1 << 27,
                        max_storage_buffers_per_shader_stage=8,
                        max_compute_workgroups_per_dimension=65535,
                        max_compute_invocations_per_workgroup=256,
                        max_compute_workgroup_storage_size=32768)


class _Placeholder:
    __slots__ = ("size",)

    def __init__(self, size: int) -> None:
        self.size = size


class RecordingRuntime:
    """Runs nothing; `kernels` lists `(entry_point, source)` of every pipeline asked for."""

    def __init__(self, limits: Limits = BROWSER_LIMITS,
                 features: frozenset[str] = frozenset(), *, adapter_type: str = "CPU") -> None:
        # "CPU": the kernels a page on SwiftShader runs; "GPU": a page on a GPU (software.py)
        self._adapter_type = adapter_type
        self._limits = limits
        self._features = features
        self.kernels: list[tuple[str, str]] = []
        self._seen: set[tuple[str, str]] = set()

    @property
    def adapter(self) -> AdapterInfo:
        return AdapterInfo(0, "recorder", "", "none", self._adapter_type,
                           "records kernels, runs nothing")

    @property
    def limits(self) -> Limits:
        return self._limits

    @property
    def features(self) -> frozenset[str]:
        return self._features

    def create_buffer(self, size: int) -> Buffer:
        return _Placeholder(size)

    def create_buffer_with_data(self, data: bytes, *, uniform: bool = False) -> Buffer:
        return _Placeholder(len(data))

    def destroy_buffer(self, buffer: Buffer) -> None:
        pass

    def write_buffer(self, buffer: Buffer, offset: int, data: bytes) -> None:
        pass

    def read_buffer(self, buffer: Buffer, offset: int, size: int) -> bytes:
        return bytes(size)

    async def read_buffer_async(self, buffer: Buffer, offset: int, size: int) -> bytes:
        return bytes(size)

    def pipeline(self, key: Hashable, source: str, entry_point: str = "main",
                 checks: int = ALL_CHECKS) -> Pipeline:
        kernel = (entry_point, source)
        if kernel not in self._seen:
            self._seen.add(kernel)
            self.kernels.append(kernel)
        return kernel

    def bind_group(self, pipeline: Pipeline, bindings: Bindings) -> BindGroup:
        return None

    def dispatch(self, pipeline: Pipeline, bind_group: BindGroup,
                 workgroups: tuple[int, int, int], cost: float = 0.0) -> None:
        pass

    def copy_buffer(self, src: Buffer, src_offset: int, dst: Buffer, dst_offset: int,
                    size: int) -> None:
        pass

    def replay(self, dispatches: Sequence[Dispatch], writes: Sequence[Write] = ()) -> None:
        pass

    def flush(self) -> None:
        pass

    def sync(self) -> None:
        pass


__all__ = ["BROWSER_LIMITS", "RecordingRuntime"]
