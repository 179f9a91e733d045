"""The shape signature of a user op: named inputs, named dims, and the output's shape.

A signature reads like the op's shapes on paper::

    lhs[..., m, k], rhs[..., k, n], bias[..., m, n] -> [..., m, n]

Each input names its dims; a name used twice must have one size (an input may give 1 there and is
broadcast, as numpy would); a literal `1` is a dim of size 1; a leading `...` is any number of
batch dims, broadcast across the inputs that have it. An input may have fewer dims than it names
(numpy's leading 1s). The signature owns the checks before any backend sees the op; it knows
nothing of backends or kernels.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from ..errors import ShapeError

_INPUT = re.compile(r"\s*(\w+)\s*\[([^\]]*)\]\s*")
_NAME = re.compile(r"[A-Za-z_]\w*")
BATCH = "..."


@dataclass(frozen=True)
class Bound:
    """A call's shapes resolved: every named size, the batch dims, each input's full shape (the
    shape it is broadcast to before the op runs) and the output's shape."""

    sizes: dict[str, int]
    batch: tuple[int, ...]
    inputs: tuple[tuple[int, ...], ...]
    output: tuple[int, ...]

    @property
    def dims(self) -> dict[str, int]:
        """The named sizes, and `batch`: the product of the batch dims (1 when none)."""
        return {**self.sizes, "batch": math.prod(self.batch)}


@dataclass(frozen=True)
class Signature:
    """A parsed signature (see the module docstring)."""

    text: str
    names: tuple[str, ...]  # the inputs, in call order
    dims: tuple[tuple[str, ...], ...]  # per input: its dims, "..." first when batched
    output: tuple[str, ...]

    @staticmethod
    def parse(text: str, op: str) -> Signature:
        """`text` parsed; a malformed one raises with the op's name and the expected form."""
        form = ('write it as "lhs[..., m, k], rhs[..., k, n] -> [..., m, n]": named inputs '
                "with their dims, a leading ..., sizes 1 allowed")
        head, arrow, tail = text.partition("->")
        if not arrow:
            raise ShapeError(f"{op}: signature {text!r} has no '->'; {form}")
        names: list[str] = []
        dims: list[tuple[str, ...]] = []
        for part in _split_top(head):
            found = _INPUT.fullmatch(part)
            if found is None:
                raise ShapeError(f"{op}: signature input {part.strip()!r} is not name[dims]; "
                                 f"{form}")
            names.append(found.group(1))
            dims.append(_dims(found.group(2), op, form))
        out = tail.strip()
        if not (out.startswith("[") and out.endswith("]")):
            raise ShapeError(f"{op}: signature output {out!r} is not [dims]; {form}")
        output = _dims(out[1:-1], op, form)
        known = {d for ds in dims for d in ds}
        if unknown := [d for d in output if d not in known and d != "1"]:
            raise ShapeError(f"{op}: signature output names {unknown}, which no input has; {form}")
        if any("batch" in ds for ds in dims):
            raise ShapeError(f"{op}: signature names a dim 'batch', which pyrite gives the "
                             f"product of the batch dims (dims['batch']); rename the dim")
        if len(set(names)) != len(names):
            raise ShapeError(f"{op}: signature names an input twice: {names}")
        return Signature(text, tuple(names), tuple(dims), output)

    def bind(self, op: str, shapes: tuple[tuple[int, ...], ...]) -> Bound:
        """The sizes of a call with inputs of `shapes`; a mismatch raises a ShapeError naming the
        op, the dim and the inputs' shapes."""
        if len(shapes) != len(self.names):
            raise ShapeError(f"{op}: takes {len(self.names)} tensors ({', '.join(self.names)}), "
                             f"got {len(shapes)}")
        sizes: dict[str, int] = {}
        seen: dict[str, str] = {}
        batch: tuple[int, ...] = ()
        batch_from = ""
        for name, dims, shape in zip(self.names, self.dims, shapes, strict=True):
            named = [d for d in dims if d != BATCH]
            lead = dims[:1] == (BATCH,)
            if len(shape) < len(named):
                shape = (1,) * (len(named) - len(shape)) + shape
            if len(shape) > len(named) and not lead:
                raise ShapeError(f"{op}: {name} has shape {shape}, {len(named)} dims expected "
                                 f"({name}[{', '.join(dims)}])")
            split = len(shape) - len(named)
            if lead:
                try:
                    batch = _broadcast(batch, shape[:split])
                except ValueError:
                    raise ShapeError(f"{op}: batch dims of {name} {shape[:split]} do not "
                                     f"broadcast with {batch_from} {batch}") from None
                batch_from = batch_from or name
            for dim, size in zip(named, shape[split:], strict=True):
                if dim == "1":
                    if size != 1:
                        raise ShapeError(f"{op}: {name} has shape {shape}, size 1 expected "
                                         f"where the signature says 1 ({self.text})")
                    continue
                have = sizes.get(dim)
                if have is None or (have == 1 and size != 1):
                    sizes[dim] = size
                    seen[dim] = f"{name} {shape}"
                elif size not in (1, have):
                    raise ShapeError(f"{op}: dim {dim!r} is {have} in {seen[dim]} and {size} in "
                                     f"{name} {shape} ({self.text})")
        full = tuple((batch if ds[:1] == (BATCH,) else ()) +
                     tuple(1 if d == "1" else sizes[d] for d in ds if d != BATCH)
                     for ds in self.dims)
        output = ((batch if self.output[:1] == (BATCH,) else ()) +
                  tuple(1 if d == "1" else sizes[d] for d in self.output if d != BATCH))
        return Bound(sizes, batch, full, output)


def _split_top(text: str) -> list[str]:
    """`a[x, y], b[z]` split at the commas outside brackets."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += {"[": 1, "]": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p for p in parts if p.strip()]


def _dims(text: str, op: str, form: str) -> tuple[str, ...]:
    dims = tuple(d.strip() for d in text.split(",") if d.strip())
    for i, d in enumerate(dims):
        if d == BATCH and i == 0:
            continue
        if d != "1" and _NAME.fullmatch(d) is None:
            raise ShapeError(f"{op}: signature dim {d!r} is neither a name, 1 nor a leading ...; "
                             f"{form}")
    return dims


def _broadcast(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    rank = max(len(a), len(b))
    pa, pb = (1,) * (rank - len(a)) + a, (1,) * (rank - len(b)) + b
    out = []
    for x, y in zip(pa, pb, strict=True):
        if x != y and 1 not in (x, y):
            raise ValueError
        out.append(max(x, y))
    return tuple(out)
