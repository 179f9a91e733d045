"""The implicit-GEMM conv with K split inside the workgroup (`shaders/conv2d_gemm_slices.wgsl`).

SqueezeNet's 14x14 3x3 layers are GEMMs of 192-256 x 3136 outputs: 147-196 tiles of 64x64, each
a workgroup of 256 threads, on a GPU of 132 multiprocessors that hold 2048 threads each. The
tile loop of `conv_gemm.py` leaves most of the GPU idle there, smaller tiles give no more
threads (4 x 4 outputs per thread either way), and splitting K across workgroups adds a second
dispatch and a round trip of partial outputs through memory, which lost (benchmarks/README.md,
sessions 6-7). Here a workgroup holds 2 or 4 slices of a tile's threads, each slice walking
every 2nd or 4th K step on its own tiles; the slices add their sums in workgroup memory and
share the stores. Same gathers and stores as the GEMM (conv2d_gemm.wgsl's forward, gathered
input gradient and flipped stride-1 input gradient, bias and Fusion's epilogue), compiled with
the same native options (geometry constants, no bound compares on whole tiles).

A `Form` is a tile and a slice count, "slices/<BM>x<BN>s<S>" (`conv.py`'s variant names). This
module owns the kernel and its launch; `conv.py` chooses when it runs.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..backend.module_ops import Pads, Pair
from ..dtype import DType
from . import conv_gemm, conv_geometry, software
from .codegen import BITS_FN, KernelKey, render
from .fused import DenseEpilogue
from .kernels import Kernels
from .matmul_config import params_bytes
from .tensor import GpuTensor
from .unchecked_module import ALL_CHECKS

PREFIX = "slices/"
BK = 16  # K terms per step of a slice
_EDGES = (16, 32, 64)  # tile rows and columns: whole vec4 loads of a BK step per thread
_PLAIN_OUT = "fn pyrite_out(v: f32, i: i32) -> f32 { return v; }"
_F32 = (DType.F32, DType.F32, DType.F32)


@dataclass(frozen=True)
class Form:
    """A BM x BN tile of 4 x 4 blocks per thread, its K steps in `slices` slices of threads."""

    bm: int
    bn: int
    slices: int

    def __post_init__(self) -> None:
        if self.bm not in _EDGES or self.bn not in _EDGES or self.slices not in (2, 4):
            raise ValueError(f"conv slices form {self.bm}x{self.bn}s{self.slices}: the tile's "
                             f"sides must be one of {_EDGES} and the slices 2 or 4 "
                             f"(e.g. slices/64x64s2)")

    @property
    def name(self) -> str:
        return f"{PREFIX}{self.bm}x{self.bn}s{self.slices}"

    @property
    def threads(self) -> int:
        return self.slices * self.bm * self.bn // 16

    @property
    def workgroup_bytes(self) -> int:
        """Two buffers of a BK-step A and B tile per slice (the partial sums reuse them)."""
        return self.slices * 2 * BK * (self.bm + self.bn) * 4

    @staticmethod
    def parse(name: str) -> Form:
        """The form of a variant name "slices/<BM>x<BN>s<S>"."""
        body = name[len(PREFIX):] if name.startswith(PREFIX) else name
        tile, _, slices = body.partition("s")
        bm, _, bn = tile.partition("x")
        if not (bm.isdigit() and bn.isdigit() and slices.isdigit()):
            raise ValueError(f"conv slices variant {name!r}: expected slices/<BM>x<BN>s<S>, "
                             f"e.g. slices/64x64s2")
        return Form(int(bm), int(bn), int(slices))


def fits(form: Form, max_workgroup_bytes: int, max_threads: int) -> bool:
    """Whether the device's workgroups hold `form`'s threads and tiles."""
    return form.workgroup_bytes <= max_workgroup_bytes and form.threads <= max_threads


def applies(k: Kernels) -> bool:
    """Whether `conv.py`'s rule may pick this kernel here: natively, on a GPU (a page and CPU
    adapters keep the kernels they have; the kernel itself runs anywhere it fits)."""
    return conv_gemm.native_gpu(k)


def _product(form: Form) -> str:
    """One K step's multiply-adds, its BK k's written out."""
    aq, bq = form.bm // 4, form.bn // 4
    lines = []
    for kk in range(BK):
        lines.append(f"{{ let av = As[ka + {kk * aq}u]; let bv = Bs[kb + {kk * bq}u]; "
                     "acc0 += av.x * bv; acc1 += av.y * bv; acc2 += av.z * bv; "
                     "acc3 += av.w * bv; }")
    return "\n            ".join(lines)


def run(k: Kernels, form: Form, out: GpuTensor, x: GpuTensor, weight: GpuTensor,
        bias: GpuTensor | None, x_shape: tuple[int, ...], stride: Pair, padding: Pads,
        dilation: Pair, groups: int, mode: int, epilogue: DenseEpilogue | None = None,
        gather: bool = False, constant: bool | None = None) -> None:
    """Launch the sliced GEMM into `out` (dense): the forward conv (`mode` conv_gemm.FORWARD,
    `x` the input) or the input gradient (conv_gemm.INPUT_GRAD, `x` dy, `x_shape` the input's
    shape; at stride 1 the flipped forward unless `gather`). Dense operands; Fusion's
    `epilogue` in the store. `constant` as `conv_gemm.run`'s."""
    if mode not in (conv_gemm.FORWARD, conv_gemm.INPUT_GRAD):
        raise ValueError("the sliced conv GEMM runs the forward and the input gradient; the "
                         "weight gradient has its own kernel (conv_wgrad.py)")
    w_shape = weight.shape
    out_hw = (out.shape[2], out.shape[3]) if mode == conv_gemm.FORWARD else \
        (x.shape[2], x.shape[3])
    m, n, kdim = conv_gemm.sizes(x_shape, w_shape, out_hw, groups, mode)
    _, c_in, h, w = x_shape
    c_out, cg, kh, kw = w_shape
    cog = c_out // groups
    plane = out_hw[0] * out_hw[1]
    strides = (cog * kdim, cg * h * w, cog * plane) if mode == conv_gemm.FORWARD else \
        (cog * cg * kh * kw, cog * plane, cg * h * w)
    words = conv_gemm.geometry_words(x_shape, w_shape, out_hw, stride, padding, dilation,
                                     groups, 0 if bias is None else conv_gemm.NO_END)
    soft = software.software(k.runtime.adapter)
    flipped = conv_gemm.flipped_padding(w_shape, stride, padding, dilation) \
        if mode == conv_gemm.INPUT_GRAD and not gather and not soft else None
    shader_mode = mode
    if flipped is not None:  # dy (N, C_out, OH, OW) convolved into dx (N, C_in, H, W)
        words = conv_gemm.geometry_words(x.shape, (c_in, cog, kh, kw), (h, w), stride, flipped,
                                         dilation, groups, 0)
        shader_mode = conv_gemm.FLIPPED
    on_native = conv_gemm.native(k)
    if constant is None:
        constant = conv_geometry.applies(k.runtime.adapter.adapter_type, on_native)
    baked = conv_geometry.constant_words(words) if constant and on_native else None
    inside = on_native and conv_gemm.NATIVE_INTERIOR and \
        m % form.bm == 0 and n % form.bn == 0 and kdim % BK == 0
    checks = conv_gemm.NATIVE_CHECKS if on_native else ALL_CHECKS
    bindings = [weight.block.buffer, x.block.buffer, out.block.buffer,
                k.constant(params_bytes(m, n, kdim, groups, *strides), uniform=True),
                k.meta(words), (bias if bias is not None else weight).block.buffer]
    extra: tuple[object, ...] = ()
    if epilogue is not None:
        bindings += epilogue.bindings(k)
        extra = epilogue.key()
    key = KernelKey("conv2d_gemm_slices", form.name, _F32, 0,
                    (shader_mode, inside, checks, baked, *extra))
    pipeline = k.cached(key)
    if pipeline is None:
        code = BITS_FN + epilogue.source(conv_gemm.EPILOGUE_BINDING) \
            if epilogue is not None else _PLAIN_OUT
        io = render("conv2d_gemm.wgsl", mode=shader_mode, interior=str(inside).lower(),
                    epilogue=code, geometry=conv_geometry.source(baked))
        source = render("conv2d_gemm_slices.wgsl", BM=form.bm, BN=form.bn, BK=BK,
                        SLICES=form.slices, THREADS=form.threads,
                        LOADS_A=form.bm * BK // 4 * form.slices // form.threads,
                        LOADS_B=form.bn * BK // 4 * form.slices // form.threads,
                        product=_product(form), io=io)
        pipeline = k.pipeline(key, source, checks=checks)
    k.launch(pipeline, bindings, (-(-n // form.bn), -(-m // form.bm), groups),
             2.0 * m * n * kdim * groups)  # the FLOPs, for the submit policy (batch.py)


# The rule (`conv.py`'s heuristic, natively on a GPU), fitted on the H100 by hand against the
# kernels it replaces (benchmarks/results/conv_layers_h100_s8c_a.json against _s7_lead.json, then
# _s8c.json and conv_gather_cost_h100_s8c.json): a 1x1 forward of more than MIN_ROWS output
# channels over at least MIN_TERMS terms whose 64x64 tiles are fewer than FEW_TILES runs sliced,
# FORWARD_1X1. In the first run (this kernel's launches not yet passing their FLOPs to the submit
# policy, so the host's recording and the GPU did not overlap, where the channel kernel's did) it
# took SqueezeNet's fire9 squeeze (64 x 3136, K 512) in 57 us against 69 on the channel-block
# kernel, and tied on fire6's and fire8's (K 256 and 384: 43 and 63 us against 44 and 60); with the
# FLOPs passed, fire9's ran 35 us dispatched (0.71x cuDNN, 0.48x before) and 40 by hand against 52
# on the GEMM. fire6-8's squeezes (K 256-384) follow by that gain, not yet timed on this rule as
# dispatched; fire5's (32 channels over 12,544 pixels: 73-77 us against 58) stays off (MIN_ROWS).
# Elsewhere the slices lost or tied: the 14x14 3x3 forwards took 92-149 us against 97-121 on the
# 64x64 GEMM (fire7 the only gain), their input gradients 128-170 against 108-142 on channels/*,
# the 28x28 3x3 input gradients 172-193 against 140-141: 4 slices of a 64x32 tile (4 times the
# threads of the GEMM's 64x64 tile) gained little, so these GEMMs are not short of threads alone.
# With the FLOPs passed by both, the 3x3 forwards' GPU time was 73-102 us sliced against 62-89 on
# the GEMM and 46-61 for a plain matmul of the same sizes on the GEMM's tile (no gather).
FEW_TILES = 264  # two workgroups per multiprocessor of a 132-SM GPU
MIN_TERMS = 256
MIN_ROWS = 32  # output channels, at least this many more (a 64-row tile at least 3/4 used)
FORWARD_1X1 = Form(64, 32, 4)  # the fastest form on fire9's squeeze (57 us; 64x64s2: 72)
WIDE, NARROW = Form(64, 64, 2), Form(32, 64, 4)  # autotune's candidates: > 32 rows, <= 32


def choose(m: int, n: int, kdim: int, taps: int, forward: bool, max_workgroup_bytes: int,
           max_threads: int) -> Form | None:
    """The form for a GEMM of M x N outputs per group over K terms of a kernel of `taps`
    taps (the forward's, or the input gradient's), or None: the other kernels (see above)."""
    form = FORWARD_1X1
    tiles = -(-m // 64) * -(-n // 64)
    if not forward or taps != 1 or m <= MIN_ROWS or tiles >= FEW_TILES or kdim < MIN_TERMS or \
            not fits(form, max_workgroup_bytes, max_threads):
        return None
    return form


__all__ = ["BK", "FEW_TILES", "FORWARD_1X1", "MIN_ROWS", "MIN_TERMS", "NARROW", "PREFIX",
           "WIDE", "Form", "applies", "choose", "fits", "run"]
