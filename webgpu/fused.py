"""WGSL of fused kernels: a `Program` (straight-line elementwise code over inputs and scalars)
rendered into an elementwise kernel with several outputs, or into the load of a reduction.

`fusion.py` decides what goes into a program (which ops, which tensors are inputs and which
are written); this module only turns a program and the layout facts of its inputs into WGSL.
A program is structure only: no shapes, strides or scalar values, which travel as run-time
metadata, so one compiled kernel serves every shape with the same structure.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..backend.registry import REGISTRY
from ..dtype import DType
from .codegen import (
    WORKGROUP,
    compute_type,
    convert,
    header,
    identity,
    load,
    op_expression,
    scalar_read,
    storage_type,
    store,
)

# A reference inside a program: (STEP, i) the result of step i, (INPUT, j) input j read at the
# current element, (SCALAR, k) scalar k of the metadata.
STEP, INPUT, SCALAR = 0, 1, 2
Ref = tuple[int, int]


@dataclass(frozen=True)
class Step:
    """One statement: `kind` is unary/binary (`op` names the registry entry), where, cast,
    fill (a scalar broadcast) or view (the argument unchanged: an expand)."""

    kind: str
    op: str
    dtype: DType
    args: tuple[Ref, ...]


@dataclass(frozen=True)
class Program:
    steps: tuple[Step, ...]
    inputs: tuple[DType, ...]
    scalars: tuple[DType, ...]

    def __len__(self) -> int:
        return len(self.steps)


def _rounded(expr: str, dtype: DType) -> str:
    """A float result of an f16 tensor rounds to f16, as it would if written to memory."""
    return f"f32(f16({expr}))" if dtype is DType.F16 else expr


def render_steps(program: Program, inputs: list[str], scalars: list[str],
                 suffix: str = "") -> tuple[list[str], list[str], set[str]]:
    """WGSL statements of a program: (lines, the name of each step's value, preludes).

    `inputs[j]` / `scalars[k]` are WGSL expressions giving input j / scalar k as compute values.
    """
    lines: list[str] = []
    names: list[str] = []
    preludes: set[str] = set()

    def ref(r: Ref) -> str:
        tag, i = r
        return names[i] if tag == STEP else inputs[i] if tag == INPUT else scalars[i]

    def dtype_of(r: Ref) -> DType:
        tag, i = r
        if tag == STEP:
            return program.steps[i].dtype
        return program.inputs[i] if tag == INPUT else program.scalars[i]

    for i, s in enumerate(program.steps):
        args = tuple(ref(a) for a in s.args)
        if s.kind in ("unary", "binary"):
            expr, prelude = op_expression(REGISTRY[s.op], dtype_of(s.args[0]), args)
            if prelude:
                preludes.add(prelude)
            expr = _rounded(expr, s.dtype)
        elif s.kind == "where":
            expr = f"select({args[2]}, {args[1]}, {args[0]})"
        elif s.kind == "cast":
            expr = _rounded(convert(args[0], dtype_of(s.args[0]), s.dtype), s.dtype)
        else:  # fill, view
            expr = args[0]
        name = f"t{i}{suffix}"
        lines.append(f"  let {name}: {compute_type(s.dtype)} = {expr};")
        names.append(name)
    return lines, names, preludes


# ---- the elementwise kernel -----------------------------------------------------------------
@dataclass(frozen=True)
class Layout:
    """How a fused elementwise kernel reads and writes: per input whether it is `flat`
    (contiguous in the iteration shape: read at offset + idx) or strided, which input each
    output overwrites in place (-1: a fresh buffer), and whether four elements go per thread
    as vec4 (every view flat, 4-byte elements, offsets and size multiples of 4)."""

    rank: int
    flat: tuple[bool, ...]
    outputs: tuple[int, ...]  # the step each output stores
    inplace: tuple[int, ...]  # per output: the input whose buffer it writes, or -1
    vec4: bool


def fused_source(program: Program, layout: Layout) -> str:
    """One kernel computing every output of `program` at each element of the iteration shape.

    Metadata (i32 words): numel, shape[rank] (only when some input is strided), then per
    output its offset, then per input its offset and, when strided, its strides[rank], then one
    word per scalar. Bindings: 0 metadata, then the outputs (read_write), then the inputs that
    are not overwritten in place (read). An input overwritten in place is read through its
    output's binding, before the write (each invocation owns its elements).
    """
    rank = layout.rank
    strided = not all(layout.flat)
    word = 1 + (rank if strided else 0)
    out_words = list(range(word, word + len(layout.outputs)))
    word += len(layout.outputs)
    in_words = []
    for f in layout.flat:
        in_words.append(word)
        word += 1 if f else 1 + rank
    scalar_words = list(range(word, word + len(program.scalars)))

    out_dtypes = [program.steps[s].dtype for s in layout.outputs]
    vec = layout.vec4
    decls = ["@group(0) @binding(0) var<storage, read> info: array<i32>;"]
    binding = 1
    for o, dt in enumerate(out_dtypes):
        elem = f"vec4<{storage_type(dt)}>" if vec else storage_type(dt)
        decls.append(f"@group(0) @binding({binding}) var<storage, read_write> out{o}: "
                     f"array<{elem}>;")
        binding += 1
    source_of: dict[int, str] = {}
    for o, j in enumerate(layout.inplace):
        if j >= 0:
            source_of[j] = f"out{o}"
    for j, dt in enumerate(program.inputs):
        if j in source_of:
            continue
        elem = f"vec4<{storage_type(dt)}>" if vec else storage_type(dt)
        decls.append(f"@group(0) @binding({binding}) var<storage, read> in{j}: array<{elem}>;")
        source_of[j] = f"in{j}"
        binding += 1

    body: list[str] = []
    if vec:
        body.append("  let q = idx;  // a vec4 index")
        for j in range(len(program.inputs)):
            body.append(f"  let x{j} = {source_of[j]}[info[{in_words[j]}] / 4 + q];")
        scalars = [scalar_read(f"info[{w}]", dt) for w, dt in zip(scalar_words, program.scalars,
                                                                    strict=True)]
        comps = "xyzw"
        names_by_comp = []
        preludes: set[str] = set()
        for c in comps:
            ins = [load(f"x{j}.{c}", dt) for j, dt in enumerate(program.inputs)]
            lines, names, pre = render_steps(program, ins, scalars, f"_{c}")
            body += lines
            names_by_comp.append(names)
            preludes |= pre
        for o, (s, dt) in enumerate(zip(layout.outputs, out_dtypes, strict=True)):
            parts = ", ".join(store(names_by_comp[c][s], dt) for c in range(4))
            body.append(f"  out{o}[info[{out_words[o]}] / 4 + q] = "
                        f"vec4<{storage_type(dt)}>({parts});")
    else:
        if strided:
            body.append("  var r = idx;")
            for j, f in enumerate(layout.flat):
                if not f:
                    body.append(f"  var p{j} = info[{in_words[j]}];")
            for d in range(rank - 1, -1, -1):
                body.append(f"  let c{d} = r % info[{1 + d}]; r = r / info[{1 + d}];")
                for j, f in enumerate(layout.flat):
                    if not f:
                        body.append(f"  p{j} += c{d} * info[{in_words[j] + 1 + d}];")
        ins = []
        for j, (f, dt) in enumerate(zip(layout.flat, program.inputs, strict=True)):
            pos = f"info[{in_words[j]}] + idx" if f else f"p{j}"
            body.append(f"  let x{j} = {source_of[j]}[{pos}];")
            ins.append(load(f"x{j}", dt))
        scalars = [scalar_read(f"info[{w}]", dt) for w, dt in zip(scalar_words, program.scalars,
                                                                    strict=True)]
        lines, names, preludes = render_steps(program, ins, scalars)
        body += lines
        for o, (s, dt) in enumerate(zip(layout.outputs, out_dtypes, strict=True)):
            body.append(f"  out{o}[info[{out_words[o]}] + idx] = {store(names[s], dt)};")

    dtypes = (*program.inputs, *program.scalars, *(s.dtype for s in program.steps), *out_dtypes)
    limit = "info[0] / 4" if vec else "info[0]"
    return (header(dtypes) + "".join(sorted(preludes)) + "\n" + "\n".join(decls) + f"""

@compute @workgroup_size({WORKGROUP})
fn main(@builtin(global_invocation_id) gid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {{
  let idx = i32(gid.x + gid.y * nwg.x * {WORKGROUP}u);
  if (idx >= {limit}) {{ return; }}
""" + "\n".join(body) + "\n}\n")


# ---- a reduction whose input is a program -----------------------------------------------------
def reduce_source(program: Program, result: int, rank: int, combine: str, identity_name: str,
                  out: DType, workgroup: int) -> str:
    """Reduce one dim of the values of step `result`, computed as they are read.

    One workgroup per output element (as `shaders/reduce.wgsl`). Metadata (i32 words): n_out,
    len (the reduced dim's size), out_shape[rank] (the input shape with the reduced dim 1),
    then per input: offset, strides[rank] (its view in the input shape), step along the dim;
    then the scalars. Bindings: 0 metadata, 1.. the inputs (read), last the output.
    """
    src = program.steps[result].dtype
    acc = DType.I32 if src is DType.BOOL else (DType.F32 if src.is_float else src)
    n_in = len(program.inputs)
    in_words = [2 + rank + j * (rank + 2) for j in range(n_in)]
    scalar_words = [2 + rank + n_in * (rank + 2) + k for k in range(len(program.scalars))]
    decls = ["@group(0) @binding(0) var<storage, read> info: array<i32>;"]
    for j, dt in enumerate(program.inputs):
        decls.append(f"@group(0) @binding({j + 1}) var<storage, read> in{j}: "
                     f"array<{storage_type(dt)}>;")
    decls.append(f"@group(0) @binding({n_in + 1}) var<storage, read_write> dst: "
                 f"array<{storage_type(out)}>;")
    base = ["    var r = row;"]
    base += [f"    var b{j} = info[{in_words[j]}];" for j in range(n_in)]
    for d in range(rank - 1, -1, -1):
        base.append(f"    let c{d} = r % info[{2 + d}]; r = r / info[{2 + d}];")
        base += [f"    b{j} += c{d} * info[{in_words[j] + 1 + d}];" for j in range(n_in)]
    base += [f"    let s{j} = info[{in_words[j] + 1 + rank}];" for j in range(n_in)]
    ins = [load(f"in{j}[b{j} + k * s{j}]", dt) for j, dt in enumerate(program.inputs)]
    scalars = [scalar_read(f"info[{w}]", dt) for w, dt in zip(scalar_words, program.scalars,
                                                                strict=True)]
    lines, names, preludes = render_steps(program, ins, scalars)
    loop = ["  " + line for line in lines]
    value = convert(names[result], src, acc)
    dtypes = (*program.inputs, *program.scalars, *(s.dtype for s in program.steps), out)
    comb = combine.replace("{acc}", "acc").replace("{x}", "x")
    return (header(dtypes) + "".join(sorted(preludes)) + "\n" + "\n".join(decls) + f"""

var<workgroup> partial: array<{compute_type(acc)}, {workgroup}>;

fn combine(acc: {compute_type(acc)}, x: {compute_type(acc)}) -> {compute_type(acc)} {{
  return {comb};
}}

@compute @workgroup_size({workgroup})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {{
  let row = i32(wid.x + wid.y * nwg.x);
  let live = row < info[0];
  var acc: {compute_type(acc)} = {identity(identity_name, acc)};
  if (live) {{
""" + "\n".join(base) + f"""
    for (var k = i32(lid); k < info[1]; k += {workgroup}) {{
""" + "\n".join(loop) + f"""
      acc = combine(acc, {value});
    }}
  }}
  partial[lid] = acc;
  workgroupBarrier();
  for (var s = {workgroup}u / 2u; s > 0u; s = s / 2u) {{
    if (lid < s) {{
      partial[lid] = combine(partial[lid], partial[lid + s]);
    }}
    workgroupBarrier();
  }}
  if (lid == 0u && live) {{
    dst[row] = {store(convert("partial[0]", acc, out), out)};
  }}
}}
""")


# ---- an epilogue: what a matmul or conv kernel stores ----------------------------------------
def dense_epilogue_source(program: Program, acc: int, result: int, rank: int,
                          first_binding: int) -> str:
    """Module-scope WGSL giving a kernel with a dense output of rank `rank` (a matmul, a conv)
    the function
    `fn pyrite_out(v: f32, i: i32) -> f32`: the value stored at linear output index i when the
    kernel computed v there. Input `acc` of the program is v; the others are read at that
    element through their views in the output shape. Bindings from `first_binding`: the
    metadata `em` (shape[rank], then per other input: offset, strides[rank], then the
    scalars), then the other inputs (read)."""
    others = [j for j in range(len(program.inputs)) if j != acc]
    decls = [f"@group(0) @binding({first_binding}) var<storage, read> em: array<i32>;"]
    for n, j in enumerate(others):
        decls.append(f"@group(0) @binding({first_binding + 1 + n}) var<storage, read> "
                     f"ein{j}: array<{storage_type(program.inputs[j])}>;")
    words = {j: rank + n * (rank + 1) for n, j in enumerate(others)}
    scalar_base = rank + len(others) * (rank + 1)
    body = [f"  var p{j} = em[{words[j]}];" for j in others] or ["  _ = em[0];"]  # bound
    if others:  # with no other input the index is not unravelled at all: an activation alone
        body.insert(0, "  var r = i;")  # must cost nothing, whatever the driver eliminates
        for d in range(rank - 1, -1, -1):
            body.append(f"  let c{d} = r % em[{d}]; r = r / em[{d}];")
            body += [f"  p{j} += c{d} * em[{words[j] + 1 + d}];" for j in others]
    ins = [load(f"ein{j}[p{j}]", dt) if j != acc else "v"
           for j, dt in enumerate(program.inputs)]
    scalars = [scalar_read(f"em[{scalar_base + k}]", dt)
               for k, dt in enumerate(program.scalars)]
    lines, names, preludes = render_steps(program, ins, scalars)
    body += lines
    return ("".join(sorted(preludes)) + "\n".join(decls) + """
fn pyrite_out(v: f32, i: i32) -> f32 {
""" + "\n".join(body) + f"\n  return {names[result]};\n}}\n")


@dataclass(frozen=True)
class DenseEpilogue:
    """Elementwise work a kernel with a dense output applies to each value before storing it
    (fusion's matmul and conv epilogues): input `acc` of `program` is the value, step
    `result` the stored one; `views` are the other inputs in the output's shape, `words` the
    metadata `em`."""

    program: Program
    acc: int
    result: int
    rank: int
    views: tuple[object, ...]
    words: list[int]

    def key(self) -> tuple[object, ...]:
        return ("epilogue", self.program, self.acc, self.result, self.rank)

    def source(self, first_binding: int) -> str:
        return dense_epilogue_source(self.program, self.acc, self.result, self.rank,
                                     first_binding)

    def bindings(self, k: object) -> list[object]:
        return [k.meta(self.words),  # type: ignore[attr-defined]
                *(v.block.buffer for v in self.views)]  # type: ignore[attr-defined]
