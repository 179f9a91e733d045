"""Python source text for generated modules: values as literals, long lines wrapped.

Every name or string that comes from an ONNX file reaches the generated source through
`fmt` (an ASCII literal) or `doc_text` (docstring text); `wrap` lays a statement out within
`WIDTH` columns without splitting inside a string literal. Which statements are written is
`writer.py`'s business.
"""

from __future__ import annotations

import math
import pprint
import struct
from typing import Any

from ...data import TensorData

WIDTH = 99


def plain(value: Any) -> Any:
    """An attribute's value as it is written in code (ONNX float attributes are float32:
    written as the shortest decimal that gives the same float32)."""
    if isinstance(value, TensorData):
        return Code(f"pyrite.TensorData({fmt(value.to_list())}, shape={tuple(value.shape)}, "
                     f"dtype={str(value.dtype)!r})")
    if isinstance(value, float):
        return f32(value)
    if isinstance(value, list):
        return [f32(v) if isinstance(v, float) else v for v in value]
    return value


class Code(str):
    """Source text that `fmt` writes as it is."""


def f32(value: float) -> float:
    """The shortest decimal that rounds to the same float32 as `value` (1e-05, not
    9.999999747378752e-06)."""
    if not math.isfinite(value):
        return value
    target = struct.pack("<f", value)
    for digits in range(1, 18):
        short = float(f"{value:.{digits}g}")
        if struct.pack("<f", short) == target:
            return short
    return value


def fmt(value: Any) -> str:
    """`value` as Python source; a string (the file's text) always as an ASCII literal."""
    if isinstance(value, Code):
        return str(value)
    if isinstance(value, str):
        return ascii(value)
    if isinstance(value, float):
        if math.isinf(value):
            return "float('inf')" if value > 0 else "float('-inf')"
        if math.isnan(value):
            return "float('nan')"
    if isinstance(value, list) and any(isinstance(v, str) or (isinstance(v, float) and not
                                                              math.isfinite(v))
                                       for v in _flat(value)):
        return "[" + ", ".join(fmt(v) for v in value) + "]"
    return pprint.pformat(value, width=WIDTH - 24, compact=True)


def doc_text(text: str) -> str:
    """`text` (names from the file among it) made safe inside a triple-quoted docstring: the
    docstring reads back as `text`, its source is printable ASCII, with no quote or backslash
    that could end the string or start an escape of the file's choosing."""
    out = []
    for ch in text:
        if ch in '\\"':
            out.append("\\" + ch)
        elif " " <= ch <= "~":
            out.append(ch)
        else:
            out.append(ascii(ch)[1:-1])  # \n, \x00, \u2028, ...
    return "".join(out)


def _flat(value: Any) -> list[Any]:
    if isinstance(value, list):
        return [x for v in value for x in _flat(v)]
    return [value]


def wrap(line: str, indent: int) -> str:
    """`line` indented; when longer than the page, its first call's arguments go on their own
    lines (an expression without a call continues in parentheses)."""
    pad = " " * indent
    text = pad + line.strip()
    if len(text) <= WIDTH or "\n" in line:
        return text
    target, eq, expr = text.partition(" = ")
    open_at = text.find("(", len(target) + len(eq) if eq else 0)
    close_at = _matching(text, open_at) if open_at >= 0 else -1
    if close_at < 0 or (eq and len(target) > WIDTH // 2):
        if not eq:
            return text
        if len(pad) + 5 + len(expr) <= WIDTH:
            return f"{target} = (\n{pad}    {expr})"
        left, op, right = expr.partition(" ")  # `a + b`: one operand per line
        return f"{target} = (\n{pad}    {left}\n{pad}    {right})"
    head, inner, tail = text[:open_at + 1], text[open_at + 1:close_at], text[close_at:]
    if len(pad) + 4 + len(inner) + len(tail) <= WIDTH:
        return f"{head}\n{pad}    {inner}{tail}"
    return f"{head}\n" + _split_args(inner, pad + "    ") + tail


def _matching(text: str, at: int) -> int:
    """The index of the bracket closing the one at `at` (-1 when there is none); brackets
    inside string literals do not count."""
    depth = 0
    for i, ch in _code_chars(text, at):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth == 0:
                return i
    return -1


def _split_args(args: str, pad: str) -> str:
    """`args` one per line; commas inside brackets or string literals do not split."""
    parts, depth, start = [], 0, 0
    for i, ch in _code_chars(args, 0):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(args[start:i].strip())
            start = i + 1
    parts.append(args[start:].strip())
    return ",\n".join(pad + p for p in parts)


def _code_chars(text: str, start: int) -> list[tuple[int, str]]:
    """The (index, character) pairs of `text` from `start` that are outside string literals
    (the one-line `'...'`/`"..."` literals `fmt` writes)."""
    out: list[tuple[int, str]] = []
    quote, escaped = "", False
    for i in range(start, len(text)):
        ch = text[i]
        if quote:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        else:
            out.append((i, ch))
    return out


__all__ = ["WIDTH", "Code", "doc_text", "f32", "fmt", "plain", "wrap"]
