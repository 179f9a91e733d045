"""pyrite.extend: add your own op to every backend (docs/extending.md).

`op(signature)` declares an op from its composite (tensor ops, so it runs everywhere), to which
`.wgsl(...)` adds a WebGPU kernel and `.backward` a gradient of its own; `elementwise(wgsl)`
declares an elementwise op that the registry, Fusion and autodiff treat as a built-in.
"""

from ..errors import KernelError
from .elementwise import ElementwiseOp, elementwise
from .kernel import WgslKernel
from .op import CustomOp, op
from .signature import Bound, Signature

__all__ = ["Bound", "CustomOp", "ElementwiseOp", "KernelError", "Signature", "WgslKernel",
           "elementwise", "op"]
