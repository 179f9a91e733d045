"""Fused attention on WebGPU: flash attention's forward and backward as WGSL kernels.

The forward (`shaders/attention_forward.wgsl`) computes softmax(q k^T * scale + mask) v with an
online softmax over tiles of keys held in workgroup memory, and writes the output and each query
row's log-sum-exp; the backward (`attention_delta.wgsl`, then the two entry points of
`attention_backward.wgsl`) recomputes the weights from the log-sum-exp tile by tile. Nothing of
size seq_q * seq_k is allocated by either pass (an additive mask the caller made is read, never
expanded), so attention's memory grows with the sequence, not with its square. With the causal
flag no mask exists at all: each kernel compares positions, and a workgroup skips the tiles
wholly past its causal frontier (about half of the work at seq_q = seq_k).

q, k, v, the mask and the output gradient are read through their strides (a head split by a
permute, a mask broadcast over batch or heads: no copies). The kernels keep a query (or a key)
row and its accumulators in registers, so head dims are bounded (`MAX_HEAD`); f16, empty and
wider inputs take the composite of `pyrite.backend.attention_ops`, which stays the reference.
Every kernel binds at most 8 storage buffers and sizes its tiles to the adapter's workgroup
memory (16 KB, WebGPU's default, in the page), so the same kernels run natively and in the page.
This module owns the kernels and their launches; the backend contract methods are in
`backend.py`, the Autodiff rule in `pyrite.backend.autodiff_module`.
"""

from __future__ import annotations

import math
import random
import struct
import weakref
from collections.abc import MutableMapping

from ..dtype import DType
from . import flash_lanes, flash_tiles
from .codegen import WORKGROUP, KernelKey, header, render, scalar_bits
from .flash_tiles import unrolled
from .kernels import Kernels
from .runtime import Runtime
from .tensor import GpuTensor

#: invocations of a workgroup, the queries (or keys) it owns: the default; autotune may pick
#: another of `autotune.WORKGROUPS` per kernel and shape bucket. 128 rather than 64: on the H100
#: at (8, 8, 1024, 64) each kernel took 0.57-0.68x the time of 64 (a staged tile serves twice
#: the rows), 32 took 2.3-2.5x (benchmarks/results/attention_h100_s3.json, `rows_N`)
ROWS = 128
#: the widest head (d_k and d_v) the kernels take: rows and accumulators live in registers
MAX_HEAD = 256
#: rows of the tiles staged in workgroup memory, at most (fewer for wide heads)
MAX_COLS = 32
#: head widths (d_k + d_v, in vec4s) from which the key gradients run as two launches, dk then
#: dv, each holding two or three head rows a thread instead of four (fewer registers). At
#: d_k = d_v = 64 two launches took 1.28x one on the H100 (the recomputed scores cost more than
#: the registers saved), so only heads twice as wide split; that width is not measured yet.
SPLIT_KEY_GRADS = 64
_LANES_USABLE: MutableMapping[Runtime, bool] = weakref.WeakKeyDictionary()


def covers(k: Kernels, q: GpuTensor, key: GpuTensor, v: GpuTensor,
           mask: GpuTensor | None) -> bool:
    """Whether the fused kernels take these arguments (else the composite runs)."""
    tensors = (q, key, v) if mask is None else (q, key, v, mask)
    if any(t.dtype is not DType.F32 or t.numel == 0 for t in tensors):
        return False
    dk, dv = q.shape[3], v.shape[3]
    return dk <= MAX_HEAD and dv <= MAX_HEAD and tile_rows(_budget(k), dk, dv) > 0


def _budget(k: Kernels) -> int:
    return k.runtime.limits.max_compute_workgroup_storage_size


def _tiled(k: Kernels, kernel: str, dk: int, dv: int) -> bool:
    """Whether `kernel` runs register-blocked (flash_tiles.py) rather than a thread a row: the
    rule of `flash_tiles.TILED_HEADS` (`TILED_HEADS_LANES` where the row kernels may use
    subgroup lanes), and in the page only `flash_tiles.PAGE_KERNELS`."""
    page = k.runtime.adapter.backend == "WebGPU (browser)"
    return (not page or kernel in flash_tiles.PAGE_KERNELS) and flash_tiles.takes(
        _budget(k), kernel, dk, dv, lanes_usable(k))


def tile_bytes(cols: int, dk: int, dv: int, lanes: int = 1) -> int:
    """Workgroup memory the backward kernels declare (the forward's is smaller): `cols` staged
    rows, each padded to whole vec4s for each of `lanes` threads a row."""
    padded = -(-_vec4s(dk) // lanes) * lanes + -(-_vec4s(dv) // lanes) * lanes
    return cols * (padded * 16 + 8)


def tile_rows(budget: int, dk: int, dv: int, lanes: int = 1) -> int:
    """Rows a staged tile: the most (a power of two up to MAX_COLS) whose tiles fit `budget`
    bytes of workgroup memory (0: none fits)."""
    cols = MAX_COLS  # each a q/k row, a dout/v row and a row's stats
    while cols and tile_bytes(cols, dk, dv, lanes) > budget:
        cols //= 2
    return cols


def lanes_usable(k: Kernels) -> bool:
    """Whether the row kernels may share a row between subgroup lanes on this device: it has
    the `subgroup` feature and the forward with 2 and with 4 lanes a row gives the one-thread
    forward's values on a ragged case (checked once per device, outside any capture in
    progress: a step captured by `pyrite.compile` takes the kernels an eager step takes)."""
    if "subgroup" not in k.runtime.features:
        return False
    found = _LANES_USABLE.get(k.runtime)
    if found is None:
        _LANES_USABLE[k.runtime] = True  # the check's launches take the lanes it forces
        recording = k.recorder, k.pool.watch
        k.recorder = k.pool.watch = None
        found = False
        try:
            found = _lanes_agree(k)
        finally:
            _LANES_USABLE[k.runtime] = found
            k.recorder, k.pool.watch = recording
    return found


def _lanes_agree(k: Kernels) -> bool:
    rng = random.Random(5)
    shape = (1, 2, 45, 24)  # ragged rows; 6 vec4s: lanes 4 pad the staged rows
    n = math.prod(shape)
    q, key, v = (k.empty(shape, DType.F32, "attention_check") for _ in range(3))
    for t in (q, key, v):
        k.write(t.block.buffer, 0, struct.pack(f"<{n}f", *(rng.uniform(-2, 2) for _ in range(n))))
    outs = []
    saved = dict(flash_lanes.FORCED)
    try:
        for lanes in flash_lanes.LANES:
            flash_lanes.FORCED["forward"] = (2, lanes)
            out = k.empty(shape, DType.F32, "attention_check")
            lse = k.empty(shape[:3], DType.F32, "attention_check")
            _launch(k, "attention_forward", "forward", q, key, v, None,
                    _words(q, key, v, None, 0.3, False, False), [q, key, v, out, lse], shape[2])
            outs.append(struct.unpack(f"<{n}f", k.read(out.block.buffer, 0, n * 4)))
    finally:
        flash_lanes.FORCED.clear()
        flash_lanes.FORCED.update(saved)
    return all(abs(x - y) <= 1e-4 * (1 + abs(y)) for other in outs[1:]
               for x, y in zip(other, outs[0], strict=True))


def work(kernel: str, q: GpuTensor, key: GpuTensor, v: GpuTensor, causal: bool,
         part: int = 0) -> float:
    """Estimated FLOPs of one attention kernel (`forward`, `query_grads`, `key_grads` with its
    `part`: 0 dk and dv, 1 dk, 2 dv), two per multiply-add of the products it computes: the
    cost each launch gives the submit policy (`batch.POLICY`), which submits the batch after a
    long kernel so the GPU runs it while the host records the rest of the step (on the H100 an
    eager forward + backward at (8, 8, 1024, 64) took 3.92 ms without it, 3.38 ms with it:
    benchmarks/results/attention_h100_s5_lead.json)."""
    b, h, sq, dk = q.shape
    pairs = b * h * sq * key.shape[2] / (2 if causal else 1)
    dv = v.shape[3]
    products = {"forward": dk + dv, "query_grads": 2 * dk + dv,
                "key_grads": (2 * dk + 2 * dv, 2 * dk + dv, dk + 2 * dv)[part]}[kernel]
    return 2.0 * pairs * products


def _vec4s(n: int) -> int:
    return -(-n // 4)


def _view(x: GpuTensor | None) -> list[int]:
    """[offset, batch, head, sequence, last-dim stride] of a rank-4 view (0 for a size-1 dim,
    so a broadcast mask reads the same values); zeros for a missing mask."""
    if x is None:
        return [0] * 5
    return [x.offset, *(0 if n == 1 else s for n, s in zip(x.shape, x.strides, strict=True))]


def _words(q: GpuTensor, k: GpuTensor, v: GpuTensor, mask: GpuTensor | None, scale: float,
           quiet: bool, causal: bool, grad: GpuTensor | None = None) -> list[int]:
    b, h, sq, dk = q.shape
    head = [b, h, sq, k.shape[2], dk, v.shape[3], scalar_bits(scale, DType.F32),
            int(quiet) | 2 * int(causal)]
    views = _view(q) + _view(k) + _view(v) + _view(mask)
    return head + views + (_view(grad) if grad is not None else [])


def staging() -> str:
    """attention_stage.wgsl rendered for the d_k-wide rows (dk_tile) and the d_v-wide ones
    (dv_tile): the row kernels' staging, row reads and dot products, written once."""
    return "\n".join(render("attention_stage.wgsl", tile=tile, regs=regs, width=width,
                             count=count) for tile, regs, width, count in
                      (("dk", "KL", "DKP", "NK"), ("dv", "VL", "DVP", "NV")))


def _launch(k: Kernels, template: str, entry: str, q: GpuTensor, key: GpuTensor,
            v: GpuTensor, mask: GpuTensor | None, words: list[int],
            buffers: list[GpuTensor], seq: int, part: int = 0, causal: bool = False) -> None:
    """`entry` of `template` over workgroups that each own `rows` of the `seq` rows of every
    (batch, head); metadata first, the mask (or a zero word) after q, k and v. `rows` is
    autotuned per kernel and shape bucket, ROWS by default (fewer where its threads would pass
    the adapter's limit); the rows a thread and threads a row are `flash_lanes.shape`'s.
    `part`: the key kernel's gradients (0 dk and dv, 1 dk, 2 dv); `causal` halves its `work`."""
    b, h, _, dk = q.shape
    dv = v.shape[3]

    def again() -> None:  # the autotuner times the candidates through this very launch
        _launch(k, template, entry, q, key, v, mask, words, buffers, seq, part, causal)

    family = f"attention_{entry}" + ("", "_dk", "_dv")[part]
    rows = k.autotune.workgroup(family, (b * h, q.shape[2], key.shape[2], dk + dv),
                                DType.F32, ROWS, again)
    rpt, lanes = flash_lanes.shape(entry, dk, dv, lanes_usable(k))
    rows = flash_lanes.fit(rows, rpt, lanes,
                           k.runtime.limits.max_compute_invocations_per_workgroup)
    threads = flash_lanes.threads(rows, rpt, lanes)
    cols = min(tile_rows(_budget(k), dk, dv, lanes), threads)  # a thread a row's stats
    params = (rows, cols, _vec4s(dk), _vec4s(dv), mask is not None, part, rpt, lanes)
    pipeline_key = KernelKey(template, entry, (DType.F32, DType.F32), 0, params)
    extra: dict[str, str | int] = {"part": part} if template == "attention_backward" else {}
    kl, vl = -(-params[2] // lanes), -(-params[3] // lanes)
    counts = {"KL": kl, "VL": vl, "RPT": rpt, "NK": -(-cols * kl * lanes // threads),
              "NV": -(-cols * vl * lanes // threads)}
    pipeline = k.cached(pipeline_key, entry) or k.pipeline(pipeline_key, unrolled(render(
        f"{template}.wgsl", enable=header(()), constants=render(
            "attention_row_constants.wgsl", rows=rows, cols=cols, dk4=params[2], dv4=params[3],
            has_mask="true" if mask is not None else "false", rpt=rpt, lanes=lanes),
        lane_sum=flash_lanes.lane_sum(lanes), staging=staging(), **extra), counts), entry)
    mask_buffer = k.constant(bytes(4)) if mask is None else mask.block.buffer
    bindings = [k.meta(words), *(t.block.buffer for t in buffers[:3]), mask_buffer,
                *(t.block.buffer for t in buffers[3:])]
    k.launch(pipeline, bindings, k.grid(b * h * -(-seq // rows)),
             work(entry, q, key, v, causal, part))


def forward(k: Kernels, q: GpuTensor, key: GpuTensor, v: GpuTensor, mask: GpuTensor | None,
            scale: float, quiet: bool, causal: bool) -> tuple[GpuTensor, GpuTensor]:
    """The output (batch, heads, seq_q, d_v) and each query row's log-sum-exp (batch, heads,
    seq_q), +inf for a row whose every score is -inf (its output is 0)."""
    b, h, sq, _ = q.shape
    out = k.empty((b, h, sq, v.shape[3]), DType.F32, "attention")
    lse = k.empty((b, h, sq), DType.F32, "attention")
    words = _words(q, key, v, mask, scale, quiet, causal)
    if _tiled(k, "forward", q.shape[3], v.shape[3]):
        flash_tiles.launch(k, "forward", q, key, v, mask, words, [out, lse], _budget(k),
                           work("forward", q, key, v, causal))
    else:
        _launch(k, "attention_forward", "forward", q, key, v, mask, words, [q, key, v, out, lse],
                sq, causal=causal)
    return out, lse


def backward(k: Kernels, q: GpuTensor, key: GpuTensor, v: GpuTensor, mask: GpuTensor | None,
             out: GpuTensor, lse: GpuTensor, grad: GpuTensor, scale: float, causal: bool,
             needs: tuple[bool, bool, bool]) -> tuple[GpuTensor | None, ...]:
    """(dq, dk, dv) from the forward's output and log-sum-exp and the output's gradient; None
    for an input not in `needs`. dk and dv are views of one buffer (the key kernel writes both)."""
    b, h, sq, dk = q.shape
    sk, dv = key.shape[2], v.shape[3]
    words = _words(q, key, v, mask, scale, False, causal, grad)
    stats = k.empty((b, h, sq, 2), DType.F32, "attention_grad")
    pipeline_key = KernelKey("attention_delta", "main", (DType.F32, DType.F32), 0, (WORKGROUP,))
    delta = k.cached(pipeline_key) or k.pipeline(pipeline_key, render(
        "attention_delta.wgsl", enable=header(()), workgroup=WORKGROUP))
    k.launch(delta, [k.meta(words), out.block.buffer, grad.block.buffer, lse.block.buffer,
                     stats.block.buffer], k.grid(-(-(b * h * sq) // WORKGROUP)))
    dq = gk = gv = None
    if needs[1] or needs[2]:
        both = k.empty((b, h, sk, dk + dv), DType.F32, "attention_grad")
        if _tiled(k, "key", dk, dv):
            flash_tiles.launch(k, "key", q, key, v, mask, words, [grad, stats, both], _budget(k),
                               work("key_grads", q, key, v, causal))
        else:
            split = _vec4s(dk) + _vec4s(dv) >= SPLIT_KEY_GRADS
            for part in ((1, 2) if split else (0,)):
                if part == 0 or needs[part]:
                    _launch(k, "attention_backward", "key_grads", q, key, v, mask, words,
                            [q, key, v, grad, stats, both], sk, part, causal)
        whole = [(0, n, 1) for n in (b, h, sk)]
        gk = both.sliced([*whole, (0, dk, 1)]) if needs[1] else None
        gv = both.sliced([*whole, (dk, dk + dv, 1)]) if needs[2] else None
    if needs[0]:
        dq = k.empty((b, h, sq, dk), DType.F32, "attention_grad")
        if _tiled(k, "query", dk, dv):
            flash_tiles.launch(k, "query", q, key, v, mask, words, [grad, stats, dq], _budget(k),
                               work("query_grads", q, key, v, causal))
        else:
            _launch(k, "attention_backward", "query_grads", q, key, v, mask, words,
                    [q, key, v, grad, stats, dq], sq, causal=causal)
    return dq, gk, gv
