"""Renaming the tensors of a `.pt` file: regex remaps and Sequential renumbering."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from ...errors import RecordError

Remap = Sequence[tuple[str | re.Pattern[str], str]]


def remap_keys(keys: Iterable[str], remap: Remap, *, source: str = "remap") -> dict[str, str]:
    """Each key -> the key after every `(regex, replacement)` of `remap`, in order (`re.sub`).

    >>> remap_keys(["conv.0.weight"], [(r"^conv\\.(\\d+)", r"conv\\1")])
    {'conv.0.weight': 'conv0.weight'}
    """
    patterns = [(re.compile(p) if isinstance(p, str) else p, r) for p, r in remap]
    out: dict[str, str] = {}
    seen: dict[str, str] = {}
    for key in keys:
        new = key
        for pattern, replacement in patterns:
            new = pattern.sub(replacement, new)
        if new in seen:
            raise RecordError(f"{source}: remapping gives {new!r} for both {seen[new]!r} and "
                              f"{key!r}")
        seen[new] = key
        out[key] = new
    return out


def contiguous_indices(keys: Iterable[str]) -> dict[str, str]:
    """Each key -> the key with numeric parts renumbered 0, 1, 2, ... under each parent.

    A torch `Sequential` numbers its layers with the activations included (`layers.0`,
    `layers.2`, `layers.4` hold the weights), while a pyrite list holds only the layers with
    params: renumbering gives `layers.0`, `layers.1`, `layers.2`.

    >>> contiguous_indices(["seq.0.weight", "seq.2.weight", "seq.2.bias", "seq.10.weight"])
    {'seq.0.weight': 'seq.0.weight', 'seq.2.weight': 'seq.1.weight', \
'seq.2.bias': 'seq.1.bias', 'seq.10.weight': 'seq.2.weight'}
    """
    keys = list(keys)
    parts = {key: key.split(".") for key in keys}
    depth = max((len(p) for p in parts.values()), default=0)
    for d in range(depth):
        # parent prefix (already renumbered) -> the numeric parts found at depth d
        found: dict[tuple[str, ...], set[int]] = {}
        for p in parts.values():
            if d < len(p) - 1 and p[d].isdigit():
                found.setdefault(tuple(p[:d]), set()).add(int(p[d]))
        numbering = {parent: {n: str(i) for i, n in enumerate(sorted(ns))}
                     for parent, ns in found.items()}
        for p in parts.values():
            parent = tuple(p[:d])
            if d < len(p) - 1 and p[d].isdigit() and parent in numbering:
                p[d] = numbering[parent][int(p[d])]
    return {key: ".".join(parts[key]) for key in keys}

