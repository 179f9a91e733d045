"""Integer kernels for quantized products on WebGPU (the `IntKernels` of pyrite.quantization).

- `int8_matmul`: both operands packed four int8 a u32 word along the inner dim
  (`shaders/pack_int.wgsl`), multiplied by `shaders/matmul_int8.wgsl` into exact i32
  accumulators. Its dot product is WGSL's `dot4I8Packed` (the `packed_4x8_integer_dot_product`
  language feature) where the device compiles it, a portable unpacking function elsewhere.
- `weight_only_matmul`: float activations times a weight kept packed (QInt4 eight a word,
  QInt8 four), unpacked and dequantized in registers (`shaders/matmul_weight_only.wgsl`).

A weight is packed once (transposed, along the inner dim) and the packed buffer is kept with
the QuantizedTensor; activations are packed per call. The scales are applied by the caller
with ordinary tensor ops, which Fusion fuses.
"""

from __future__ import annotations

from typing import Any

from ..backend.base import Backend, layers
from ..dtype import DType, Kind
from ..errors import PyriteError
from ..quantization.scheme import Granularity, QuantizationType
from ..quantization.tensor import QuantizedTensor
from ..tensor import Tensor
from .backend import WebGpu
from .codegen import KernelKey, render
from .fusion import Fusion
from .kernels import Kernels
from .tensor import GpuTensor

PORTABLE_DOT = """fn dot4(x: u32, y: u32) -> i32 {
  var s = 0;
  for (var t = 0u; t < 4u; t++) {
    let sh = 24u - 8u * t;
    s += (bitcast<i32>(x << sh) >> 24u) * (bitcast<i32>(y << sh) >> 24u);
  }
  return s;
}"""
PACKED_DOT = "fn dot4(x: u32, y: u32) -> i32 { return dot4I8Packed(x, y); }"
_PROBE = """@group(0) @binding(0) var<storage, read_write> o: array<i32>;
@compute @workgroup_size(1) fn main() { o[0] = dot4I8Packed(o[1], o[2]); }"""

_HAS_DOT4: dict[int, bool] = {}
#: outputs (m * n) from which the int8 GEMM uses 128 x 128 tiles (64 of them at least)
LARGE_PRODUCT = 512 * 512
#: words of k (4 values each) per step of the int8 GEMM: 2 buffers of 2 tiles of 16 * 8 * 8
#: words = 16 KiB, WebGPU's default limit
INT8_KT = 8


def int8_blocks(r: int) -> dict[str, str]:
    """The acc_* and prefetch_* code of matmul_int8.wgsl for R x R blocks: registers
    acc{row}_{h} (vec4<i32>: columns of 4-column group h), row = 4 g + lane of row group g;
    pa{l} / pb{l}, the words flat + 256 l of the next step's tiles."""
    groups = range(r // 4)
    loads = range(16 * r * INT8_KT // 256)
    prefetch = {
        "prefetch_decl": " ".join(f"var pa{i} = 0u; var pb{i} = 0u;" for i in loads),
        "prefetch_load": " ".join(f"pa{i} = load_a(row0, k0, flat + {256 * i}u, m, kw); "
                                  f"pb{i} = load_b(col0, k0, flat + {256 * i}u, n, kw);"
                                  for i in loads),
        "prefetch_store": " ".join(f"put(buf, flat + {256 * i}u, pa{i}, pb{i});" for i in loads)}
    decl = " ".join(f"var acc{4 * g + i}_{h} = vec4<i32>(0);"
                    for g in groups for i in range(4) for h in groups)
    step = [f"let xa{g} = tile_a[base + w * ROW + ty + {16 * g}u];" for g in groups]
    step += [f"let yb{h} = tile_b[base + w * ROW + tx + {16 * h}u];" for h in groups]
    step += [f"acc{4 * g + i}_{h} += dot4x4(xa{g}.{e}, yb{h});"
             for g in groups for i, e in enumerate("xyzw") for h in groups]
    store = [f"store4(row0 + 4u * (ty + {16 * g}u) + {i}u, col0 + 4u * (tx + {16 * h}u), m, n, "
             f"acc{4 * g + i}_{h});" for g in groups for i in range(4) for h in groups]
    return {"acc_decl": decl, "acc_step": "\n      ".join(step),
            "acc_store": "\n  ".join(store), **prefetch}


def has_packed_dot(k: Kernels) -> bool:
    """Whether the device compiles WGSL's dot4I8Packed (probed once per runtime: wgpu-py does
    not report WGSL language features, the browser does through wgslLanguageFeatures)."""
    found = _HAS_DOT4.get(id(k))
    if found is None:
        try:
            k.pipeline(KernelKey("probe_dot4", "", (), 0, ()), _PROBE.replace(
                "dot4I8Packed(o[1], o[2])", "dot4I8Packed(bitcast<u32>(o[1]), bitcast<u32>(o[2]))"))
            found = True
        except (PyriteError, RuntimeError, ValueError):
            found = False
        _HAS_DOT4[id(k)] = found
    return found


class WebGpuIntKernels:
    """Integer products on one WebGPU device (raw or fused)."""

    def __init__(self, device: Backend, *, packed: bool | None = None) -> None:
        self.device = device
        raw = layers(device)[-1]
        assert isinstance(raw, WebGpu)
        self.k = raw.kernels
        #: dot4I8Packed when the device compiles it (packed=False forces the portable path)
        self.packed = has_packed_dot(self.k) if packed is None else packed
        self.dot_product = "dot4I8Packed" if self.packed else "unpacked (portable)"

    # ---- moving between tensors and GpuTensors ------------------------------------------------
    def _gpu(self, t: Tensor) -> GpuTensor:
        prim: Any = t.into_primitive()
        if isinstance(self.device, Fusion):
            return self.device._value(prim)
        assert isinstance(prim, GpuTensor)
        return prim

    def _tensor(self, g: GpuTensor, kind: Kind) -> Tensor:
        prim: Any = Fusion._wrap(g) if isinstance(self.device, Fusion) else g
        return Tensor.from_primitive(prim, self.device, kind)

    def _pack(self, values: GpuTensor, transpose: bool, bits: int) -> GpuTensor:
        """Rows of `values` (or of its transpose) packed 32 / bits values a word."""
        rows, cols = values.shape[::-1] if transpose else values.shape
        rs, cs = values.strides[::-1] if transpose else values.strides
        words = -(-cols // (32 // bits))
        out = self.k.empty((rows, words), DType.I32, "pack_int")
        key = KernelKey("pack_int", str(bits), (DType.I32,), 0, ())
        pipeline = self.k.cached(key) or self.k.pipeline(key, render("pack_int.wgsl", bits=bits))
        if rows * words:
            meta = self.k.meta([rows, cols, words, values.offset, rs, cs])
            self.k.launch(pipeline, [meta, values.block.buffer, out.block.buffer],
                          self.k.grid(-(-(rows * words) // 64)))
        return out

    # ---- the products -------------------------------------------------------------------------
    def int8_matmul(self, lhs: Tensor, rhs: QuantizedTensor) -> Tensor:
        a = self._pack(self._gpu(lhs), False, 8)
        b = rhs.cached("webgpu_int8_t", lambda: self._pack(self._gpu(rhs.values), True, 8))
        m, n = lhs.shape[0], rhs.shape[1]
        kw = a.shape[1]
        out = self.k.empty((m, n), DType.I32, "matmul_int8")
        # 8 x 8 blocks once there are enough 128 x 128 tiles to fill a GPU, else 4 x 4
        r = 8 if m * n >= LARGE_PRODUCT else 4
        key = KernelKey("matmul_int8", "packed" if self.packed else "portable", (DType.I32,), 0,
                        (r, INT8_KT))
        pipeline = self.k.cached(key) or self.k.pipeline(key, render(
            "matmul_int8.wgsl", enable="", dot=PACKED_DOT if self.packed else PORTABLE_DOT,
            r=r, kt=INT8_KT, **int8_blocks(r)))
        tile = 16 * r
        if m * n:
            self.k.launch(pipeline, [self.k.meta([m, n, kw]), a.block.buffer, b.block.buffer,
                                     out.block.buffer], (-(-n // tile), -(-m // tile), 1))
        return self._tensor(out, Kind.INT)

    def weight_only_matmul(self, x: Tensor, w: QuantizedTensor) -> Tensor | None:
        if x.dtype is not DType.F32:
            return None
        bits = 4 if w.scheme.qtype is QuantizationType.QInt4 else 8
        k, n = w.shape
        packed, scale, offset, block = w.cached("webgpu_weight_only",
                                                lambda: self._weight_only_operand(w, bits))
        xg = self.k.dense(self._gpu(x))
        m = x.shape[0]
        out = self.k.empty((m, n), DType.F32, "matmul_weight_only")
        key = KernelKey("matmul_weight_only", str(bits), (DType.F32,), 0, ())
        pipeline = self.k.cached(key) or self.k.pipeline(key, render(
            "matmul_weight_only.wgsl", bits=bits))
        if m * n:
            meta = self.k.meta([m, n, k, packed.shape[1], block])
            self.k.launch(pipeline, [meta, xg.block.buffer, packed.block.buffer,
                                     scale.block.buffer, offset.block.buffer, out.block.buffer],
                          (-(-n // 128), -(-m // 128), 1))
        return self._tensor(out, Kind.FLOAT)

    def _weight_only_operand(self, w: QuantizedTensor,
                             bits: int) -> tuple[GpuTensor, GpuTensor, GpuTensor, int]:
        """The packed transposed weight and its params as dense (blocks, n) arrays."""
        k, n = w.shape
        scheme = w.scheme
        scale, offset = w.qparams.scale, w.qparams.offset
        if scheme.granularity is Granularity.Block and scheme.resolved_axis(w.shape) == 0:
            block = scheme.block_size
        elif scheme.granularity is Granularity.Tensor or (
                scheme.granularity is Granularity.Channel and scheme.resolved_axis(w.shape) == 1):
            block = max(k, 1)
        else:  # params varying along n in blocks, or along k per channel: one row per k
            block = 1
            scale = _per_row(w, scale)
            offset = None if offset is None else _per_row(w, offset)
        rows = -(-k // block)
        scale = scale.reshape((-1, scale.shape[-1])).expand((rows, n))
        offset = (offset.reshape((-1, offset.shape[-1])).expand((rows, n)) if offset is not None
                  else scale.int().zeros_like())
        scale_g = self.k.dense(self._gpu(scale))
        offset_g = self.k.dense(self._gpu(offset.int()))
        packed = self._pack(self._gpu(w.values), True, bits)
        return packed, scale_g, offset_g, block


def _per_row(w: QuantizedTensor, param: Tensor) -> Tensor:
    """Params of any layout as one row per k: (k, n), by repeating them over their groups."""
    from ..quantization.calibration import blocked, params_view, unblocked
    scheme = w.scheme
    shape = w.shape
    if scheme.granularity is Granularity.Block:
        zeros = w.values.float().zeros_like()
        spread = blocked(zeros, scheme) + param.float().reshape(params_view(shape, scheme))
        return unblocked(spread, shape, scheme).cast(param.dtype)
    return param.expand(shape)


def create(device: Backend) -> WebGpuIntKernels:
    """The `IntKernels` factory registered for `WebGpu` (see registration.py)."""
    return WebGpuIntKernels(device)
