"""Every docstring example in the distribution runs (STYLE: examples are tests): `pyrite`
(core) and the packages that live in their own folders (webgpu, wasm, server, demos).

Modules are imported as `pyrite.*` (pytest's --doctest-modules would import the source
folders as `core.*`, a second copy of every class); `__main__` modules are not imported."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import pyrite
import pyrite.demos
import pyrite.server
import pyrite.shaders
import pyrite.wasm
import pyrite.webgpu

_ROOTS = [pyrite, pyrite.webgpu, pyrite.shaders, pyrite.wasm, pyrite.server, pyrite.demos]
MODULES = sorted({m.name for root in _ROOTS
                  for m in pkgutil.walk_packages(root.__path__, root.__name__ + ".")
                  if not m.name.endswith(".__main__")})


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(name)
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    for test in finder.find(module, name):
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{result.failed} docstring example(s) failed in {name}"
