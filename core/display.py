"""How tensors print: Burn's layout (data, shape, device, backend, kind, dtype), print options
and `check_closeness`."""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass, replace
from decimal import Decimal
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .tensor import Tensor


@dataclass(frozen=True)
class PrintOptions:
    """precision: decimals for floats (None: shortest repr); threshold: elements above which the
    data is summarised; edge_items: entries kept at each end of a summarised dim."""

    precision: int | None = None
    threshold: int = 1000
    edge_items: int = 3


_options = PrintOptions()


def set_print_options(options: PrintOptions | None = None, **changes: Any) -> None:
    """Set the global print options: `set_print_options(PrintOptions(precision=2))` or by field."""
    global _options
    _options = replace(options or _options, **changes)


def get_print_options() -> PrintOptions:
    return _options


def _shortest(value: float, fmt: str) -> str:
    """The shortest decimal that reads back as the same value in the storage format, written
    as Rust's `{:?}` writes floats (Burn's display): `10.0`, `0.12345679`, `1e-8`, `1.5e20`."""
    stored = struct.pack(fmt, value)
    for digits in range(17):
        text = f"{value:.{digits}e}"
        try:
            if struct.pack(fmt, float(text)) == stored:
                break
        except OverflowError:  # rounded past the format's largest value (65504 -> 7e4 in f16)
            continue
    if value != 0 and not 1e-4 <= abs(value) < 1e16:
        mantissa, exponent = text.split("e")
        if "." in mantissa:
            mantissa = mantissa.rstrip("0").rstrip(".")
        return f"{mantissa}e{int(exponent)}"
    positional = format(Decimal(text), "f")
    return positional if "." in positional else positional + ".0"


def _fmt(value: Any, precision: int | None, fmt: str = "d") -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return f"{value:.{precision}f}" if precision is not None else _shortest(value, fmt)
    return str(value)


def _format_data(values: list[Any], shape: tuple[int, ...], opts: PrintOptions,
                 summarise: bool, fmt: str, depth: int = 0) -> str:
    if not shape:
        return _fmt(values[0], opts.precision, fmt)
    if len(shape) == 1 and not (summarise and shape[0] > 2 * opts.edge_items):
        return "[" + ", ".join(_fmt(v, opts.precision, fmt) for v in values) + "]"
    size = shape[0]
    inner = math.prod(shape[1:])
    if summarise and size > 2 * opts.edge_items:
        picks: list[int | None] = [*range(opts.edge_items), None,
                                   *range(size - opts.edge_items, size)]
    else:
        picks = list(range(size))
    parts = []
    for i in picks:
        if i is None:
            parts.append("...")
        else:
            chunk = values[i * inner:(i + 1) * inner]
            parts.append(_format_data(chunk, shape[1:], opts, summarise, fmt, depth + 1))
    sep = ", " if len(shape) == 1 else ",\n" + " " * (depth + 1)
    return "[" + sep.join(parts) + "]"


def format_values(t: Tensor, precision: int | None = None) -> str:
    """The data part of a tensor's display."""
    opts = _options if precision is None else replace(_options, precision=precision)
    data = t.to_data()
    fmt = "<" + data.dtype.fmt
    return _format_data(data.values(), data.shape, opts, data.num_elements > opts.threshold, fmt)


def render(t: Tensor, spec: str = "") -> str:
    """Burn's display of a tensor; `spec` may be a precision like '.2'."""
    precision = int(spec.strip(".f")) if spec.strip(".f") else None
    backend = t._backend
    return (f"Tensor {{\n  data:\n{format_values(t, precision)},\n  shape:  {list(t.shape)},\n"
            f"  device:  {backend.name},\n  backend:  {backend.name!r},\n"
            f"  kind:  {t._kind.value!r},\n  dtype:  {t.dtype.short!r},\n}}")


def check_closeness(output: Tensor, expected: Tensor, *, echo: bool = True) -> str:
    """Report which share of elements agree within each tolerance from 1e-1 down to 1e-7.

    Each line is [PASS] (all within), [WARN] (>= 90%) or [FAIL]. Returns the report and, with
    echo, prints it.
    """
    if output.shape != expected.shape:
        raise ValueError(f"check_closeness: shapes differ: {output.shape} vs {expected.shape}")
    a = output.to_data().convert("f64").values()
    b = expected.to_data().convert("f64").values()
    diffs = [abs(x - y) for x, y in zip(a, b, strict=True)]
    n = max(len(diffs), 1)
    lines = ["Tensor closeness check results:"]
    for exp in range(1, 8):
        eps = 10.0 ** -exp
        within = sum(1 for d in diffs if d <= eps)
        share = 100.0 * within / n
        tag = "PASS" if within == len(diffs) else ("WARN" if share >= 90 else "FAIL")
        lines.append(f"Epsilon: {eps:.0e}\n  [{tag}] {share:.2f}% of elements within "
                     f"tolerance ({within}/{len(diffs)})")
    report = "\n".join(lines)
    if echo:
        print(report)
    return report
