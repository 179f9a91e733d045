"""User kernels (`pyrite.extend`) on WebGPU: the generated prelude, compile errors, the launch.

A user writes `fn main` and its helpers; this module declares everything around it, in one
prelude that docs/extending.md documents:

- binding 0 `info: array<i32>`, the metadata; then one read-only `array<elem>` per input, named
  as in the signature, and last `output` (read_write), always contiguous and fresh;
- `alias elem` (the storage type), `WORKGROUP_X/Y/Z` (the declared workgroup size);
- per tensor `t` (inputs and `output`): `t_rank`, `t_shape(d)`, `t_stride(d)`, `t_offset()`
  in elements, and `t_shape_at`, `t_strides_at`, the words where its blocks start, for
  `pyrite_offset` and the other helpers of `shaders/index.wgsl` (always pasted);
- `output_numel()`, and `attr_<name>()` per attribute (f32, or i32 for an int default).

Metadata words: numel, then per tensor shape[rank], strides[rank], offset, then the attributes.
Inputs arrive broadcast to their signature shapes (a broadcast dim has stride 0), not copied.
The user source may `#include` files of `shaders/`; they are pasted into the prelude, so the
source's own lines keep their numbers and a compile error points at the user's line.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..dtype import DType
from ..errors import KernelError, PyriteError
from ..extend.kernel import WgslKernel
from ..extend.op import CustomOp
from .codegen import KernelKey, header, include, scalar_bits, storage_type
from .kernels import Kernels
from .tensor import GpuTensor

_INCLUDE = re.compile(r'^[ \t]*#include[ \t]*"([\w.-]+)"[ \t]*$', re.MULTILINE)
_WHERE = re.compile(r":(\d+):(\d+)")
_DIAGNOSTIC = re.compile(r"error:\s*(\S.*)")

#: op name -> kernel launches on webgpu since import (pyrite.webgpu.stats() shows them)
LAUNCHES: dict[str, int] = {}


@dataclass(frozen=True)
class CustomKernelKey(KernelKey):
    """A user kernel's key: kernel "custom", the op's name, the dtypes, and in `params` a digest
    of the source, the tensors' ranks, the attributes (name, is a float) and the workgroup size.
    It words its own compile errors."""

    def compile_error(self, detail: str) -> PyriteError:
        """The runtime's diagnostics turned to the user's op, line and source text."""
        found = _SOURCES.get(self)
        where = _WHERE.search(detail)
        message = _DIAGNOSTIC.search(detail)
        said = message.group(1).strip() if message else detail.strip().splitlines()[0]
        if found is None or where is None:
            return KernelError(f"{self.op}: the WGSL kernel did not compile: {said}")
        source, prelude_lines = found
        line = int(where.group(1)) - prelude_lines
        lines = source.splitlines()
        if not 1 <= line <= len(lines):
            return KernelError(f"{self.op}: the WGSL kernel did not compile ({said}) in pyrite's "
                               f"prelude at its line {where.group(1)}; PYRITE_DEBUG=wgsl prints "
                               f"the whole kernel")
        return KernelError(f"{self.op}: the WGSL kernel did not compile: line {line} of its "
                           f"source, `{lines[line - 1].strip()}`: {said}")


#: key -> (the user's source, lines of prelude above it), for compile errors
_SOURCES: dict[CustomKernelKey, tuple[str, int]] = {}


def prelude(op: CustomOp, kernel: WgslKernel, tensors: Sequence[GpuTensor],
            attrs: Mapping[str, Any]) -> str:
    """The WGSL pyrite puts above the user's source for this call's dtypes and ranks."""
    names = (*op.signature.names, "output")
    dtype = tensors[-1].dtype
    lines = [f"// pyrite.extend: the prelude of {op.name} (generated; docs/extending.md)",
             header(tuple(t.dtype for t in tensors)).rstrip("\n"),
             "@group(0) @binding(0) var<storage, read> info: array<i32>;"]
    for i, (name, t) in enumerate(zip(names, tensors, strict=True)):
        access = "read_write" if name == "output" else "read"
        lines.append(f"@group(0) @binding({i + 1}) var<storage, {access}> {name}: "
                     f"array<{storage_type(t.dtype)}>;")
    x, y, z = kernel.workgroup_size
    lines += [f"alias elem = {storage_type(dtype)};", f"const WORKGROUP_X: u32 = {x}u;",
              f"const WORKGROUP_Y: u32 = {y}u;", f"const WORKGROUP_Z: u32 = {z}u;",
              "fn output_numel() -> i32 { return info[0]; }"]
    word = 1
    for name, t in zip(names, tensors, strict=True):
        r = t.rank
        lines += [f"const {name}_rank: i32 = {r};",
                  f"const {name}_shape_at: i32 = {word};",
                  f"const {name}_strides_at: i32 = {word + r};",
                  f"fn {name}_shape(d: i32) -> i32 {{ return info[{word} + d]; }}",
                  f"fn {name}_stride(d: i32) -> i32 {{ return info[{word + r} + d]; }}",
                  f"fn {name}_offset() -> i32 {{ return info[{word + 2 * r}]; }}"]
        word += 2 * r + 1
    for name, value in attrs.items():
        if _is_float(value):
            lines.append(f"fn attr_{name}() -> f32 {{ return bitcast<f32>(info[{word}]); }}")
        else:
            lines.append(f"fn attr_{name}() -> i32 {{ return info[{word}]; }}")
        word += 1
    pasted = include("index.wgsl", *_INCLUDE.findall(kernel.source))
    lines += [pasted.rstrip("\n"), f"// ---- {op.name}: the kernel's source"]
    return "\n".join(lines) + "\n"


def launch(kernels: Kernels, op: CustomOp, inputs: Sequence[GpuTensor],
           attrs: Mapping[str, Any]) -> GpuTensor:
    """Run `op`'s kernel on `inputs` (broadcast to the signature's shapes) into a new tensor."""
    kernel = op.kernel
    assert kernel is not None
    bound = op.signature.bind(op.name, tuple(t.shape for t in inputs))
    limits = kernels.runtime.limits
    if len(inputs) + 2 > limits.max_storage_buffers_per_shader_stage:
        raise KernelError(f"{op.name}: {len(inputs)} inputs, the output and the metadata need "
                          f"{len(inputs) + 2} storage buffers; this adapter binds at most "
                          f"{limits.max_storage_buffers_per_shader_stage} per kernel; pass "
                          f"fewer tensors (concatenate some)")
    grid = kernel.grid(op.name, bound.dims, limits.max_compute_workgroups_per_dimension)
    out = kernels.empty(bound.output, inputs[0].dtype, op.name)
    tensors = [*inputs, out]
    digest = hashlib.sha1(kernel.source.encode()).hexdigest()[:16]
    key = CustomKernelKey("custom", op.name, tuple(t.dtype for t in tensors), 0, (
        digest, tuple(t.rank for t in tensors),
        tuple((name, _is_float(v)) for name, v in attrs.items()), kernel.workgroup_size))
    pipeline = kernels.cached(key)
    if pipeline is None:
        head = prelude(op, kernel, tensors, attrs)
        _SOURCES[key] = (kernel.source, head.count("\n"))
        body = _INCLUDE.sub("", kernel.source)  # pasted above; the lines stay, empty
        pipeline = kernels.pipeline(key, head + body)
    if out.numel == 0:
        return out
    words = [out.numel]
    for t in tensors:
        words += [*t.shape, *t.strides, t.offset]
    words += [scalar_bits(v, DType.F32 if _is_float(v) else DType.I32) for v in attrs.values()]
    if grid is None:
        grid = kernels.grid(-(-out.numel // math.prod(kernel.workgroup_size)))
    bindings = [kernels.meta(words), *(t.block.buffer for t in tensors)]
    kernels.launch(pipeline, bindings, grid)
    LAUNCHES[op.name] = LAUNCHES.get(op.name, 0) + 1
    return out


def _is_float(value: object) -> bool:
    return isinstance(value, float) and not isinstance(value, bool)


__all__ = ["LAUNCHES", "CustomKernelKey", "launch", "prelude"]
