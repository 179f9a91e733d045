"""Runs per-sample work of the numpy backend (a convolution's products, im2col and epilogue) on a
small thread pool where threads exist.

numpy's BLAS calls, copies and ufuncs release the GIL, so the samples of a batch can be worked on
at once on several cores; one product per sample keeps BLAS at the shapes it runs fastest (see
docs/cpu.md), where splitting one product over many BLAS threads does not pay. The budget is the
BLAS thread count (`PYRITE_BLAS_THREADS`, `blas_threads.budget`): with budget B and N samples,
W = min(B, N) workers share them, BLAS runs B // W threads inside each for the length of the call
and gets B back after. So a process on a busy machine (budget 1 by default) stays on one core,
and a 16-core machine is used on a batch of 16.

Items run one after another in the calling thread when there is one worker: a budget of 1, a
single item (BLAS then has the whole budget; the inference convolution splits a small batch's
output rows into bands so that there are enough items), no threads (Pyodide), no way to change
BLAS's threads during the call (neither threadpoolctl nor OpenBLAS's setter: W workers each
starting B BLAS threads would fight), or inside `serial()` (benchmarks compare the two).
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor, wait
from contextlib import contextmanager
from typing import Any

from . import blas_threads

_POOL: list[Any] = []  # [executor, its size]
_LOCK = threading.Lock()  # one parallel call at a time: the BLAS share is process-wide
_SERIAL: list[bool] = []  # inside serial()


def workers(n_items: int) -> int:
    """How many workers `run` would use for `n_items` samples now."""
    if n_items < 2 or _SERIAL or sys.platform == "emscripten":
        return 1
    b = blas_threads.budget()
    if b < 2 or blas_threads.blas_switch() is None:
        return 1
    return min(b, n_items)


def run(fn: Callable[[int, int], None], n_items: int) -> None:
    """Call `fn(start, stop)` over contiguous slices covering range(n_items), on up to
    `workers(n_items)` threads (the calling thread takes the first slice); returns when all are
    done and re-raises the first error."""
    w = workers(n_items)
    if w == 1 or not _LOCK.acquire(blocking=False):  # nested or concurrent: run here
        fn(0, n_items)
        return
    try:
        budget = blas_threads.budget()
        switch = blas_threads.blas_switch()
        bounds = [n_items * i // w for i in range(w + 1)]
        pool = _executor(w)
        switch(max(1, budget // w))
        try:
            futures = [pool.submit(fn, bounds[i], bounds[i + 1]) for i in range(1, w)]
            try:
                fn(bounds[0], bounds[1])
            finally:
                wait(futures)  # every worker done before BLAS gets its budget back
            for f in futures:
                f.result()
        finally:
            switch(budget)
    finally:
        _LOCK.release()


def shutdown() -> None:
    """Stop the pool's threads (a later parallel call starts them again): before a fork, or
    at the end of a test that used them."""
    if _POOL:
        _POOL[0].shutdown(wait=True)
        _POOL.clear()


def _forget() -> None:
    """In a forked child the parent's worker threads do not exist: start afresh."""
    _POOL.clear()
    if _LOCK.locked():  # forked while a parallel call ran in another thread
        _LOCK.release()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget)


def _executor(w: int) -> ThreadPoolExecutor:
    if not _POOL or _POOL[1] < w - 1:
        if _POOL:
            _POOL[0].shutdown(wait=False)
        _POOL[:] = [ThreadPoolExecutor(max(1, w - 1), thread_name_prefix="pyrite-conv"), w - 1]
    pool: ThreadPoolExecutor = _POOL[0]
    return pool


@contextmanager
def serial() -> Iterator[None]:
    """Run per-sample work in the calling thread inside (BLAS keeps its whole budget): the
    benchmarks' comparison of the pool against one thread of samples."""
    _SERIAL.append(True)
    try:
        yield
    finally:
        _SERIAL.pop()
