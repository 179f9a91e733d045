"""WGSL generation: dtype mapping, template rendering and the strided elementwise kernel.

Owns how a dtype is stored and computed in WGSL (bool as u32, f16 stored as f16 and computed as
f32), the rendering of `shaders/*.wgsl` templates with their `#include`s of the shared index
arithmetic (`shaders/index.wgsl`, `window.wgsl`: `include` gives the same text to generated
kernels), and the one generated kernel family: N strided inputs (or scalars) -> one strided
output through an expression taken from the op registry.
It does not own dispatch or buffers (`kernels.py`) or which ops exist (`core/backend/*`).
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass
from functools import cache
from importlib import resources

from ..backend.registry import Op
from ..capture.traced import Traced, f32_word, keep_int
from ..dtype import DType, Kind
from ..errors import DTypeError, PyriteError

WORKGROUP = 256  # invocations per workgroup of the 1-D kernels

_STORAGE = {DType.F32: "f32", DType.F16: "f16", DType.I32: "i32", DType.BOOL: "u32"}
_COMPUTE = {Kind.FLOAT: "f32", Kind.INT: "i32", Kind.BOOL: "bool"}
_PLACEHOLDER = re.compile(r"\{\{\s*(\w+)\s*\}\}")


@dataclass(frozen=True)
class KernelKey:
    """What a compiled pipeline depends on; shapes, strides and scalars are run-time metadata."""

    kernel: str  # "unary", "binary", "where", "cast", "fill", "arange", or a template name
    op: str  # registry op / reduction name, "" when none
    dtypes: tuple[DType, ...]  # operand dtypes, then the output's
    rank: int = 0
    params: tuple[object, ...] = ()  # hashable: tile sizes, a fused program's structure, ...


# ---- dtypes ---------------------------------------------------------------------------------
def storage_type(dtype: DType) -> str:
    """The WGSL element type of a buffer holding `dtype`."""
    try:
        return _STORAGE[dtype]
    except KeyError:
        raise DTypeError(f"webgpu: no storage for {dtype}; webgpu tensors are f32, f16, i32 "
                         f"or bool") from None


def storage_itemsize(dtype: DType) -> int:
    """Bytes per element in a buffer (bool takes a whole u32 word)."""
    return 4 if dtype is DType.BOOL else dtype.itemsize


def compute_type(dtype: DType) -> str:
    """The WGSL type arithmetic on `dtype` happens in."""
    return _COMPUTE[dtype.kind]


def load(expr: str, dtype: DType) -> str:
    """A storage element as its compute value."""
    if dtype is DType.BOOL:
        return f"({expr} != 0u)"
    if dtype is DType.F16:
        return f"f32({expr})"
    return expr


def store(expr: str, dtype: DType) -> str:
    """A compute value as a storage element."""
    if dtype is DType.BOOL:
        return f"select(0u, 1u, {expr})"
    if dtype is DType.F16:
        return f"f16({expr})"
    return expr


def convert(expr: str, src: DType, dst: DType) -> str:
    """A compute value of `src` as a compute value of `dst` (floats truncate toward zero)."""
    a, b = src.kind, dst.kind
    if a is b:
        return expr
    if b is Kind.BOOL:
        return f"({expr} != {'0.0' if a is Kind.FLOAT else '0'})"
    if a is Kind.BOOL:
        return f"select({'0.0, 1.0' if b is Kind.FLOAT else '0, 1'}, {expr})"
    return f"{compute_type(dst)}({expr})"


def scalar_bits(value: float | int | bool, dtype: DType) -> int:
    """A scalar of `dtype` as the i32 metadata word kernels bitcast back (a traced host number,
    see `pyrite.compile`, gives a traced word)."""
    if isinstance(value, Traced):
        return f32_word(value) if dtype.kind is Kind.FLOAT else keep_int(value)
    if dtype.kind is Kind.FLOAT:
        return struct.unpack("<i", struct.pack("<f", float(value)))[0]  # type: ignore[no-any-return]
    return int(value)


def scalar_read(word: str, dtype: DType) -> str:
    """WGSL reading a metadata word written by `scalar_bits`."""
    if dtype.kind is Kind.FLOAT:
        return f"bitcast<f32>({word})"
    if dtype.kind is Kind.BOOL:
        return f"({word} != 0)"
    return word


def identity(name: str, dtype: DType) -> str:
    """A registry reduction identity ('0', '1', 'lowest', 'highest') as a compute literal."""
    floating = dtype.kind is Kind.FLOAT
    values = {"0": ("0.0", "0"), "1": ("1.0", "1"),
              "lowest": ("pyrite_bits(0xff800000u)", "i32(-2147483647 - 1)"),
              "highest": ("pyrite_bits(0x7f800000u)", "2147483647")}
    return values[name][0 if floating else 1]


def nan_test(var: str, dtype: DType) -> str:
    """A NaN test on the bits of a compute value (`v != v` is folded away by some drivers)."""
    if dtype.kind is Kind.FLOAT:
        return f"((bitcast<u32>({var}) & 0x7fffffffu) > 0x7f800000u)"
    return "false"


def op_expression(op: Op, dtype: DType, args: tuple[str, ...]) -> tuple[str, str]:
    """The registry's WGSL for `op` on operands of `dtype` named `args`, and its prelude."""
    expr = op.wgsl_int if dtype.kind is Kind.INT and op.wgsl_int else op.wgsl
    names = ("{x}",) if op.arity == 1 else ("{a}", "{b}")
    values = list(args)
    if dtype.kind is Kind.INT and op.wgsl_int is None and op.prelude and op.out_kind is None:
        # the helper (pow) is written for f32: run it in f32 and round back, exact for
        # results below 2^24 (numpy's integer power is exact; larger results would overflow i32
        # in practice anyway)
        values = [f"f32({a})" for a in values]
        expr = f"i32(round({expr}))"
    for name, value in zip(names, values, strict=True):
        expr = expr.replace(name, value)
    if op.arity == 1 and dtype.kind is Kind.FLOAT and op.out_kind is None:
        # WGSL leaves a builtin's result on NaN indeterminate (SwiftShader's exp(NaN) is inf):
        # a NaN input gives NaN, as in numpy
        expr = f"select({expr}, {args[0]}, {nan_test(args[0], dtype)})"
    return expr, op.prelude



#: f32 from its bits at run time. Tint (Chrome's WGSL compiler) rejects a constant expression
#: whose value is inf or NaN, such as `bitcast<f32>(0xff800000u)`; a function call is never a
#: constant expression, so kernels spell such values `pyrite_bits(0xff800000u)`.
BITS_FN = "fn pyrite_bits(b: u32) -> f32 { return bitcast<f32>(b); }\n"


def header(dtypes: tuple[DType, ...]) -> str:
    """What every generated kernel starts with: `enable f16;` when it touches f16 buffers, and
    the `pyrite_bits` helper."""
    return ("enable f16;\n" if DType.F16 in dtypes else "") + BITS_FN


# ---- templates ------------------------------------------------------------------------------
#: A line `#include "name.wgsl"` in a template's body pastes that shared file of `shaders/`
#: there (its opening comment left out), once per kernel: a file already pasted, directly or
#: through another include, is not pasted again. Shared files take no placeholders, so
#: generated kernels paste the same text (`include`).
_INCLUDE = re.compile(r"^#include\b(.*)$", re.MULTILINE)
_INCLUDED = re.compile(r'\s*"([\w.-]+)"\s*')


@cache
def template_text(name: str) -> str:
    """The text of `shaders/<name>`, as written."""
    return resources.files("pyrite.shaders").joinpath(name).read_text(encoding="utf-8")


def _split(text: str) -> tuple[str, str]:
    """A template's opening comment and its body."""
    lines = text.splitlines(keepends=True)
    split = next((i for i, line in enumerate(lines) if not line.startswith("//")), len(lines))
    return "".join(lines[:split]), "".join(lines[split:])


def _expand(body: str, pasted: set[str], within: str) -> str:
    """`body` with its `#include` lines replaced by the files not in `pasted` (which it grows);
    `within` says where body comes from, for errors."""
    def paste(line: re.Match[str]) -> str:
        named = _INCLUDED.fullmatch(line.group(1))
        if named is None:
            raise PyriteError(f"{within}: {line.group(0).strip()!r}: write the file name in "
                              f'quotes, as #include "index.wgsl"')
        name = named.group(1)
        if name in pasted:
            return f"// {name}: included above"
        pasted.add(name)
        try:
            text = template_text(name)
        except (FileNotFoundError, IsADirectoryError):
            raise PyriteError(f'{within}: #include "{name}": no file shaders/{name} in '
                              f"pyrite.shaders") from None
        body = _split(text)[1]
        if found := _PLACEHOLDER.search(body):
            raise PyriteError(f'{within}: #include "{name}": an included file takes no '
                              f"placeholders, found {found.group(0)}")
        return f"// ---- {name}\n" + _expand(body, pasted, f"{within} > {name}").rstrip("\n")
    return _INCLUDE.sub(paste, body)


def include(*names: str) -> str:
    """The shared WGSL files of `shaders/` named, each once, for a generated kernel to paste
    after its `header`: what a template's `#include "index.wgsl"` lines give it.

    >>> "fn pyrite_offset(" in include("index.wgsl", "index.wgsl")
    True
    """
    return _expand("".join(f'#include "{name}"\n' for name in names), set(), "include")


def render(name: str, **values: str | int) -> str:
    """A `shaders/` template with its `{{ placeholders }}` filled and its `#include`s pasted.

    The opening `//` comment documents the template and is kept as written; in the body every
    placeholder must get a value and every value must be used.
    """
    head, body = _split(template_text(name))
    used = set(_PLACEHOLDER.findall(body))
    missing, unused = used - set(values), set(values) - used
    if missing or unused:
        raise PyriteError(f"render {name}: missing placeholders {sorted(missing)}, "
                          f"unused values {sorted(unused)}")
    body = _PLACEHOLDER.sub(lambda m: str(values[m.group(1)]), body)
    return head + _expand(body, set(), f"render {name}")


def window_words(in_hw: tuple[int, ...], out_hw: tuple[int, ...], kernel: tuple[int, ...],
                 stride: tuple[int, ...], padding: tuple[tuple[int, int], ...],
                 dilation: tuple[int, ...]) -> list[int]:
    """The metadata words info[1..12] that `shaders/window.wgsl` reads, for one (H, W) plane:
    [H, W, OH, OW, KH, KW, sh, sw, pt, pl, dh, dw] (padding: the leading side's)."""
    (pt, _), (pl, _) = padding
    return [*in_hw, *out_hw, *kernel, *stride, pt, pl, *dilation]


# ---- the elementwise family -----------------------------------------------------------------
@dataclass(frozen=True)
class Operand:
    """A kernel input: a strided tensor of `dtype`, or a scalar read from the metadata."""

    dtype: DType
    scalar: bool = False


def elementwise_meta_size(operands: tuple[Operand, ...], rank: int) -> int:
    tensors = sum(not o.scalar for o in operands)
    return 1 + rank + (rank + 1) * (tensors + 1) + sum(o.scalar for o in operands)


def elementwise_source(operands: tuple[Operand, ...], out: DType, rank: int, expr: str,
                       prelude: str = "", flat: bool = False) -> str:
    """A kernel computing `out[i] = expr(v0, v1, ...)` over every output element.

    `expr` names its operands `v0`, `v1`, ... (compute values) and may use `idx` (the linear
    output index, i32). Metadata (i32 words): numel, shape[rank], then (strides[rank], offset)
    for the output and for each tensor operand, then one word per scalar operand. With `flat`
    every view is contiguous with the output's shape and only offsets are read.
    """
    tensors = [i for i, o in enumerate(operands) if not o.scalar]
    decls = ["@group(0) @binding(0) var<storage, read> info: array<i32>;"]
    for n, i in enumerate(tensors):
        decls.append(f"@group(0) @binding({n + 1}) var<storage, read> in{i}: "
                     f"array<{storage_type(operands[i].dtype)}>;")
    decls.append(f"@group(0) @binding({len(tensors) + 1}) var<storage, read_write> out: "
                 f"array<{storage_type(out)}>;")
    views = ["out"] + [f"in{i}" for i in tensors]  # views in metadata order
    base = {v: 1 + rank + k * (rank + 1) for k, v in enumerate(views)}  # strides start
    body = [f"  var p_{v} = info[{base[v] + rank}];" for v in views]
    if flat:
        body += [f"  p_{v} += idx;" for v in views]
    else:
        body.append("  var r = idx;")
        for d in range(rank - 1, -1, -1):
            body.append(f"  let c{d} = r % info[{1 + d}]; r = r / info[{1 + d}];")
            body += [f"  p_{v} += c{d} * info[{base[v] + d}];" for v in views]
    word = 1 + rank + (rank + 1) * len(views)
    for i, o in enumerate(operands):
        if o.scalar:
            body.append(f"  let v{i} = {scalar_read(f'info[{word}]', o.dtype)};")
            word += 1
        else:
            body.append(f"  let v{i} = {load(f'in{i}[p_in{i}]', o.dtype)};")
    body.append(f"  out[p_out] = {store(expr, out)};")
    dtypes = tuple(o.dtype for o in operands) + (out,)
    return (f"{header(dtypes)}{prelude}\n" + "\n".join(decls) + f"""

@compute @workgroup_size({WORKGROUP})
fn main(@builtin(global_invocation_id) gid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {{
  let idx = i32(gid.x + gid.y * nwg.x * {WORKGROUP}u);
  if (idx >= info[0]) {{ return; }}
""" + "\n".join(body) + "\n}\n")
