"""PYRITE_BLAS_THREADS: parsing, the automatic default, and the limit reaching BLAS."""

from __future__ import annotations

import os

import pytest

from pyrite.backend import blas_threads
from pyrite.errors import ConfigError


@pytest.fixture
def no_blas_env(monkeypatch):
    for var in ("PYRITE_BLAS_THREADS", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS",
                "MKL_NUM_THREADS"):
        monkeypatch.delenv(var, raising=False)
    return monkeypatch


def test_an_explicit_count_wins(no_blas_env):
    no_blas_env.setenv("PYRITE_BLAS_THREADS", "3")
    no_blas_env.setenv("OPENBLAS_NUM_THREADS", "7")
    assert blas_threads.default_threads() == 3


def test_auto_leaves_a_blas_variable_alone(no_blas_env):
    no_blas_env.setenv("OMP_NUM_THREADS", "2")
    assert blas_threads.default_threads() is None


def test_auto_takes_the_idle_cores(no_blas_env):
    no_blas_env.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3, 4, 5}, raising=False)
    no_blas_env.setattr(os, "getloadavg", lambda: (2.4, 0.0, 0.0))
    assert blas_threads.default_threads() == 4
    no_blas_env.setattr(os, "getloadavg", lambda: (17.0, 0.0, 0.0))
    assert blas_threads.default_threads() == 1  # a loaded machine still gets one thread


@pytest.mark.parametrize("value", ["0", "-2", "many"])
def test_a_bad_value_is_a_config_error(no_blas_env, value):
    no_blas_env.setenv("PYRITE_BLAS_THREADS", value)
    with pytest.raises(ConfigError, match="PYRITE_BLAS_THREADS"):
        blas_threads.default_threads()


def test_the_limit_reaches_blas():
    threadpoolctl = pytest.importorskip("threadpoolctl")
    import numpy  # noqa: F401 - BLAS must be loaded for threadpoolctl to see it

    def counts() -> set[int]:
        return {i["num_threads"] for i in threadpoolctl.threadpool_info()
                if i["user_api"] == "blas"}

    before = counts()
    if not before:
        pytest.skip("no BLAS library that threadpoolctl knows")
    try:
        assert blas_threads.set_blas_threads(1)
        assert counts() == {1}
    finally:
        blas_threads.set_blas_threads(max(before))
