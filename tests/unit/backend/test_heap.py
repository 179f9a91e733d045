"""PYRITE_NUMPY_HEAP: parsing, and the glibc switch applied where glibc is."""

from __future__ import annotations

import platform
import sys

import pytest

from pyrite import config
from pyrite.backend import heap
from pyrite.errors import ConfigError


def test_setting_values(monkeypatch):
    monkeypatch.delenv("PYRITE_NUMPY_HEAP", raising=False)
    assert config.numpy_heap() == "keep"
    monkeypatch.setenv("PYRITE_NUMPY_HEAP", "System")
    assert config.numpy_heap() == "system"
    monkeypatch.setenv("PYRITE_NUMPY_HEAP", "pool")
    with pytest.raises(ConfigError, match="PYRITE_NUMPY_HEAP"):
        config.numpy_heap()


def test_keep_freed_memory_where_glibc_is():
    glibc = sys.platform == "linux" and platform.libc_ver()[0] == "glibc"
    assert heap.keep_freed_memory() is glibc
