"""A bounded walk over the object a pickle built: depth and visits limited by the file's size.

A pickle can reference one object from many places (its memo), so a 377-byte file can build a
list of two references to a list of two references ... forty deep: 2^40 paths to walk. And it
can nest lists 100,000 deep, past Python's recursion limit. Every walk over a loaded object
(flattening to dotted names, resolving the legacy format's deferred tensors) counts its visits
against `visit_limit(file size)` and its depth against `MAX_DEPTH` (see pyrite.record.limits).
"""

from __future__ import annotations

from ...errors import RecordError
from ...record.limits import MAX_DEPTH, too_deep, visit_limit


class Walk:
    """Counts one walk's container visits and checks each visit's depth."""

    def __init__(self, size: int, source: str) -> None:
        self.limit = visit_limit(size)
        self.size = size
        self.source = source
        self.visits = 0

    def enter(self, depth: int) -> None:
        """Call on each container visited, at its depth (the top object is at depth 0)."""
        if depth >= MAX_DEPTH:
            raise too_deep(self.source, "the pickled object")
        self.visits += 1
        if self.visits > self.limit:
            raise RecordError(f"{self.source}: the pickled object's containers are reached along "
                              f"more than {self.limit} paths, more than a {self.size}-byte file "
                              f"can honestly hold (shared references fanning out): refused")
