"""Shared fixtures: `backend` runs a case on every available base backend, `ad_backend` on
Autodiff of each. A backend joins by registering itself (pyrite.register_backend or the
`pyrite.backends` entry point); missing ones are skipped with their reason, unless named in
PYRITE_REQUIRE, in which case they fail."""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest

import pyrite
from pyrite import config

os.environ.setdefault("XDG_RUNTIME_DIR", tempfile.mkdtemp(prefix="pyrite-xdg-"))
# heuristic kernel choices, no writes to the user's autotune cache (test_autotune.py turns it on)
os.environ.setdefault("PYRITE_AUTOTUNE", "off")

_CACHE: dict[str, object] = {}


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "slow: long fuzz and scaling runs, skipped unless PYRITE_SLOW=1 is set"
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if os.environ.get("PYRITE_SLOW") == "1":
        return
    skip = pytest.mark.skip(reason="slow: set PYRITE_SLOW=1 to run it")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)



def _available(name: str) -> object:
    if name not in _CACHE:
        try:
            _CACHE[name] = pyrite.device(name)
        except Exception as exc:  # noqa: BLE001 - any failure means "not available here"
            _CACHE[name] = exc
    return _CACHE[name]


def _get(name: str) -> pyrite.Backend:
    found = _available(name)
    if isinstance(found, Exception):
        required = config.required_backends()
        base = name.split("<")[-1].rstrip(">").removesuffix("-unfused")
        if base in required or (base == PAGE and "browser" in required):
            pytest.fail(f"{name} is required (PYRITE_REQUIRE) but unavailable: {found}")
        pytest.skip(f"{name} unavailable: {found}")
    return found  # type: ignore[return-value]


def _page_backend() -> pyrite.Backend:
    """`page-webgpu`: the backend calls of a case run in Chromium, on the page's WebGPU."""
    sys.path.insert(0, str(Path(__file__).parent))
    from browser import harness, page_backend

    why = harness.unavailable()
    if why is not None:
        raise pyrite.BackendUnavailable(why)
    _SESSIONS.append(harness.PageSession("webgpu"))
    return page_backend.PageBackend(page_backend.PageChannel(_SESSIONS[-1].evaluate))


_SESSIONS: list[object] = []
PAGE = "page-webgpu"
pyrite.register_backend(PAGE, _page_backend)


def _raw_webgpu() -> pyrite.Backend:
    """The webgpu backend without Fusion (one kernel per op), which "webgpu" wraps."""
    from pyrite.webgpu.backend import WebGpu

    backend = WebGpu()
    backend.kernels  # noqa: B018 - request the adapter now
    return backend


BASE = pyrite.backend_names()
RAW = "webgpu-unfused"
pyrite.register_backend(RAW, _raw_webgpu)
#: backends the suite runs besides the registered ones: the webgpu backend without fusion
#: ("webgpu" is fused unless PYRITE_FUSION=off)
STACKS = [RAW]


@pytest.fixture(params=BASE + STACKS)
def backend(request: pytest.FixtureRequest) -> pyrite.Backend:
    """Each available base backend (numpy, webgpu, ...) and the decorated stacks."""
    return _get(request.param)


@pytest.fixture(params=[f"autodiff<{b}>" for b in BASE + STACKS])
def ad_backend(request: pytest.FixtureRequest) -> pyrite.Backend:
    """Autodiff over each available base backend."""
    return _get(request.param)


@pytest.fixture
def device_named() -> Callable[[str], pyrite.Backend]:
    """`device_named("webgpu")`: that device, else a skip (a failure when PYRITE_REQUIRE
    names it), for tests that pick their devices themselves."""
    return _get


@pytest.fixture(autouse=True)
def _seeded() -> None:
    pyrite.seed(0, device="numpy")


def run_markdown_examples(path: Path, *, min_blocks: int, every_print_says: bool) -> None:
    """Run the ```python blocks of `path` in order, in one namespace, and check that each
    `print(...)  # text` line prints exactly `text`. `every_print_says`: a print with no such
    comment is a failure (otherwise it is only run)."""
    import contextlib
    import io
    import re

    namespace: dict[str, object] = {}
    blocks = re.findall(r"```python\n(.*?)```", path.read_text(), flags=re.S)
    assert len(blocks) >= min_blocks
    for block in blocks:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(block, str(path), "exec"), namespace)  # noqa: S102 - our own docs
        printed = out.getvalue().splitlines()
        prints = [ln for ln in block.splitlines() if re.match(r"\s*print\(", ln)]
        assert len(printed) == len(prints), printed
        for line, got in zip(prints, printed, strict=True):
            said = re.search(r"\)\s+# (.*)$", line)
            assert said or not every_print_says, f"{path.name}: {line!r} says nothing to check"
            if said:
                assert got == said.group(1).strip(), f"{path.name}: {line!r} printed {got!r}"


@pytest.fixture
def markdown_examples() -> Callable[..., None]:
    """`run_markdown_examples`, for the tests of README.md and the docs pages."""
    return run_markdown_examples


def pytest_sessionfinish(session: pytest.Session) -> None:
    for page_session in _SESSIONS:
        page_session.close()  # type: ignore[attr-defined]
