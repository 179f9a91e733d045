"""Fusion's row kernels: a reduction along one dim, and softmax or log-softmax along one dim,
each computing the elementwise ops that produce its input as it reads them.

`Fusion` records `softmax` and `log_softmax` as stream nodes (kind "softmax", op `SOFTMAX` or
`LOG_SOFTMAX`) instead of flushing, so `(x * s + mask).softmax(-1)` reads x and the mask and
writes only the weights, and what consumes the weights stays in the same flush. One workgroup
owns a row and makes three passes over it (max, sum of exp(x - max), write), recomputing the
producers in each pass (elementwise work is cheaper than writing x and reading it three
times). The backward of both (Autodiff's rules: elementwise ops and a sum) is fused as any
other stream. The sources are generated here; `fused.py` renders the producers' steps
(`render_steps`) and the reduction's source; `fusion.py` plans which nodes a kernel absorbs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..backend.reduce import Reduction
from ..dtype import DType
from . import reduction
from .codegen import KernelKey, header, load, scalar_read, storage_itemsize, storage_type, store
from .fused import DenseEpilogue, Program, reduce_source, render_steps
from .tensor import contiguous_strides


@dataclass(frozen=True)
class RowOp:
    """The op of a recorded softmax node (`name` as the registry would spell it)."""

    name: str
    log: bool


SOFTMAX = RowOp("softmax", False)
LOG_SOFTMAX = RowOp("log_softmax", True)


def softmax_source(program: Program, result: int, rank: int, log: bool, out: DType,
                   workgroup: int, epilogue: DenseEpilogue | None = None) -> str:
    """softmax (or log-softmax) along one dim of the values of step `result`, computed as they
    are read; the output dense in the input's shape.

    One workgroup per row (as `shaders/softmax.wgsl`), in f32. Metadata (i32 words): n_rows,
    len (the dim's size), out_step (the output's stride along the dim), row_shape[rank] (the
    input shape with the dim 1), out_strides[rank] (the output's, dense), then per input:
    offset, strides[rank] (its view in the input shape), step along the dim; then the scalars.
    Bindings: 0 metadata, 1.. the inputs (read), then the output; with an `epilogue` (what
    consumes the result, fused as a matmul's is: `fused.DenseEpilogue`), its bindings follow
    and the output is what it computes from the result.
    """
    n_in = len(program.inputs)
    in_words = [3 + 2 * rank + j * (rank + 2) for j in range(n_in)]
    scalar_words = [3 + 2 * rank + n_in * (rank + 2) + k for k in range(len(program.scalars))]
    decls = ["@group(0) @binding(0) var<storage, read> info: array<i32>;"]
    for j, dt in enumerate(program.inputs):
        decls.append(f"@group(0) @binding({j + 1}) var<storage, read> in{j}: "
                     f"array<{storage_type(dt)}>;")
    decls.append(f"@group(0) @binding({n_in + 1}) var<storage, read_write> dst: "
                 f"array<{storage_type(out)}>;")
    base = ["  var r = select(0, row, live);", "  var o = 0;"]
    base += [f"  var b{j} = info[{in_words[j]}];" for j in range(n_in)]
    for d in range(rank - 1, -1, -1):
        base.append(f"  let c{d} = r % info[{3 + d}]; r = r / info[{3 + d}];")
        base.append(f"  o += c{d} * info[{3 + rank + d}];")
        base += [f"  b{j} += c{d} * info[{in_words[j] + 1 + d}];" for j in range(n_in)]
    base += [f"  let s{j} = info[{in_words[j] + 1 + rank}];" for j in range(n_in)]
    ins = [load(f"in{j}[b{j} + k * s{j}]", dt) for j, dt in enumerate(program.inputs)]
    scalars = [scalar_read(f"info[{w}]", dt) for w, dt in zip(scalar_words, program.scalars,
                                                                strict=True)]
    lines, names, preludes = render_steps(program, ins, scalars)
    value = f"f32({names[result]})"
    steps = "\n".join("    " + line for line in lines)
    written = "x - m - log(s)" if log else "exp(x - m) / s"
    if epilogue is not None:
        written = f"pyrite_out({written}, o + k * out_step)"
        decls.append(epilogue.source(n_in + 2))
    dtypes = (*program.inputs, *program.scalars, *(s.dtype for s in program.steps), out)
    return (header(dtypes) + "".join(sorted(preludes)) + "\n" + "\n".join(decls) + f"""

var<workgroup> partial: array<f32, {workgroup}>;

@compute @workgroup_size({workgroup})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {{
  let row = i32(wid.x + wid.y * nwg.x);
  let live = row < info[0];
  let len = select(0, info[1], live);
  let out_step = info[2];
""" + "\n".join(base) + f"""
  var m = pyrite_bits(0xff800000u);
  for (var k = i32(lid); k < len; k += {workgroup}) {{
{steps}
    m = max(m, {value});
  }}
  partial[lid] = m;
  workgroupBarrier();
  for (var h = {workgroup}u / 2u; h > 0u; h = h / 2u) {{
    if (lid < h) {{
      partial[lid] = max(partial[lid], partial[lid + h]);
    }}
    workgroupBarrier();
  }}
  m = partial[0];
  workgroupBarrier();
  var s = 0.0;
  for (var k = i32(lid); k < len; k += {workgroup}) {{
{steps}
    s += exp({value} - m);
  }}
  partial[lid] = s;
  workgroupBarrier();
  for (var h = {workgroup}u / 2u; h > 0u; h = h / 2u) {{
    if (lid < h) {{
      partial[lid] = partial[lid] + partial[lid + h];
    }}
    workgroupBarrier();
  }}
  s = partial[0];
  for (var k = i32(lid); k < len; k += {workgroup}) {{
{steps}
    let x = {value};
    dst[o + k * out_step] = {store(written, out)};
  }}
}}
""")


def _views(ex: Any, kp: Any, shape: tuple[int, ...], dim: int) -> tuple[list[int], list[Any]]:
    """Per source of `kp`: its view in `shape` and the words [offset, strides, step]."""
    words: list[int] = []
    views = []
    for source in kp.sources:
        g = ex._source(source)
        v = g if g.shape == shape else g.expanded(shape)
        words += [v.offset, *v.strides, v.strides[dim]]
        views.append(v)
    return words, views


def run_reduce(ex: Any, kp: Any) -> None:
    """A reduction node of the plan, with its producers when it absorbed them (`kp.program`).
    `ex` is fusion's executor: its kernels, stream nodes, results and counters."""
    node = ex.nodes[kp.node]
    op: Reduction = node.op
    dim = node.dim
    k = ex.k
    if kp.program is None:
        ex.results[kp.node] = reduction.reduce(k, op, ex._source(kp.sources[0]), dim)
        ex._saw(kp, "reduce", 0)
        return
    shape = node.args[0].shape  # the reduced tensor's shape
    out_dtype = node.dtype
    out = k.empty(node.shape, out_dtype, op.name)
    ex.results[kp.node] = out
    ex._saw(kp, "fused_reduce", 0)
    if not out.numel:
        return
    rank = len(shape)
    length = shape[dim]
    wg = reduction._workgroup(length)
    program = kp.program
    key = KernelKey("fused_reduce", op.name, (*program.inputs, out_dtype), rank,
                    (wg, kp.result, program))
    pipeline = ex._pipeline(key, lambda: reduce_source(
        program, kp.result, rank, op.wgsl_combine, op.wgsl_identity, out_dtype, wg))
    words, views = _views(ex, kp, shape, dim)
    _launch(ex, kp, pipeline, [out.numel, length, *node.shape, *words], views, out, out.numel)


def run_softmax(ex: Any, kp: Any, epilogue: DenseEpilogue | None = None) -> Any:
    """A softmax node of the plan, with its producers when it absorbed them (without them,
    its input being a leaf or a heavy result, the raw kernel of `reduction.py` runs) and its
    consumers when an `epilogue` is given: then the output (returned) is the epilogue's and
    the softmax itself is never stored."""
    node = ex.nodes[kp.node]
    op: RowOp = node.op
    dim = node.dim
    k = ex.k
    if kp.program is None:
        out = ex.results[kp.node] = reduction.softmax(k, ex._source(kp.sources[0]), dim,
                                                      op.log)
        ex._saw(kp, op.name, 0)
        return out
    shape = node.shape
    out = k.empty(shape, node.dtype, op.name)
    if epilogue is None:
        ex.results[kp.node] = out
        ex._saw(kp, f"fused_{op.name}", 0)
    if not out.numel:
        return out
    rank = len(shape)
    length = shape[dim]
    wg = reduction._workgroup(length)
    program = kp.program
    key = KernelKey("fused_softmax", op.name, (*program.inputs, node.dtype), rank,
                    (wg, kp.result, program, None if epilogue is None else epilogue.key()))
    pipeline = ex._pipeline(key, lambda: softmax_source(
        program, kp.result, rank, op.log, node.dtype, wg, epilogue))
    dense = contiguous_strides(shape)
    row_shape = [1 if d == dim else n for d, n in enumerate(shape)]
    rows = out.numel // length
    words, views = _views(ex, kp, shape, dim)
    _launch(ex, kp, pipeline, [rows, length, dense[dim], *row_shape, *dense, *words], views,
            out, rows, [] if epilogue is None else epilogue.bindings(k))
    return out


def _launch(ex: Any, kp: Any, pipeline: Any, words: list[int], views: list[Any], out: Any,
            rows: int, more: list[Any] | None = None) -> None:
    """Launch a row kernel over `rows` workgroups: metadata, the views, the output, `more`."""
    k = ex.k
    words += ex._scalar_words(kp)
    stats = ex.fusion.stats
    stats.fused_kernels += not more  # with an epilogue, fusion counts the kernel as the matmul's
    stats.fused_ops += len(kp.program)
    stats.bytes_moved += sum(v.numel * storage_itemsize(v.dtype) for v in views) + \
        out.numel * storage_itemsize(out.dtype)
    k.launch(pipeline, [k.meta(words), *(v.block.buffer for v in views), out.block.buffer,
                        *(more or [])], k.grid(rows))
