"""Seeded counter-based random tensors (`shaders/random.wgsl`).

The generator state is (seed, counter): every call uses the next counter value, so the same seed
gives the same sequence of tensors on any adapter. Values differ from numpy's generator.
"""

from __future__ import annotations

from ..distribution import Bernoulli, Distribution, Normal, Uniform
from ..dtype import DType, Kind
from .codegen import WORKGROUP, KernelKey, convert, header, render, scalar_bits, storage_type, store
from .kernels import Kernels
from .tensor import GpuTensor

_SAMPLES = {
    # uniform in [p0, p1): u0 < 1 - 2^-24
    "uniform": "bitcast<f32>(info[3]) + (bitcast<f32>(info[4]) - bitcast<f32>(info[3])) * u0",
    # Box-Muller on (0, 1] x [0, 1)
    "normal": "bitcast<f32>(info[3]) + bitcast<f32>(info[4]) * sqrt(-2.0 * log(1.0 - u0))"
              " * cos(6.283185307179586 * u1)",
    "bernoulli": "u0 < bitcast<f32>(info[3])",
    # integers p0..p1-1 (modulo bias below 2^-32 * range)
    "integers": "info[3] + i32(h0 % u32(info[4] - info[3]))",
}


def random(k: Kernels, shape: tuple[int, ...], distribution: Distribution, dtype: DType,
           seed: int, counter: int) -> GpuTensor:
    out = k.empty(shape, dtype, "random")
    if isinstance(distribution, Normal):
        name, params, src = "normal", (distribution.mean, distribution.std), DType.F32
    elif isinstance(distribution, Bernoulli):
        name, params, src = "bernoulli", (distribution.prob, 0.0), DType.BOOL
    elif dtype.kind is Kind.INT:
        assert isinstance(distribution, Uniform)
        name, src = "integers", DType.I32
        params = (int(distribution.low), int(distribution.high))
    else:
        assert isinstance(distribution, Uniform)
        name, params, src = "uniform", (distribution.low, distribution.high), DType.F32
    key = KernelKey("random", name, (dtype,))
    pipeline = k.cached(key) or k.pipeline(key, render(
        "random.wgsl", enable=header((dtype,)), out_type=storage_type(dtype),
        sample=_SAMPLES[name], store=store(convert("v", src, dtype), dtype),
        workgroup=WORKGROUP))
    if out.numel:
        words = [out.numel, _i32(seed), _i32(counter),
                 *(scalar_bits(p, DType.I32 if name == "integers" else DType.F32)
                   for p in params)]
        k.launch(pipeline, [k.meta(words), out.block.buffer], k.grid(-(-out.numel // WORKGROUP)))
    return out


def _i32(value: int) -> int:
    """Any integer folded into the i32 range (seeds and counters wrap)."""
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value
