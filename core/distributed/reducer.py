"""The collective of pyrite's Ray workers: a `Reducer` actor that every rank sends its arrays
to, and `RayCollective`, the worker-side `Collective` over it.

Why not `ray.util.collective`: its backends are NCCL (CUDA and cupy; pyrite's GPU path is
WebGPU, and its CPU workers have no CUDA) and Gloo through torch.distributed (a second deep
learning framework of several hundred MB to install for one sum). Ray's object store already
moves numpy arrays between processes and machines without copies on one node, so each round is
one actor call per rank: the reducer waits until every rank has sent round k, adds the arrays
in rank order (every rank gets the same bits) and answers all of them. A sum travels as one flat
array per rank (the gradients packed end to end, so a round moves one object per rank, not one
per parameter), and the reducer stores its answer in the object store once and answers every
rank with a reference to it, instead of serialising the sum once per rank. The reducer's
traffic still grows with the number of workers (a star, not a ring), which suits the tens of MB
of gradients of pyrite's models on a handful of workers; each rank waits at most `timeout_s` for
a round, then raises WorkerError.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from ..data import TensorData
from ..errors import WorkerError


class _Round:
    __slots__ = ("arrays", "done", "result", "taken")

    def __init__(self, world_size: int) -> None:
        self.arrays: list[Any] = [None] * world_size
        self.done = asyncio.Event()
        self.result: Any = None
        self.taken = 0


class Reducer:
    """The Ray actor every rank of a run meets in (`ray.remote(Reducer)`; async: rounds wait
    without holding a thread)."""

    def __init__(self, world_size: int) -> None:
        self.world_size = world_size
        self._rounds: dict[int, _Round] = {}

    async def exchange(self, round_id: int, rank: int, op: str, arrays: list[Any]) -> Any:
        """Round `round_id` of `op` ("sum", "gather" or "broadcast") with rank `rank`'s
        arrays; answers when every rank has sent its part."""
        found = self._rounds.get(round_id)
        if found is None:
            found = self._rounds[round_id] = _Round(self.world_size)
        found.arrays[rank] = arrays
        if all(a is not None for a in found.arrays):
            import ray
            # stored once; each rank's answer is a reference (inside a list, so Ray does not
            # resolve it in the reply) that it reads from the object store
            found.result = [ray.put(_combine(op, found.arrays))]
            found.done.set()
        else:
            await found.done.wait()
        found.taken += 1
        if found.taken == self.world_size:
            del self._rounds[round_id]
        return found.result


def _combine(op: str, arrays: list[list[Any]]) -> Any:
    if op == "gather":
        return arrays
    if op == "broadcast":
        return arrays[0]
    sums = [a.copy() for a in arrays[0]]
    for rank_arrays in arrays[1:]:  # rank order: the same bits on every rank, every run
        for total, a in zip(sums, rank_arrays, strict=True):
            total += a
    return sums


class RayCollective:
    """A `Collective` over a `Reducer` actor: one actor call per round and rank."""

    def __init__(self, reducer: Any, rank: int, world_size: int, timeout_s: float) -> None:
        self.reducer, self.rank, self.world_size = reducer, rank, world_size
        self.timeout_s = timeout_s
        self._round = 0

    def _exchange(self, op: str, arrays: list[Any]) -> Any:
        import ray

        self._round += 1
        ref = self.reducer.exchange.remote(self._round, self.rank, op, arrays)
        try:
            return ray.get(ray.get(ref, timeout=self.timeout_s)[0], timeout=self.timeout_s)
        except ray.exceptions.GetTimeoutError:
            raise WorkerError(f"{op} #{self._round}: rank {self.rank} waited {self.timeout_s:g} s "
                              f"for the other {self.world_size - 1} rank(s); one died or hangs"
                              ) from None

    def all_reduce(self, values: Sequence[TensorData]) -> list[TensorData]:
        arrays = [v.to_numpy() for v in values]
        flat, unpack = _pack(arrays)
        return [TensorData(a) for a in unpack(self._exchange("sum", flat))]

    def gather(self, values: Sequence[TensorData]) -> list[list[TensorData]]:
        ranks = self._exchange("gather", [v.to_numpy() for v in values])
        return [[TensorData(a.copy()) for a in rank] for rank in ranks]

    def broadcast(self, values: Sequence[TensorData]) -> list[TensorData]:
        return [TensorData(a.copy()) for a in
                self._exchange("broadcast", [v.to_numpy() for v in values])]


def _pack(arrays: list[Any]) -> tuple[list[Any], Any]:
    """`arrays` as one flat array per dtype (in order of first appearance) and the function
    that cuts a list of such flat arrays back into writable arrays of the original shapes."""
    import numpy as np

    kinds: list[Any] = []
    for a in arrays:
        if a.dtype not in kinds:
            kinds.append(a.dtype)
    flat = [np.concatenate([a.ravel() for a in arrays if a.dtype == k]) for k in kinds]

    def unpack(summed: list[Any]) -> list[Any]:
        offsets = [0] * len(kinds)
        out = []
        for a in arrays:
            i = kinds.index(a.dtype)
            start = offsets[i]
            offsets[i] = start + a.size
            out.append(summed[i][start:offsets[i]].reshape(a.shape).copy())
        return out
    return flat, unpack
