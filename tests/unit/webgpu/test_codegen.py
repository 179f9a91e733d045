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


def test_include_pastes_each_shared_file_once(monkeypatch):
    fake = {"twice.wgsl": '// twice.wgsl: a test\n#include "window.wgsl"\n#include "index.wgsl"\n'
                          "fn main() {}\n",
            "missing.wgsl": '// missing.wgsl: a test\n#include "nope.wgsl"\n'}
    real = codegen.template_text
    monkeypatch.setattr(codegen, "template_text", lambda name: fake.get(name) or real(name))
    source = render("twice.wgsl")
    assert source.startswith("// twice.wgsl: a test\n")
    assert "#include" not in source
    # window.wgsl includes index.wgsl itself; the template's own include of it pastes nothing
    assert source.count("fn pyrite_offsets(") == 1
    assert source.count("struct Window") == 1
    assert codegen.include("index.wgsl", "window.wgsl", "index.wgsl").count("fn pyrite_flat(") == 1
    with pytest.raises(PyriteError, match=r'render missing.wgsl: #include "nope.wgsl": no file '
                                          r"shaders/nope.wgsl"):
        render("missing.wgsl")


def test_rendered_templates_keep_enable_first_and_declare_info_for_the_prelude():
    from importlib import resources
    info = "@group(0) @binding(0) var<storage, read> info: array<i32>;"
    for entry in resources.files("pyrite.shaders").iterdir():
        if not entry.name.endswith(".wgsl") or entry.name == "matmul_tiled.wgsl":
            continue
        body = codegen._split(entry.read_text(encoding="utf-8"))[1]
        values = {name: "1" for name in codegen._PLACEHOLDER.findall(body)}
        if "enable" in values:
            values["enable"] = codegen.header((DType.F16,))
        code = [line for line in render(entry.name, **values).splitlines()
                if line and not line.startswith("//")]
        assert not any(line.startswith("#") for line in code), entry.name
        if "enable" in values:
            assert code[0] == "enable f16;", entry.name  # WGSL wants directives first
        reads_info = any("info[" in line for line in code)
        if reads_info and "@compute" in body:  # a kernel, not a shared file
            assert info in code, entry.name  # what the shared index arithmetic reads


def test_index_prelude_in_a_generated_kernel(gpu, down):
    # info: [n, rank, shape (3, 4, 5), bound, strides of a (5, 4, 3) tensor permuted (2, 1, 0)]
    shape, strides, bound = (3, 4, 5), (1, 3, 12), (2, 4, 3)
    words = [60, 3, *shape, *bound, *strides]
    source = codegen.header(()) + codegen.include("index.wgsl") + """
@group(0) @binding(0) var<storage, read> info: array<i32>;
@group(0) @binding(1) var<storage, read_write> out: array<i32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = pyrite_flat(gid, nwg, 64u);
  if (i >= info[0]) { return; }
  let at = pyrite_offsets(i, info[1], 2, vec4<i32>(8, 0, 8, 0));
  let u = pyrite_unravel(i, vec3<i32>(5, 4, 3));
  out[4 * i] = pyrite_offset(i, info[1], 2, 8);
  out[4 * i + 1] = at.x - at.z;
  out[4 * i + 2] = select(0, 1, pyrite_within(i, info[1], 2, 5));
  out[4 * i + 3] = ((u.w * 3 + u.z) * 4 + u.y) * 5 + u.x;
}
"""
    k = gpu.kernels
    out = k.empty((60, 4), DType.I32, "test")
    key = KernelKey("test_index_prelude", "", (DType.I32,))
    k.launch(k.pipeline(key, source), [k.meta(words), out.block.buffer], k.grid(1))
    got = down(out)
    coords = np.stack(np.unravel_index(np.arange(60), shape), axis=1)
    np.testing.assert_array_equal(got[:, 0], coords @ np.array(strides))
    np.testing.assert_array_equal(got[:, 1], 0)
    np.testing.assert_array_equal(got[:, 2], (coords < np.array(bound)).all(axis=1))
    np.testing.assert_array_equal(got[:, 3], np.arange(60))


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
