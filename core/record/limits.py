"""The bounds every loader of a file applies: nesting depth, decompressed size, shared references.

A file read by pyrite (a record, a `.pt`, a safetensors header) may be hostile. Whatever it
declares, reading it must neither recurse without end, nor inflate to gigabytes, nor walk a
graph of shared references along every path. The numbers live here, in one place, and are
documented in docs/records.md:

- `MAX_DEPTH`: containers (dicts, lists) nested deeper than this are refused. A model's record
  nests by submodule, a few levels; 64 leaves ample room.
- `inflate_limit(n)`: the most bytes that `n` bytes of compressed data (gzip, a zip entry) may
  decompress to: `INFLATE_SLACK + INFLATE_RATIO * n`, and never more than `MAX_DECOMPRESSED`.
  Weights compress by a few percent; a ratio of 100 still lets an all-zero model of up to
  16 MiB (the slack) load. A file past the bound is refused before the rest is inflated.
- `visit_limit(n)`: the most container visits a walk over an `n`-byte file's object graph may
  make; a pickle byte builds at most one object, so an honest file needs fewer visits than it
  has bytes, while one whose references fan out (a list of two references to a list of two
  references ...) would need 2^depth.

This module imports nothing heavier than zlib; it owns no format.
"""

from __future__ import annotations

import zlib

from ..errors import RecordError

#: containers nested deeper than this are refused
MAX_DEPTH = 64
#: decompressed bytes allowed per compressed byte, beyond the slack
INFLATE_RATIO = 100
#: decompressed bytes allowed whatever the compressed size
INFLATE_SLACK = 16 << 20
#: the most any compressed input may decompress to
MAX_DECOMPRESSED = 4 << 30
_CHUNK = 1 << 16
#: container visits allowed beyond one per byte of the file
VISIT_SLACK = 1 << 12


def inflate_limit(compressed: int) -> int:
    """The most bytes `compressed` bytes may decompress to.

    >>> inflate_limit(0) == INFLATE_SLACK
    True
    >>> inflate_limit(10**12) == MAX_DECOMPRESSED
    True
    """
    return min(INFLATE_SLACK + INFLATE_RATIO * compressed, MAX_DECOMPRESSED)


def visit_limit(size: int) -> int:
    """The most container visits a walk over the objects of a `size`-byte file may make."""
    return size + VISIT_SLACK


def too_large(source: str, what: str, size: int, limit: int) -> RecordError:
    """The one error for data that decompresses past `limit`."""
    return RecordError(f"{source}: {what} decompresses to more than {limit} bytes (from "
                       f"{size} compressed): refused as a decompression bomb (the limits are in "
                       f"docs/records.md)")


def gunzip_limited(data: bytes, *, source: str, expected: str) -> bytes:
    """gzip `data` decompressed, stopping with RecordError past `inflate_limit(len(data))`.

    Every member of a multi-member stream is decompressed; gzip's CRC-32 and length trailer are
    checked by zlib. `expected` names what the data should be, for errors.
    """
    limit = inflate_limit(len(data))
    out: list[bytes] = []
    total = 0
    view = memoryview(data)
    pos = 0  # where the current member's unread input starts in `data`
    while pos < len(data):
        inflater = zlib.decompressobj(wbits=31)
        try:
            # the input goes in 64 KiB pieces and each piece's output comes in chunks of at most
            # 64 KiB, so nothing grows past the limit and no step copies more than a piece
            # (feeding all of `data` made every chunk copy the rest: quadratic time)
            while not inflater.eof and pos < len(data):
                tail: bytes | memoryview = view[pos:pos + _CHUNK]
                pos += len(tail)
                while tail:
                    chunk = inflater.decompress(tail, min(_CHUNK, limit + 1 - total))
                    total += len(chunk)
                    out.append(chunk)
                    if total > limit:
                        raise too_large(source, "the gzip stream", len(data), limit)
                    tail = inflater.unconsumed_tail
                    if inflater.eof or not chunk and not tail:
                        break
            while not inflater.eof:  # output zlib still holds for input already given
                chunk = inflater.decompress(b"", min(_CHUNK, limit + 1 - total))
                if not chunk:
                    break
                total += len(chunk)
                out.append(chunk)
                if total > limit:
                    raise too_large(source, "the gzip stream", len(data), limit)
        except zlib.error as err:
            raise RecordError(f"{source}: expected {expected}, found corrupt gzip data "
                              f"({err})") from err
        if not inflater.eof:
            raise RecordError(f"{source}: expected {expected}, found a truncated gzip stream")
        pos -= len(inflater.unused_data)  # the next member (or stray bytes) starts there
        rest = view[pos:]
        if rest and bytes(rest[:2]) != b"\x1f\x8b":
            if bytes(rest).strip(b"\x00"):  # gzip tolerates zero padding after the last member
                raise RecordError(f"{source}: expected {expected}, found {len(rest)} stray "
                                  f"bytes after the gzip stream")
            break
    return b"".join(out)


def check_depth(value: object, *, source: str, what: str = "the record") -> None:
    """RecordError when dicts and lists in `value` nest deeper than `MAX_DEPTH`.

    Iterative, so it is safe on any input; a cycle is reported as too deep.

    >>> check_depth({"a": [1, {"b": 2}]}, source="m.mpk")
    >>> deep: list[object] = []
    >>> for _ in range(100):
    ...     deep = [deep]
    >>> try:
    ...     check_depth(deep, source="m.mpk")
    ... except RecordError as err:
    ...     print(err)
    m.mpk: the record nests containers more than 64 deep: refused (corrupt or hostile file)
    """
    stack: list[tuple[object, int]] = [(value, 0)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            children: list[object] = list(node.values())
        elif isinstance(node, (list, tuple)):
            children = list(node)
        else:
            continue
        if depth >= MAX_DEPTH:
            raise too_deep(source, what)
        stack.extend((child, depth + 1) for child in children
                     if isinstance(child, (dict, list, tuple)))


def too_deep(source: str, what: str) -> RecordError:
    """The one error for data nested past `MAX_DEPTH`."""
    return RecordError(f"{source}: {what} nests containers more than {MAX_DEPTH} deep: refused "
                       f"(corrupt or hostile file)")
