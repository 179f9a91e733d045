"""Predictions through one bounded queue, batched per model.

At most `size` (default QUEUE_SIZE) predictions wait or run at once, server-wide. One more is
answered at once with 503 and a `Retry-After` header, before its body is read, so a burst
of requests cannot fill the server's memory with request bodies; Retry-After is the time the
queue needs to drain at the recent pace (at least RETRY_AFTER_S), so clients that wait as told
do not come back before there is room. Each model has one worker
thread: it takes the requests waiting for that model, up to `max_batch` (default MAX_BATCH),
and runs them in one forward pass where the model allows it (`DemoModel.predict_many`), so a
burst costs a few large passes instead of many small ones. When the queue empties after a burst,
the memory the burst used is handed back to the operating system (glibc's `malloc_trim`;
elsewhere the allocator keeps it for the next burst).

This module owns the queue and the workers; the Predictor (predictor.py) loads and runs models.
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import functools
import gc
import math
import queue
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from .predictor import Predictor

QUEUE_SIZE = 64  # predictions waiting or running at once; more get a 503
MAX_BATCH = 8  # requests for one model run in one forward pass at most (SqueezeNet on numpy:
# 8 photos a pass take about as long each as 16, with half the memory)
RETRY_AFTER_S = 1  # the least a 503 tells a client to wait, in seconds
_TRIM_AFTER = 8  # requests served since the last trim that make an idle queue trim memory

_Job = tuple[dict[str, object], "asyncio.Future[dict[str, object]]", asyncio.AbstractEventLoop]


class Busy(Exception):
    """The queue is full: the request should be retried after `retry_after` seconds."""

    def __init__(self, message: str, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class PredictionQueue:
    """A bounded queue in front of `predictor`: `admit()` reserves a place (Busy when the
    queue is full), `predict(name, inputs)` waits for the model's worker to run it."""

    def __init__(self, predictor: Predictor, *, size: int = QUEUE_SIZE,
                 max_batch: int = MAX_BATCH) -> None:
        if size < 1 or max_batch < 1:
            raise ValueError(f"queue size and batch must be >= 1, got {size} and {max_batch}")
        self.predictor = predictor
        self.size = size
        self.max_batch = max_batch
        self.pending = 0  # admitted and not finished
        self.served_since_trim = 0
        self.largest_batch = 0  # for tests and the load benchmark
        self.seconds_per_item = 0.0  # the recent pace: a moving average over batches
        self._guard = threading.Lock()
        self._jobs: dict[str, queue.SimpleQueue[_Job]] = {}

    @contextmanager
    def admit(self) -> Iterator[None]:
        """A place in the queue for the duration of the block; Busy when there is none."""
        with self._guard:
            if self.pending >= self.size:
                wait = max(RETRY_AFTER_S, math.ceil(self.pending * self.seconds_per_item))
                raise Busy(f"the server is busy: {self.size} predictions are waiting or "
                           f"running; retry in {wait} s", wait)
            self.pending += 1
        try:
            yield
        finally:
            with self._guard:
                self.pending -= 1
                self.served_since_trim += 1
                idle = self.pending == 0 and self.served_since_trim >= _TRIM_AFTER
                if idle:
                    self.served_since_trim = 0
            if idle:
                release_memory()

    async def predict(self, name: str, inputs: dict[str, object]) -> dict[str, object]:
        """Model `name`'s answer for checked `inputs`, run by its worker, maybe in a batch."""
        loop = asyncio.get_running_loop()
        done: asyncio.Future[dict[str, object]] = loop.create_future()
        self._queue(name).put((inputs, done, loop))
        return await done

    def _queue(self, name: str) -> queue.SimpleQueue[_Job]:
        with self._guard:
            jobs = self._jobs.get(name)
            if jobs is None:
                jobs = self._jobs[name] = queue.SimpleQueue()
                threading.Thread(target=self._work, args=(name, jobs), daemon=True,
                                 name=f"pyrite-predict-{name}").start()
        return jobs

    def _work(self, name: str, jobs: queue.SimpleQueue[_Job]) -> None:
        while True:
            batch = [jobs.get()]
            while len(batch) < self.max_batch:
                try:
                    batch.append(jobs.get_nowait())
                except queue.Empty:
                    break
            self.largest_batch = max(self.largest_batch, len(batch))
            start = time.perf_counter()
            self._run(name, batch)
            each = (time.perf_counter() - start) / len(batch)
            self.seconds_per_item = each if self.seconds_per_item == 0 else \
                0.8 * self.seconds_per_item + 0.2 * each
            del batch  # the inputs go now, not when the next batch arrives

    def _run(self, name: str, batch: list[_Job]) -> None:
        """Answer each job of `batch`; when the batch fails, each job alone, so that one bad
        input fails only its own request."""
        try:
            results = self.predictor.predict_many(name, [inputs for inputs, _, _ in batch])
        except Exception as exc:  # noqa: BLE001 - handed to the waiting request
            if len(batch) > 1:
                for job in batch:
                    self._run(name, [job])
                return
            _reply(batch[0], None, exc)
            return
        for job, result in zip(batch, results, strict=True):
            _reply(job, result, None)


def _reply(job: _Job, result: object, error: BaseException | None) -> None:
    """Hand a result (or error) to the request waiting in its event loop's thread."""
    _, done, loop = job
    try:
        loop.call_soon_threadsafe(_settle, done, result, error)
    except RuntimeError:  # that loop has closed: nobody waits any more
        pass


def _settle(done: asyncio.Future[Any], result: object, error: BaseException | None) -> None:
    if done.done():  # the client went away and its request was cancelled
        return
    if error is not None:
        done.set_exception(error)
    else:
        done.set_result(result)


def release_memory() -> None:
    """Collect garbage and give freed heap pages back to the OS (glibc only)."""
    gc.collect()
    libc = _libc()
    if libc is not None:
        libc.malloc_trim(0)


@functools.cache
def _libc() -> Any:
    name = ctypes.util.find_library("c")
    try:
        lib = ctypes.CDLL(name) if name else None
    except OSError:
        return None
    return lib if lib is not None and hasattr(lib, "malloc_trim") else None


__all__ = ["MAX_BATCH", "QUEUE_SIZE", "RETRY_AFTER_S", "Busy", "PredictionQueue",
           "release_memory"]
