"""Every docstring example in the package runs (STYLE: examples are tests).

Modules are imported as `pyrite.*` (pytest's --doctest-modules would import the source
folders as `core.*`, a second copy of every class)."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import pyrite

MODULES = sorted(m.name for m in pkgutil.walk_packages(pyrite.__path__, "pyrite."))


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(name)
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    for test in finder.find(module, name):
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{result.failed} docstring example(s) failed in {name}"
