"""The direct conv with a block of output channels per invocation and its weights staged in
workgroup memory (`shaders/conv2d_channels.wgsl`), for convs with few output channels over
many input channels: SqueezeNet's 1x1 squeezes (16-64 channels out of 64-512) and the stride-1
input gradients of its 3x3 expands (the forward conv of dy with the flipped weight: 32-64
channels out of 128-256, 9 taps).

Those are skinny GEMMs: few rows, a long K, many columns. On the tiled GEMM (`conv_gemm.py`)
a 64-row tile runs a quarter to three quarters empty on them, and the direct kernel of
`conv2d.wgsl` reads each weight from storage per 4 channels and each input value once per 4
channels. Here an invocation is one output pixel of the batch (a workgroup's invocations are
neighbouring pixels, so its x reads are coalesced) holding `channels` accumulators: each x
value it reads serves the whole block, and the weights come from workgroup memory as vec4s
that every invocation of the workgroup reads alike. Where the pixels alone leave the GPU short
of workgroups (14x14 planes), the group's input channels are split into slices, each writing a
partial output that `matmul_variants.add_partials` adds (through fusion's epilogue, where one
goes with the conv).

A `Form` names a block and a slice count, "channels/<channels>[s<slices>]" (`conv.py`'s
variant names). This module owns the kernel and its launch; `conv.py` chooses when it runs.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..backend.module_ops import Pads, Pair
from ..dtype import DType
from . import matmul_variants
from .codegen import BITS_FN, KernelKey, render, window_words
from .fused import DenseEpilogue
from .kernels import Kernels
from .tensor import GpuTensor

PREFIX = "channels/"
WORKGROUP = 64  # pixels per workgroup
STAGE_FLOATS = 2048  # the staged weights at most (8 KiB of workgroup memory)
EPILOGUE_BINDING = 5  # the first binding of an epilogue in conv2d_channels.wgsl
_PLAIN_OUT = "fn pyrite_out(v: f32, i: i32) -> f32 { return v; }"
_F32 = (DType.F32, DType.F32, DType.F32)
_LANES = "xyzw"


@dataclass(frozen=True)
class Form:
    """Output channels per invocation (a multiple of 4) and slices of the input channels."""

    channels: int
    slices: int = 1

    @property
    def name(self) -> str:
        return f"{PREFIX}{self.channels}" + (f"s{self.slices}" if self.slices > 1 else "")

    @staticmethod
    def parse(name: str) -> Form:
        """The form of a variant name "channels/<channels>[s<slices>]"."""
        body = name[len(PREFIX):] if name.startswith(PREFIX) else name
        channels, _, slices = body.partition("s")
        if not channels.isdigit() or (slices and not slices.isdigit()) or \
                int(channels) % 4 or int(channels) == 0 or (slices and int(slices) == 0):
            raise ValueError(f"bad conv channel-block variant {name!r}: use channels/<C> or "
                             f"channels/<C>s<S> with C a multiple of 4 and S >= 1")
        return Form(int(channels), int(slices) if slices else 1)


def chunk(channels: int, taps: int, cg: int) -> int:
    """Input channels staged per step: as many as STAGE_FLOATS holds (at least one), at most
    the group's."""
    return max(1, min(cg, STAGE_FLOATS // (channels * taps)))


def fits(form: Form, w_shape: tuple[int, ...], pixels: int, groups: int,
         workgroup_bytes: int, max_groups: int) -> bool:
    """Whether the kernel can run this conv in `form` on a device with this much workgroup
    memory and this many workgroups per grid dimension."""
    c_out, cg, kh, kw = w_shape
    taps = kh * kw
    blocks = groups * -(-(c_out // groups) // form.channels)
    return chunk(form.channels, taps, cg) * taps * form.channels * 4 <= workgroup_bytes and \
        -(-pixels // WORKGROUP) <= max_groups and blocks <= max_groups and \
        form.slices <= max(1, cg) and form.slices <= max_groups


# The heuristic's rule (`choose`), native adapters only: a conv whose outputs have at most
# MAX_OUT channels per group (a 1x1 kernel), MAX_OUT_TAPS (a forward of several taps) or
# MAX_OUT_TAPS_GRAD (an input gradient of several taps) runs here, in the largest block (64 or
# 32 on a 1x1 kernel, 16, 8; no more than the group's channels) that still makes
# MIN_WORKGROUPS workgroups. Where the pixels alone make fewer than MIN_WORKGROUPS workgroups,
# the input channels are split into slices of about SLICE_TERMS terms (at most MAX_SLICES).
# On the H100 against session 6's kernels (conv_layers_h100_s6_lead.json -> _s7f.json, as
# dispatched, cuDNN in the same runs): SqueezeNet's 1x1 squeezes ran 42-71 us where they took
# 44-214 (fire2 58 -> 42, fire3 87 -> 53, fire8 65 -> 60, fire9 214 -> 71), fire2/3's expand1x1
# forwards 29-46 against 38-57, the 1x1 input gradients of few channels 28-46 against 40-64,
# fire2/3's 3x3 input gradients 115-117 against 170-193 and MNIST's conv2 forward 38 against 46
# (its input gradient 43 against 53). Unsliced, the 3x3 input gradients of the 14x14 layers
# (48-64 channels out of 192-256, 9 taps: 1728-2304 terms over 49 workgroups of pixels) took
# 107-145 us, no faster than the GEMM; launched by hand in the same run, 4 slices took 116-166
# against 181-256 unsliced (the best block of each) and 146-173 for the GEMM (this sliced rule
# was not timed as dispatched). Blocks of 32 on a 3x3 kernel stage 7 input channels at a time
# and lost (fire8's 189-578 us sliced and not, against 166-346 for 16).
# Session 8: once the GEMM's launches passed their FLOPs to the submit policy (so the GPU runs
# while the host records, as this kernel's always did) and its geometry was baked, the GEMM
# took the 3x3 input gradients of 32 and 64 channels faster than this kernel, launched by hand
# in the same H100 run against the dispatched op: fire4/5 114-120 us against 138-145, fire8/9
# 98-102 against 131-137 (GPU time 79-106 against 120-137; conv_gather_cost_h100_s8c.json), so
# MAX_OUT_TAPS_GRAD is 16 (fire2/3's 16 channels stay: 1.1-1.3x cuDNN). fire6/7's 48 channels
# were not timed on the GEMM in that run.
MAX_OUT = 64
MAX_OUT_TAPS = 32
MAX_OUT_TAPS_GRAD = 16  # the input gradient's (SqueezeNet's 3x3 expands of fire2/3)
MIN_WORKGROUPS = 256
SLICE_TERMS = 512  # terms (input channels x taps) per invocation a slice aims at
MAX_SLICES = 4
MAX_TAPS = 9  # kernels of more taps (7x7) keep the other kernels
MIN_OUT = 4  # fewer output channels (MNIST's conv1 input gradient, 1) would leave blocks empty
_BLOCKS = (64, 32, 16, 8)
_BLOCKS_TAPS = (16, 8)  # of a kernel of several taps


def choose(cog: int, cg: int, taps: int, pixels: int, groups: int, workgroup_bytes: int,
           max_groups: int = 65535, gradient: bool = False) -> Form | None:
    """The heuristic's form for a conv of `cog` output channels per group over `cg` input
    channels per group and `taps` taps into `pixels` output pixels of the batch (a stride-1
    input gradient, `gradient`: the flipped forward's), or None where the other kernels keep
    it."""
    most = MAX_OUT if taps == 1 else MAX_OUT_TAPS_GRAD if gradient else MAX_OUT_TAPS
    if cog > most or cog < MIN_OUT or taps > MAX_TAPS:
        return None
    runs = -(-pixels // WORKGROUP) * groups  # workgroups of pixels
    slices = 1 if runs >= MIN_WORKGROUPS else \
        max(1, min(MAX_SLICES, cg, -(-cg * taps // SLICE_TERMS)))
    w_shape = (cog * groups, cg, taps, 1)
    blocks = _BLOCKS if taps == 1 else _BLOCKS_TAPS
    fitting = [Form(b, slices) for b in blocks if (b <= cog or b == blocks[-1])
               and fits(Form(b, slices), w_shape, pixels, groups, workgroup_bytes, max_groups)]
    for form in fitting:
        if runs * -(-cog // form.channels) * slices >= MIN_WORKGROUPS:
            return form
    return fitting[-1] if fitting else None


def _statements(channels: int) -> dict[str, str]:
    lanes = channels // 4
    zero = "\n".join(f"  var acc{j} = vec4<f32>(0.0);" for j in range(lanes))
    fma = "\n".join(f"            acc{j} += ws[wi + {j}] * xv;" for j in range(lanes))
    step = "TAPS * OB4"  # from one input channel's staged weights to the next's
    fma4 = "\n".join(
        f"            acc{j} += ws[wi + {j}] * xv0 + ws[wi + {step} + {j}] * xv1"
        f" + ws[wi + 2 * {step} + {j}] * xv2 + ws[wi + 3 * {step} + {j}] * xv3;"
        for j in range(lanes))
    store = []
    for j in range(lanes):
        for e in range(4):
            o = 4 * j + e
            store.append(
                f"  if (co0 + {o} < co_end) {{\n"
                f"    var v = acc{j}.{_LANES[e]};\n"
                f"    if (with_bias) {{ v += bias[co0 + {o}]; }}\n"
                f"    let i = obase + (co0 + {o}) * plane;\n"
                f"    out[slice + i] = pyrite_out(v, i);\n"
                f"  }}")
    return {"zero": zero, "fma": fma, "fma4": fma4, "store": "\n".join(store)}


def _pipeline(k: Kernels, channels: int, staged: int, kh: int, kw: int,
              epilogue: DenseEpilogue | None) -> object:
    extra = epilogue.key() if epilogue is not None else ()
    key = KernelKey("conv2d_channels", f"{channels}", _F32, 0,
                    (WORKGROUP, channels, staged, kh, kw, *extra))
    found = k.cached(key)
    if found is not None:
        return found
    code = BITS_FN + epilogue.source(EPILOGUE_BINDING) if epilogue is not None else _PLAIN_OUT
    return k.pipeline(key, render("conv2d_channels.wgsl", workgroup=WORKGROUP,
                                  channels=channels, chunk=staged, kh=kh, kw=kw, epilogue=code,
                                  **_statements(channels)))


def run(k: Kernels, out: GpuTensor, x: GpuTensor, weight: GpuTensor, bias: GpuTensor | None,
        stride: Pair, padding: Pads, dilation: Pair, groups: int, form: Form,
        epilogue: DenseEpilogue | None = None) -> None:
    """conv2d.wgsl's conv into `out` (dense (N, C_out, OH, OW)) in `form`: `x` dense, the weight
    any view (read through its strides), fusion's `epilogue` on what is stored."""
    n, c_out, oh, ow = out.shape
    _, c_in, h, w = x.shape
    cg, kh, kw = weight.shape[1], weight.shape[2], weight.shape[3]
    cog = c_out // groups
    share = -(-cg // form.slices)  # input channels per slice, before rounding to chunks
    staged = chunk(form.channels, kh * kw, share)
    per_slice = -(-share // staged) * staged  # each slice a whole number of staged chunks
    slices = -(-cg // per_slice)
    blocks = -(-cog // form.channels)
    pixels = n * oh * ow
    meta = [pixels, *window_words((h, w), (oh, ow), (kh, kw), stride, padding, dilation),
            c_in, c_out, cg, cog, blocks, int(bias is not None), per_slice, out.numel,
            weight.offset, *weight.strides]
    target = out if slices == 1 else k.empty((slices, out.numel), DType.F32, "conv2d_parts")
    inner = epilogue if slices == 1 else None
    pipeline = _pipeline(k, form.channels, staged, kh, kw, inner)
    bias_buffer = bias.block.buffer if bias is not None else weight.block.buffer
    tail = inner.bindings(k) if inner is not None else []
    k.launch(pipeline, [k.meta(meta), x.block.buffer, weight.block.buffer, bias_buffer,
                        target.block.buffer, *tail],
             (-(-pixels // WORKGROUP), groups * blocks, slices),
             2.0 * out.numel * cg * kh * kw)
    if slices > 1:
        matmul_variants.add_partials(k, target, out, 1, slices, epilogue)


__all__ = ["EPILOGUE_BINDING", "MAX_OUT", "MAX_OUT_TAPS", "MAX_OUT_TAPS_GRAD", "MAX_SLICES",
           "MAX_TAPS", "MIN_OUT", "MIN_WORKGROUPS", "PREFIX", "SLICE_TERMS", "STAGE_FLOATS",
           "WORKGROUP", "Form", "choose", "chunk", "fits", "run"]
