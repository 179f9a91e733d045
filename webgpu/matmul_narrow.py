"""Products with few output columns and a long K on a native GPU: `shaders/matmul_narrow.wgsl`.

A classifier's last layer (MNIST's batch x 512 @ 512 x 10) gives the tiled kernel a handful of
tiles that each walk all of K, so `linalg.py` splits K and adds the slices in a second kernel
(`matmul_split_sum.wgsl`, which also runs the epilogue). Here one workgroup per output row sums
its K terms across 64 invocations and halves the sums in workgroup memory: one dispatch with
the epilogue in it. A replayed MNIST inference step pays each dispatch's launch and barrier
on the GPU (about 7-9 us each on the H100 for kernels this small:
`benchmarks/results/step_kernels_h100_s5_final.json`) and its encoding on the host.

`linalg.py` asks `takes` where the tiled kernel would split K; a software adapter (the page)
never splits and keeps its kernels, so this one runs natively only.
"""

from __future__ import annotations

from ..dtype import DType
from .codegen import render as render_template

LANES = 64  # invocations per workgroup (one output row)
MAX_COLS = 16  # output columns up to which a product runs here (sums kept per invocation)
MIN_K = 256  # K terms from which it does (4 terms a lane at least)


def takes(m: int, n: int, inner: int, dtype: DType, software: bool, most: int) -> bool:
    """Whether an f32 product of M x N outputs over K terms runs here: N <= MAX_COLS,
    K >= MIN_K, M rows within one dispatch dimension (`most`), not on a software adapter."""
    return (not software and dtype is DType.F32 and 0 < n <= MAX_COLS and inner >= MIN_K
            and 0 < m <= most)


def render(cols: int, epilogue: str = "") -> str:
    """The WGSL for N = `cols`; `epilogue` as gemv.render's."""
    return render_template("matmul_narrow.wgsl", lanes=LANES, cols=cols, epilogue=epilogue,
                           store="pyrite_out(v, i32(i))" if epilogue else "v")


def dispatch(m: int, batch: int = 1) -> tuple[int, int, int]:
    """Workgroups for a batch of M-row products: one a row."""
    return (m, batch, 1)


__all__ = ["LANES", "MAX_COLS", "MIN_K", "dispatch", "render", "takes"]
