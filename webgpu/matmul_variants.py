"""The tiled matmul's variants that need more than rendering a tile: the subgroup twins and
split K.

Subgroup twins (`TileConfig.subgroup`, `matmul_config.CONFIGS` names ending in `_sg`) share A
between the 4 lanes of a quad with subgroupShuffle. They need the device's `subgroup` feature
(requested by `native.py` where the adapter has it; the page does not ask for it) and lanes
that form quads the way the template assumes (4 consecutive threads of a workgroup row). WGSL
does not promise that layout, so `subgroups_usable` runs each kind of twin once per device on a
ragged product and compares it with numpy: only when every one agrees may autotune time them.

Split K (`matmul_config.split_k`): a product with few output tiles and a long reduction is
computed as `splits` partial products over slices of K, each slice a batch index of its own,
then `shaders/matmul_split_sum.wgsl` adds them (any number of slices, one kernel). The
implicit GEMMs of `conv_gemm.py` use the same sum.
"""

from __future__ import annotations

import math
import random
import struct
import weakref
from collections.abc import MutableMapping

from ..dtype import DType
from . import matmul_config, software
from .codegen import BITS_FN, KernelKey
from .fused import DenseEpilogue
from .kernels import Kernels
from .runtime import Runtime
from .tensor import GpuTensor

#: twins checked before any is offered: rows of 2 and of 4 quads (lane layout is all they test)
CHECKED = ("t32x32x16_4x4_u16_sg", "t64x64x16_4x4_u16_sg")
_USABLE: MutableMapping[Runtime, bool] = weakref.WeakKeyDictionary()


def subgroups_usable(k: Kernels) -> bool:
    """Whether the subgroup twins compute correct products on this device (checked once)."""
    if "subgroup" not in k.runtime.features or k.recorder is not None:
        return False
    found = _USABLE.get(k.runtime)
    if found is None:
        found = _USABLE[k.runtime] = all(_agrees(k, name) for name in CHECKED)
    return found


def _agrees(k: Kernels, name: str) -> bool:
    """`name` against a float64 product on the host (pure Python: the webgpu package imports no
    numpy, which the page's bundle lacks), ragged in M, N and K, spanning several tiles."""
    cfg = matmul_config.CONFIGS[name]
    m, n, inner = cfg.bm + 37, cfg.bn + 21, 2 * cfg.bk + 5
    rng = random.Random(0)
    a = [rng.uniform(-1, 1) for _ in range(m * inner)]
    b = [rng.uniform(-1, 1) for _ in range(inner * n)]
    rt = k.runtime
    a_buf = rt.create_buffer_with_data(struct.pack(f"<{len(a)}f", *a))
    b_buf = rt.create_buffer_with_data(struct.pack(f"<{len(b)}f", *b))
    c_buf = rt.create_buffer(m * n * 4)
    try:
        key = KernelKey("matmul_tiled", cfg.name, (DType.F32,) * 3, 0, cfg.cache_key(False))
        pipeline = k.cached(key) or k.pipeline(key, matmul_config.render(cfg, False))
        params = k.constant(matmul_config.params_bytes(m, n, inner), uniform=True)
        k.launch(pipeline, [a_buf, b_buf, c_buf, params], cfg.dispatch(m, n))
        c = struct.unpack(f"<{m * n}f", k.read(c_buf, 0, m * n * 4))
    finally:
        for buf in (a_buf, b_buf, c_buf):
            rt.destroy_buffer(buf)
    # the operands as the device holds them (rounded to f32)
    a = list(struct.unpack(f"<{len(a)}f", struct.pack(f"<{len(a)}f", *a)))
    b = list(struct.unpack(f"<{len(b)}f", struct.pack(f"<{len(b)}f", *b)))
    for i in range(m):
        row = a[i * inner:(i + 1) * inner]
        for j in range(n):
            want = math.fsum(row[t] * b[t * n + j] for t in range(inner))
            if not abs(c[i * n + j] - want) <= 1e-4 * (1 + abs(want)):
                return False
    return True


def add_partials(k: Kernels, parts: GpuTensor, out: GpuTensor, batch: int, splits: int,
                 epilogue: DenseEpilogue | None = None) -> None:
    """out (dense, `batch` products of mn elements each) = the sum over the K slices of the
    partial products in `parts` (dense, batch x splits x mn, as the split matmul wrote them),
    through fusion's `epilogue` where one is given (out then dense at offset 0). Few sums of
    many slices spread each sum over lanes (`matmul_config.sum_lanes`), except on a page's
    software adapter, which keeps one invocation per sum."""
    mn = out.numel // batch
    lanes = 1 if software.software(k.runtime.adapter) else \
        matmul_config.sum_lanes(out.numel, splits)
    params, groups = matmul_config.split_sum_params(
        out.numel, mn, splits, out.offset, k.runtime.limits.max_compute_workgroups_per_dimension,
        lanes)
    extra = epilogue.key() if epilogue is not None else ()
    key = KernelKey("matmul_split_sum", "", (DType.F32, DType.F32), 0, extra)
    pipeline = k.cached(key)
    if pipeline is None:
        code = matmul_config.PLAIN_OUT if epilogue is None else \
            BITS_FN + epilogue.source(SUM_EPILOGUE_BINDING)
        pipeline = k.pipeline(key, matmul_config.split_sum_source(code))
    tail = epilogue.bindings(k) if epilogue is not None else []
    k.launch(pipeline, [parts.block.buffer, out.block.buffer, k.constant(params, uniform=True),
                        *tail], groups)


SUM_EPILOGUE_BINDING = 3  # the first binding of an epilogue in matmul_split_sum.wgsl
