"""Register-blocked flash attention: the tile shapes and launches of the
`shaders/attention_tiled_*.wgsl` kernels (forward, dq, dk and dv).

A workgroup owns 64 qm rows of one (batch, head) (queries; keys for the dk/dv kernel) and walks
the other side in tiles of 4 gx columns, each thread holding a 4 qm x 4 block of scores in
registers and the matching rows of the output (or gradient) in vec4 columns tx, tx + gx, ..:
the scheme of the tiled matmul. The head dim is walked in chunks of `bk` staged in workgroup
memory, so the tiles fit WebGPU's default 16 KB (the page) with qm = 1, gx = 4, and take 8 rows
a thread, gx = 8 and wider chunks where the adapter gives more (SHAPES). Which heads take these
kernels rather than the row kernels of `flash_attention.py` is `TILED_HEADS` (or
`TILED_HEADS_LANES` where those share rows between subgroup lanes).
This module owns the shapes, the rendering (`unrolled`: loops over register arrays written
out) and the launches; the choice and the shared metadata are in `flash_attention.py`.
"""

from __future__ import annotations

import re

from ..dtype import DType
from .codegen import KernelKey, header, render
from .kernels import Kernels
from .tensor import GpuTensor

#: quads (4 rows) of the workgroup's rows per thread row: 16 thread rows of 4 rows each
GROUPS = 16
#: the kernels: template suffix -> entry point
ENTRIES = {"forward": "forward", "query": "query_grads", "key": "key_grads"}
#: per kernel, the head widths (max(d_k, d_v), inclusive) it takes where the row kernels of
#: flash_attention.py hold a row in one thread (no usable subgroups: the page, SwiftShader);
#: the row kernels take the rest. On the H100 at (8, 8, 1024, d), with the register prefetch
#: (benchmarks/results/attention_kernels_prefetch_h100_s4b.json), tiled / rows ms: forward
#: 2.27 / 1.70 at d = 96; dq 2.68 / 2.29 at d = 80 and 3.13 / 3.20 at 96; dk, dv 3.09 / 2.41 at
#: d = 64 and 3.62 / 4.25 at 80; at d = 128 the tiled kernels won before the prefetch (3.69 /
#: 4.62, 5.72 / 6.40, 9.01 / 10.2) and keep that code path there (PREFETCH_ROWS off). The bounds
#: lie halfway between the measured widths where the winner changes
TILED_HEADS: dict[str, tuple[int, int]] = {"forward": (97, 128), "query": (89, 128),
                                           "key": (73, 128)}
#: the same where the row kernels share rows between subgroup lanes (`flash_lanes`): on the H100
#: at (8, 8, 1024, d) (benchmarks/results/attention_h100_s5.json, `d_N`), tiled / lanes ms:
#: forward 2.32 / 1.22 at d = 96, 2.83 / 3.19 at 128; dq 3.48 / 2.31 at 96, 4.13 / 4.52 at 128;
#: dk, dv 5.86 / 4.43 at 128 (the lanes win at every width), so the dk/dv kernel never runs
#: tiled there ((0, 0): no width)
TILED_HEADS_LANES: dict[str, tuple[int, int]] = {"forward": (113, 128), "query": (113, 128),
                                                 "key": (0, 0)}
#: the kernels that run tiled in the page (Chromium's WebGPU; SwiftShader in the tests). There
#: the tiled dq kernel lost the device (heads 66-100 in tests/conformance/test_attention.py's
#: gradient cases; not diagnosed: the same WGSL with the page's 16 KB tiles passes on lavapipe),
#: so the gradients keep the row kernels in the page
PAGE_KERNELS = ("forward",)


def _vec4s(n: int) -> int:
    return -(-n // 4)


def owned(kernel: str, dk: int, dv: int, gx: int) -> int:
    """vec4 columns of an output row a thread owns (`rv`): the row a kernel writes is d_v wide
    (forward), d_k (dq) or both (dk and dv, the wider)."""
    width = {"forward": dv, "query": dk, "key": max(dk, dv)}[kernel]
    return -(-_vec4s(width) // gx)


def shared_bytes(kernel: str, qm: int, gx: int, bk: int, rv: int) -> int:
    """Workgroup memory of `kernel` with qm quads of rows a thread, gx column groups, chunk bk:
    the two transposed chunks, the weights (rows one vec4 longer, against bank conflicts), the
    staged rows and (the forward's) the row reductions."""
    cols, quads = 4 * gx, GROUPS * qm
    vec4s = bk * (quads + 1) + bk * (gx + 1) + cols * (quads + 1) + cols * gx * rv
    return 16 * vec4s + (16 * quads * gx if kernel == "forward" else 0)


#: (qm, gx, bk) forced per kernel ("forward", "query", "key"), where it fits: for benchmarks
FORCED: dict[str, tuple[int, int, int]] = {}
#: the tile shapes tried in order, (qm, gx): 8 rows a thread (twice the multiply-adds per
#: workgroup-memory load) and 32 columns where the memory allows; 4 and 16 in the page
SHAPES = ((2, 8), (1, 8), (1, 4))


def config(budget: int, kernel: str, dk: int, dv: int) -> tuple[int, int, int, int] | None:
    """(qm, gx, bk, rv) of `kernel` for these head dims within `budget` bytes of workgroup
    memory: the first of SHAPES, then the longest chunk (up to the head's width rounded up to
    a power of two), that fit; None if none does."""
    widest = max(dk, dv)
    if kernel in FORCED:
        qm, gx, bk = FORCED[kernel]
        rv = owned(kernel, dk, dv, gx)
        if shared_bytes(kernel, qm, gx, bk, rv) <= budget:
            return qm, gx, bk, rv
    for qm, gx in SHAPES:
        rv = owned(kernel, dk, dv, gx)
        for bk in (64, 32, 16, 8, 4):
            if bk // 2 >= widest and bk > 4:
                continue  # a chunk more than twice the head: zeros
            if shared_bytes(kernel, qm, gx, bk, rv) <= budget:
                return qm, gx, bk, rv
    return None


def takes(budget: int, kernel: str, dk: int, dv: int, lanes: bool = False) -> bool:
    """Whether `kernel` runs tiled for these head dims (else its row kernel), with `lanes`
    where the row kernels may share rows between subgroup lanes."""
    low, high = (TILED_HEADS_LANES if lanes else TILED_HEADS)[kernel]
    return low <= max(dk, dv) <= high and config(budget, kernel, dk, dv) is not None


#: a loop `for (var x = 0u; x < NAME; x++) {` over a constant count, for `unrolled`
_LOOP = re.compile(r"for \(var (\w+) = 0u; \1 < (\w+); \1\+\+\) \{")


def unrolled(source: str, counts: dict[str, int]) -> str:
    """`source` with every loop `for (var x = 0u; x < NAME; x++) { ... }` whose NAME is in
    `counts` written out: the body once per value, x a literal (other loops are kept). Arrays
    indexed by such loops then have constant indices, which every compiler keeps in registers;
    CPU implementations (lavapipe, SwiftShader in the page) kept them in memory behind the loop,
    several times slower."""
    out: list[str] = []
    pos = 0
    while (found := _LOOP.search(source, pos)) is not None:
        name, count = found.group(1), counts.get(found.group(2))
        if count is None:
            out.append(source[pos:found.end()])
            pos = found.end()
            continue
        out.append(source[pos:found.start()])
        depth, end = 1, found.end()
        while depth:
            depth += {"{": 1, "}": -1}.get(source[end], 0)
            end += 1
        body = unrolled(source[found.end():end - 1], counts)
        out += ["{" + re.sub(rf"\b{name}\b", f"{i}u", body) + "}" for i in range(count)]
        pos = end
    return "".join(out) + source[pos:]


def prefetched(qm: int, gx: int, bk: int, rv: int) -> dict[str, int]:
    """The vec4s a thread holds in registers between fetching a stage and storing it into
    workgroup memory (attention_tiles.wgsl's NA, NB, NR): its share of a chunk of the rows, a
    chunk of the columns, a tile's rows."""
    threads = GROUPS * gx
    return {"NA": -(-bk * GROUPS * qm // threads), "NB": -(-bk * gx // threads),
            "NR": -(-4 * gx * gx * rv // threads)}


def launch(k: Kernels, kernel: str, q: GpuTensor, key: GpuTensor, v: GpuTensor,
           mask: GpuTensor | None, words: list[int], outputs: list[GpuTensor],
           budget: int, cost: float = 0.0) -> None:
    """`kernel` (a key of ENTRIES) over workgroups of 64 qm rows: q, k, v, the mask (or a zero
    word) after the metadata, then `outputs` (forward: out, lse; the gradients: dout, stats,
    grad); `cost`: its estimated FLOPs (the submit policy's)."""
    b, h, sq, dk = q.shape
    dv = v.shape[3]
    found = config(budget, kernel, dk, dv)
    assert found is not None, "flash_tiles.takes decides before a launch"
    qm, gx, bk, rv = found
    entry = ENTRIES[kernel]
    template = f"attention_tiled_{kernel}"
    params = (qm, gx, bk, rv, _vec4s(dk), _vec4s(dv), mask is not None)
    pipeline_key = KernelKey(template, entry, (DType.F32, DType.F32), 0, params)
    pipeline = k.cached(pipeline_key, entry) or k.pipeline(pipeline_key, unrolled(render(
        f"{template}.wgsl", enable=header(()), constants=render(
            "attention_tiled_constants.wgsl", qm=qm, gx=gx, bk=bk, rv=rv, dk4=params[4],
            dv4=params[5], has_mask="true" if mask is not None else "false")),
        {"QM": qm, "QUAD": 4, "TM": 4 * qm, "TN": 4, "RV": rv, **prefetched(qm, gx, bk, rv)}),
        entry)
    mask_buffer = k.constant(bytes(4)) if mask is None else mask.block.buffer
    bindings = [k.meta(words), q.block.buffer, key.block.buffer, v.block.buffer, mask_buffer,
                *(t.block.buffer for t in outputs)]
    seq = key.shape[2] if kernel == "key" else sq
    rows = 4 * GROUPS * qm
    k.launch(pipeline, bindings, k.grid(b * h * -(-seq // rows)), cost)
