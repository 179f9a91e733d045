"""Template rendering, kernel keys, the debug print and the pipeline cache."""

from __future__ import annotations

import numpy as np
import pytest

from pyrite.backend import get
from pyrite.dtype import DType
from pyrite.errors import PyriteError
from pyrite.webgpu import codegen
from pyrite.webgpu.codegen import KernelKey, render


def test_every_template_opens_with_a_comment_naming_its_placeholders():
    from importlib import resources
    for entry in resources.files("pyrite.shaders").iterdir():
        if not entry.name.endswith(".wgsl"):
            continue
        text = entry.read_text(encoding="utf-8")
        assert text.startswith(f"// {entry.name}"), entry.name
        if entry.name == "matmul_tiled.wgsl":
            continue  # rendered by webgpu/matmul_config.py
        head, body = codegen._split(text)
        for name in set(codegen._PLACEHOLDER.findall(body)):
            assert f"{{{{ {name} }}}}" in head, (entry.name, name)


def test_render_fails_on_missing_or_unused_placeholders():
    values = dict(enable="", io_type="f32", workgroup=64)
    assert "array<f32>" in render("gather.wgsl", **values)
    with pytest.raises(PyriteError, match=r"missing placeholders \['workgroup'\]"):
        render("gather.wgsl", enable="", io_type="f32")
    with pytest.raises(PyriteError, match=r"unused values \['extra'\]"):
        render("gather.wgsl", **values, extra="x")


def test_kernel_keys_are_hashable_values():
    a = KernelKey("unary", "exp", (DType.F32, DType.F32), 2)
    assert a == KernelKey("unary", "exp", (DType.F32, DType.F32), 2)
    assert len({a, KernelKey("unary", "exp", (DType.F32, DType.F32), 3)}) == 2


def test_debug_flag_prints_each_new_kernel_once(gpu, up, monkeypatch, capsys):
    monkeypatch.setenv("PYRITE_DEBUG", "wgsl")
    x = gpu.permute(up(np.ones((2, 3, 4, 5, 6), np.float32)), (4, 3, 2, 1, 0))  # rank 5: new
    gpu.unary(get("sin"), x)
    gpu.unary(get("sin"), x)
    err = capsys.readouterr().err
    assert err.count("// pyrite wgsl KernelKey(kernel='unary', op='sin'") == 1
    assert "sin(v0)" in err


def test_shapes_are_run_time_data(gpu, up, down):
    compiled = len(gpu.kernels._sources)
    for n in (3, 7, 11):
        x = up(np.full((n, 2), 4.0, np.float32))
        np.testing.assert_array_equal(down(gpu.unary(get("sqrt"), x)), np.full((n, 2), 2.0))
    assert len(gpu.kernels._sources) <= compiled + 1
