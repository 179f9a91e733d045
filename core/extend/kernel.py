"""A user's WGSL kernel for a custom op, as declared: the source, its workgroup size and grid.

This module holds the declaration and the checks that need no device (the bindings are
pyrite's, the entry point exists, the workgroup fits WebGPU's limits); compiling and launching
belong to the webgpu backend (`pyrite.webgpu.custom`), which core never imports.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass

from ..errors import KernelError

#: WebGPU's guaranteed limits (maxComputeInvocationsPerWorkgroup, maxComputeWorkgroupSizeX/Y/Z)
MAX_INVOCATIONS = 256
MAX_SIZE = (256, 256, 64)

Grid = Callable[[dict[str, int]], tuple[int, int, int]]

_BINDING = re.compile(r"@binding\s*\(|@group\s*\(")
_MAIN = re.compile(r"\bfn\s+main\s*\(")


@dataclass(frozen=True, eq=False)
class WgslKernel:
    """A WGSL kernel body for one custom op (see docs/extending.md for what pyrite declares
    around it). `workgroups(dims)` gives the grid from the signature's sizes (`dims["batch"]`
    is the product of the batch dims); None launches one invocation per output element."""

    source: str
    workgroup_size: tuple[int, int, int]
    workgroups: Grid | None

    @staticmethod
    def declare(op: str, source: str, workgroup_size: tuple[int, ...],
                workgroups: Grid | None) -> WgslKernel:
        """A checked declaration; what is wrong raises a KernelError naming the op."""
        if found := _BINDING.search(source):
            line = source.count("\n", 0, found.start()) + 1
            raise KernelError(f"{op}: the WGSL source declares its own binding at line {line}; "
                              f"pyrite declares info, the inputs and output: remove the "
                              f"@group/@binding lines and use those names")
        if _MAIN.search(source) is None:
            raise KernelError(f"{op}: the WGSL source has no entry point; write "
                              f"`@compute @workgroup_size(WORKGROUP_X, WORKGROUP_Y, WORKGROUP_Z) "
                              f"fn main(...)`")
        size = tuple(workgroup_size) + (1,) * (3 - len(workgroup_size))
        if (len(size) != 3 or any(not isinstance(s, int) or s < 1 for s in size)
                or any(s > m for s, m in zip(size, MAX_SIZE, strict=True))
                or math.prod(size) > MAX_INVOCATIONS):
            raise KernelError(f"{op}: workgroup_size {tuple(workgroup_size)} is outside "
                              f"WebGPU's limits: up to 3 positive sizes, at most {MAX_SIZE} and "
                              f"{MAX_INVOCATIONS} invocations in all")
        return WgslKernel(source, (size[0], size[1], size[2]), workgroups)

    def grid(self, op: str, dims: dict[str, int], most: int) -> tuple[int, int, int] | None:
        """The workgroup counts of a call (None: one invocation per element, folded by the
        launcher); counts outside (0..most) raise a KernelError before anything is dispatched."""
        if self.workgroups is None:
            return None
        counts = tuple(int(c) for c in self.workgroups(dims))
        if len(counts) != 3 or any(c < 0 or c > most for c in counts):
            raise KernelError(f"{op}: workgroups(dims) gave {counts} for dims {dims}; give three "
                              f"counts between 0 and {most} (the adapter's "
                              f"max_compute_workgroups_per_dimension)")
        return counts[0], counts[1], counts[2]
