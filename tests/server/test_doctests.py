"""The server's docstring examples run (tests/unit/test_doctests.py walks `pyrite` itself,
whose folder holds core only)."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import pyrite.server

MODULES = sorted(m.name for m in pkgutil.walk_packages(pyrite.server.__path__, "pyrite.server.")
                 if m.name != "pyrite.server.__main__")


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(name)
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    for test in finder.find(module, name):
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{result.failed} docstring example(s) failed in {name}"
