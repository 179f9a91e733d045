"""Products of few rows on a page's software adapter: `shaders/gemv.wgsl`.

A dense layer's batch of one (MNIST's 1 x 1024 @ 1024 x 512) padded into the tiled matmul's
32-row tiles computes 32 rows to keep one, and SwiftShader spends longer compiling that tile
(workgroup memory, barriers, an unrolled body) than running it. The GEMV has neither: each
invocation computes 4 columns of one row straight from the operands, and one pipeline serves
every layout (row-major or transposed A and B, read through strides). Timed in the page
against the tiles (`benchmarks/page_compile.py`): see `MAX_ROWS`.

Only a software adapter runs it (`software.py`): `linalg.py` asks `takes` first. Native GPUs,
lavapipe included, keep the tiled kernel and its split K.
"""

from __future__ import annotations

import struct

from ..dtype import DType
from .codegen import render as render_template
from .matmul_config import operand_words

#: rows up to which a software adapter's f32 product runs here (page_compile.py, SwiftShader,
#: x 1024 @ 1024 x 512: 1.8 ms for 1 row, 7.0 for 4, 28.8 for 16, against 69 ms on the software
#: ladder's 64x64 tile and 40 ms on the best tile; the GEMV reads B once per row, the tile's
#: time stays flat up to 64 rows, so they cross at about 30 rows)
MAX_ROWS = 16
THREADS = 64  # invocations per workgroup, 4 columns each


def takes(m: int, dtype: DType, software: bool) -> bool:
    """Whether a product of `m` rows runs on the GEMV: f32, at most MAX_ROWS rows, on a
    software adapter."""
    return software and dtype is DType.F32 and 0 < m <= MAX_ROWS


def render(epilogue: str = "") -> str:
    """The WGSL: `epilogue` (module-scope WGSL defining `pyrite_out(v: f32, i: i32) -> f32`)
    applied to each value before it is stored, or none."""
    return render_template("gemv.wgsl", threads=THREADS, epilogue=epilogue,
                           store="pyrite_out(v, i32(i))" if epilogue else "v")


def dispatch(m: int, n: int, batch: int = 1) -> tuple[int, int, int]:
    """Workgroups for a batch of M x N outputs."""
    return (-(-n // (4 * THREADS)), m, batch)


def params_bytes(m: int, n: int, k: int, batch: int = 1, stride_a: int = 0, stride_b: int = 0,
                 stride_c: int = 0, *, layout: str = "nn", lda: int = 0, ldb: int = 0,
                 off_a: int = 0, off_b: int = 0) -> bytes:
    """The 64-byte uniform: the tiled matmul's operand words (`matmul_config.operand_words`:
    elements; a batch stride of 0 broadcasts that operand; `lda`/`ldb` 0: the matrix's own
    row length by `layout`, "n" row-major or "t" transposed, A then B), then the layout flags
    where the tiled kernel has its K split."""
    words = operand_words(m, n, k, batch, stride_a, stride_b, stride_c, layout=layout,
                          lda=lda, ldb=ldb, off_a=off_a, off_b=off_b)
    return struct.pack("<16I", *words, int(layout[0] == "t"), int(layout[1] == "t"), 0, 0, 0)


__all__ = ["MAX_ROWS", "THREADS", "dispatch", "params_bytes", "render", "takes"]
