"""The runtime contract: the few WebGPU calls the backend makes, behind one small Protocol.

`native.py` implements it over wgpu-py; `browser.py` (later) over `navigator.gpu` in Pyodide.
Everything above this line (pool, kernels, backend) talks only to a `Runtime`, so it runs
unchanged in both places. Buffers, pipelines and bind groups are opaque handles here.

Ordering rule every implementation keeps: work is recorded into a pending batch (one command
encoder) and submitted by `flush`; `write_buffer` and `read_buffer` flush first, so a write never
overtakes a recorded dispatch that still reads the buffer's old contents.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from ..errors import PyriteError
from .unchecked_module import ALL_CHECKS

Buffer = object  # a runtime's buffer handle (GPUBuffer natively, a JsProxy in the browser)
Pipeline = object  # a compiled compute pipeline handle
BindGroup = object
Bindings = Sequence[Buffer] | Mapping[int, Buffer]  # in binding order, or binding -> buffer
Dispatch = tuple[Pipeline, BindGroup, tuple[int, int, int]]  # one dispatch of a program
Write = tuple[Buffer, int, bytes]  # bytes written at an offset of a buffer


@dataclass(frozen=True)
class Limits:
    """The device limits the backend relies on (WebGPU names, snake_case)."""

    max_buffer_size: int
    max_storage_buffer_binding_size: int
    max_storage_buffers_per_shader_stage: int
    max_compute_workgroups_per_dimension: int
    max_compute_invocations_per_workgroup: int
    max_compute_workgroup_storage_size: int

    @property
    def max_allocation(self) -> int:
        """The largest buffer a kernel can bind whole (kernels bind buffers whole)."""
        return min(self.max_buffer_size, self.max_storage_buffer_binding_size)


@dataclass(frozen=True)
class AdapterInfo:
    """What an adapter says about itself, for `pyrite info` and error messages."""

    index: int
    name: str
    vendor: str
    backend: str  # Vulkan, Metal, D3D12, OpenGL, WebGPU (browser)
    adapter_type: str  # DiscreteGPU, IntegratedGPU, CPU, ...
    description: str = ""

    def __str__(self) -> str:
        return f"#{self.index} {self.name} ({self.adapter_type}, {self.backend})"


def compile_error(key: Hashable, detail: object) -> PyriteError:
    """The error of a kernel that did not compile (the runtime's diagnostics in `detail`); a
    user kernel's key (pyrite.extend) words it for the user's op and source line."""
    explain = getattr(key, "compile_error", None)
    if explain is not None:
        return explain(str(detail))  # type: ignore[no-any-return]
    return PyriteError(f"webgpu: kernel {key} did not compile (a pyrite bug; PYRITE_DEBUG=wgsl "
                       f"prints its source): {detail}")


@runtime_checkable
class Runtime(Protocol):
    """One device and its queue: buffers, pipelines, dispatch, batching, readback."""

    @property
    def adapter(self) -> AdapterInfo: ...

    @property
    def limits(self) -> Limits: ...

    @property
    def features(self) -> frozenset[str]: ...

    def create_buffer(self, size: int) -> Buffer:
        """A storage buffer of `size` bytes (a multiple of 4), usable as copy source/target."""
        ...

    def create_buffer_with_data(self, data: bytes, *, uniform: bool = False) -> Buffer:
        """A read-only storage (or uniform) buffer holding `data` (kernel metadata)."""
        ...

    def destroy_buffer(self, buffer: Buffer) -> None: ...

    def write_buffer(self, buffer: Buffer, offset: int, data: bytes) -> None:
        """Copy bytes into a buffer (flushes pending work first)."""
        ...

    def read_buffer(self, buffer: Buffer, offset: int, size: int) -> bytes:
        """Flush, wait and return `size` bytes from `offset` (both multiples of 4)."""
        ...

    async def read_buffer_async(self, buffer: Buffer, offset: int, size: int) -> bytes:
        """As `read_buffer`, awaiting the map instead of blocking."""
        ...

    def pipeline(self, key: Hashable, source: str, entry_point: str = "main",
                 checks: int = ALL_CHECKS) -> Pipeline:
        """The compute pipeline of a WGSL source, compiled once per key. `checks`: which of
        naga's run-time checks the module keeps (`unchecked_module.py`'s bits), for a kernel
        whose indices are in bounds by construction; a runtime that cannot drop them (a page's
        WebGPU) compiles them all."""
        ...

    def bind_group(self, pipeline: Pipeline, bindings: Bindings) -> BindGroup:
        """Bind whole buffers to group 0 of a pipeline."""
        ...

    def dispatch(self, pipeline: Pipeline, bind_group: BindGroup,
                 workgroups: tuple[int, int, int], cost: float = 0.0) -> None:
        """Record one dispatch into the pending batch; `cost`: its kernel's estimated FLOPs,
        which the submit policy (`batch.POLICY`) may submit the batch after."""
        ...

    def copy_buffer(self, src: Buffer, src_offset: int, dst: Buffer, dst_offset: int,
                    size: int) -> None:
        """Record a buffer-to-buffer copy (offsets and size multiples of 4)."""
        ...

    def replay(self, dispatches: Sequence[Dispatch], writes: Sequence[Write] = ()) -> None:
        """Write `writes` (after the work recorded before), then record a captured program's
        dispatches in order and submit (pyrite.compile)."""
        ...

    def flush(self) -> None:
        """Submit the pending batch."""
        ...

    def sync(self) -> None:
        """Flush and wait until the device is idle."""
        ...
