"""The backend contract: a small set of primitives, plus composites written once from them.

A backend implements the abstract primitives on its own primitive type (an ndarray for numpy,
a buffer view for WebGPU, a graph-tracked wrapper for Autodiff). The front end
(`pyrite.tensor`) validates every argument once, so backends assume valid input:

- binary ops get operands of equal rank whose sizes are equal or 1 (broadcast), or a Python
  scalar as `b`; matmul gets equal ranks with broadcastable batch dims;
- dims are non-negative and in range; slices are `(start, stop, step)` triples, in range;
- index tensors are of the backend's int dtype.

Composites (pad, softmax, log_softmax, ...) are ordinary methods built only from primitives;
a backend may override one for speed, and a conformance case shows both agree.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..data import TensorData
from ..distribution import Distribution
from ..dtype import DType, Kind
from .attention_ops import AttentionOps
from .deform_ops import DeformOps
from .module_ops import ModuleOps
from .norm_ops import NormOps
from .reduce import Reduction
from .registry import Op

if TYPE_CHECKING:
    from ..extend.op import CustomOp

Prim = Any  # a backend's own tensor primitive
Range = tuple[int, int, int]  # (start, stop, step), resolved and in range


class Backend(AttentionOps, NormOps, ModuleOps, DeformOps, ABC):
    """Base class of every backend and backend decorator."""

    #: short name shown in logs, errors and `repr` (decorators compose: "autodiff<numpy>")
    name: str = "backend"
    #: the dtypes a kind gets when none is named
    float_dtype: DType = DType.F32
    int_dtype: DType = DType.I64
    #: True for backends that track gradients (Autodiff)
    is_autodiff: bool = False
    #: the language of the user kernels this backend runs (pyrite.extend): "wgsl" or None
    kernel_language: str | None = None

    def __repr__(self) -> str:
        return self.name

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Backend) and other.name == self.name

    def __hash__(self) -> int:
        return hash(self.name)

    def default_dtype(self, kind: Kind) -> DType:
        if kind is Kind.FLOAT:
            return self.float_dtype
        if kind is Kind.INT:
            return self.int_dtype
        return DType.BOOL

    def supports(self, dtype: DType) -> bool:
        """Whether tensors of this dtype can live here."""
        return True

    # ---- device-level ----------------------------------------------------------------------
    def seed(self, seed: int) -> None:
        """Seed the random generator: the same seed gives the same random tensors."""
        raise NotImplementedError

    def sync(self) -> None:
        """Wait for queued work to finish (a no-op on synchronous backends)."""

    # ---- creation and data -----------------------------------------------------------------
    @abstractmethod
    def from_data(self, data: TensorData) -> Prim: ...

    def from_data_as(self, data: TensorData, dtype: DType) -> Prim:
        """`data` converted to `dtype` on the way in (the front end has checked it fits); a
        backend may convert on the device instead of the host."""
        return self.from_data(data.convert(dtype))

    def from_data_many(self, items: Sequence[tuple[TensorData, DType, Prim | None]]
                       ) -> list[Prim]:
        """Several tensors at once (a record's load): each `(data, dtype, into)` gives `data`
        as `dtype`. `into`, when not None, is the primitive the value replaces: one made by
        `uninitialized` may be written in place instead of allocating anew (its storage
        reused). A backend may upload them together (webgpu: one write, one submit)."""
        return [self.from_data(data) if data.dtype is dtype else self.from_data_as(data, dtype)
                for data, dtype, _ in items]

    @abstractmethod
    def to_data(self, x: Prim) -> TensorData: ...

    async def to_data_async(self, x: Prim) -> TensorData:
        """`to_data` for callers that cannot block (a browser page); synchronous by default."""
        return self.to_data(x)

    @abstractmethod
    def full(self, shape: tuple[int, ...], value: float | int | bool, dtype: DType) -> Prim: ...

    def uninitialized(self, shape: tuple[int, ...], dtype: DType) -> Prim:
        """A tensor whose values are undefined: storage only, for values written right after
        (a model's params that a record overwrites; pyrite.module.init_from_record). Zeros by
        default; a backend that can allocate without writing (no kernel, no upload) does."""
        return self.full(shape, 0, dtype)

    @abstractmethod
    def arange(self, start: int, stop: int, step: int, dtype: DType) -> Prim: ...

    @abstractmethod
    def random(self, shape: tuple[int, ...], distribution: Distribution, dtype: DType) -> Prim: ...

    # ---- metadata --------------------------------------------------------------------------
    @abstractmethod
    def shape(self, x: Prim) -> tuple[int, ...]: ...

    @abstractmethod
    def dtype(self, x: Prim) -> DType: ...

    def same_shape_and_dtype(self, a: Prim, b: Prim) -> bool:
        """Whether two primitives can meet in a binary op as they are (the front end's fast
        path; a backend may answer faster than comparing `shape` and `dtype`)."""
        return self.shape(a) == self.shape(b) and self.dtype(a) is self.dtype(b)

    # ---- elementwise -----------------------------------------------------------------------
    @abstractmethod
    def unary(self, op: Op, x: Prim) -> Prim: ...

    @abstractmethod
    def binary(self, op: Op, a: Prim, b: Prim | float | int | bool) -> Prim: ...

    def unary_consuming(self, op: Op, x: Prim) -> Prim:
        """`unary(op, x)` where the caller gives `x` up: it reads `x` no more, and no other
        tensor shares its memory (`pyrite.consuming`). A backend may write the result there;
        by default this is `unary`, so a decorator (Autodiff, Fusion) keeps its semantics."""
        return self.unary(op, x)

    def binary_consuming(self, op: Op, a: Prim, b: Prim | float | int | bool) -> Prim:
        """`binary(op, a, b)` where the caller gives `a` up, as `unary_consuming`."""
        return self.binary(op, a, b)

    @abstractmethod
    def where(self, mask: Prim, a: Prim, b: Prim) -> Prim:
        """a where mask else b; all three of equal rank, broadcastable."""

    @abstractmethod
    def cast(self, x: Prim, dtype: DType) -> Prim: ...

    # ---- reductions and linear algebra -----------------------------------------------------
    @abstractmethod
    def reduce(self, op: Reduction, x: Prim, dim: int) -> Prim:
        """Reduce along `dim`, keeping it with size 1; argmax/argmin give int_dtype indices."""

    @abstractmethod
    def matmul(self, a: Prim, b: Prim) -> Prim: ...

    @abstractmethod
    def sort(self, x: Prim, dim: int, descending: bool) -> tuple[Prim, Prim]:
        """Stable sort along dim: (values, int indices)."""

    # ---- movement --------------------------------------------------------------------------
    @abstractmethod
    def reshape(self, x: Prim, shape: tuple[int, ...]) -> Prim: ...

    @abstractmethod
    def permute(self, x: Prim, axes: tuple[int, ...]) -> Prim: ...

    @abstractmethod
    def expand(self, x: Prim, shape: tuple[int, ...]) -> Prim:
        """Broadcast to `shape` (same rank; sizes equal or from 1)."""

    @abstractmethod
    def slice(self, x: Prim, ranges: Sequence[Range]) -> Prim: ...

    @abstractmethod
    def slice_assign(self, x: Prim, ranges: Sequence[Range], value: Prim) -> Prim:
        """A copy of x with the sliced region replaced by `value` (of the region's shape)."""

    @abstractmethod
    def cat(self, xs: Sequence[Prim], dim: int) -> Prim: ...

    @abstractmethod
    def flip(self, x: Prim, axes: tuple[int, ...]) -> Prim: ...

    @abstractmethod
    def gather(self, x: Prim, dim: int, index: Prim) -> Prim:
        """out[..., i, ...] = x[..., index[..., i, ...], ...] along dim; index has out's shape."""

    @abstractmethod
    def scatter_add(self, x: Prim, dim: int, index: Prim, value: Prim) -> Prim:
        """A copy of x with `value` added at `index` along dim (sums repeated indices)."""

    @abstractmethod
    def select(self, x: Prim, dim: int, index: Prim) -> Prim:
        """Pick entries of a 1-D index along dim."""

    @abstractmethod
    def select_add(self, x: Prim, dim: int, index: Prim, value: Prim) -> Prim:
        """A copy of x with slices of `value` added at the 1-D index along dim."""

    # ---- user ops (pyrite.extend) ----------------------------------------------------------
    def custom(self, op: CustomOp, inputs: Sequence[Prim], attrs: Mapping[str, Any]) -> Prim:
        """A user op on inputs already broadcast to its signature's shapes: its composite here;
        a backend with a kernel for it (webgpu) and the decorators override this."""
        return op.run_composite(self, inputs, attrs)

    # ---- composites: written once here, overridden only for speed --------------------------
    def pad(self, x: Prim, pads: Sequence[tuple[int, int]], value: float | int | bool) -> Prim:
        """Pad each dim by (before, after) with a constant."""
        shape = self.shape(x)
        out_shape = tuple(s + lo + hi for s, (lo, hi) in zip(shape, pads, strict=True))
        out = self.full(out_shape, value, self.dtype(x))
        ranges = [(lo, lo + s, 1) for s, (lo, _) in zip(shape, pads, strict=True)]
        return self.slice_assign(out, ranges, x)

    def softmax(self, x: Prim, dim: int) -> Prim:
        """exp(x - max) / sum(exp(x - max)) along dim."""
        from .reduce import MAX, SUM
        from .registry import get
        shifted = self.binary(get("sub"), x, self.expand(self.reduce(MAX, x, dim), self.shape(x)))
        e = self.unary(get("exp"), shifted)
        return self.binary(get("div"), e, self.expand(self.reduce(SUM, e, dim), self.shape(x)))

    def softmax_grad(self, out: Prim, grad: Prim, dim: int) -> Prim:
        """The gradient of softmax's input from its output and the output's gradient:
        out * (grad - sum(grad * out)) along dim."""
        from .reduce import SUM
        from .registry import get
        mul = get("mul")
        total = self.reduce(SUM, self.binary(mul, grad, out), dim)
        return self.binary(mul, out, self.binary(get("sub"), grad,
                                                 self.expand(total, self.shape(out))))

    def log_softmax(self, x: Prim, dim: int) -> Prim:
        """x - max - log(sum(exp(x - max))) along dim."""
        from .reduce import MAX, SUM
        from .registry import get
        shape = self.shape(x)
        shifted = self.binary(get("sub"), x, self.expand(self.reduce(MAX, x, dim), shape))
        lse = self.unary(get("log"), self.reduce(SUM, self.unary(get("exp"), shifted), dim))
        return self.binary(get("sub"), shifted, self.expand(lse, shape))


def layers(backend: Backend) -> list[Backend]:
    """`backend` and the backends it decorates, outermost first: autodiff<fusion<webgpu>> gives
    [Autodiff, Fusion, WebGpu] (a decorator keeps what it wraps in `inner`)."""
    found = [backend]
    while isinstance(getattr(found[-1], "inner", None), Backend):
        found.append(found[-1].inner)  # type: ignore[attr-defined]
    return found
