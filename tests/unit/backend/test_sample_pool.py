"""sample_pool: slices cover every item once, run on several threads under a budget, BLAS gets
its budget back, errors come through, and one worker means the calling thread."""

from __future__ import annotations

import threading

import pytest

from pyrite.backend import blas_threads, sample_pool


@pytest.fixture
def budget():
    pytest.importorskip("threadpoolctl")
    import numpy  # noqa: F401 - BLAS must be loaded for the switch to find it

    if blas_threads.blas_switch() is None:
        pytest.skip("no BLAS library that threadpoolctl knows")
    old = blas_threads.budget()

    def set_to(n: int) -> None:
        blas_threads.set_blas_threads(n)

    yield set_to
    blas_threads.set_blas_threads(old)
    sample_pool.shutdown()  # no idle threads left for a later test's fork


def test_slices_cover_each_item_once_on_several_threads(budget) -> None:
    budget(3)
    seen: list[tuple[int, int, int]] = []
    barrier = threading.Barrier(3, timeout=10)  # all three slices run at once

    def fn(start: int, stop: int) -> None:
        barrier.wait()
        seen.append((start, stop, threading.get_ident()))

    sample_pool.run(fn, 7)
    assert sorted((a, b) for a, b, _ in seen) == [(0, 2), (2, 4), (4, 7)]
    assert len({t for *_, t in seen}) == 3


def test_blas_gets_its_budget_back_and_errors_come_through(budget) -> None:
    from threadpoolctl import threadpool_info

    def blas() -> set[int]:
        return {i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"}

    budget(2)
    inside: list[set[int]] = []

    def fn(start: int, stop: int) -> None:
        if start == 0:
            inside.append(blas())
        else:
            raise RuntimeError("worker failed")

    with pytest.raises(RuntimeError, match="worker failed"):
        sample_pool.run(fn, 2)
    assert inside == [{1}]  # each of the two workers ran BLAS on one thread
    assert blas() == {2}


def test_one_worker_runs_in_the_calling_thread(budget) -> None:
    budget(1)
    assert sample_pool.workers(16) == 1
    budget(4)
    assert sample_pool.workers(1) == 1  # a batch of one keeps BLAS's whole budget
    threads: list[int] = []
    sample_pool.run(lambda a, b: threads.append(threading.get_ident()), 1)
    assert threads == [threading.get_ident()]


def test_serial_turns_the_pool_off(budget) -> None:
    budget(4)
    assert sample_pool.workers(8) == 4
    with sample_pool.serial():
        assert sample_pool.workers(8) == 1
    assert sample_pool.workers(8) == 4


def test_openblas_setter_without_threadpoolctl() -> None:
    """The fallback when threadpoolctl is missing: OpenBLAS's own setter, found in the loaded
    libraries, changes the count threadpoolctl sees."""
    threadpoolctl = pytest.importorskip("threadpoolctl")
    import numpy  # noqa: F401

    setter = blas_threads._openblas_setter()
    if setter is None:
        pytest.skip("numpy's BLAS is not OpenBLAS here")
    old = blas_threads.budget()
    try:
        setter(1)
        assert {i["num_threads"] for i in threadpoolctl.threadpool_info()
                if i["internal_api"] == "openblas"} == {1}
    finally:
        blas_threads.set_blas_threads(old)
