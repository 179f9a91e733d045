"""The strided conv's input gradient with its weights staged in workgroup memory
(`shaders/conv2d_input_grad_staged.wgsl`).

A strided input gradient has no flipped-forward form (`conv_gemm.flipped_padding`), and a first
layer's few input channels leave the GEMM's rows mostly empty (SqueezeNet's conv1: 3 input
channels, M = 3 against tiles of 16-64 rows), so it runs the direct gather of
`conv2d_input_grad.wgsl`: one invocation per input pixel and block of 4 input channels, which
reads each gradient value its taps reach and 4 weights from storage per output channel. Here
an invocation takes one pixel of each phase (SH x SW neighbours, whose taps reach the same few
gradient values: 4 reads for 9 tap products at stride 2 and 3x3, against 9), the workgroup
stages its block's weights once (C_out / groups x taps vec4s) and the geometry, and with it
every tap's offset, is compiled in (`_code` writes the loads and products out). Natively on a
GPU only (`applies`), as `conv.py`'s input gradient at a stride; a page and CPU adapters keep
the plain gather.
"""

from __future__ import annotations

from ..backend.module_ops import Pads, Pair
from ..dtype import DType
from . import conv_gemm
from .codegen import KernelKey, render
from .kernels import Kernels
from .tensor import GpuTensor

WORKGROUP = 256  # pixels per workgroup
NAME = "direct/staged"  # `conv.py`'s variant name (the plain gather: "direct/gather")
_F32 = (DType.F32, DType.F32, DType.F32)
_WORDS = ("H", "W", "OH", "OW", "KH", "KW", "SH", "SW", "PT", "PL", "DH", "DW", "C_IN", "C_OUT",
          "CG", "COG")


MAX_PHASES = 16  # pixels per invocation (SH x SW) at most: one accumulator vec4 each


def _grid(x_shape: tuple[int, ...], w_shape: tuple[int, ...], stride: Pair,
          groups: int) -> tuple[int, int, int]:
    n, _, h, w = x_shape
    blocks = -(-h // stride[0]) * -(-w // stride[1])  # blocks of SH x SW pixels per plane
    return -(-blocks // WORKGROUP), n * groups * -(-w_shape[1] // 4), 1


def _offsets(size: int, stride: int, pad: int, dilation: int) -> list[list[tuple[int, int]]]:
    """For each phase p < stride of one axis, the (tap, gradient offset) pairs that reach input
    index q * stride + p: tap k where p + pad - k * dilation divides by the stride, the offset
    (p + pad - k * dilation) / stride from q."""
    return [[(k, (p + pad - k * dilation) // stride) for k in range(size)
             if (p + pad - k * dilation) % stride == 0] for p in range(stride)]


def _code(kh: int, kw: int, stride: Pair, pads: tuple[int, int],
          dilation: Pair) -> dict[str, str]:
    """The template's {{ setup }}, {{ body }} and {{ store }}, written out for this geometry."""
    rows = _offsets(kh, stride[0], pads[0], dilation[0])
    cols = _offsets(kw, stride[1], pads[1], dilation[1])
    dys = sorted({d for phase in rows for _, d in phase})
    dxs = sorted({d for phase in cols for _, d in phase})

    def name(v: int) -> str:
        return f"m{-v}" if v < 0 else str(v)

    setup = [f"let oy_{name(d)} = qy + {d};" for d in dys] + \
        [f"let ox_{name(d)} = qx + {d};" for d in dxs] + \
        [f"let ok_{name(a)}_{name(b)} = oy_{name(a)} >= 0 && oy_{name(a)} < OH && "
         f"ox_{name(b)} >= 0 && ox_{name(b)} < OW;" for a in dys for b in dxs] + \
        [f"let at_{name(a)}_{name(b)} = oy_{name(a)} * OW + ox_{name(b)};"
         for a in dys for b in dxs] + \
        [f"var acc_{py}_{px} = vec4<f32>(0.0);" for py in range(stride[0])
         for px in range(stride[1])]
    used = {(a, b) for phase_y in rows for phase_x in cols for _, a in phase_y
            for _, b in phase_x}
    body = []
    for a, b in sorted(used):
        v = f"{name(a)}_{name(b)}"
        body.append(f"var g_{v} = 0.0; if (ok_{v}) {{ g_{v} = g[gc + at_{v}]; }}")
    for py, phase_y in enumerate(rows):
        for px, phase_x in enumerate(cols):
            for ky, a in phase_y:
                for kx, b in phase_x:
                    body.append(f"acc_{py}_{px} += g_{name(a)}_{name(b)} * "
                                f"ws[wc + {ky * kw + kx}];")
    store = []
    for py in range(stride[0]):
        for px in range(stride[1]):
            store.append(
                f"if (qy * SH + {py} < H && qx * SW + {px} < W) {{ "
                f"let o = dbase + (qy * SH + {py}) * W + qx * SW + {px}; "
                f"for (var e = 0; e < lanes; e++) {{ dx[o + e * H * W] = acc_{py}_{px}[e]; }} }}")
    ind = "\n    "
    return {"setup": "\n  ".join(setup), "body": ind.join(body), "store": "\n  ".join(store)}


def fits(x_shape: tuple[int, ...], w_shape: tuple[int, ...], stride: Pair, groups: int,
         max_workgroup_bytes: int, max_workgroups: int) -> bool:
    """Whether the device holds the staged weights (C_out / groups x taps vec4s) and the
    grid (pixels, and (image, group, block) rows)."""
    c_out, _, kh, kw = w_shape
    return (c_out // groups) * kh * kw * 16 <= max_workgroup_bytes and \
        stride[0] * stride[1] <= MAX_PHASES and \
        max(_grid(x_shape, w_shape, stride, groups)) <= max_workgroups


def applies(k: Kernels, x_shape: tuple[int, ...], w_shape: tuple[int, ...], stride: Pair,
            groups: int) -> bool:
    """Whether `conv.py`'s strided input gradient runs here staged: natively on a GPU (not a
    page, not a CPU adapter), where it fits."""
    limits = k.runtime.limits
    return conv_gemm.native_gpu(k) and \
        fits(x_shape, w_shape, stride, groups, limits.max_compute_workgroup_storage_size,
             limits.max_compute_workgroups_per_dimension)


def run(k: Kernels, out: GpuTensor, grad: GpuTensor, weight: GpuTensor, stride: Pair,
        padding: Pads, dilation: Pair, groups: int) -> None:
    """dx into `out` (N, C_in, H, W) from the output gradient `grad` and the dense `weight`
    (C_out, C_in / groups, KH, KW) of a conv with this stride, padding, dilation and groups."""
    n, c_in, h, w = out.shape
    c_out, cg, kh, kw = weight.shape
    (pt, _), (pl, _) = padding
    words = (h, w, grad.shape[2], grad.shape[3], kh, kw, *stride, pt, pl, *dilation, c_in,
             c_out, cg, c_out // groups)
    key = KernelKey("conv2d_input_grad_staged", "", _F32, 0, (WORKGROUP, words))
    pipeline = k.cached(key)
    if pipeline is None:
        geometry = "\n".join(f"const {name}: i32 = {v};" for name, v in zip(_WORDS, words,
                                                                          strict=True))
        pipeline = k.pipeline(key, render("conv2d_input_grad_staged.wgsl", workgroup=WORKGROUP,
                                          geometry=geometry,
                                          **_code(kh, kw, stride, (pt, pl), dilation)))
    k.launch(pipeline, [grad.block.buffer, weight.block.buffer, out.block.buffer],
             _grid(out.shape, weight.shape, stride, groups),
             2.0 * grad.numel * cg * kh * kw)  # the FLOPs, for the submit policy (batch.py)


__all__ = ["NAME", "WORKGROUP", "applies", "fits", "run"]
