"""The ONNX project's own backend node tests (built by the onnx package) on pyrite: every test
listed in onnx_node_expected.json must pass, on numpy all of them, on webgpu the listed subset.

The list is the scoreboard's passing set (`python -m pyrite.interop.onnx.node_tests --json`),
so a regression in any op fails here; refresh it with `tests/unit/interop/onnx_node_list.py`.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import pytest

pytest.importorskip("onnx")
pytest.importorskip("numpy")

from pyrite.interop.onnx.node_tests import cases, run_case  # noqa: E402

EXPECTED = json.loads((Path(__file__).with_name("onnx_node_expected.json")).read_text())


@cache
def _cases() -> dict[str, object]:
    return {c.name: c for c in cases()}


@pytest.mark.parametrize("name", EXPECTED["numpy"])
def test_node_numpy(name: str) -> None:
    result = run_case(_cases()[name], "numpy")
    assert result.status == "pass", result.reason


@pytest.mark.parametrize("name", EXPECTED["webgpu"])
def test_node_webgpu(name: str, device_named) -> None:
    device_named("webgpu")
    result = run_case(_cases()[name], "webgpu")
    assert result.status == "pass", result.reason
